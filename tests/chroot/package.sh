#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# The Debian package tested as installed, on the host (GDB 13, LLDB 19) and in
# the sid chroot (GDB 18, LLDB 23), each in a throw-away overlay root:
# tests/package/test_package.sh. Run by scripts/run-tests.sh (stage 4) after
# the default build; uses build/default (SFUNWIND_PACKAGE_BUILD).
set -uo pipefail
repo=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
exec bash "$repo/tests/package/test_package.sh" host sid

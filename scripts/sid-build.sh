#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# sid-build.sh: build sfunwind targets in the Debian sid chroot, in the one
# build directory that the chroot suites (tests/chroot/) share, so that the
# core is compiled once for all of them rather than once per suite.
#
# Usage: scripts/sid-build.sh TARGET...
#   e.g. scripts/sid-build.sh sfunwind sfunwind_unit_tests sfunwind_gdb sfunwind_lldb
#        scripts/sid-build.sh --dir    print the build directory (where the
#                                      suites find what was built)
#
# The build: build/sid (or $SID_BUILD, a path inside the repository, which
# the chroot sees at the same path), GCC 16, RelWithDebInfo with line tables
# only (SFUNWIND_DEBUG_INFO=lines: the suites need no more), -Werror, every
# component on (the GDB bridge against sid's libdw and Python, the LLDB
# plugin against liblldb-23-dev). Environment: JOBS (default: the core count).
# Exit status: non-zero if the configure or the build failed.
set -euo pipefail

repo=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
build=${SID_BUILD:-$repo/build/sid}
jobs=${JOBS:-$(nproc)}
(($# > 0)) || { echo "usage: scripts/sid-build.sh TARGET... | --dir" >&2; exit 2; }
if [[ "$1" == --dir ]]; then
  echo "$build"
  exit 0
fi

# shellcheck disable=SC2016 # $1, $2 and $@ are the inner shell's arguments
exec "$repo/scripts/sid-chroot.sh" run -- bash -c '
  set -euo pipefail
  build=$1 jobs=$2
  shift 2
  cmake -S "'"$repo"'" -B "$build" -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo -DSFUNWIND_WERROR=ON \
    -DSFUNWIND_DEBUG_INFO=lines >/dev/null
  cmake --build "$build" -j "$jobs" --target "$@"
' sid-build "$build" "$jobs" "$@"

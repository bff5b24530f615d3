#!/usr/bin/env bash
# In the sid chroot: build sfunwind and the unit tests with GCC 16 (in the
# chroot suites' shared build, scripts/sid-build.sh), then run the unit tests
# and the `sfunwind bt` suite there, side by side (each keeps one core busy;
# tests/chroot/lib/suites.sh). The suite's own test programs are built by
# GCC 16 + GNU as 2.47 (SFrame v3), and the committed fixtures it runs are the
# dynamic builds of every writer that need sid's glibc (gas 2.44 v2, gas 2.47
# v3, clang 23 v2 with the PC-relative flag), including the PLT calls into a
# shared library.
set -euo pipefail
repo=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
build=$("$repo/scripts/sid-build.sh" --dir)
"$repo/scripts/sid-build.sh" sfunwind sfunwind_unit_tests
exec "$repo/scripts/sid-chroot.sh" run -- bash -c '
  set -uo pipefail
  cd "'"$repo"'"
  source tests/chroot/lib/suites.sh
  suite "'"$build"'"/tests/sfunwind_unit_tests
  suite python3 tests/cli/test_bt.py --where chroot --sfunwind "'"$build"'"/cli/sfunwind --work "'"$build"'"/cli-bt
  run_suites bt
'

#!/usr/bin/env bash
# In the sid chroot: build sfunwind with GCC 16, then run the `sfunwind bt`
# suite there. Its own test programs are then built by GCC 16 + GNU as 2.47
# (SFrame v3), and the committed fixtures it runs are the dynamic builds of
# every writer that need sid's glibc (gas 2.44 v2, gas 2.47 v3, clang 23 v2
# with the PC-relative flag), including the PLT calls into a shared library.
set -euo pipefail
repo=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
exec "$repo/scripts/sid-chroot.sh" run -- bash -c '
  set -euo pipefail
  cd "'"$repo"'"
  cmake -S . -B build/sid-core -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo \
        -DSFUNWIND_BUILD_LLDB_PLUGIN=OFF -DSFUNWIND_BUILD_GDB=OFF -DSFUNWIND_BUILD_TESTS=ON >/dev/null
  cmake --build build/sid-core --target sfunwind sfunwind_unit_tests -j "$(nproc)"
  build/sid-core/tests/sfunwind_unit_tests
  python3 tests/cli/test_bt.py --where chroot --sfunwind build/sid-core/cli/sfunwind --work build/sid-core/cli-bt
'

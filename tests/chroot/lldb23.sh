#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# LLDB 23 suite, run from the host by scripts/run-tests.sh (stage 4) once the
# sid chroot exists: builds the LLDB plugin inside the chroot against sid's
# liblldb-23-dev headers (gcc 16, -Werror), then runs the LLDB plugin tests
# with lldb-23 and its Python 3.14 SB API:
#   test_commands   sframe bt/compare/show-unwind/dump/status at every stop
#                   of every x86-64 fixture that runs there (the dynamic builds
#                   of gas 2.40/2.44/2.47 and clang 23, the static ones)
#   test_unwindplan LLDB's own bt on the -noeh fixtures with the generated
#                   debug files, stripped programs, split and in-program DWARF
#   test_callee_saved rbx and r12-r15 and variables in caller frames with and
#                   without the callee-saved rules in the generated files, and
#                   the ones `sframe bt -r` and `sframe compare` recover
#   test_cores      the same on gcore dumps
#   test_qemu       aarch64 and s390x fixtures under qemu-user's gdbstub
#   tests/dap/test_dap.py  lldb-dap-23 driven over stdio as an editor does
# and test_commands once more with the host's build of the plugin when there
# is one (build/default), to show that one build loads in LLDB 19 and 23.
#
# Environment: JOBS (build parallelism, default 2); LLDB23_BUILD (the chroot
# build directory, default build/sid-lldb23); HOST_PLUGIN (the host build of
# the plugin for the last run, default build/default/plugin/libsfunwind_lldb.so).
# Exit status: non-zero if the build or any suite failed.
set -uo pipefail

repo=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
build=${LLDB23_BUILD:-$repo/build/sid-lldb23}
host_plugin=${HOST_PLUGIN:-$repo/build/default/plugin/libsfunwind_lldb.so}
jobs=${JOBS:-2}

inner=$(cat <<INNER
set -uo pipefail
cd "$repo"
cmake -S "$repo" -B "$build" -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo -DSFUNWIND_WERROR=ON \
  -DSFUNWIND_BUILD_TESTS=OFF -DSFUNWIND_BUILD_CLI=OFF -DSFUNWIND_BUILD_GDB=OFF >/dev/null || exit 1
cmake --build "$build" --target sfunwind_lldb -j "$jobs" || exit 1
plugin="$build/plugin/libsfunwind_lldb.so"
failed=0
run() { echo; echo "--- \$*"; "\$@" || failed=\$((failed + 1)); }
for suite in commands unwindplan callee_saved cores qemu provider; do
  run python3 tests/lldb/test_\$suite.py --chroot --plugin "\$plugin" --lldb lldb-23 --work "$build/work-\$suite"
done
run python3 tests/lldb/test_hostile.py --plugin "\$plugin" --lldb lldb-23 --work "$build/work-hostile"
run python3 tests/dap/test_dap.py --lldb-dap lldb-dap-23 --plugin "\$plugin" --runs chroot --work "$build/work-dap"
if [[ -f "$host_plugin" ]]; then
  run python3 tests/lldb/test_commands.py --chroot --plugin "$host_plugin" \
    --lldb lldb-23 --work "$build/work-host-plugin" --only recurse
fi
echo
echo "lldb23: \$failed suites failed"
exit \$((failed > 0))
INNER
)

exec "$repo/scripts/sid-chroot.sh" run -- bash -c "$inner"

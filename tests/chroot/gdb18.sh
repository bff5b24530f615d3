#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# GDB 18 suite, run from the host by scripts/run-tests.sh (stage 4) once the
# sid chroot exists: builds libsfunwind_gdb.so inside the chroot (sid's
# compiler, libdw and Python 3.14 for ctypes), then runs the GDB tests with
# the chroot's GDB 18 on every x86-64 fixture that runs there (the dynamic
# builds of every writer, and the static ones), the -noeh and core-file
# checks, the callee-saved registers of upper frames against the CFI build
# (run_callee_saved_tests), the commands, and the aarch64/s390x fixtures under qemu-user's
# gdbstub with gdb-multiarch, and the ppc64/ppc64le traceback-table
# fixtures (-O2 part only) likewise; and GDB's DAP interpreter (gdb -i=dap,
# GDB 14 and later) driven over stdio as an editor does (tests/dap/test_dap.py).
#
# Environment: JOBS (build parallelism, default 2), SFUNWIND_GDB18_QUICK=1
# (no stepi sweeps). Exit status: non-zero if the build or any test failed.
set -uo pipefail

repo=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
build=$repo/build/sid-gdb
jobs=${JOBS:-2}
quick=()
[[ "${SFUNWIND_GDB18_QUICK:-0}" == 1 ]] && quick=(--quick)

# The inner script runs in the chroot (the repository is mounted at the same path).
inner=$(cat <<INNER
set -uo pipefail
cd "$repo"
cmake -S "$repo" -B "$build" -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo -DSFUNWIND_WERROR=ON \
  -DSFUNWIND_BUILD_TESTS=OFF -DSFUNWIND_BUILD_CLI=OFF -DSFUNWIND_BUILD_LLDB_PLUGIN=OFF >/dev/null || exit 1
cmake --build "$build" --target sfunwind_gdb -j "$jobs" || exit 1
loader="$build/gdb-python/sfunwind.py"
failed=0
run() { echo; echo "--- \$*"; "\$@" || failed=\$((failed + 1)); }
run python3 tests/gdb/test_native_api.py --library "$build/gdb-python/libsfunwind_gdb.so"
run python3 tests/gdb/run_command_tests.py --gdb gdb --loader "\$loader" --runs chroot
run python3 tests/gdb/run_gdb_tests.py --gdb gdb --loader "\$loader" --runs chroot ${quick[*]:-}
run python3 tests/gdb/run_noeh_tests.py --gdb gdb --loader "\$loader" --runs chroot
run python3 tests/gdb/run_callee_saved_tests.py --gdb gdb --loader "\$loader" --runs chroot
run python3 tests/gdb/run_qemu_tests.py --gdb gdb-multiarch --loader "\$loader" --pac
run python3 tests/gdb/run_ppc64_tests.py --gdb gdb-multiarch --loader "\$loader" --quick
run python3 tests/gdb/run_hostile_tests.py --gdb gdb --loader "\$loader" --runs chroot
run python3 tests/gdb/run_thread_tests.py --gdb gdb --loader "\$loader" --runs chroot
run python3 tests/dap/test_dap.py --gdb gdb --loader "\$loader" --runs chroot --work "$build/work-dap"
echo
echo "gdb18: \$failed suites failed"
exit \$((failed > 0))
INNER
)

exec "$repo/scripts/sid-chroot.sh" run -- bash -c "$inner"

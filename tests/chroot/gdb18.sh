#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# GDB 18 suite, run from the host by scripts/run-tests.sh (stage 4) once the
# sid chroot exists: builds libsfunwind_gdb.so inside the chroot (sid's
# compiler, libdw and Python 3.14 for ctypes; the chroot suites' shared build,
# scripts/sid-build.sh), then runs the GDB tests with
# the chroot's GDB 18 on every x86-64 fixture that runs there (the dynamic
# builds of every writer, and the static ones), the -noeh and core-file
# checks, the callee-saved registers of upper frames against the CFI build
# (run_callee_saved_tests), the commands, and the aarch64/s390x fixtures under qemu-user's
# gdbstub with gdb-multiarch, and the ppc64/ppc64le traceback-table
# fixtures (-O2 part only) likewise; and GDB's DAP interpreter (gdb -i=dap,
# GDB 14 and later) driven over stdio as an editor does (tests/dap/test_dap.py).
#
# Environment: JOBS (build parallelism, default: the core count), SID_BUILD
# (the chroot build directory, default build/sid), SFUNWIND_GDB18_QUICK=1
# (no stepi sweeps). Exit status: non-zero if the build or any test failed.
set -uo pipefail

repo=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
build=$("$repo/scripts/sid-build.sh" --dir)
quick=()
[[ "${SFUNWIND_GDB18_QUICK:-0}" == 1 ]] && quick=(--quick)

# The inner script runs in the chroot (the repository is mounted at the same path).
inner=$(cat <<INNER
set -uo pipefail
cd "$repo"
loader="$build/gdb-python/sfunwind.py"
source tests/chroot/lib/suites.sh
# The longest suites first (times with GDB 18 on 2 cores: 190, 130, 75, 25 s; the
# others under 15 s).
suite python3 tests/gdb/run_gdb_tests.py --gdb gdb --loader "\$loader" --runs chroot ${quick[*]:-}
suite python3 tests/gdb/run_noeh_tests.py --gdb gdb --loader "\$loader" --runs chroot
suite python3 tests/gdb/run_callee_saved_tests.py --gdb gdb --loader "\$loader" --runs chroot
suite python3 tests/gdb/run_ppc64_tests.py --gdb gdb-multiarch --loader "\$loader" --quick
suite python3 tests/dap/test_dap.py --gdb gdb --loader "\$loader" --runs chroot --work "$build/work-dap-gdb18"
suite python3 tests/gdb/run_hostile_tests.py --gdb gdb --loader "\$loader" --runs chroot
suite python3 tests/gdb/run_qemu_tests.py --gdb gdb-multiarch --loader "\$loader" --pac
suite python3 tests/gdb/run_thread_tests.py --gdb gdb --loader "\$loader" --runs chroot
suite python3 tests/gdb/run_inferior_tests.py --gdb gdb --loader "\$loader" --runs chroot
suite python3 tests/gdb/run_many_libraries_tests.py --gdb gdb --loader "\$loader" --runs chroot
suite python3 tests/gdb/run_command_tests.py --gdb gdb --loader "\$loader" --runs chroot
suite python3 tests/gdb/test_native_api.py --library "$build/gdb-python/libsfunwind_gdb.so"
run_suites gdb18
INNER
)

"$repo/scripts/sid-build.sh" sfunwind_gdb || exit 1
exec "$repo/scripts/sid-chroot.sh" run -- bash -c "$inner"

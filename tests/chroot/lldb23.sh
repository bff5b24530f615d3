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
#   test_many_libraries  a program of 120 shared libraries, a frame in each
# and test_commands once more with the host's build of the plugin when there
# is one (build/default), on gas 2.47's recurse programs (SFrame v3, static
# and dynamic): one build loads and unwinds in LLDB 19 and 23.
#
# Environment: JOBS (build parallelism, default: the core count); SID_BUILD
# (the chroot build directory, default build/sid); HOST_PLUGIN (the host build of
# the plugin for the last run, default build/default/plugin/libsfunwind_lldb.so).
# Exit status: non-zero if the build or any suite failed.
set -uo pipefail

repo=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
build=$("$repo/scripts/sid-build.sh" --dir)
host_plugin=${HOST_PLUGIN:-$repo/build/default/plugin/libsfunwind_lldb.so}

inner=$(cat <<INNER
set -uo pipefail
cd "$repo"
plugin="$build/plugin/libsfunwind_lldb.so"
source tests/chroot/lib/suites.sh
lldb_suite() { # lldb_suite NAME PLUGIN WORK [ARG...]: tests/lldb/test_NAME.py on lldb-23
  suite python3 tests/lldb/test_\$1.py --chroot --plugin "\$2" --lldb lldb-23 --work "$build/\$3" "\${@:4}"
}
# The longest suites first (times with LLDB 23 on 2 cores: 85, 85, 15, 25, 20 s;
# the others under 10 s).
lldb_suite commands "\$plugin" work-commands
lldb_suite callee_saved "\$plugin" work-callee_saved
if [[ -f "$host_plugin" ]]; then
  lldb_suite commands "$host_plugin" work-host-plugin --only gas-2.47/recurse
fi
lldb_suite unwindplan "\$plugin" work-unwindplan
suite python3 tests/dap/test_dap.py --lldb-dap lldb-dap-23 --plugin "\$plugin" --runs chroot --work "$build/work-dap-lldb23"
lldb_suite cores "\$plugin" work-cores
suite python3 tests/lldb/test_hostile.py --plugin "\$plugin" --lldb lldb-23 --work "$build/work-hostile"
lldb_suite qemu "\$plugin" work-qemu
lldb_suite provider "\$plugin" work-provider
lldb_suite many_libraries "\$plugin" work-many-libraries
run_suites lldb23
INNER
)

"$repo/scripts/sid-build.sh" sfunwind_lldb || exit 1
exec "$repo/scripts/sid-chroot.sh" run -- bash -c "$inner"

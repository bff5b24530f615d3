# SPDX-License-Identifier: MIT
# GDB tests (host GDB 13): live comparisons of sfunwind's unwind with GDB's
# DWARF CFI unwind on the fixtures, SFrame-only (-noeh) binaries and core
# files, and the commands. Each prints what it compared and fails on any
# difference not named as an SFrame limit. The chroot's GDB 18 runs the same
# scripts from tests/chroot/gdb18.sh.
# The top-level enable_testing() comes after add_subdirectory(gdb-python):
# enable it for this directory, or its add_test() calls are dropped.
enable_testing()
find_program(SFUNWIND_GDB_PROGRAM gdb)
find_package(Python3 COMPONENTS Interpreter)
if(NOT SFUNWIND_GDB_PROGRAM OR NOT Python3_Interpreter_FOUND)
  message(WARNING "gdb or python3 not found: the GDB tests are not registered")
  return()
endif()

set(_gdb_tests ${PROJECT_SOURCE_DIR}/tests/gdb)
set(_loader ${CMAKE_CURRENT_BINARY_DIR}/sfunwind.py)
set(_common --gdb ${SFUNWIND_GDB_PROGRAM} --loader ${_loader} --runs host)

# One test per SFrame writer, so that CTest can run them side by side.
foreach(writer gas-2.40 gas-2.44 gas-2.47 clang-23)
  add_test(NAME gdb13_live_${writer}
           COMMAND ${Python3_EXECUTABLE} ${_gdb_tests}/run_gdb_tests.py ${_common} --writer ${writer})
endforeach()
add_test(NAME gdb13_noeh COMMAND ${Python3_EXECUTABLE} ${_gdb_tests}/run_noeh_tests.py ${_common})
add_test(NAME gdb13_callee_saved
         COMMAND ${Python3_EXECUTABLE} ${_gdb_tests}/run_callee_saved_tests.py ${_common})
add_test(NAME gdb13_commands COMMAND ${Python3_EXECUTABLE} ${_gdb_tests}/run_command_tests.py ${_common})
# aarch64 and s390x under qemu-user's gdbstub (bookworm's qemu 7.2 signs
# return addresses in a way GDB 13 cannot strip: no PAuth fixture here; the
# chroot runs it with qemu 11 and GDB 18).
find_program(SFUNWIND_GDB_MULTIARCH gdb-multiarch)
find_program(SFUNWIND_QEMU_AARCH64 qemu-aarch64)
find_program(SFUNWIND_QEMU_S390X qemu-s390x)
if(SFUNWIND_GDB_MULTIARCH AND SFUNWIND_QEMU_AARCH64 AND SFUNWIND_QEMU_S390X)
  add_test(NAME gdb13_qemu COMMAND ${Python3_EXECUTABLE} ${_gdb_tests}/run_qemu_tests.py
           --gdb ${SFUNWIND_GDB_MULTIARCH} --loader ${_loader})
  set_tests_properties(gdb13_qemu PROPERTIES LABELS gdb TIMEOUT 1800)
else()
  message(WARNING "gdb-multiarch, qemu-aarch64 or qemu-s390x not found: gdb13_qemu is not registered")
endif()
# PowerPC64 programs without SFrame, unwound from their traceback tables
# under qemu-ppc64/qemu-ppc64le's gdbstub, against GDB's CFI walk (Python
# path only: GDB's JIT reader interface cannot set a PowerPC PC).
find_program(SFUNWIND_QEMU_PPC64 qemu-ppc64)
find_program(SFUNWIND_QEMU_PPC64LE qemu-ppc64le)
if(SFUNWIND_GDB_MULTIARCH AND SFUNWIND_QEMU_PPC64 AND SFUNWIND_QEMU_PPC64LE)
  set(_ppc64_cli)
  if(TARGET sfunwind)
    set(_ppc64_cli --sfunwind $<TARGET_FILE:sfunwind>)
  endif()
  add_test(NAME gdb13_ppc64 COMMAND ${Python3_EXECUTABLE} ${_gdb_tests}/run_ppc64_tests.py
           --gdb ${SFUNWIND_GDB_MULTIARCH} --loader ${_loader} ${_ppc64_cli})
  set_tests_properties(gdb13_ppc64 PROPERTIES LABELS "gdb;ppc64" TIMEOUT 1800)
else()
  message(WARNING "gdb-multiarch, qemu-ppc64 or qemu-ppc64le not found: gdb13_ppc64 is not registered")
endif()
add_test(NAME gdb_native_api COMMAND ${Python3_EXECUTABLE} ${_gdb_tests}/test_native_api.py
         --library $<TARGET_FILE:sfunwind_gdb>)
set_tests_properties(gdb13_live_gas-2.40 gdb13_live_gas-2.44 gdb13_live_gas-2.47 gdb13_live_clang-23
                     gdb13_noeh gdb13_commands gdb_native_api
                     PROPERTIES LABELS gdb TIMEOUT 1800)
# Hostile stacks (tests/fixtures/src/hostile.c): bounded backtraces with a
# reason on smashed stacks, and a corrupt .sframe reported once.
add_test(NAME gdb13_hostile COMMAND ${Python3_EXECUTABLE} ${_gdb_tests}/run_hostile_tests.py ${_common})
set_tests_properties(gdb13_hostile PROPERTIES LABELS gdb TIMEOUT 900)
# Two threads below one call site (tests/gdb/src/threads.c, built by the
# test with the host's cc): each thread's backtrace equals the CFI build's.
add_test(NAME gdb13_threads COMMAND ${Python3_EXECUTABLE} ${_gdb_tests}/run_thread_tests.py ${_common})
set_tests_properties(gdb13_threads PROPERTIES LABELS gdb TIMEOUT 600)
# Two inferiors whose programs lie at the same addresses: each one's
# backtrace, after switching between them, equals GDB's DWARF unwinder's at
# the same stop (the native path suspended while both exist).
add_test(NAME gdb13_inferiors COMMAND ${Python3_EXECUTABLE} ${_gdb_tests}/run_inferior_tests.py ${_common})
set_tests_properties(gdb13_inferiors PROPERTIES LABELS gdb TIMEOUT 600)
# A program of 120 shared libraries, a frame in each (tests/gdb/src/
# many_libraries.py, built by the test with the host's cc): backtraces equal
# the CFI build's, live and from a core, and the load addresses are listed a
# few times, not once per library.
add_test(NAME gdb13_many_libraries
         COMMAND ${Python3_EXECUTABLE} ${_gdb_tests}/run_many_libraries_tests.py ${_common})
set_tests_properties(gdb13_many_libraries PROPERTIES LABELS gdb TIMEOUT 600)

// SPDX-License-Identifier: MIT
#include "bt/bt_command.hpp"
#include "check/check_commands.hpp"
#include "commands.hpp"

#include <cstdio>
#include <cstring>
#include <string>

namespace {

constexpr const char* usage = R"(usage: sfunwind COMMAND [OPTIONS] ...

Unwind stacks with SFrame (.sframe) and check them against DWARF CFI.

Commands:
  dump FILE...            print the .sframe section as objdump --sframe does
  lookup FILE PC...       print the row (CFA, RA and FP rules) for each PC
  validate FILE...        check a section strictly; every problem with its offset
  bt -- PROG [ARGS...]    run PROG, stop it at a crash or signal, print every
                          thread's backtrace unwound by SFrame
  bt -p PID               the same for a running process
  bt --core CORE EXE      the same for a core dump
  tbtab FILE [PC...]      PowerPC64 traceback tables: every function's table, or
                          the row for each PC (--json --scan --rows --check)
  check FILE...           compare SFrame with DWARF CFI at every row boundary
  convert FILE -o OUT     write an SFrame v3 section made from FILE's CFI

Run `sfunwind COMMAND --help` for a command's options.
Exit status: 0 success, 1 a finding (problems, differences, an incomplete
backtrace), 2 usage or input errors.
)";

} // namespace

int main(int argc, char** argv) {
    using namespace sfunwind::cli;
    if (argc < 2 || std::strcmp(argv[1], "--help") == 0 || std::strcmp(argv[1], "-h") == 0) {
        std::fputs(usage, argc < 2 ? stderr : stdout);
        return argc < 2 ? exit_usage : exit_ok;
    }
    if (std::strcmp(argv[1], "--version") == 0) {
        std::puts("sfunwind " SFUNWIND_VERSION);
        return exit_ok;
    }
    const std::string command = argv[1];
    const Args args(argv + 2, argv + argc);
    if (command == "dump") return run_dump(args);
    if (command == "lookup") return run_lookup(args);
    if (command == "validate") return run_validate(args);
    if (command == "tbtab") return run_tbtab(args);
    if (command == "bt") return run_bt(argc - 2, argv + 2);
    if (command == "check") return run_check(args);
    if (command == "convert") return run_convert(args);
    std::fprintf(stderr, "sfunwind: unknown command '%s'\n\n%s", command.c_str(), usage);
    return exit_usage;
}

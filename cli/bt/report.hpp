// SPDX-License-Identifier: MIT
// What `sfunwind bt` prints: the target, how it stopped, the modules, and
// each thread's walks, as text or as one JSON document.
#pragma once

#include "process_modules.hpp"
#include "sfunwind/abi.hpp"
#include "thread_walk.hpp"

#include <cstdio>
#include <string>
#include <sys/types.h>
#include <vector>

namespace sfunwind::cli::bt {

struct Report {
    std::string kind;    // "program" (launched), "process" (attached), "core"
    std::string program; // the executable
    std::string core;    // the core file, for "core"
    pid_t pid = 0;
    std::string stop; // how the target stopped, one line
    Abi abi{};
    const ProcessModules* modules = nullptr;
    // Names functions ElfFile's symbol tables do not (separate debug files); may be null.
    DwflSession* dwfl = nullptr;
    std::vector<ThreadWalk> threads; // the thread that stopped it first
    bool verbose = false;
    bool require_complete = false;
    bool print_registers = false; // text: each frame's recovered rbx, r12-r15
    int exit_status = 0;
};

// The function containing a frame's PC: the module's own symbols, else libdwfl's.
SymbolName frame_symbol(const Report& report, FrameAddress address);

void print_text(const Report& report, std::FILE* out);
void print_json(const Report& report, std::FILE* out);

} // namespace sfunwind::cli::bt

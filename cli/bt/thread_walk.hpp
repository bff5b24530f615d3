// SPDX-License-Identifier: MIT
// One thread's result: its SFrame backtrace, how the walk ended, and, with
// --compare-cfi, libdwfl's CFI backtrace and the frame-by-frame comparison.
#pragma once

#include "cfi_comparison.hpp"
#include "dwfl_session.hpp"
#include "process_modules.hpp"
#include "sfunwind/callee_saved/module_rules.hpp"
#include "sfunwind/unwind/backtrace.hpp"

#include <optional>
#include <string>
#include <sys/types.h>

namespace sfunwind::cli::bt {

enum class WalkEnd : std::uint8_t {
    Outermost,    // the rules say the stack ends here
    LeftCoverage, // the PC is in a mapped module, but SFrame has nothing for it
    Failed,       // anything else: unreadable memory, a bad frame, a PC in no module
};

const char* to_string(WalkEnd end) noexcept;

// Decides how a walk ended. A NotFound stop is only "left coverage" when the
// PC lies in a mapped ELF module (a library without .sframe, code without an
// FDE); a PC outside every module means the previous step went wrong.
WalkEnd classify(const Backtrace& bt, const ProcessModules& modules, std::string& message);

struct ThreadWalk {
    pid_t tid = 0;
    int signal = 0;          // the signal that stopped it; 0 if interrupted
    std::string stop_detail; // "SEGV_MAPERR, address 0x0"
    std::string error;       // registers unavailable: no walk
    Backtrace sframe;
    WalkEnd end = WalkEnd::Failed;
    std::string end_message;
    // Each SFrame frame's own rbx, r12-r15 (untracked_callee_saved(abi)
    // order), one per frame; empty when the recovery is off or the ABI is
    // not x86-64.
    std::vector<callee_saved::FrameValues> saved;
    std::optional<CfiBacktrace> cfi;
    std::optional<CfiComparison> comparison;

    bool passed(bool require_complete) const;
};

} // namespace sfunwind::cli::bt

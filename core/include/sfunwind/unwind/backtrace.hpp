// SPDX-License-Identifier: MIT
// Whole-stack walks: look up each frame's row in its module, step, repeat,
// until the outermost frame, a failure, or a limit. The single loop every
// consumer that walks a whole stack itself uses (the CLI, LLDB's `sframe bt`).
#pragma once

#include "sfunwind/unwind/module_set.hpp"
#include "sfunwind/unwind/step.hpp"

#include <cstdint>
#include <optional>
#include <vector>

namespace sfunwind {

struct BacktraceOptions {
    std::uint32_t max_frames = 4096;
    StepOptions step;
};

struct Frame {
    FrameRegs regs;        // this frame's registers (pc is the runtime PC)
    std::uint64_t cfa = 0; // known once the frame has been stepped
    const Module* module = nullptr;
    std::optional<Row> row; // the row used to step out of this frame
};

struct Backtrace {
    std::vector<Frame> frames;
    // Why the walk ended: Errc::Outermost when the stack really ended; any
    // other code for failures ("no FDE covers ...", unreadable memory, a
    // loop, the frame limit).
    Error stop{Errc::Outermost, ""};
    bool complete() const { return stop.code() == Errc::Outermost; }
};

// The PC to look rows up with: a caller frame's PC is a return address, which
// may already be past the end of a noreturn call's function, so use pc - 1.
inline std::uint64_t lookup_pc(std::uint64_t pc, bool is_return_address) {
    return is_return_address && pc != 0 ? pc - 1 : pc;
}

// Steps one frame with the modules' rows: finds the module and row for
// `callee` and applies step(). `topmost` as for step(); `row_out` receives the
// row used, and stays empty when there is none (no module, no FDE, or a
// damaged one).
Expected<StepResult> step_frame(const ModuleSet& modules, const FrameRegs& callee, bool topmost,
                                MemoryReader& memory, RegisterSource* extra,
                                const StepOptions& options, std::optional<Row>* row_out = nullptr,
                                const Module** module_out = nullptr);

Backtrace backtrace(const ModuleSet& modules, const FrameRegs& top, MemoryReader& memory,
                    RegisterSource* extra = nullptr, const BacktraceOptions& options = {});

} // namespace sfunwind

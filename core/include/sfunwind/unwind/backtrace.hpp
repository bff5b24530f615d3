// SPDX-License-Identifier: MIT
// Whole-stack walks: look up each frame's row in its module, step, repeat,
// until the outermost frame, a failure, or a limit. The single loop every
// consumer that walks a whole stack itself uses (the CLI, LLDB's `sframe bt`).
#pragma once

#include "sfunwind/unwind/frame_address.hpp"
#include "sfunwind/unwind/module_set.hpp"
#include "sfunwind/unwind/step.hpp"

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace sfunwind {

struct BacktraceOptions {
    std::uint32_t max_frames = 4096;
    StepOptions step;
};

struct Frame {
    FrameRegs regs; // this frame's registers (pc is the runtime PC)
    // regs.pc, and whether it is a return address (every caller frame but one
    // a signal interrupted): where the frame's row and symbol are looked up.
    FrameAddress address = FrameAddress::instruction_pointer(0);
    std::uint64_t cfa = 0; // known once the frame has been stepped
    const Module* module = nullptr;
    std::optional<Row> row; // the row used to step out of this frame
};

// Why a walk ended. Only Outermost is the stack's normal end.
enum class StopReason : std::uint8_t {
    Outermost,  // the rules say the stack ends here (StackEnd)
    NoRow,      // no module with unwind rows, or no row in it, covers the frame's PC
    StepFailed, // a step failed: a damaged FDE, unreadable memory, a register rule that cannot
                // be followed, an impossible frame
    NoProgress, // a frame repeats: the walk would loop
    FrameLimit, // the walk reached BacktraceOptions::max_frames
};

const char* to_string(StopReason reason) noexcept;

struct BacktraceStop {
    StopReason reason = StopReason::Outermost;
    StackEnd end = StackEnd::RaUndefined; // for Outermost
    std::uint64_t outermost_pc = 0;       // the outermost frame's PC, for the message
    // What went wrong, with its location, for every other reason.
    std::optional<Error> error;

    // "outermost frame: the return address is undefined at 0x401000", or
    // the error's message.
    std::string message() const;
    // A short name of the cause, for JSON: "outermost frame" or the error
    // code's name ("not found", "bad frame", ...).
    const char* code_name() const noexcept;
};

struct Backtrace {
    std::vector<Frame> frames;
    BacktraceStop stop;
    bool complete() const { return stop.reason == StopReason::Outermost; }
};

// Steps one frame with the modules' rows: finds the module and row for
// `callee` (at FrameAddress::of_frame(callee.pc, topmost).lookup_address())
// and applies step(). `topmost` as for step(); `row_out` receives the
// row used, and stays empty when there is none (no module, no FDE, or a
// damaged one).
Expected<StepResult> step_frame(const ModuleSet& modules, const FrameRegs& callee, bool topmost,
                                MemoryReader& memory, RegisterSource* extra,
                                const StepOptions& options, std::optional<Row>* row_out = nullptr,
                                const Module** module_out = nullptr);

Backtrace backtrace(const ModuleSet& modules, const FrameRegs& top, MemoryReader& memory,
                    RegisterSource* extra = nullptr, const BacktraceOptions& options = {});

} // namespace sfunwind

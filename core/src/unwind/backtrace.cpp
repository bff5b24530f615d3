// SPDX-License-Identifier: MIT
#include "sfunwind/unwind/backtrace.hpp"

#include <string>

namespace sfunwind {

const char* to_string(StopReason reason) noexcept {
    switch (reason) {
    case StopReason::Outermost:
        return "outermost";
    case StopReason::NoRow:
        return "no-row";
    case StopReason::StepFailed:
        return "step-failed";
    case StopReason::NoProgress:
        return "no-progress";
    case StopReason::FrameLimit:
        return "frame-limit";
    }
    return "?";
}

std::string BacktraceStop::message() const {
    if (reason == StopReason::Outermost || !error)
        return std::string("outermost frame: ") + to_string(end) + " at " + to_hex(outermost_pc);
    return error->message();
}

const char* BacktraceStop::code_name() const noexcept {
    if (reason == StopReason::Outermost || !error) return "outermost frame";
    return to_string(error->code());
}

Expected<StepResult> step_frame(const ModuleSet& modules, const FrameRegs& callee, bool topmost,
                                MemoryReader& memory, RegisterSource* extra,
                                const StepOptions& options, std::optional<Row>* row_out,
                                const Module** module_out) {
    const std::uint64_t pc = FrameAddress::of_frame(callee.pc, topmost).lookup_address();
    const Module* m = modules.find(pc);
    if (module_out != nullptr) *module_out = m;
    if (m == nullptr || !m->rows)
        return Error(Errc::NotFound, "no module with SFrame covers " + to_hex(callee.pc));
    auto row = m->lookup(pc - m->bias);
    if (!row) return Error(row.error().code(), m->name + ": " + row.error().message());
    // Rows are in link-time addresses; the stepper works on runtime values,
    // which a row's rules never mix with PCs.
    if (row_out != nullptr) *row_out = *row;
    return step(*row, *m->abi(), callee, topmost, memory, extra, options);
}

Backtrace backtrace(const ModuleSet& modules, const FrameRegs& top, MemoryReader& memory,
                    RegisterSource* extra, const BacktraceOptions& options) {
    Backtrace bt;
    FrameRegs regs = top;
    bool topmost = true;
    std::uint32_t stalled = 0; // consecutive frames whose SP did not move
    const auto stop = [&bt](StopReason reason, Error error) {
        bt.stop.reason = reason;
        bt.stop.error = std::move(error);
    };
    while (true) {
        if (bt.frames.size() >= options.max_frames) {
            stop(StopReason::FrameLimit,
                 Error(Errc::BadFrame,
                       "stopped after " + std::to_string(options.max_frames) + " frames"));
            return bt;
        }
        Frame frame;
        frame.regs = regs;
        frame.address = FrameAddress::of_frame(regs.pc, topmost);
        auto next = step_frame(modules, regs, topmost, memory, extra, options.step, &frame.row,
                               &frame.module);
        if (!next) {
            bt.frames.push_back(frame);
            const StopReason reason =
                next.error().code() == Errc::NotFound ? StopReason::NoRow : StopReason::StepFailed;
            stop(reason, std::move(next).error());
            return bt;
        }
        frame.cfa = next->cfa;
        bt.frames.push_back(frame);
        if (next->outermost()) {
            bt.stop.reason = StopReason::Outermost;
            bt.stop.end = next->end;
            bt.stop.outermost_pc = regs.pc;
            return bt;
        }
        const FrameRegs& caller = *next->caller;
        // A frame that does not move the stack can only repeat so often before
        // it is a loop (s390x leaf frames legitimately keep the SP).
        if (caller.sp == regs.sp) {
            if (caller.pc == regs.pc || ++stalled > 16) {
                stop(StopReason::NoProgress,
                     Error(Errc::BadFrame, "no progress: frame at pc " + to_hex(caller.pc) +
                                               " sp " + to_hex(caller.sp) + " repeats"));
                return bt;
            }
        } else {
            stalled = 0;
        }
        regs = caller;
        // After a signal frame, the interrupted frame's PC is not a return
        // address, and all its registers were saved: it is stepped as topmost.
        topmost = frame.row && frame.row->signal_frame;
    }
}

} // namespace sfunwind

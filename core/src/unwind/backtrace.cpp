// SPDX-License-Identifier: MIT
#include "sfunwind/unwind/backtrace.hpp"

#include <cstdio>
#include <string>

namespace sfunwind {
namespace {} // namespace

Expected<StepResult> step_frame(const ModuleSet& modules, const FrameRegs& callee, bool topmost,
                                MemoryReader& memory, RegisterSource* extra,
                                const StepOptions& options, std::optional<Row>* row_out,
                                const Module** module_out) {
    const std::uint64_t pc = lookup_pc(callee.pc, !topmost);
    const Module* m = modules.find(pc);
    if (module_out != nullptr) *module_out = m;
    if (m == nullptr || !m->has_rows())
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
    while (true) {
        if (bt.frames.size() >= options.max_frames) {
            bt.stop = Error(Errc::BadFrame,
                            "stopped after " + std::to_string(options.max_frames) + " frames");
            return bt;
        }
        Frame frame;
        frame.regs = regs;
        auto next = step_frame(modules, regs, topmost, memory, extra, options.step, &frame.row,
                               &frame.module);
        if (!next) {
            bt.frames.push_back(frame);
            bt.stop = std::move(next).error();
            return bt;
        }
        frame.cfa = next->cfa;
        bt.frames.push_back(frame);
        // A frame that does not move the stack can only repeat so often before
        // it is a loop (s390x leaf frames legitimately keep the SP).
        if (next->caller.sp == regs.sp) {
            if (next->caller.pc == regs.pc || ++stalled > 16) {
                bt.stop =
                    Error(Errc::BadFrame, "no progress: frame at pc " + to_hex(next->caller.pc) +
                                              " sp " + to_hex(next->caller.sp) + " repeats");
                return bt;
            }
        } else {
            stalled = 0;
        }
        regs = next->caller;
        // After a signal frame, the interrupted frame's PC is not a return
        // address: look it up as is.
        topmost = frame.row && frame.row->signal_frame;
    }
}

} // namespace sfunwind

// SPDX-License-Identifier: MIT
#include "frame_unwind.hpp"

#include "sfunwind/unwind/window.hpp"

#include <limits>

namespace sfunwind::gdb {
namespace {

// Turns the "same value" registers into values, which is what GDB takes:
// the frame's own value of the register is what the step that produced
// this frame gave GDB (`produced`), or, for a frame no step of ours
// produced (the topmost, or one GDB's own unwinders made), GDB's value
// (`registers`). Unknown there means unknown for the caller too.
void resolve_same_values(std::span<const callee_saved::SavedRegister> produced,
                         RegisterSource& registers, std::span<callee_saved::SavedRegister> saved) {
    using Kind = callee_saved::SavedRegister::Kind;
    for (auto& s : saved) {
        if (s.kind != Kind::SameValue) continue;
        std::optional<std::uint64_t> own;
        if (!produced.empty()) {
            for (const auto& p : produced)
                if (p.reg == s.reg && p.kind == Kind::Value) own = p.value;
        } else {
            own = registers.get(s.reg);
        }
        s.kind = own ? Kind::Value : Kind::NotSaved;
        s.value = own.value_or(0);
    }
}

} // namespace

Expected<FrameOutput> unwind_frame(ModuleTable& table, const FrameInput& in, MemoryReader& target,
                                   RegisterSource& registers) {
    // A frame the previous step did not produce starts a new run of frames:
    // a topmost frame, one GDB's own unwinders made, or a frame of another
    // thread, inferior or moment (thread apply, inferior, record goto,
    // tfind), whose stack may hold other bytes at the same addresses: the
    // stack bytes read so far are not used for it.
    const std::optional<FrameRegs> produced = table.produced_caller(in.level, in.pc, in.sp);
    if (!produced) table.forget_stack();
    std::optional<std::uint64_t> sp = in.sp;
    std::optional<std::uint64_t> fp = in.fp;
    if (produced) {
        sp = sp.value_or(produced->sp);
        fp = fp.value_or(produced->fp);
    }
    if (!sp || !fp) {
        const Abi* frame_abi = table.abi_at(in.pc);
        if (frame_abi == nullptr)
            return Error(Errc::NotFound, "no module covers the frame's pc", Address{in.pc});
        if (!sp) sp = registers.get(frame_abi->sp_reg);
        if (!fp) fp = registers.get(frame_abi->fp_reg);
        // Both are needed: the caller's FP is given even when unchanged.
        if (!sp || !fp)
            return Error(Errc::UnsafeRule, "the stack or frame pointer's value is not available",
                         Address{in.pc});
    }
    auto chosen = table.lookup_frame(in.pc, *sp, in.level);
    if (!chosen) return std::move(chosen).error();
    FrameOutput out;
    out.found = chosen->found;
    out.topmost = chosen->topmost;
    const Abi& abi = *out.found.abi;
    const Row& row = out.found.row;

    FrameRegs callee{in.pc, *sp, *fp, std::nullopt};
    // The link register holds the RA only while every register is live
    // (step.hpp: a caller frame's ra is unknown).
    if (out.topmost && abi.ra_in_register) callee.ra = registers.get(abi.ra_reg);

    const ReadWindow plan = plan_reads(row);
    std::uint64_t addr = 0;
    std::span<const std::uint8_t> bytes;
    std::optional<std::uint64_t> base;
    if (plan.base_reg == abi.sp_reg)
        base = callee.sp;
    else if (plan.base_reg == abi.fp_reg)
        base = callee.fp;
    if (plan.size > 0 && base) {
        const std::uint64_t want = *base + static_cast<std::uint64_t>(plan.offset);
        bytes = table.stack_chunk().cover(want, plan.size, target, &addr);
    }
    WindowMemory memory(addr, bytes, &target);
    auto next = step(row, abi, callee, out.topmost, memory, &registers);
    if (!next) return std::move(next).error();
    out.step = *next;
    out.fallback_reads = memory.fallback_reads();
    const OpenModule* module = table.get(out.found.module);
    if (next->caller && table.recover_callee_saved && module != nullptr && module->callee_saved) {
        if (const auto* rules = module->callee_saved->function(row.func_start, row.func_size)) {
            const std::uint64_t lookup =
                FrameAddress::of_frame(in.pc, out.topmost).lookup_address() - out.found.bias;
            out.saved_count = callee_saved::recover(*rules, lookup, next->cfa, memory, out.saved);
            resolve_same_values(table.produced_saved(in.level, in.pc, in.sp), registers,
                                std::span(out.saved.data(), out.saved_count));
        }
    }
    const bool level_known = in.level >= 0 && in.level < std::numeric_limits<std::int32_t>::max();
    if (next->caller) {
        table.record_caller(*next->caller, level_known ? in.level + 1 : -1, row.signal_frame);
        table.record_caller_saved(std::span(out.saved.data(), out.saved_count));
    }
    return out;
}

} // namespace sfunwind::gdb

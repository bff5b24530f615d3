// SPDX-License-Identifier: MIT
#include "frame_unwind.hpp"

#include <array>

namespace sfunwind::gdb {
namespace {

// Bytes a planned window may span: two words at most a few hundred bytes
// apart would need more, and then go to the target word by word.
constexpr std::size_t max_window = 256;

bool covers(std::uint64_t window_addr, std::size_t window_size, std::uint64_t addr,
            std::uint32_t size) {
    const std::uint64_t rel = addr - window_addr;
    return rel <= window_size && size <= window_size - rel;
}

} // namespace

Expected<FrameOutput> unwind_frame(ModuleTable& table, const FrameInput& in,
                                   std::uint64_t window_addr, std::span<const std::uint8_t> window,
                                   MemoryReader& target, RegisterSource& registers) {
    auto chosen = table.lookup_frame(in.pc, in.sp, in.level);
    if (!chosen) return std::move(chosen).error();
    FrameOutput out;
    out.found = chosen->found;
    out.topmost = chosen->topmost;
    const Abi& abi = *out.found.abi;
    const Row& row = out.found.row;

    // Rules that compute with the FP (CFA = fp + n, a slot at fp + n) need
    // its value; "FP unchanged" alone does not (see sfunwind_gdb_unwind()).
    auto reads = [&](std::uint16_t reg) { return reg == abi.fp_reg; };
    out.needs_fp = reads(row.cfa.reg) || (row.ra.reads_register() && reads(row.ra.reg)) ||
                   (row.fp.reads_register() && reads(row.fp.reg));
    std::optional<std::uint64_t> fp = in.fp;
    if (!fp && out.needs_fp) {
        fp = registers.get(abi.fp_reg);
        if (!fp)
            return Error(Errc::UnsafeRule, "the frame pointer's value is not available",
                         Address{in.pc});
    }
    FrameRegs callee{in.pc, in.sp, fp.value_or(0), std::nullopt};
    // The link register holds the RA only while every register is live
    // (step.hpp: a caller frame's ra is unknown).
    if (out.topmost && abi.ra_in_register) callee.ra = in.ra ? in.ra : registers.get(abi.ra_reg);

    out.plan = plan_reads(row);
    std::array<std::uint8_t, max_window> local{};
    std::uint64_t addr = window_addr;
    std::span<const std::uint8_t> bytes = window;
    if (out.plan.size > 0 && out.plan.size <= local.size()) {
        std::optional<std::uint64_t> base;
        if (out.plan.base_reg == abi.sp_reg)
            base = callee.sp;
        else if (out.plan.base_reg == abi.fp_reg)
            base = callee.fp;
        if (base) {
            const std::uint64_t want = *base + static_cast<std::uint64_t>(out.plan.offset);
            if (!covers(window_addr, window.size(), want, out.plan.size)) {
                auto buf = std::span<std::uint8_t>(local.data(), out.plan.size);
                if (target.read(want, buf)) {
                    addr = want;
                    bytes = buf;
                }
            }
        }
    }
    WindowMemory memory(addr, bytes, &target);
    auto next = step(row, abi, callee, out.topmost, memory, &registers);
    if (!next) return std::move(next).error();
    out.step = *next;
    out.fallback_reads = memory.fallback_reads();
    if (next->caller) table.record_caller(next->caller->pc, next->caller->sp, row.signal_frame);
    return out;
}

} // namespace sfunwind::gdb

// SPDX-License-Identifier: MIT
// SFrame v3 appendix A ("Generating Stack Traces using SFrame"), generalised
// to the rule kinds a Row can hold, with the safety checks the appendix leaves
// to the implementation.
#include "sfunwind/unwind/step.hpp"

#include <array>
#include <cstdio>
#include <string>

namespace sfunwind {
namespace {

class Stepper {
  public:
    Stepper(const Row& row, const Abi& abi, const FrameRegs& callee, bool topmost,
            MemoryReader& memory, RegisterSource* extra)
        : row_(row), abi_(abi), callee_(callee), topmost_(topmost), memory_(memory), extra_(extra) {
    }

    Expected<std::uint64_t> reg(std::uint16_t r, const char* what) const {
        if (r == abi_.sp_reg) return callee_.sp;
        if (r == abi_.fp_reg) return callee_.fp;
        if (r == abi_.ra_reg && callee_.ra) return *callee_.ra;
        if (!topmost_)
            return Error(Errc::UnsafeRule,
                         std::string(what) + " rule reads " + register_name(abi_, r) +
                             ", which is only known in the topmost frame",
                         Address{callee_.pc});
        if (extra_ != nullptr)
            if (auto v = extra_->get(r)) return *v;
        return Error(Errc::UnsafeRule,
                     std::string(what) + " rule reads " + register_name(abi_, r) +
                         ", whose value is not available",
                     Address{callee_.pc});
    }

    Expected<std::uint64_t> load(std::uint64_t addr, const char* what) const {
        std::array<std::uint8_t, 8> buf{};
        if (!memory_.read(addr, buf))
            return Error(Errc::MemoryUnreadable,
                         std::string("cannot read the ") + what + " at " + to_hex(addr), addr);
        std::uint64_t v = 0;
        (void)ByteView(buf, abi_.order).load(0, v);
        return v;
    }

    // The caller's value of RA or FP under `rule`; `same` is the callee's value.
    Expected<std::uint64_t> apply(const RegRule& rule, std::uint64_t cfa,
                                  std::optional<std::uint64_t> same, const char* what) const {
        const auto off = static_cast<std::uint64_t>(std::int64_t{rule.offset});
        switch (rule.kind) {
        case RegRule::Kind::Undefined:
            return Error(Errc::Outermost,
                         std::string(what) + " is undefined at " + to_hex(callee_.pc));
        case RegRule::Kind::SameValue:
            if (!same)
                return Error(Errc::UnsafeRule,
                             std::string(what) +
                                 " is still in its register, which is only known in the "
                                 "topmost frame",
                             Address{callee_.pc});
            return *same;
        case RegRule::Kind::AtCfa:
            return load(cfa + off, what);
        case RegRule::Kind::ValCfa:
            return cfa + off;
        case RegRule::Kind::AtReg: {
            auto base = reg(rule.reg, what);
            if (!base) return base;
            return load(*base + off, what);
        }
        case RegRule::Kind::ValReg: {
            auto base = reg(rule.reg, what);
            if (!base) return base;
            return *base + off;
        }
        }
        return Error(Errc::Malformed, std::string("unknown rule for the ") + what);
    }

    const Row& row_;
    const Abi& abi_;
    const FrameRegs& callee_;
    bool topmost_;
    MemoryReader& memory_;
    RegisterSource* extra_;
};

} // namespace

Expected<StepResult> step(const Row& row, const Abi& abi, const FrameRegs& callee, bool topmost,
                          MemoryReader& memory, RegisterSource* extra, const StepOptions& options) {
    if (row.outermost)
        return Error(Errc::Outermost,
                     "outermost frame: the return address is undefined at " + to_hex(callee.pc));
    if (row.topmost_only && !topmost)
        return Error(Errc::UnsafeRule,
                     "the row at " + to_hex(callee.pc) +
                         " uses register rules valid only in the topmost frame",
                     Address{callee.pc});
    const Stepper s(row, abi, callee, topmost, memory, extra);

    auto cfa_base = s.reg(row.cfa.reg, "CFA");
    if (!cfa_base) return std::move(cfa_base).error();
    std::uint64_t cfa = *cfa_base + static_cast<std::uint64_t>(std::int64_t{row.cfa.offset});
    if (row.cfa.deref) {
        auto v = s.load(cfa, "CFA");
        if (!v) return std::move(v).error();
        cfa = *v;
    }
    if (cfa % 8 != 0)
        return Error(Errc::BadFrame, "CFA " + to_hex(cfa) + " is not 8-byte aligned",
                     Address{callee.pc});

    StepResult out;
    out.cfa = cfa;
    out.caller.sp = cfa + static_cast<std::uint64_t>(std::int64_t{abi.sp_from_cfa});
    if (options.check_stack_direction && !row.signal_frame && out.caller.sp < callee.sp)
        return Error(Errc::BadFrame,
                     "caller SP " + to_hex(out.caller.sp) + " is below the callee's " +
                         to_hex(callee.sp) + ": the stack would grow up",
                     Address{callee.pc});

    // "RA unchanged" means "still in the link register"; x86-64 has none.
    auto ra = s.apply(row.ra, cfa, abi.ra_in_register ? callee.ra : std::nullopt, "return address");
    if (!ra) return std::move(ra).error();
    std::uint64_t pc = *ra;
    if (row.mangled_ra) pc &= ~options.pac_mask; // strip the PAC (AArch64 PAuth)
    if (pc == 0) return Error(Errc::Outermost, "return address is 0: end of the stack");

    auto fp = s.apply(row.fp, cfa, callee.fp, "frame pointer");
    if (!fp) return std::move(fp).error();
    out.caller.pc = pc;
    out.caller.fp = *fp;
    out.fp_restored = row.fp.kind != RegRule::Kind::SameValue;
    return out;
}

} // namespace sfunwind

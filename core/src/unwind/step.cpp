// SPDX-License-Identifier: MIT
// SFrame v3 appendix A ("Generating Stack Traces using SFrame"), generalised
// to the rule kinds a Row can hold, with the safety checks the appendix leaves
// to the implementation.
#include "sfunwind/unwind/step.hpp"

#include <array>
#include <limits>
#include <string>

namespace sfunwind {
namespace {

// base + offset, or nothing when the sum leaves [0, 2^64): a corrupt row or a
// garbage register must not wrap around into a plausible address.
std::optional<std::uint64_t> add_offset(std::uint64_t base, std::int64_t offset) {
    if (offset >= 0) {
        const auto up = static_cast<std::uint64_t>(offset);
        if (base > std::numeric_limits<std::uint64_t>::max() - up) return std::nullopt;
        return base + up;
    }
    // -(offset + 1) + 1 avoids negating INT64_MIN.
    const std::uint64_t down = static_cast<std::uint64_t>(-(offset + 1)) + 1;
    if (base < down) return std::nullopt;
    return base - down;
}

std::string signed_text(std::int64_t offset) {
    return offset < 0 ? "-" + to_hex(static_cast<std::uint64_t>(-(offset + 1)) + 1)
                      : "+" + to_hex(static_cast<std::uint64_t>(offset));
}

class Stepper {
  public:
    Stepper(const Abi& abi, const FrameRegs& callee, bool topmost, MemoryReader& memory,
            RegisterSource* extra)
        : abi_(abi), callee_(callee), topmost_(topmost), memory_(memory), extra_(extra) {}

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

    // `base` (the value of DWARF register `base_reg`, or of the CFA when
    // none) plus a rule's offset. The register is named only in the error:
    // this runs for every frame.
    Expected<std::uint64_t> add(std::uint64_t base, std::int64_t offset,
                                std::optional<std::uint16_t> base_reg, const char* what) const {
        if (auto sum = add_offset(base, offset)) return *sum;
        const std::string base_name = base_reg ? register_name(abi_, *base_reg) : "CFA";
        return Error(Errc::BadFrame,
                     std::string("integer overflow: the ") + what + " address " + base_name + " (" +
                         to_hex(base) + ")" + signed_text(offset) +
                         " wraps around the address space",
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
        switch (rule.kind) {
        case RegRule::Kind::Undefined:
            // The RA's Undefined rule is the row's outermost flag, handled by
            // step(); any other register with no value has no caller value.
            return Error(Errc::UnsafeRule,
                         std::string(what) + " is undefined at " + to_hex(callee_.pc),
                         Address{callee_.pc});
        case RegRule::Kind::SameValue:
            if (!same)
                return Error(Errc::UnsafeRule,
                             std::string(what) +
                                 " is still in its register, which is only known in the "
                                 "topmost frame",
                             Address{callee_.pc});
            return *same;
        case RegRule::Kind::AtCfa: {
            auto slot = add(cfa, rule.offset, std::nullopt, what);
            if (!slot) return slot;
            return load(*slot, what);
        }
        case RegRule::Kind::ValCfa:
            return add(cfa, rule.offset, std::nullopt, what);
        case RegRule::Kind::AtReg:
        case RegRule::Kind::ValReg: {
            auto base = reg(rule.reg, what);
            if (!base) return base;
            auto slot = add(*base, rule.offset, rule.reg, what);
            if (!slot || rule.kind == RegRule::Kind::ValReg) return slot;
            return load(*slot, what);
        }
        }
        return Error(Errc::Malformed, std::string("unknown rule for the ") + what,
                     Address{callee_.pc});
    }

  private:
    const Abi& abi_;
    const FrameRegs& callee_;
    bool topmost_;
    MemoryReader& memory_;
    RegisterSource* extra_;
};

} // namespace

const char* to_string(StackEnd end) noexcept {
    switch (end) {
    case StackEnd::RaUndefined:
        return "the return address is undefined";
    case StackEnd::RaZero:
        return "the return address is 0";
    }
    return "end of the stack";
}

Expected<StepResult> step(const Row& row, const Abi& abi, const FrameRegs& callee, bool topmost,
                          MemoryReader& memory, RegisterSource* extra, const StepOptions& options) {
    StepResult out;
    if (row.outermost || row.ra.kind == RegRule::Kind::Undefined) {
        out.end = StackEnd::RaUndefined;
        return out;
    }
    if (row.topmost_only && !topmost)
        return Error(Errc::UnsafeRule,
                     "the row at " + to_hex(callee.pc) +
                         " uses register rules valid only in the topmost frame",
                     Address{callee.pc});
    const Stepper s(abi, callee, topmost, memory, extra);

    auto cfa_base = s.reg(row.cfa.reg, "CFA");
    if (!cfa_base) return std::move(cfa_base).error();
    auto cfa = s.add(*cfa_base, row.cfa.offset, row.cfa.reg, "CFA");
    if (!cfa) return std::move(cfa).error();
    if (row.cfa.deref) {
        cfa = s.load(*cfa, "CFA");
        if (!cfa) return std::move(cfa).error();
    }
    if (*cfa % 8 != 0)
        return Error(Errc::BadFrame, "CFA " + to_hex(*cfa) + " is not 8-byte aligned",
                     Address{callee.pc});
    out.cfa = *cfa;

    auto caller_sp = s.add(*cfa, abi.sp_from_cfa, std::nullopt, "caller's stack pointer");
    if (!caller_sp) return std::move(caller_sp).error();
    if (options.check_stack_direction && !row.signal_frame && *caller_sp < callee.sp)
        return Error(Errc::BadFrame,
                     "caller SP " + to_hex(*caller_sp) + " is below the callee's " +
                         to_hex(callee.sp) + ": the stack would grow up",
                     Address{callee.pc});

    // "RA unchanged" means "still in the link register"; x86-64 has none.
    auto ra =
        s.apply(row.ra, *cfa, abi.ra_in_register ? callee.ra : std::nullopt, "return address");
    if (!ra) return std::move(ra).error();
    std::uint64_t pc = *ra;
    if (row.mangled_ra) pc &= ~options.pac_mask; // strip the PAC (AArch64 PAuth)
    if (pc == 0) {
        out.end = StackEnd::RaZero;
        return out;
    }

    auto fp = s.apply(row.fp, *cfa, callee.fp, "frame pointer");
    if (!fp) return std::move(fp).error();
    out.caller = FrameRegs{pc, *caller_sp, *fp, std::nullopt};
    out.fp_restored = row.fp.kind != RegRule::Kind::SameValue;
    return out;
}

} // namespace sfunwind

// SPDX-License-Identifier: MIT
// Data words of flexible FDEs (SFRAME_FDE_TYPE_FLEX, spec v3 section 3.2):
// pairs of (control word, offset word) for the CFA, then the RA, then the FP.
// Absent words mean the ABI default for that entity (the header's fixed
// offset, or "unchanged"); a control word of 0 is padding (see the RA case).
//
// Control word, LSB first: bit 0 reg_p (base is DWARF register `regnum`,
// else the CFA), bit 1 deref_p (the value is at base + offset), bit 2 unused,
// bits 3+ regnum.
#include "rules.hpp"

#include <string>

namespace sfunwind::sframe {
namespace {

struct Control {
    bool reg_p;
    bool deref_p;
    std::uint16_t regnum;
};

Control control(std::uint32_t word) {
    return Control{(word & 1U) != 0, (word & 2U) != 0, static_cast<std::uint16_t>(word >> 3U)};
}

Error bad(const RuleContext& ctx, const std::string& what) {
    return Error(Errc::Malformed, "flexible FRE: " + what, ctx.fre_offset);
}

bool plain_register(const Abi& abi, std::uint16_t reg) {
    return reg == abi.sp_reg || reg == abi.fp_reg;
}

RegRule rule(const Abi& abi, Control c, std::int32_t offset, Row& row) {
    if (!c.reg_p)
        return RegRule{c.deref_p ? RegRule::Kind::AtCfa : RegRule::Kind::ValCfa, 0, offset,
                       RegRule::Source::Fre};
    if (!plain_register(abi, c.regnum)) row.topmost_only = true;
    return RegRule{c.deref_p ? RegRule::Kind::AtReg : RegRule::Kind::ValReg, c.regnum, offset,
                   RegRule::Source::Fre};
}

RegRule default_ra(const RuleContext& ctx, Row& row, RegRule::Source src) {
    if (ctx.header.cfa_fixed_ra_offset != 0)
        return RegRule::at_cfa(ctx.header.cfa_fixed_ra_offset,
                               src == RegRule::Source::Padding ? src : RegRule::Source::Header);
    if (ctx.abi.ra_in_register) row.topmost_only = true;
    return RegRule::same_value(src);
}

RegRule default_fp(const RuleContext& ctx, RegRule::Source src) {
    if (ctx.header.cfa_fixed_fp_offset != 0)
        return RegRule::at_cfa(ctx.header.cfa_fixed_fp_offset,
                               src == RegRule::Source::Padding ? src : RegRule::Source::Header);
    return RegRule::same_value(src);
}

} // namespace

Status read_flex_rules(const RuleContext& ctx, const FreWords& fre, Row& row) {
    const Abi& abi = ctx.abi;
    const unsigned n = fre.word_count;
    if (n == 0) {
        row.ra = RegRule::undefined();
        row.outermost = true;
        return ok();
    }
    if (n < 2) return bad(ctx, "1 data word; the CFA rule needs a control and an offset word");
    const Control cfa = control(fre.uword(0));
    // Appendix A: CFA recovery must always name a base register.
    if (!cfa.reg_p)
        return bad(ctx,
                   "CFA control word " + std::to_string(fre.uword(0)) + " has no base register");
    std::int32_t cfa_offset = 0;
    if (!decode_cfa_offset(abi, fre.words[1], cfa_offset))
        return bad(ctx, "CFA offset word " + std::to_string(fre.words[1]) +
                            " is beyond a 32-bit offset once scaled");
    row.cfa = CfaRule{cfa.regnum, cfa_offset, cfa.deref_p};
    if (!plain_register(abi, cfa.regnum)) row.topmost_only = true;

    unsigned i = 2;
    if (i < n && fre.uword(i) == 0) {
        // A padding word where the RA pair would be: no RA rule in this FRE,
        // the ABI default applies (spec v3 section 3.2). GNU as writes it when
        // only the CFA and FP need flexible rules, e.g. DRAP (gas test
        // cfi-sframe-x86_64-esc-expr-1). objdump prints it as "U".
        row.ra = default_ra(ctx, row, RegRule::Source::Padding);
        ++i;
    } else if (i < n) {
        if (i + 1 >= n) return bad(ctx, "RA control word without its offset word");
        row.ra = rule(abi, control(fre.uword(i)), fre.words[i + 1], row);
        i += 2;
    } else {
        row.ra = default_ra(ctx, row, RegRule::Source::Absent);
    }

    if (i < n && fre.uword(i) != 0) {
        if (i + 1 >= n) return bad(ctx, "FP control word without its offset word");
        row.fp = rule(abi, control(fre.uword(i)), fre.words[i + 1], row);
        i += 2;
    } else {
        const bool padded = i < n;
        if (padded) ++i;
        row.fp = default_fp(ctx, padded ? RegRule::Source::Padding : RegRule::Source::Absent);
    }
    if (i != n)
        return bad(ctx, std::to_string(n) + " data words; " + std::to_string(i) + " were expected");
    return ok();
}

} // namespace sfunwind::sframe

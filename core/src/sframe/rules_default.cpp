// SPDX-License-Identifier: MIT
// Data words of default-type FDEs (v1, v2, and SFRAME_FDE_TYPE_DEFAULT in v3),
// spec v3 section 3.1. The words are, in order: the CFA offset; the RA offset
// unless the header fixes the RA at CFA + sfh_cfa_fixed_ra_offset (AMD64);
// then the FP offset. What differs per ABI is confined to the hooks below.
#include "rules.hpp"

#include <optional>
#include <string>
#include <utility>

namespace sfunwind::sframe {
namespace {

// A malformed FRE, reported through `fail`; `what` builds the message.
template <typename Report, typename What>
bool bad(const RuleContext& ctx, const Report& fail, const What& what) {
    return fail(
        Errc::Malformed, [&] { return std::string(ctx.abi.name) + " FRE: " + what(); },
        ctx.fre_offset);
}

// The rule for a saved RA or FP word. v2 on s390x encodes "in register N" as
// the odd value (N << 1) | 1 (spec v2 erratum 1, s390x); such a rule is only
// valid in the topmost frame.
RegRule saved_register(const RuleContext& ctx, std::int32_t word, Row& row) {
    if (ctx.abi.arch == Arch::S390x && ctx.layout.s390x_regnum_words && (word & 1) != 0) {
        row.topmost_only = true;
        return RegRule{RegRule::Kind::ValReg, static_cast<std::uint16_t>(word >> 1), 0,
                       RegRule::Source::Fre};
    }
    return RegRule::at_cfa(word);
}

} // namespace

template <typename Report>
bool default_rules(const RuleContext& ctx, const FreWords& fre, Row& row, const Report& fail) {
    const Abi& abi = ctx.abi;
    if (fre.word_count == 0) {
        // Spec v2 erratum 2, v3 section 2.4.1: no data words, RA undefined,
        // the outermost frame.
        set_rule(row.ra, RegRule::undefined());
        row.outermost = true;
        return true;
    }
    std::int32_t cfa_offset = 0;
    if (!decode_cfa_offset(abi, fre.words[0], cfa_offset))
        return bad(ctx, fail, [&] {
            return "CFA offset word " + std::to_string(fre.words[0]) +
                   " is beyond a 32-bit offset once scaled";
        });
    set_rule(row.cfa, CfaRule{fre.cfa_base_fp ? abi.fp_reg : abi.sp_reg, cfa_offset, false});

    unsigned next = 1;
    if (ctx.header.cfa_fixed_ra_offset != 0) {
        set_rule(row.ra, RegRule::at_cfa(ctx.header.cfa_fixed_ra_offset, RegRule::Source::Header));
    } else if (fre.word_count > next) {
        const std::int32_t word = fre.words[next++];
        if (word == fre_ra_offset_invalid) {
            // Padding (SFRAME_FRE_RA_OFFSET_INVALID): the FP is saved, the RA
            // is not, it is still in the link register (spec v3 section
            // 3.1.3 for s390x; libsframe reads it so on every ABI that tracks
            // the RA). Topmost frame only.
            set_rule(row.ra, RegRule::same_value(RegRule::Source::Padding));
            row.topmost_only = true;
        } else {
            set_rule(row.ra, saved_register(ctx, word, row));
        }
    } else {
        // Only the CFA is known: the RA is still in the link register (an
        // AArch64 or s390x function before it saves LR/r14).
        set_rule(row.ra, RegRule::same_value());
        if (abi.ra_in_register) row.topmost_only = true;
    }

    if (fre.word_count > next)
        set_rule(row.fp, saved_register(ctx, fre.words[next++], row));
    else if (ctx.header.cfa_fixed_fp_offset != 0)
        set_rule(row.fp, RegRule::at_cfa(ctx.header.cfa_fixed_fp_offset, RegRule::Source::Header));
    else
        set_rule(row.fp, RegRule::same_value());

    if (fre.word_count > next)
        return bad(ctx, fail, [&] {
            return std::to_string(fre.word_count) + " data words; a default FDE uses at most " +
                   std::to_string(next);
        });
    return true;
}

template bool default_rules<Quiet>(const RuleContext&, const FreWords&, Row&, const Quiet&);
template bool default_rules<Explain>(const RuleContext&, const FreWords&, Row&, const Explain&);

Status read_default_rules(const RuleContext& ctx, const FreWords& fre, Row& row) {
    std::optional<Error> error;
    if (default_rules(ctx, fre, row, Explain{error})) return ok();
    return std::move(*error);
}

} // namespace sfunwind::sframe

// SPDX-License-Identifier: MIT
// Private to the decoder: turning an FRE's data words into rules. The default
// FDE type is read per ABI (spec v3 section 3.1); the flexible type the same
// way on every ABI (section 3.2).
#pragma once

#include "layout.hpp"

#include <limits>
#include <optional>
#include <string>

namespace sfunwind::sframe {

struct RuleContext {
    const Abi& abi;
    const Header& header;
    const Layout& layout;
    std::uint64_t fre_offset; // for error messages
};

// The CFA offset a data word stands for. s390x stores it scaled and adjusted
// (spec v2 erratum 1 and v3 section 3.1.3, SFRAME_V2_S390X_CFA_OFFSET_DECODE);
// libsframe applies this to v2 and v3, default and flexible FDEs alike. A
// 4-byte word scaled by 8 can leave the 32-bit range of a CFA offset: false,
// then (the section is corrupt).
//
// An out-parameter, not std::optional<std::int32_t>: GCC (12 and 16) built
// the optional in a stack slot with a 4-byte and a 1-byte store and read it
// back with one 8-byte load, which stalls until the stores retire, at the
// start of every lookup's rules.
inline bool decode_cfa_offset(const Abi& abi, std::int32_t word, std::int32_t& out) {
    if (abi.arch != Arch::S390x) {
        out = word;
        return true;
    }
    const std::int64_t offset =
        std::int64_t{word} * s390x::cfa_offset_alignment_factor - s390x::cfa_offset_adjustment;
    if (offset < std::numeric_limits<std::int32_t>::min() ||
        offset > std::numeric_limits<std::int32_t>::max())
        return false;
    out = static_cast<std::int32_t>(offset);
    return true;
}

// The data words of one FRE as the rules read them (spec v3 section 2.4.1):
// a view, so that a lookup can hand over the words it read from the section
// without filling an Fre first.
struct FreWords {
    const std::int32_t* words; // sign-extended; word_count of them
    unsigned word_count;
    unsigned word_size; // bytes: 1, 2 or 4
    bool cfa_base_fp;

    static FreWords of(const Fre& fre) {
        return FreWords{fre.words.data(), fre.word_count, fre.word_size, fre.cfa_base_fp};
    }
    // A data word read as unsigned (flexible-FDE control words).
    std::uint32_t uword(unsigned i) const {
        const auto raw = static_cast<std::uint32_t>(words[i]);
        return word_size == 4 ? raw : raw & ((1U << (8U * word_size)) - 1U);
    }
};

Status read_default_rules(const RuleContext& ctx, const FreWords& fre, Row& row);
// The same, reporting like a layout reader (layout.hpp): a lookup runs it
// with Quiet, so that a successful one builds no Status. Instantiated for
// Quiet and Explain in rules_default.cpp.
template <typename Report>
bool default_rules(const RuleContext& ctx, const FreWords& fre, Row& row, const Report& fail);
extern template bool default_rules<Quiet>(const RuleContext&, const FreWords&, Row&, const Quiet&);
extern template bool default_rules<Explain>(const RuleContext&, const FreWords&, Row&,
                                            const Explain&);
Status read_flex_rules(const RuleContext& ctx, const FreWords& fre, Row& row);

// Stores a rule field by field. `to = from` made GCC 12 to 16 assemble the
// 12-byte rule in a stack slot with narrow stores and copy it with a wide
// load, which waits for the narrow stores to retire (a store-forwarding
// stall): a quarter of a lookup's time, measured with perf on a repeated PC.
inline void set_rule(RegRule& to, const RegRule& from) {
    to.kind = from.kind;
    to.reg = from.reg;
    to.offset = from.offset;
    to.source = from.source;
}
inline void set_rule(CfaRule& to, const CfaRule& from) {
    to.reg = from.reg;
    to.offset = from.offset;
    to.deref = from.deref;
}

// The fields of a Row that come from the FDE and the FRE's place, not from
// its data words. `next_start` is the next FRE's start offset, or the
// function size.
inline void fill_row_fields(const Fde& fde, std::uint32_t fre_start, bool mangled_ra,
                            std::uint32_t fre_index, std::uint64_t next_start, Row& row) {
    row.func_start = fde.start;
    row.func_size = fde.size;
    row.fde_index = fde.index;
    row.fre_index = fre_index;
    row.pc_begin = fde.start + fre_start;
    row.pc_end = fde.start + next_start;
    row.signal_frame = fde.signal;
    row.pauth_key_b = fde.pauth_key == PauthKey::B;
    row.pc_mask = fde.pc_type == PcType::Mask;
    row.mangled_ra = mangled_ra;
}

} // namespace sfunwind::sframe

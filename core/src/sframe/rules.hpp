// SPDX-License-Identifier: MIT
// Private to the decoder: turning an FRE's data words into rules. The default
// FDE type is read per ABI (spec v3 section 3.1); the flexible type the same
// way on every ABI (section 3.2).
#pragma once

#include "layout.hpp"

namespace sfunwind::sframe {

struct RuleContext {
    const Abi& abi;
    const Header& header;
    const Layout& layout;
    std::uint64_t fre_offset; // for error messages
};

// The CFA offset a data word stands for. s390x stores it scaled and adjusted
// (spec v2 erratum 1 and v3 section 3.1.3, SFRAME_V2_S390X_CFA_OFFSET_DECODE);
// libsframe applies this to v2 and v3, default and flexible FDEs alike.
inline std::int32_t decode_cfa_offset(const Abi& abi, std::int32_t word) {
    if (abi.arch == Arch::S390x)
        return word * s390x::cfa_offset_alignment_factor - s390x::cfa_offset_adjustment;
    return word;
}

Status read_default_rules(const RuleContext& ctx, const Fre& fre, Row& row);
Status read_flex_rules(const RuleContext& ctx, const Fre& fre, Row& row);

} // namespace sfunwind::sframe

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

Status read_default_rules(const RuleContext& ctx, const Fre& fre, Row& row);
Status read_flex_rules(const RuleContext& ctx, const Fre& fre, Row& row);

} // namespace sfunwind::sframe

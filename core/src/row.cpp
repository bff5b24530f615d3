// SPDX-License-Identifier: MIT
#include "sfunwind/row.hpp"

#include "sfunwind/abi.hpp"

#include <string>

namespace sfunwind {
namespace {

std::string signed_offset(std::int32_t v) {
    return (v < 0 ? "-" : "+") + std::to_string(v < 0 ? -std::int64_t{v} : v);
}

} // namespace

std::string describe(const RegRule& r, const Abi& abi) {
    switch (r.kind) {
    case RegRule::Kind::Undefined:
        return "undefined";
    case RegRule::Kind::SameValue:
        return "same";
    case RegRule::Kind::AtCfa:
        return "[CFA" + signed_offset(r.offset) + "]";
    case RegRule::Kind::ValCfa:
        return "CFA" + signed_offset(r.offset);
    case RegRule::Kind::AtReg:
        return "[" + register_name(abi, r.reg) + signed_offset(r.offset) + "]";
    case RegRule::Kind::ValReg:
        return r.offset == 0 ? register_name(abi, r.reg)
                             : register_name(abi, r.reg) + signed_offset(r.offset);
    }
    return "?";
}

bool is_fixed_ra_rule(const RegRule& ra, const Abi& abi) {
    return abi.fixed_ra_offset != 0 && ra.kind == RegRule::Kind::AtCfa &&
           ra.offset == abi.fixed_ra_offset;
}

std::string describe(const CfaRule& rule, const Abi& abi) {
    const std::string base = register_name(abi, rule.reg) + signed_offset(rule.offset);
    return rule.deref ? "[" + base + "]" : base;
}

std::string describe(const Row& row, const Abi& abi) {
    if (row.outermost && row.ra.kind == RegRule::Kind::Undefined && row.cfa.reg == 0 &&
        row.cfa.offset == 0)
        return "RA=undefined (outermost)";
    std::string s = "CFA=" + describe(row.cfa, abi) + " RA=" + describe(row.ra, abi) +
                    " FP=" + describe(row.fp, abi);
    if (row.mangled_ra) s += row.pauth_key_b ? " ra-signed(B)" : " ra-signed(A)";
    if (row.signal_frame) s += " signal";
    if (row.outermost) s += " outermost";
    if (row.topmost_only) s += " topmost-only";
    if (row.pc_mask) s += " pc-mask";
    return s;
}

} // namespace sfunwind

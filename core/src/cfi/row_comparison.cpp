// SPDX-License-Identifier: MIT
#include "sfunwind/cfi/row_comparison.hpp"

#include <cstdint>
#include <string>

namespace sfunwind::cfi {

std::vector<Difference> compare(const CfiRow& cfi, const Row& sframe, const Abi& abi) {
    std::vector<Difference> out;
    using Part = Difference::Part;
    const bool both_outermost = cfi.ra_state.representable &&
                                cfi.rules.ra.kind == RegRule::Kind::Undefined &&
                                sframe.ra.kind == RegRule::Kind::Undefined;
    if (!both_outermost) {
        const CfaRule& c = cfi.rules.cfa;
        if (!cfi.cfa_state.representable)
            out.push_back(
                {Part::Cfa, true,
                 "CFA: CFI " + cfi.cfa_state.reason + "; SFrame " + describe(sframe.cfa, abi)});
        else if (c.reg != sframe.cfa.reg || c.offset != sframe.cfa.offset ||
                 c.deref != sframe.cfa.deref)
            out.push_back(
                {Part::Cfa, false,
                 "CFA: CFI " + describe(c, abi) + ", SFrame " + describe(sframe.cfa, abi)});
    }
    auto check = [&](Part part, const char* name, const RuleState& state, const RegRule& c,
                     const RegRule& s) {
        if (!state.representable)
            out.push_back(
                {part, true,
                 std::string(name) + ": CFI " + state.reason + "; SFrame " + describe(s, abi)});
        else if (!same_rule(c, s))
            out.push_back(
                {part, false,
                 std::string(name) + ": CFI " + describe(c, abi) + ", SFrame " + describe(s, abi)});
    };
    check(Part::Ra, "RA", cfi.ra_state, cfi.rules.ra, sframe.ra);
    check(Part::Fp, "FP", cfi.fp_state, cfi.rules.fp, sframe.fp);
    return out;
}

} // namespace sfunwind::cfi

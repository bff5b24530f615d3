// SPDX-License-Identifier: MIT
#include "sfunwind/callee_saved/debug_frame_rules.hpp"

#include <algorithm>
#include <utility>

namespace sfunwind::callee_saved {

std::vector<cfi::CalleeSavedChange> debug_frame_changes(const FunctionRules& rules,
                                                        std::uint64_t end) {
    std::vector<cfi::CalleeSavedChange> out;
    const std::size_t n = rules.registers().size();
    std::vector<RegRule> now(n);
    for (const std::uint64_t pc : rules.instruction_starts()) {
        if (pc >= end) break;
        rules.at(pc, now);
        if (out.empty() || out.back().rules != now) out.push_back({pc, now});
    }
    const std::uint64_t decoded_end = rules.decoded_end();
    if (!out.empty() && decoded_end < end &&
        std::any_of(out.back().rules.begin(), out.back().rules.end(),
                    [](const RegRule& r) { return r.kind != RegRule::Kind::Undefined; }))
        out.push_back({decoded_end, std::vector<RegRule>(n, RegRule::undefined())});
    return out;
}

cfi::CalleeSavedRules debug_frame_rules(const Abi& abi, CodeAt code, RowAt rows) {
    return [&abi, code = std::move(code), rows = std::move(rows)](
               std::uint64_t start, std::uint64_t size) -> std::vector<cfi::CalleeSavedChange> {
        if (!supported(abi)) return {};
        const auto bytes = code(start, size);
        if (!bytes) return {};
        auto analysed = FunctionRules::analyse(abi, start, *bytes, rows);
        if (!analysed) return {};
        return debug_frame_changes(*analysed, start + size);
    };
}

} // namespace sfunwind::callee_saved

// SPDX-License-Identifier: MIT
#include "sample_pcs.hpp"

#include <algorithm>
#include <random>

namespace sfunwind::bench {

Expected<std::vector<std::uint64_t>> draw_pcs(const sframe::Section& section, std::size_t count,
                                              std::uint64_t seed) {
    // Cumulative function sizes: a uniform draw over [0, total) picks the
    // function by its share of the covered bytes.
    std::vector<std::uint64_t> starts;
    std::vector<std::uint64_t> cumulative;
    std::uint64_t total = 0;
    for (std::uint32_t i = 0; i < section.fde_count(); ++i) {
        auto fde = section.fde(i);
        if (!fde) return std::move(fde).error();
        if (fde->size == 0) continue;
        total += fde->size;
        starts.push_back(fde->start);
        cumulative.push_back(total);
    }
    if (total == 0) return Error(Errc::NotFound, "the section's FDEs cover no code");

    std::mt19937_64 rng(seed);
    std::uniform_int_distribution<std::uint64_t> byte(0, total - 1);
    std::vector<std::uint64_t> pcs;
    pcs.reserve(count);
    for (std::size_t n = 0; n < count; ++n) {
        const std::uint64_t at = byte(rng);
        const auto k = static_cast<std::size_t>(
            std::upper_bound(cumulative.begin(), cumulative.end(), at) - cumulative.begin());
        const std::uint64_t before = k == 0 ? 0 : cumulative[k - 1];
        pcs.push_back(starts[k] + (at - before));
    }
    return pcs;
}

} // namespace sfunwind::bench

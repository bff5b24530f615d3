// SPDX-License-Identifier: MIT
// The GNU as test vectors (tests/vectors/gas-sframe/*.json):
// a section's bytes, its address, and what that release's objdump printed.
#pragma once

#include "support.hpp"

#include <algorithm>
#include <cstdint>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

namespace sfunwind::test {

struct Vector {
    std::string name;
    std::uint64_t base;
    std::vector<std::uint8_t> bytes;
    std::string groundtruth;
};

// Every vector, sorted by file name.
inline std::vector<Vector> load_vectors() {
    std::vector<Vector> out;
    for (const auto& e : std::filesystem::directory_iterator(gas_vectors_dir())) {
        if (e.path().extension() != ".json") continue;
        const auto j = nlohmann::json::parse(read_text(e.path()));
        out.push_back({e.path().filename().string(), j.at("section_base").get<std::uint64_t>(),
                       j.at("content").get<std::vector<std::uint8_t>>(),
                       j.at("groundtruth").get<std::string>()});
    }
    std::sort(out.begin(), out.end(),
              [](const Vector& a, const Vector& b) { return a.name < b.name; });
    return out;
}

} // namespace sfunwind::test

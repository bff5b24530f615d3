// SPDX-License-Identifier: MIT
#include "sfunwind/unwind/module_set.hpp"

#include <algorithm>
#include <string>

namespace sfunwind {

Expected<Row> Module::lookup(std::uint64_t link_pc) const {
    if (rows) return rows->lookup(link_pc);
    return Error(Errc::NotFound, name + " has no unwind table");
}

std::shared_ptr<const RowSource> sframe_rows(sframe::Section section,
                                             std::shared_ptr<const void> owner) {
    const std::string kind =
        "SFrame v" + std::to_string(static_cast<unsigned>(section.header().version));
    return std::make_shared<const RowSourceOf<sframe::Section>>(
        std::make_shared<const sframe::Section>(std::move(section)), kind, std::move(owner));
}

ModuleSet::ModuleSet(std::vector<Module> modules) : modules_(std::move(modules)) {
    std::stable_sort(modules_.begin(), modules_.end(),
                     [](const Module& a, const Module& b) { return a.begin < b.begin; });
}

void ModuleSet::add(Module module) {
    auto at = std::upper_bound(modules_.begin(), modules_.end(), module.begin,
                               [](std::uint64_t b, const Module& m) { return b < m.begin; });
    modules_.insert(at, std::move(module));
}

const Module* ModuleSet::find(std::uint64_t pc) const noexcept {
    auto it = std::upper_bound(modules_.begin(), modules_.end(), pc,
                               [](std::uint64_t p, const Module& m) { return p < m.begin; });
    while (it != modules_.begin()) {
        --it;
        if (pc >= it->begin && pc < it->end) return &*it;
        // Ranges may nest (a module registered with a wide range); keep looking
        // only while earlier modules could still reach pc.
        if (it->end <= it->begin) break;
    }
    return nullptr;
}

} // namespace sfunwind

// SPDX-License-Identifier: MIT
#include "sfunwind/unwind/module_set.hpp"

#include <algorithm>

namespace sfunwind {

Expected<Row> Module::lookup(std::uint64_t link_pc) const {
    if (section) return section->lookup(link_pc);
    if (rows) return rows->lookup(link_pc);
    return Error(Errc::NotFound, name + " has no unwind table");
}

const Abi* Module::abi() const noexcept {
    if (section) return &section->abi();
    if (rows) return &rows->abi();
    return nullptr;
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

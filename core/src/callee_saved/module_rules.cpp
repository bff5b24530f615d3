// SPDX-License-Identifier: MIT
#include "sfunwind/callee_saved/module_rules.hpp"

#include "sfunwind/bytes.hpp"

#include <algorithm>
#include <array>

namespace sfunwind::callee_saved {

ModuleRules::ModuleRules(const Abi& abi, CodeAt code, RowAt rows, CodeFacts facts,
                         std::size_t max_functions)
    : abi_(&abi), code_(std::move(code)), rows_(std::move(rows)), facts_(facts),
      max_functions_(std::max<std::size_t>(max_functions, 1)) {}

const FunctionRules* ModuleRules::function(std::uint64_t start, std::uint32_t size) {
    if (auto it = cache_.find(start); it != cache_.end()) return it->second.get();
    if (!supported()) return nullptr;
    // A bounded cache: a program's hot functions are few, and the analysis
    // of one is cheap to redo.
    if (cache_.size() >= max_functions_) {
        cache_.clear();
        memory_ = 0;
    }
    std::unique_ptr<FunctionRules> made;
    if (auto bytes = code_(start, size)) {
        if (auto rules = FunctionRules::analyse(*abi_, start, *bytes, rows_, {}, facts_)) {
            made = std::make_unique<FunctionRules>(std::move(*rules));
            memory_ += made->memory_bytes();
        }
    }
    return cache_.emplace(start, std::move(made)).first->second.get();
}

std::size_t recover(const FunctionRules& rules, std::uint64_t lookup_pc, std::uint64_t cfa,
                    MemoryReader& memory, std::span<SavedRegister> out) {
    const auto regs = rules.registers();
    const std::size_t n = std::min({out.size(), regs.size(), FunctionRules::max_registers});
    std::array<RegRule, FunctionRules::max_registers> found{};
    rules.at(lookup_pc, std::span<RegRule>(found.data(), n));
    for (std::size_t i = 0; i < n; ++i) {
        SavedRegister& s = out[i];
        s = SavedRegister{regs[i], SavedRegister::Kind::NotSaved, 0};
        if (found[i].kind == RegRule::Kind::SameValue) {
            s.kind = SavedRegister::Kind::SameValue;
        } else if (found[i].kind == RegRule::Kind::AtCfa) {
            const std::uint64_t slot =
                cfa + static_cast<std::uint64_t>(std::int64_t{found[i].offset});
            // A slot whose address wraps is not read.
            const bool wraps = found[i].offset < 0 ? slot > cfa : slot < cfa;
            std::array<std::uint8_t, 8> bytes{};
            std::uint64_t value = 0;
            // x86-64 only (FunctionRules::analyse): little-endian.
            if (!wraps && memory.read(slot, bytes) &&
                ByteView(bytes, ByteOrder::Little).load(0, value)) {
                s.kind = SavedRegister::Kind::Value;
                s.value = value;
            }
        }
    }
    return n;
}

} // namespace sfunwind::callee_saved

// SPDX-License-Identifier: MIT
// A fake target for step() and backtrace() tests: a stack of bytes at a base
// address, stored in the target's byte order, with holes whose reads fail
// like an unmapped page; and a register file for register-based rules.
#pragma once

#include "sfunwind/unwind/step.hpp"

#include <cstdint>
#include <map>
#include <optional>
#include <span>
#include <stdexcept>
#include <utility>
#include <vector>

namespace sfunwind::test {

class FakeMemory final : public MemoryReader {
  public:
    FakeMemory(std::uint64_t base, std::size_t size, ByteOrder order)
        : base_(base), bytes_(size, 0), order_(order) {}

    std::uint64_t base() const { return base_; }
    std::uint64_t end() const { return base_ + bytes_.size(); }

    // Stores a 64-bit value; a store outside the fake stack is a bug in the test.
    void put64(std::uint64_t addr, std::uint64_t value) {
        if (addr < base_ || addr - base_ > bytes_.size() || bytes_.size() - (addr - base_) < 8)
            throw std::out_of_range("FakeMemory::put64 outside the fake stack");
        const std::size_t at = static_cast<std::size_t>(addr - base_);
        for (unsigned i = 0; i < 8; ++i) {
            const unsigned shift = order_ == ByteOrder::Little ? 8 * i : 8 * (7 - i);
            bytes_[at + i] = static_cast<std::uint8_t>((value >> shift) & 0xffU);
        }
    }

    // Reads touching [begin, end) fail.
    void hole(std::uint64_t begin, std::uint64_t end) { holes_.emplace_back(begin, end); }

    bool read(std::uint64_t addr, std::span<std::uint8_t> out) override {
        ++reads_;
        const std::uint64_t n = out.size();
        if (addr < base_ || addr - base_ > bytes_.size() || bytes_.size() - (addr - base_) < n)
            return false;
        for (const auto& [b, e] : holes_)
            if (addr < e && b < addr + n) return false;
        const std::size_t at = static_cast<std::size_t>(addr - base_);
        for (std::size_t i = 0; i < out.size(); ++i)
            out[i] = bytes_[at + i];
        return true;
    }

    std::size_t reads() const { return reads_; }

  private:
    std::uint64_t base_;
    std::vector<std::uint8_t> bytes_;
    ByteOrder order_;
    std::vector<std::pair<std::uint64_t, std::uint64_t>> holes_;
    std::size_t reads_ = 0;
};

// Registers beyond pc/sp/fp/ra, by DWARF number.
class FakeRegisters final : public RegisterSource {
  public:
    void set(std::uint16_t reg, std::uint64_t value) { regs_[reg] = value; }
    std::optional<std::uint64_t> get(std::uint16_t reg) override {
        ++queries_;
        auto it = regs_.find(reg);
        if (it == regs_.end()) return std::nullopt;
        return it->second;
    }
    std::size_t queries() const { return queries_; }

  private:
    std::map<std::uint16_t, std::uint64_t> regs_;
    std::size_t queries_ = 0;
};

} // namespace sfunwind::test

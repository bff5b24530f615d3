// SPDX-License-Identifier: MIT
#include "sfunwind/unwind/window.hpp"

#include <algorithm>
#include <cstring>
#include <limits>

namespace sfunwind {
namespace {

// step() loads whole 64-bit words (every supported ABI is LP64).
constexpr std::int64_t word = 8;

// ReadWindow::size is 32 bits; slots are 32-bit offsets from a 32-bit CFA
// offset, so two of them can lie up to 8 GiB apart.
constexpr std::int64_t max_span = std::numeric_limits<std::uint32_t>::max();

struct Span {
    bool any = false;
    std::int64_t lo = 0;
    std::int64_t hi = 0;
    // Widens the span to the word at `start`, unless that would make it
    // larger than a window can be: then the word is left to the fallback.
    void add(std::int64_t start) {
        const std::int64_t new_lo = any ? std::min(lo, start) : start;
        const std::int64_t new_hi = any ? std::max(hi, start + word) : start + word;
        if (new_hi - new_lo > max_span) return;
        lo = new_lo;
        hi = new_hi;
        any = true;
    }
};

} // namespace

ReadWindow plan_reads(const Row& row) {
    ReadWindow w;
    w.base_reg = row.cfa.reg;
    if (row.outermost) return w;
    Span span;
    const std::int64_t cfa_off = row.cfa.offset;
    if (row.cfa.deref) {
        span.add(cfa_off);
    } else {
        // Slots are CFA + offset, and CFA = base + cfa_off: relative to the
        // base register they are at cfa_off + offset. The RA's comes first:
        // when the two are too far apart for one window (a corrupt section),
        // it is the one planned.
        for (const RegRule* rule : {&row.ra, &row.fp}) {
            if (rule->kind == RegRule::Kind::AtCfa)
                span.add(cfa_off + rule->offset);
            else if (rule->kind == RegRule::Kind::AtReg && rule->reg == row.cfa.reg)
                span.add(rule->offset);
        }
    }
    if (!span.any) return w;
    w.offset = span.lo;
    w.size = static_cast<std::uint32_t>(span.hi - span.lo);
    return w;
}

bool WindowMemory::read(std::uint64_t addr, std::span<std::uint8_t> out) {
    // addr - address_ wraps for addresses below the window: the size check
    // then fails, which is the answer wanted.
    const std::uint64_t rel = addr - address_;
    if (rel <= bytes_.size() && out.size() <= bytes_.size() - rel) {
        std::memcpy(out.data(), bytes_.data() + rel, out.size());
        return true;
    }
    ++fallback_reads_;
    return fallback_ != nullptr && fallback_->read(addr, out);
}

} // namespace sfunwind

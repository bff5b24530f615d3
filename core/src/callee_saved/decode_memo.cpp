// SPDX-License-Identifier: MIT
#include "decode_memo.hpp"

#include <algorithm>

namespace sfunwind::callee_saved::detail {
namespace {

// FNV-1a (64 bits), one byte at a time: the hash of each prefix of the
// code comes from the previous one's.
constexpr std::uint64_t fnv_offset = 0xcbf29ce484222325ULL;
constexpr std::uint64_t fnv_prime = 0x100000001b3ULL;

bool has_target(const Instruction& in) {
    return in.flow == Flow::Jump || in.flow == Flow::Branch || in.direct_call;
}

} // namespace

void DecodeMemo::track(std::span<const std::uint16_t> tracked) {
    const bool same = tracked.size() == tracked_count_ &&
                      std::equal(tracked.begin(), tracked.end(), tracked_.begin());
    if (same) return;
    entries_.clear();
    lengths_.clear();
    single_.fill(false);
    tracked_count_ = std::min(tracked.size(), tracked_.size());
    std::copy_n(tracked.begin(), tracked_count_, tracked_.begin());
    // A list longer than the memo holds never matches: nothing is remembered.
    if (tracked.size() > tracked_.size()) tracked_count_ = tracked_.size() + 1;
}

std::size_t DecodeMemo::slot(std::uint64_t hash) const noexcept {
    // Fibonacci hashing: the hash's high bits, mixed.
    return static_cast<std::size_t>((hash * 0x9e3779b97f4a7c15ULL) >> (64 - bits_));
}

std::size_t DecodeMemo::find(std::uint64_t address, std::span<const std::uint8_t> code, Code& out) {
    const std::size_t n = entries_.empty() || code.empty() ? 0 : lookup(address, code, out);
    ++(n > 0 ? hits_ : misses_);
    return n;
}

std::size_t DecodeMemo::lookup(std::uint64_t address, std::span<const std::uint8_t> code,
                               Code& out) const {
    // Lengths 1 and up to max_encoding: those whose first bytes have had one.
    std::uint16_t lengths = single_[code[0]] ? 1U << 1 : 0;
    if (code.size() >= 2)
        lengths |=
            lengths_[static_cast<std::size_t>(code[0]) | static_cast<std::size_t>(code[1]) << 8];
    const std::size_t longest = std::min(code.size(), max_encoding);
    std::uint64_t hash = fnv_offset;
    for (std::size_t n = 1; n <= longest && (lengths >> n) != 0; ++n) {
        hash = (hash ^ code[n - 1]) * fnv_prime;
        if ((lengths & (1U << n)) == 0) continue;
        const Entry& e = entries_[slot(hash)];
        if (e.size != n || !std::equal(code.begin(), code.begin() + static_cast<std::ptrdiff_t>(n),
                                       e.encoding.begin()))
            continue;
        Instruction in = e.instruction;
        in.address = address;
        if (has_target(in)) in.target += address;
        const std::span<const RegisterAccess> accesses(e.accesses.data(),
                                                       std::size_t{in.saves} + in.loads);
        out.add(in, accesses.first(in.saves), accesses.subspan(in.saves));
        return n;
    }
    return 0;
}

void DecodeMemo::remember(std::span<const std::uint8_t> encoding, const Code& code) {
    if (code.instructions.empty() || encoding.empty() || encoding.size() > max_encoding ||
        tracked_count_ > tracked_.size())
        return;
    const Instruction& in = code.instructions.back();
    const std::span<const RegisterAccess> accesses = code.saves_and_loads(in);
    if (accesses.size() > max_accesses || in.size != encoding.size()) return;
    if (entries_.empty()) {
        entries_.resize(std::size_t{1} << bits_);
        lengths_.assign(std::size_t{1} << 16, 0);
    }
    std::uint64_t hash = fnv_offset;
    for (const std::uint8_t b : encoding)
        hash = (hash ^ b) * fnv_prime;
    Entry& e = entries_[slot(hash)];
    std::copy(encoding.begin(), encoding.end(), e.encoding.begin());
    e.size = static_cast<std::uint8_t>(encoding.size());
    e.instruction = in;
    e.instruction.address = 0;
    if (has_target(in)) e.instruction.target -= in.address;
    std::copy(accesses.begin(), accesses.end(), e.accesses.begin());
    if (encoding.size() == 1)
        single_[encoding[0]] = true;
    else
        lengths_[static_cast<std::size_t>(encoding[0]) | static_cast<std::size_t>(encoding[1])
                                                             << 8] |=
            static_cast<std::uint16_t>(1U << encoding.size());
}

} // namespace sfunwind::callee_saved::detail

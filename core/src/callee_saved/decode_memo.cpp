// SPDX-License-Identifier: MIT
#include "decode_memo.hpp"

#include "x86_64_form_memo.hpp"

#include <algorithm>
#include <bit>
#include <boost/endian/conversion.hpp>
#include <cstring>
#include <limits>

namespace sfunwind::callee_saved::detail {
namespace {

constexpr std::uint8_t direct_call_flag = 1;
constexpr std::uint8_t returns_flag = 2;
constexpr std::uint8_t padding_flag = 4;
constexpr std::uint8_t recent_flag = 8;

// The table's size at its first remember(): 2^6 instructions, 4 KB.
constexpr unsigned first_bits = 6;

bool has_target(const Instruction& in) {
    return in.flow == Flow::Jump || in.flow == Flow::Branch || in.direct_call;
}

bool narrow(std::int64_t v, std::int32_t& out) {
    if (v < std::numeric_limits<std::int32_t>::min() ||
        v > std::numeric_limits<std::int32_t>::max())
        return false;
    out = static_cast<std::int32_t>(v);
    return true;
}

} // namespace

DecodeMemo::DecodeMemo(unsigned bits) : bits_(bits < 2 ? 2 : bits > 24 ? 24 : bits) {}
DecodeMemo::~DecodeMemo() = default;

unsigned DecodeMemo::most_bits() const noexcept {
    return decoder_ == MemoDecoder::X86_64 ? std::min(bits_, x86_64_bits) : bits_;
}

X86FormMemo& DecodeMemo::x86_forms() {
    if (!x86_forms_) x86_forms_ = std::make_unique<X86FormMemo>();
    return *x86_forms_;
}

void DecodeMemo::track(MemoDecoder decoder, std::span<const std::uint16_t> tracked) {
    const bool same = decoder == decoder_ && tracked.size() == tracked_count_ &&
                      std::equal(tracked.begin(), tracked.end(), tracked_.begin());
    if (same) return;
    decoder_ = decoder;
    entries_.clear();
    filled_ = 0;
    lengths_.clear();
    pairs_.fill(0);
    single_.fill(false);
    tracked_count_ = std::min(tracked.size(), tracked_.size());
    std::copy_n(tracked.begin(), tracked_count_, tracked_.begin());
    // A list longer than the memo holds never matches: nothing is remembered.
    if (tracked.size() > tracked_.size()) tracked_count_ = tracked_.size() + 1;
}

std::size_t DecodeMemo::set(std::uint64_t hash) const noexcept {
    // Fibonacci hashing: the hash's high bits, mixed; 2^(bits - 1) sets.
    return static_cast<std::size_t>((hash * 0x9e3779b97f4a7c15ULL) >> (65 - table_bits_)) * 2;
}

std::uint64_t DecodeMemo::key_hash(std::uint64_t low, std::uint64_t high) noexcept {
    // The high word (the encoding's bytes 8-14 and its size) mixed into the
    // low one; set() mixes the result (Fibonacci hashing).
    return low ^ (high * 0xc2b2ae3d27d4eb4fULL);
}

std::uint64_t DecodeMemo::hash_of(const Entry& e) noexcept {
    return key_hash(boost::endian::load_little_u64(e.key.data()),
                    boost::endian::load_little_u64(e.key.data() + 8));
}

bool DecodeMemo::store(const Entry& packed, std::uint64_t hash) {
    // Into an empty way, else over the one used less recently.
    const std::size_t first = set(hash);
    std::size_t way = 0;
    if (entries_[first].size() != 0 &&
        (entries_[first + 1].size() == 0 || (entries_[first].flags & recent_flag) != 0))
        way = 1;
    const bool was_empty = entries_[first + way].size() == 0;
    entries_[first + way] = packed;
    entries_[first + way].flags |= recent_flag;
    entries_[first + (1 - way)].flags &= static_cast<std::uint8_t>(~recent_flag);
    return was_empty;
}

void DecodeMemo::grow() {
    std::vector<Entry> old(std::size_t{1} << (table_bits_ + 1));
    old.swap(entries_);
    ++table_bits_;
    filled_ = 0;
    for (const Entry& e : old)
        if (e.size() != 0 && store(e, hash_of(e))) ++filled_;
    rebuild_lengths();
}

void DecodeMemo::note_length(std::span<const std::uint8_t> encoding) {
    if (encoding.size() == 1) {
        single_[encoding[0]] = true;
    } else if (encoding.size() == 2) {
        const unsigned pair = encoding[0] | unsigned{encoding[1]} << 8;
        pairs_[pair / 64] |= std::uint64_t{1} << (pair % 64);
    } else {
        lengths_[length_slot(encoding[0], encoding[1], encoding[2])] |=
            static_cast<std::uint16_t>(1U << encoding.size());
    }
}

void DecodeMemo::rebuild_lengths() {
    const unsigned lengths_bits = std::min(16U, table_bits_ + 2);
    lengths_shift_ = 32 - lengths_bits;
    lengths_.assign(std::size_t{1} << lengths_bits, 0);
    for (const Entry& e : entries_)
        if (e.size() >= 3) note_length(e.encoding());
}

bool DecodeMemo::pack(const Instruction& in, std::span<const RegisterAccess> accesses,
                      std::span<const std::uint8_t> encoding, Entry& out) {
    static_assert(sizeof(Entry) <= 64, "an entry is a cache line at most");
    if (in.copies || in.copy_from != 0 || in.copy_to != 0 || in.written != 0 ||
        accesses.size() > max_accesses || in.size != encoding.size())
        return false;
    Entry e;
    std::copy(encoding.begin(), encoding.end(), e.key.begin());
    e.key.back() = in.size;
    e.flow = in.flow;
    e.flags = static_cast<std::uint8_t>((in.direct_call ? direct_call_flag : 0) |
                                        (in.returns ? returns_flag : 0) |
                                        (in.padding ? padding_flag : 0));
    e.sp = in.sp;
    e.fp = in.fp;
    e.store_base = in.store_base;
    e.load_base = in.load_base;
    e.saves = in.saves;
    e.loads = in.loads;
    const std::int64_t target =
        has_target(in) ? static_cast<std::int64_t>(in.target - in.address) : 0;
    if (!narrow(in.sp_delta, e.sp_delta) || !narrow(in.fp_delta, e.fp_delta) ||
        !narrow(in.store_disp, e.store_disp) || !narrow(target, e.target))
        return false;
    e.store_size = in.store_size;
    e.clobbered = in.clobbered;
    e.gpr_written = in.gpr_written;
    e.gpr_narrowed = in.gpr_narrowed;
    for (std::size_t k = 0; k < accesses.size(); ++k) {
        e.access_index[k] = accesses[k].index;
        if (!narrow(accesses[k].disp, e.access_disp[k])) return false;
    }
    out = e;
    return true;
}

void DecodeMemo::unpack(const Entry& e, std::uint64_t address, Code& out) {
    Instruction in;
    in.address = address;
    in.size = e.size();
    in.flow = e.flow;
    in.direct_call = (e.flags & direct_call_flag) != 0;
    in.returns = (e.flags & returns_flag) != 0;
    in.padding = (e.flags & padding_flag) != 0;
    if (has_target(in)) in.target = address + static_cast<std::uint64_t>(std::int64_t{e.target});
    in.sp = e.sp;
    in.sp_delta = e.sp_delta;
    in.fp = e.fp;
    in.fp_delta = e.fp_delta;
    in.store_base = e.store_base;
    in.store_disp = e.store_disp;
    in.store_size = e.store_size;
    in.load_base = e.load_base;
    in.clobbered = e.clobbered;
    in.gpr_written = e.gpr_written;
    in.gpr_narrowed = e.gpr_narrowed;
    std::array<RegisterAccess, max_accesses> accesses{};
    const std::size_t n = std::size_t{e.saves} + e.loads;
    for (std::size_t k = 0; k < n; ++k)
        accesses[k] = RegisterAccess{e.access_index[k], e.access_disp[k]};
    const std::span<const RegisterAccess> all(accesses.data(), n);
    out.add(in, all.first(e.saves), all.subspan(e.saves));
}

std::size_t DecodeMemo::find(std::uint64_t address, std::span<const std::uint8_t> code, Code& out) {
    const std::size_t n = entries_.empty() || code.empty() ? 0 : lookup(address, code, out);
    ++(n > 0 ? hits_ : misses_);
    return n;
}

std::size_t DecodeMemo::lookup(std::uint64_t address, std::span<const std::uint8_t> code,
                               Code& out) {
    // Lengths 1 and up to max_encoding: those whose first bytes have had one.
    std::uint32_t lengths = single_[code[0]] ? 1U << 1 : 0U;
    if (code.size() >= 2) {
        const unsigned pair = code[0] | unsigned{code[1]} << 8;
        if ((pairs_[pair / 64] >> (pair % 64) & 1U) != 0) lengths |= 1U << 2;
    }
    if (code.size() >= 3) lengths |= lengths_[length_slot(code[0], code[1], code[2])];
    // An entry's key, compared with the code's first n bytes and n.
    static_assert(max_encoding + 1 == 16);
    const auto [low, high] = code_window(code);
    const std::size_t longest = std::min(code.size(), max_encoding);
    if (longest < 15) lengths &= (2U << longest) - 1;
    // Shortest first: a decoder ends an instruction at its first complete
    // encoding, so no longer one can start with it.
    for (; lengths != 0; lengths &= lengths - 1) {
        const auto n = static_cast<unsigned>(std::countr_zero(lengths));
        const std::uint64_t want_low = n >= 8 ? low : low & ((std::uint64_t{1} << (8 * n)) - 1);
        const std::uint64_t want_high =
            (n > 8 ? high & ((std::uint64_t{1} << (8 * (n - 8))) - 1) : 0) | std::uint64_t{n} << 56;
        const std::size_t first = set(key_hash(want_low, want_high));
        for (std::size_t way = 0; way < 2; ++way) {
            Entry& e = entries_[first + way];
            if (boost::endian::load_little_u64(e.key.data()) != want_low ||
                boost::endian::load_little_u64(e.key.data() + 8) != want_high)
                continue;
            e.flags |= recent_flag;
            entries_[first + (1 - way)].flags &= static_cast<std::uint8_t>(~recent_flag);
            unpack(e, address, out);
            return n;
        }
    }
    return 0;
}

void DecodeMemo::remember(std::span<const std::uint8_t> encoding, const Code& code) {
    if (code.instructions.empty() || encoding.empty() || encoding.size() > max_encoding ||
        tracked_count_ > tracked_.size())
        return;
    const Instruction& in = code.instructions.back();
    Entry packed;
    if (!pack(in, code.saves_and_loads(in), encoding, packed)) return;
    if (entries_.empty()) {
        table_bits_ = std::min(most_bits(), first_bits);
        entries_.resize(std::size_t{1} << table_bits_);
        rebuild_lengths();
    } else if (table_bits_ < most_bits() && 2 * filled_ >= entries_.size()) {
        grow();
    }
    if (store(packed, hash_of(packed))) ++filled_;
    note_length(encoding);
}

} // namespace sfunwind::callee_saved::detail

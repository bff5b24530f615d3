// SPDX-License-Identifier: MIT
// Decoded instructions remembered by their encoding, so that an encoding a
// module repeats is decoded with Capstone once (x86-64 and AArch64 code).
//
// Why: Capstone 4 decodes an x86-64 instruction with details in about 3,300
// host instructions (it formats the instruction's text whether asked or
// not), most of what the callee-saved analysis costs, and programs repeat
// few encodings: the big program's lib1.so has 1.68 M instructions in .text
// and 141 K distinct encodings, /usr/bin/gdb (Debian 12) 1.51 M and 295 K.
//
// Why it is exact: a decoder reads an instruction's bytes one after another
// and decides from them alone, so an encoding decodes to the same instruction
// wherever it is, whatever follows it. What differs is the address and what
// is relative to it: a direct branch's or call's target (kept here as its
// distance from the instruction). The reduced form (Instruction) is a
// function of the encoding, the address, the decoder (architecture and byte
// order) and the tracked registers; a memo holds the instructions of one
// decoder and one list of tracked registers.
#pragma once

#include "instruction.hpp"

#include <array>
#include <boost/endian/conversion.hpp>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <memory>
#include <span>
#include <vector>

namespace sfunwind::callee_saved::detail {

// The decoders whose instructions a memo holds: the same bytes are other
// instructions to another architecture or byte order.
enum class MemoDecoder : std::uint8_t { None, X86_64, AArch64Little, AArch64Big };

class X86FormMemo;

// The first 16 bytes of an encoding, zero past the end of the code, as two
// little-endian words: both memos compare an encoding's bytes a word at a
// time (an x86-64 encoding has 15 bytes at most).
struct CodeWindow {
    std::uint64_t low = 0;  // bytes 0-7
    std::uint64_t high = 0; // bytes 8-15
};
inline CodeWindow code_window(std::span<const std::uint8_t> code) noexcept {
    // Read straight from the code where it has 16 bytes (a copy into a
    // zeroed buffer first made each lookup wait for the copy's stores).
    if (code.size() >= 16)
        return {boost::endian::load_little_u64(code.data()),
                boost::endian::load_little_u64(code.data() + 8)};
    std::array<std::uint8_t, 16> window{};
    if (!code.empty()) std::memcpy(window.data(), code.data(), code.size());
    return {boost::endian::load_little_u64(window.data()),
            boost::endian::load_little_u64(window.data() + 8)};
}

// FNV-1a (64 bits), one byte at a time: both memos hash an encoding's
// prefixes, each from the one before.
inline constexpr std::uint64_t prefix_hash_start = 0xcbf29ce484222325ULL;
constexpr std::uint64_t prefix_hash_step(std::uint64_t hash, std::uint8_t byte) noexcept {
    return (hash ^ byte) * 0x100000001b3ULL;
}

class DecodeMemo {
  public:
    // The longest encoding (x86-64: 15 bytes, SDM vol. 2 section 2.3.11).
    static constexpr std::size_t max_encoding = 15;
    // The most saves and loads one remembered instruction makes.
    static constexpr std::size_t max_accesses = 2;

    // A table of up to 2^bits instructions (64 bytes each) in sets of two.
    // It starts at 2^6 at the first remember() and doubles when half of it
    // is filled, and so does the table of lengths (lengths_): a module's
    // translation makes a memo per thread, and most of a program's
    // libraries have far fewer distinct instructions than 2^15 (zero-filling
    // 2 MB per thread was 3.5 % of LLDB's first start on 300 small
    // libraries; 192 KB, the first table and a lengths table of every
    // two-byte start, still cost each of those libraries 48 page faults).
    // x86-64 code takes 2^13 at most (512 KB): the encodings its forms give
    // (x86_64_form_memo.hpp) are not remembered here, and the rest repeat
    // more: decoding all of /usr/bin/gdb's and liblldb's code took the
    // same time with 2^12 to 2^16.
    explicit DecodeMemo(unsigned bits = 15);
    ~DecodeMemo();
    DecodeMemo(const DecodeMemo&) = delete;
    DecodeMemo& operator=(const DecodeMemo&) = delete;

    // What the x86-64 decoder asks when an encoding is not held here: the
    // instruction forms it has decoded (x86_64_form_memo.hpp), made at the
    // first call. They do not depend on the tracked registers.
    X86FormMemo& x86_forms();

    // Forgets every instruction when `decoder` or `tracked` differs from
    // what the remembered ones were decoded and reduced with.
    void track(MemoDecoder decoder, std::span<const std::uint16_t> tracked);

    // When the encoding at the start of `code` is remembered: appends its
    // instruction to `out` at `address` and returns its size. Otherwise 0.
    std::size_t find(std::uint64_t address, std::span<const std::uint8_t> code, Code& out);

    // Remembers the last instruction of `code`, whose encoding is `encoding`
    // (what was decoded at its address): nothing when it is too long, or a
    // field does not fit an entry (a displacement beyond 32 bits, more than
    // max_accesses saves and loads, copies: s390x's).
    void remember(std::span<const std::uint8_t> encoding, const Code& code);

    // find()'s answers so far: instructions given, and none.
    std::uint64_t hits() const noexcept { return hits_; }
    std::uint64_t misses() const noexcept { return misses_; }

  private:
    // An instruction without its address, its fields narrowed (remember()
    // keeps only those that fit): 64 bytes, a cache line.
    struct Entry {
        // The encoding, zero-padded, then its size (0: empty), compared as
        // two words.
        std::array<std::uint8_t, max_encoding + 1> key{};
        std::uint8_t size() const noexcept { return key.back(); }
        std::span<const std::uint8_t> encoding() const noexcept {
            return std::span<const std::uint8_t>(key.data(), size());
        }
        Flow flow = Flow::Next;
        std::uint8_t flags = 0; // direct_call, returns, padding; recent (of its set)
        SpEffect sp = SpEffect::None;
        FpEffect fp = FpEffect::None;
        Base store_base = Base::None;
        Base load_base = Base::None;
        std::uint8_t saves = 0;
        std::uint8_t loads = 0;
        std::int32_t sp_delta = 0;
        std::int32_t fp_delta = 0;
        std::int32_t store_disp = 0;
        std::int32_t target = 0; // from the instruction's address
        std::uint32_t store_size = 0;
        std::uint32_t clobbered = 0;
        std::uint16_t gpr_written = 0;
        std::uint16_t gpr_narrowed = 0;
        std::array<std::uint8_t, max_accesses> access_index{};
        std::array<std::int32_t, max_accesses> access_disp{};
    };

    static bool pack(const Instruction& in, std::span<const RegisterAccess> accesses,
                     std::span<const std::uint8_t> encoding, Entry& out);
    static void unpack(const Entry& e, std::uint64_t address, Code& out);
    // The first of the two entries of the set of `hash`.
    std::size_t set(std::uint64_t hash) const noexcept;
    std::size_t lookup(std::uint64_t address, std::span<const std::uint8_t> code, Code& out);
    // The hash of a key, as its two words (the encoding zero-padded, its
    // size in the last byte).
    static std::uint64_t key_hash(std::uint64_t low, std::uint64_t high) noexcept;
    static std::uint64_t hash_of(const Entry& e) noexcept;
    // Puts `packed` into its set, over the way used less recently; true if
    // the way was empty.
    bool store(const Entry& packed, std::uint64_t hash);
    // Doubles the table, keeping every entry.
    void grow();
    // The lengths_ slot of an encoding that starts with b0 b1 b2.
    // (Here, so that lookup() inlines it: called once per instruction.)
    std::size_t length_slot(std::uint8_t b0, std::uint8_t b1, std::uint8_t b2) const noexcept {
        // Fibonacci hashing of the three bytes: the product's high bits,
        // which every bit of them reaches.
        const std::uint32_t start =
            std::uint32_t{b0} | std::uint32_t{b1} << 8 | std::uint32_t{b2} << 16;
        return static_cast<std::size_t>((start * 0x9e3779b1U) >> lengths_shift_);
    }
    // Notes that an encoding of that size starts with its first bytes.
    void note_length(std::span<const std::uint8_t> encoding);
    // Sizes lengths_ to the table and notes every entry's length in it.
    void rebuild_lengths();

    // The most the table grows to: bits_, or x86_64_bits for x86-64 code.
    unsigned most_bits() const noexcept;
    static constexpr unsigned x86_64_bits = 13;

    unsigned bits_;           // the most the table grows to (but most_bits())
    unsigned table_bits_ = 0; // the table's size now: 2^table_bits_ entries
    std::size_t filled_ = 0;  // its entries in use
    std::vector<Entry> entries_;
    // Bit n of lengths_[length_slot(b0, b1, b2)]: an encoding of n >= 3
    // bytes starting with b0 b1 b2, or with another start of the same slot,
    // was remembered (its entry may since have been replaced);
    // 2^(table_bits_ + 2) slots, 2^16 at most. Three bytes, as x86-64's
    // length is mostly told by its ModRM byte, which follows a REX prefix
    // and the opcode: with two, a lookup tried 2-3 lengths before the one
    // that matched. pairs_ bit b0 | b1 << 8: the 2-byte encoding b0 b1
    // was; single_[b0]: the 1-byte encoding b0 was. They spare looking up
    // lengths no encoding with those first bytes has.
    std::vector<std::uint16_t> lengths_;
    unsigned lengths_shift_ = 32; // length_slot()'s shift: 32 - log2(lengths_.size())
    std::array<std::uint64_t, 1024> pairs_{};
    std::array<bool, 256> single_{};
    MemoDecoder decoder_ = MemoDecoder::None;
    std::array<std::uint16_t, 32> tracked_{};
    std::size_t tracked_count_ = 0;
    std::uint64_t hits_ = 0;
    std::uint64_t misses_ = 0;
    std::unique_ptr<X86FormMemo> x86_forms_;
};

} // namespace sfunwind::callee_saved::detail

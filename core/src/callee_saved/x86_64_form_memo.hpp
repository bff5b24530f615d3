// SPDX-License-Identifier: MIT
// x86-64 instruction forms remembered by their fixed bytes, so that an
// encoding that differs from one decoded before in its displacement or
// immediate alone is not decoded with Capstone again.
//
// Why: DecodeMemo gives an encoding seen before, but a module repeats few of
// its encodings whole: a call's, a jump's and a RIP-relative operand's
// differ from one instruction to the next. The big program's lib1.so has
// 1.68 M instructions, 141 K distinct encodings and 3,584 distinct forms;
// /usr/bin/gdb (Debian 12) 1.51 M, 295 K and 15,006; liblldb 19 2.73 M,
// 413 K and 21,086. Each encoding DecodeMemo lacks cost a Capstone decode
// (about 3,300 host instructions: it formats the text whether asked or not).
//
// Why it is exact: an x86-64 encoding is prefixes, opcode, ModR/M, SIB,
// displacement and immediate, in that order (Intel SDM vol. 2, section 2.1);
// the bytes before the displacement decide the operation, the operands'
// registers, the length, and where the displacement and the immediate lie
// (Capstone reports where: cs_x86_encoding). The displacement is a signed
// offset (section 2.1.5), except EVEX's compressed disp8*N (section 2.7.5);
// an immediate is an operand's value, except where it selects the operation
// or a register (cmpps's predicate, pclmulqdq's halves, the is4 register of
// vblendvps; SDM vol. 2, section 2.3.10), which only instructions with
// vector registers do: their immediate is kept among the fixed bytes. A
// form is remembered only when Capstone decodes the same bytes with every
// bit of the displacement and the immediate flipped into the same
// instruction, with operand values that follow the same rule (sign- or
// zero-extended, or relative to the next instruction): disp8*N fails it.
// The unit tests decode every 8-bit displacement and immediate of every
// form learnt from real code both ways (test_decode_memo.cpp).
#pragma once

#include "decode_memo.hpp"
#include "x86_64_form.hpp"

#include <array>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <optional>
#include <span>
#include <vector>

namespace sfunwind::callee_saved::detail {

class X86FormMemo {
  public:
    // A field of an encoding (cs_x86_encoding): `size` bytes at `offset`; no
    // field when size is 0.
    struct Field {
        std::uint8_t offset = 0;
        std::uint8_t size = 0;
    };

    // How Capstone made an operand's value (X86Operand::value) of the fields.
    enum class Source : std::uint8_t {
        Fixed,       // the same for every encoding of the form
        Disp,        // the displacement, sign-extended
        ImmSigned,   // the immediate, sign-extended
        ImmUnsigned, // the immediate, zero-extended
        ImmRelative, // the next instruction's address plus the immediate, sign-extended
    };

    // Decodes an encoding at an address with Capstone: its form, or none.
    using Decode =
        std::function<std::optional<X86Form>(std::span<const std::uint8_t>, std::uint64_t)>;

    // At most `max_forms` forms are kept: what comes after them is decoded
    // with Capstone (a 2^15-form memo takes about 10 MB: 288 bytes a form).
    explicit X86FormMemo(std::size_t max_forms = std::size_t{1} << 15) : max_forms_(max_forms) {}

    // When `code` starts with an encoding of a remembered form: that form,
    // with the operand values of those bytes (relative ones from `address`),
    // in `out`; true.
    bool find(std::uint64_t address, std::span<const std::uint8_t> code, X86Form& out);

    // Remembers the form of `insn` (`form`, decoded at insn.address) when
    // `decode` of its bytes with the fields' bits flipped confirms it (see
    // above).
    void learn(const cs_insn& insn, const X86Form& form, const Decode& decode);

    // find()'s answers so far, and the forms held.
    std::uint64_t hits() const noexcept { return hits_; }
    std::uint64_t misses() const noexcept { return misses_; }
    std::size_t size() const noexcept { return entries_.size(); }

    // Calls f(encoding, address, disp, imm) for each form held: the encoding
    // and address it was learnt from, and its fields.
    void for_each(const std::function<void(std::span<const std::uint8_t>, std::uint64_t, Field,
                                           Field)>& f) const;

  private:
    struct Entry {
        std::array<std::uint8_t, 15> encoding{}; // learnt from
        std::uint8_t head = 0;                   // the bytes before the first field
        Field disp;
        Field imm;
        std::uint64_t address = 0; // learnt at
        std::uint64_t hash = 0;    // of encoding[0, head)
        // The bytes outside the fields (the others 0), and a mask of them,
        // as code_window() words: what matches() compares.
        CodeWindow fixed;
        CodeWindow fixed_mask;
        std::array<Source, 8> source{};
        X86Form form;
    };

    // Whether code of `size` bytes, whose first bytes are `window`, is an
    // encoding of `e`: its bytes outside the fields.
    static bool matches(const Entry& e, const CodeWindow& window, std::size_t size) noexcept;
    void insert(std::uint32_t index);
    void grow();

    std::size_t max_forms_;
    std::vector<Entry> entries_;
    // Open addressing over entries_ (index + 1; 0: empty), by head hash.
    std::vector<std::uint32_t> slots_;
    unsigned slot_bits_ = 0;
    // Bit n of heads_[b]: a form whose head is n bytes long starts with b.
    std::array<std::uint16_t, 256> heads_{};
    std::uint64_t hits_ = 0;
    std::uint64_t misses_ = 0;
};

} // namespace sfunwind::callee_saved::detail

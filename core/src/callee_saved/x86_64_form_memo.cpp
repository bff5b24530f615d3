// SPDX-License-Identifier: MIT
#include "x86_64_form_memo.hpp"

#include "decode_memo.hpp"

#include <algorithm>

namespace sfunwind::callee_saved::detail {
namespace {

constexpr unsigned first_slot_bits = 8;

// A field's bytes, little-endian (SDM vol. 1, section 1.3.1).
std::uint64_t raw(std::span<const std::uint8_t> code, X86FormMemo::Field f) {
    std::uint64_t v = 0;
    for (std::uint8_t k = 0; k < f.size; ++k)
        v |= std::uint64_t{code[f.offset + k]} << (8U * k);
    return v;
}

std::int64_t sign_extended(std::uint64_t v, std::uint8_t size) {
    if (size == 0) return 0;
    if (size >= 8) return static_cast<std::int64_t>(v);
    const unsigned shift = 64U - 8U * size;
    return static_cast<std::int64_t>(v << shift) >> shift;
}

std::int64_t value_of(X86FormMemo::Source s, std::span<const std::uint8_t> code,
                      std::uint64_t address, std::uint8_t size, X86FormMemo::Field disp,
                      X86FormMemo::Field imm) {
    using Source = X86FormMemo::Source;
    switch (s) {
    case Source::Disp:
        return sign_extended(raw(code, disp), disp.size);
    case Source::ImmSigned:
        return sign_extended(raw(code, imm), imm.size);
    case Source::ImmUnsigned:
        return static_cast<std::int64_t>(raw(code, imm));
    case Source::ImmRelative:
        return static_cast<std::int64_t>(
            address + size + static_cast<std::uint64_t>(sign_extended(raw(code, imm), imm.size)));
    case Source::Fixed:
        break;
    }
    return 0;
}

bool valid(X86FormMemo::Field f, std::uint8_t size) {
    return f.offset > 0 && (f.size == 1 || f.size == 2 || f.size == 4 || f.size == 8) &&
           f.offset + f.size <= size;
}

bool inside(X86FormMemo::Field f, std::size_t k) {
    return f.size > 0 && k >= f.offset && k < std::size_t{f.offset} + f.size;
}

// The two forms alike but for their operands' values.
bool alike(const X86Form& a, const X86Form& b) {
    if (a.id != b.id || a.size != b.size || a.jump != b.jump || a.call != b.call ||
        a.ret != b.ret || a.regs_known != b.regs_known || a.written != b.written ||
        a.other_registers != b.other_registers || a.op_count != b.op_count)
        return false;
    for (std::uint8_t i = 0; i < a.op_count; ++i) {
        X86Operand x = a.operands[i];
        X86Operand y = b.operands[i];
        x.value = y.value = 0;
        if (!(x == y)) return false;
    }
    return true;
}

} // namespace

bool X86FormMemo::matches(const Entry& e, const CodeWindow& window, std::size_t size) noexcept {
    return size >= e.form.size && (window.low & e.fixed_mask.low) == e.fixed.low &&
           (window.high & e.fixed_mask.high) == e.fixed.high;
}

bool X86FormMemo::find(std::uint64_t address, std::span<const std::uint8_t> code, X86Form& out) {
    if (entries_.empty() || code.empty()) {
        ++misses_;
        return false;
    }
    const std::uint32_t heads = heads_[code[0]];
    const std::size_t longest = std::min(code.size(), std::size_t{15});
    const CodeWindow window = code_window(code);
    std::uint64_t hash = prefix_hash_start;
    for (std::size_t n = 1; n <= longest && (heads >> n) != 0; ++n) {
        hash = prefix_hash_step(hash, code[n - 1]);
        if ((heads & (1U << n)) == 0) continue;
        const std::size_t mask = slots_.size() - 1;
        for (std::size_t s = (hash * 0x9e3779b97f4a7c15ULL) >> (64 - slot_bits_); slots_[s] != 0;
             s = (s + 1) & mask) {
            const Entry& e = entries_[slots_[s] - 1];
            if (e.hash != hash || e.head != n || !matches(e, window, code.size())) continue;
            out = e.form;
            for (std::uint8_t i = 0; i < out.op_count; ++i)
                if (e.source[i] != Source::Fixed)
                    out.operands[i].value =
                        value_of(e.source[i], code, address, e.form.size, e.disp, e.imm);
            ++hits_;
            return true;
        }
    }
    ++misses_;
    return false;
}

void X86FormMemo::insert(std::uint32_t index) {
    const std::size_t mask = slots_.size() - 1;
    std::size_t s = (entries_[index].hash * 0x9e3779b97f4a7c15ULL) >> (64 - slot_bits_);
    while (slots_[s] != 0)
        s = (s + 1) & mask;
    slots_[s] = index + 1;
}

void X86FormMemo::grow() {
    slot_bits_ = slot_bits_ == 0 ? first_slot_bits : slot_bits_ + 1;
    slots_.assign(std::size_t{1} << slot_bits_, 0);
    for (std::uint32_t i = 0; i < entries_.size(); ++i)
        insert(i);
}

void X86FormMemo::learn(const cs_insn& insn, const X86Form& form, const Decode& decode) {
    if (entries_.size() >= max_forms_ || insn.size == 0 || insn.size > 15 || form.size != insn.size)
        return;
    const cs_x86_encoding& enc = insn.detail->x86.encoding;
    Entry e;
    e.form = form;
    e.address = insn.address;
    std::copy_n(insn.bytes, insn.size, e.encoding.begin());
    if (valid(Field{enc.disp_offset, enc.disp_size}, form.size))
        e.disp = Field{enc.disp_offset, enc.disp_size};
    // An immediate with vector registers may select (above); two immediate
    // operands (enter) have one field between them.
    std::uint8_t immediates = 0;
    for (std::uint8_t i = 0; i < form.op_count; ++i)
        immediates =
            static_cast<std::uint8_t>(immediates + (form.operands[i].type == X86_OP_IMM ? 1 : 0));
    if (valid(Field{enc.imm_offset, enc.imm_size}, form.size) && !form.other_registers &&
        immediates == 1)
        e.imm = Field{enc.imm_offset, enc.imm_size};
    if (e.disp.size == 0 && e.imm.size == 0) return;
    if (e.disp.size > 0 && e.imm.size > 0 && e.disp.offset < e.imm.offset + e.imm.size &&
        e.imm.offset < e.disp.offset + e.disp.size)
        return;
    e.head = e.disp.size == 0  ? e.imm.offset
             : e.imm.size == 0 ? e.disp.offset
                               : std::min(e.disp.offset, e.imm.offset);

    // The probe: every bit of the fields flipped.
    std::array<std::uint8_t, 15> flipped = e.encoding;
    for (std::size_t k = 0; k < form.size; ++k)
        if (inside(e.disp, k) || inside(e.imm, k))
            flipped[k] = static_cast<std::uint8_t>(~flipped[k]);
    const std::span<const std::uint8_t> a(e.encoding.data(), form.size);
    const std::span<const std::uint8_t> b(flipped.data(), form.size);
    const auto probe = decode(b, insn.address);
    if (!probe || !alike(form, *probe)) return;

    // Each operand's value: fixed, or made of a field as in both decodes.
    bool disp_used = false;
    bool imm_used = false;
    for (std::uint8_t i = 0; i < form.op_count; ++i) {
        const std::int64_t va = form.operands[i].value;
        const std::int64_t vb = probe->operands[i].value;
        const auto follows = [&](Source s) {
            return va == value_of(s, a, insn.address, form.size, e.disp, e.imm) &&
                   vb == value_of(s, b, insn.address, form.size, e.disp, e.imm);
        };
        Source s = Source::Fixed;
        if (form.operands[i].type == X86_OP_MEM && e.disp.size > 0) {
            if (!follows(Source::Disp)) return;
            s = Source::Disp;
            disp_used = true;
        } else if (form.operands[i].type == X86_OP_IMM && e.imm.size > 0) {
            for (const Source c : {Source::ImmSigned, Source::ImmUnsigned, Source::ImmRelative})
                if (follows(c)) {
                    s = c;
                    break;
                }
            if (s == Source::Fixed) return;
            imm_used = true;
        } else if (va != vb) {
            return;
        }
        e.source[i] = s;
    }
    if ((e.disp.size > 0 && !disp_used) || (e.imm.size > 0 && !imm_used)) return;

    std::uint64_t hash = prefix_hash_start;
    for (std::size_t k = 0; k < e.head; ++k)
        hash = prefix_hash_step(hash, e.encoding[k]);
    e.hash = hash;
    std::array<std::uint8_t, 16> mask{};
    for (std::size_t k = 0; k < form.size; ++k)
        if (!inside(e.disp, k) && !inside(e.imm, k)) mask[k] = 0xff;
    e.fixed_mask = code_window(mask);
    e.fixed = code_window(a);
    e.fixed.low &= e.fixed_mask.low;
    e.fixed.high &= e.fixed_mask.high;
    entries_.push_back(e);
    if (2 * entries_.size() > slots_.size())
        grow();
    else
        insert(static_cast<std::uint32_t>(entries_.size() - 1));
    heads_[e.encoding[0]] = static_cast<std::uint16_t>(heads_[e.encoding[0]] | 1U << e.head);
}

void X86FormMemo::for_each(const std::function<void(std::span<const std::uint8_t>, std::uint64_t,
                                                    Field, Field)>& f) const {
    for (const Entry& e : entries_)
        f(std::span<const std::uint8_t>(e.encoding.data(), e.form.size), e.address, e.disp, e.imm);
}

} // namespace sfunwind::callee_saved::detail

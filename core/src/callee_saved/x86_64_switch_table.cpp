// SPDX-License-Identifier: MIT
#include "x86_64_switch_table.hpp"

#include "x86_64_form.hpp"

#include <algorithm>
#include <array>
#include <boost/endian/conversion.hpp>

namespace sfunwind::callee_saved::detail {
namespace {

// The longest run read back from the jump: GCC and clang put the range
// check at most a few instructions before it.
constexpr std::size_t max_run = 16;

// What is known of a general register's value on the run.
struct Value {
    enum class Kind : std::uint8_t {
        Unknown,
        Bounded, // its low `width` bits, unsigned, are at most `max`
        Index,   // the whole register is at most `max`
        Table,   // the whole register is `table`
        Offset,  // the sign-extended 32-bit entry `index` <= max of `table`
        Case,    // `table` plus that entry: where the jump goes
    };
    Kind kind = Kind::Unknown;
    unsigned width = 0;
    std::uint64_t max = 0;
    std::uint64_t table = 0;
};

// The width in bits of a general register operand, 0 for the high bytes
// (ah, bh, ch, dh: bits 8-15, not a low part).
unsigned width_of(const X86Operand& op) {
    switch (op.reg) {
    case X86_REG_AH:
    case X86_REG_BH:
    case X86_REG_CH:
    case X86_REG_DH:
        return 0;
    default:
        return op.type == X86_OP_REG && dwarf_gpr(op.reg) ? 8U * op.size : 0U;
    }
}

// The value of a register's low `bits` bits, zero-extended to 64: an
// index where the bound covers them (an index < 2^bits has no other bits).
Value zero_extended(const Value& v, unsigned bits) {
    const bool fits = bits >= 64 || v.max < (std::uint64_t{1} << bits);
    if (v.kind == Value::Kind::Index && fits) return {Value::Kind::Index, 64, v.max, 0};
    if (v.kind == Value::Kind::Bounded && (v.width == bits || (v.width > bits && fits)))
        return {Value::Kind::Index, 64, v.max, 0};
    return {};
}

// Instructions whose only register writes are their explicit operands and
// the flags, which Capstone 4's access lists give (Instruction::gpr_written):
// those lists miss some implicit writes (cmpxchg's rax, syscall's rcx and
// r11, xlat's al, enter's rbp), so any other instruction ends the run.
bool writes_operands_only(const X86Form& x) {
    switch (x.id) {
    case X86_INS_IMUL:
        // The one-operand form writes rdx:rax.
        return x.op_count >= 2;
    case X86_INS_MOV:
    case X86_INS_MOVABS:
    case X86_INS_MOVZX:
    case X86_INS_MOVSX:
    case X86_INS_MOVSXD:
    case X86_INS_LEA:
    case X86_INS_ADD:
    case X86_INS_SUB:
    case X86_INS_AND:
    case X86_INS_OR:
    case X86_INS_XOR:
    case X86_INS_CMP:
    case X86_INS_TEST:
    case X86_INS_SHL:
    case X86_INS_SHR:
    case X86_INS_SAR:
    case X86_INS_INC:
    case X86_INS_DEC:
    case X86_INS_NEG:
    case X86_INS_NOT:
    case X86_INS_PUSH:
    case X86_INS_POP:
    case X86_INS_ROL:
    case X86_INS_ROR:
    case X86_INS_BSWAP:
    case X86_INS_NOP:
    case X86_INS_ENDBR64:
    case X86_INS_SETA:
    case X86_INS_SETAE:
    case X86_INS_SETB:
    case X86_INS_SETBE:
    case X86_INS_SETE:
    case X86_INS_SETNE:
    case X86_INS_SETG:
    case X86_INS_SETGE:
    case X86_INS_SETL:
    case X86_INS_SETLE:
    case X86_INS_SETS:
    case X86_INS_SETNS:
    case X86_INS_CMOVA:
    case X86_INS_CMOVAE:
    case X86_INS_CMOVB:
    case X86_INS_CMOVBE:
    case X86_INS_CMOVE:
    case X86_INS_CMOVNE:
    case X86_INS_CMOVG:
    case X86_INS_CMOVGE:
    case X86_INS_CMOVL:
    case X86_INS_CMOVLE:
    case X86_INS_CMOVS:
    case X86_INS_CMOVNS:
    // SSE and AVX moves and logic, on vector registers and memory (movd
    // and movq to a general register name it as their destination).
    case X86_INS_MOVAPS:
    case X86_INS_MOVAPD:
    case X86_INS_MOVUPS:
    case X86_INS_MOVUPD:
    case X86_INS_MOVDQA:
    case X86_INS_MOVDQU:
    case X86_INS_MOVD:
    case X86_INS_MOVQ:
    case X86_INS_MOVSD:
    case X86_INS_MOVSS:
    case X86_INS_MOVHPS:
    case X86_INS_MOVLPS:
    case X86_INS_PXOR:
    case X86_INS_XORPS:
    case X86_INS_XORPD:
    case X86_INS_PUNPCKLQDQ:
    case X86_INS_VMOVAPS:
    case X86_INS_VMOVUPS:
    case X86_INS_VMOVDQA:
    case X86_INS_VMOVDQU:
    case X86_INS_VPXOR:
    case X86_INS_VXORPS:
        return true;
    default:
        return false;
    }
}

// Conditional branches that write no register: loop and jrcxz write or
// test rcx.
bool plain_branch(unsigned id) {
    switch (id) {
    case X86_INS_LOOP:
    case X86_INS_LOOPE:
    case X86_INS_LOOPNE:
    case X86_INS_JCXZ:
    case X86_INS_JECXZ:
    case X86_INS_JRCXZ:
        return false;
    default:
        return true;
    }
}

// Whether `encoding` is `movsxd r64, m32` as the run reads it: REX.W (Intel
// SDM vol. 2A, section 2.2.1.2) right before opcode 63, with no prefix
// before it (an address-size prefix would make the base and index 32-bit
// registers). Capstone 4 gives 63 without REX.W as a 64-bit move too, where
// the processor writes 32 bits.
bool movsxd_64(std::span<const std::uint8_t> encoding) {
    return encoding.size() >= 3 && (encoding[0] & 0xf8U) == 0x48U && encoding[1] == 0x63;
}

bool has_bit(std::uint16_t mask, unsigned n) {
    return ((static_cast<unsigned>(mask) >> n) & 1U) != 0;
}

class Run {
  public:
    explicit Run(std::uint16_t narrowed) : narrowed_(narrowed) {}

    // The instruction `in`, whose form is `x` and whose bytes are
    // `encoding`: false where the run cannot reach the jump through it (a
    // call, a return, another jump) or follows no value through it (an
    // instruction that may write a register its access lists do not name).
    bool step(const Instruction& in, const X86Form& x, std::span<const std::uint8_t> encoding) {
        const auto bound = pending_;
        pending_.reset();
        if (in.flow == Flow::Call || in.flow == Flow::Stop || in.flow == Flow::Jump ||
            in.flow == Flow::Indirect || !x.regs_known)
            return false;
        if (in.flow == Flow::Branch) {
            if (!plain_branch(x.id)) return false;
            // The path that stays falls through: after `cmp $N, r; ja`, r <= N
            // there (jae: r < N).
            if (bound && (x.id == X86_INS_JA || (x.id == X86_INS_JAE && bound->max > 0))) {
                Value& v = regs_[bound->reg];
                const std::uint64_t max = x.id == X86_INS_JA ? bound->max : bound->max - 1;
                const bool whole =
                    bound->width == 64 || (bound->width == 32 && has_bit(narrowed_, bound->reg));
                v = whole ? Value{Value::Kind::Index, 64, max, 0}
                          : Value{Value::Kind::Bounded, bound->width, max, 0};
            }
            return true;
        }
        if (in.flow != Flow::Next || !writes_operands_only(x)) return false;
        if (known(x, in.address, encoding)) return true;
        // Any other write: the registers it writes are no longer followed.
        for (unsigned r = 0; r < regs_.size(); ++r)
            if (has_bit(in.gpr_written, r)) regs_[r] = Value{};
        narrowed_ = static_cast<std::uint16_t>((narrowed_ & ~in.gpr_written) | in.gpr_narrowed);
        return true;
    }

    // The table the jump `x` goes through, and its largest index.
    std::optional<Value> cases(const X86Form& x) const {
        if (x.op_count != 1 || width_of(x.operands[0]) != 64) return std::nullopt;
        const Value& v = regs_[*dwarf_gpr(x.operands[0].reg)];
        if (v.kind != Value::Kind::Case) return std::nullopt;
        return v;
    }

  private:
    struct Bound {
        std::uint16_t reg = 0;
        unsigned width = 0;
        std::uint64_t max = 0;
    };

    Value& reg(const X86Operand& op) { return regs_[*dwarf_gpr(op.reg)]; }

    void set(const X86Operand& dst, const Value& v) {
        reg(dst) = v;
        const auto r = *dwarf_gpr(dst.reg);
        // A 32-bit or 64-bit write whose value is below 2^32.
        const bool narrow =
            (v.kind == Value::Kind::Index && v.max <= 0xffffffffU) || (width_of(dst) == 32);
        narrowed_ =
            static_cast<std::uint16_t>(narrow ? narrowed_ | 1U << r : narrowed_ & ~(1U << r));
    }

    // The instructions the run follows values through: true when `x`, at
    // `address`, is one of them and its effect is taken.
    bool known(const X86Form& x, std::uint64_t address, std::span<const std::uint8_t> encoding) {
        const bool two = x.op_count == 2;
        const X86Operand& dst = x.operands[0];
        const X86Operand& src = x.operands[1];
        switch (x.id) {
        case X86_INS_CMP:
            // cmp r, imm: flags only; the bound is the next instruction's.
            if (two && width_of(dst) != 0 && src.type == X86_OP_IMM && src.value >= 0 &&
                static_cast<std::uint64_t>(src.value) < max_switch_cases)
                pending_ = Bound{*dwarf_gpr(dst.reg), width_of(dst),
                                 static_cast<std::uint64_t>(src.value)};
            return true;
        case X86_INS_LEA:
            // lea r64, [rip + disp]: the table's address.
            if (two && width_of(dst) == 64 && src.type == X86_OP_MEM && src.reg == X86_REG_RIP &&
                src.index == X86_REG_INVALID && src.segment == X86_REG_INVALID) {
                set(dst, {Value::Kind::Table, 64, 0,
                          address + x.size + static_cast<std::uint64_t>(src.value)});
                return true;
            }
            return false;
        case X86_INS_MOV:
            if (!two || width_of(dst) == 0 || width_of(src) == 0) return false;
            if (width_of(dst) == 64 && width_of(src) == 64) {
                const Value v = reg(src);
                set(dst, v);
                return true;
            }
            if (width_of(dst) == 32 && width_of(src) == 32) {
                set(dst, zero_extended(reg(src), 32));
                return true;
            }
            return false;
        case X86_INS_MOVZX:
            // movzx r32/r64, r8/r16.
            if (two && width_of(dst) >= 32 && width_of(src) != 0 && width_of(src) <= 16) {
                set(dst, zero_extended(reg(src), width_of(src)));
                return true;
            }
            return false;
        case X86_INS_MOVSXD: {
            // movslq (base, index, 4), r64: the entry.
            if (!two || width_of(dst) != 64 || src.type != X86_OP_MEM || src.size != 4 ||
                src.scale != 4 || src.value != 0 || src.segment != X86_REG_INVALID ||
                !is_full(src.reg) || !is_full(src.index) || !movsxd_64(encoding))
                return false;
            const Value& base = regs_[*dwarf_gpr(src.reg)];
            const Value& index = regs_[*dwarf_gpr(src.index)];
            if (base.kind == Value::Kind::Table && index.kind == Value::Kind::Index)
                set(dst, {Value::Kind::Offset, 64, index.max, base.table});
            else
                set(dst, {});
            return true;
        }
        case X86_INS_ADD: {
            // add r64, r64: the table plus its entry, in either order.
            if (!two || width_of(dst) != 64 || width_of(src) != 64) return false;
            const Value a = reg(dst);
            const Value b = reg(src);
            const bool sum = (a.kind == Value::Kind::Offset && b.kind == Value::Kind::Table) ||
                             (a.kind == Value::Kind::Table && b.kind == Value::Kind::Offset);
            if (sum && a.table == b.table)
                set(dst, {Value::Kind::Case, 64, std::max(a.max, b.max), a.table});
            else
                set(dst, {});
            return true;
        }
        default:
            return false;
        }
    }

    std::array<Value, 16> regs_{};
    std::uint16_t narrowed_ = 0; // bit n: register n's value is below 2^32
    std::optional<Bound> pending_;
};

} // namespace

std::optional<SwitchCases> x86_64_switch_cases(const Code& decoded,
                                               std::span<const std::uint8_t> code,
                                               std::uint64_t start, std::size_t jump,
                                               std::span<const std::uint8_t> entries,
                                               const CodeAt& read_only_data) {
    const std::vector<Instruction>& insns = decoded.instructions;
    if (!read_only_data || jump >= insns.size() || entries.size() != insns.size() ||
        insns[jump].flow != Flow::Indirect)
        return std::nullopt;
    // Back from the jump to the last place the code may be entered, or as
    // far as a range check lies.
    std::size_t first = jump;
    while (first > 0 && jump - first < max_run && entries[first] == 0)
        --first;
    const auto form_of = [&](std::size_t k) -> std::optional<X86Form> {
        const Instruction& in = insns[k];
        if (in.address < start || in.address - start + in.size > code.size()) return std::nullopt;
        return x86_form_at(in.address, code.subspan(in.address - start, in.size));
    };
    // Nothing is known where the run starts: at an entry, the values are
    // whatever the paths into it bring.
    Run run(0);
    for (std::size_t k = first; k < jump; ++k) {
        const auto x = form_of(k);
        if (!x) return std::nullopt;
        if (!run.step(insns[k], *x, code.subspan(insns[k].address - start, insns[k].size)))
            return std::nullopt;
    }
    const auto x = form_of(jump);
    if (!x) return std::nullopt;
    const auto table = run.cases(*x);
    if (!table) return std::nullopt;
    const std::uint64_t count = table->max + 1;
    const auto bytes = read_only_data(table->table, 4 * count);
    if (!bytes || bytes->size() < 4 * count) return std::nullopt;
    SwitchCases out;
    out.first = first;
    out.targets.reserve(count);
    for (std::uint64_t i = 0; i < count; ++i) {
        const auto offset = static_cast<std::int32_t>(
            boost::endian::load_little_u32(bytes->data() + static_cast<std::ptrdiff_t>(4 * i)));
        out.targets.push_back(table->table + static_cast<std::uint64_t>(std::int64_t{offset}));
    }
    std::sort(out.targets.begin(), out.targets.end());
    out.targets.erase(std::unique(out.targets.begin(), out.targets.end()), out.targets.end());
    return out;
}

} // namespace sfunwind::callee_saved::detail

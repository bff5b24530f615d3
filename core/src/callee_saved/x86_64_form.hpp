// SPDX-License-Identifier: MIT
// An x86-64 instruction as Capstone decodes it, cut to the fields the
// reduction to an Instruction reads (x86_64_decoder.cpp): what
// x86_64_form_memo.hpp keeps per instruction form and fills in with another
// encoding's displacement and immediate.
#pragma once

#include "instruction.hpp"

#include <array>
#include <capstone/capstone.h>
#include <cstdint>
#include <optional>
#include <span>

namespace sfunwind::callee_saved::detail {

// One operand (cs_x86_op).
struct X86Operand {
    std::int64_t value = 0;    // X86_OP_IMM: the immediate; X86_OP_MEM: the displacement
    std::uint16_t reg = 0;     // X86_OP_REG: the register; X86_OP_MEM: the base register
    std::uint16_t index = 0;   // X86_OP_MEM: the index register
    std::uint16_t segment = 0; // X86_OP_MEM: the segment register
    std::uint8_t type = 0;     // x86_op_type
    std::uint8_t size = 0;     // in bytes
    std::uint8_t access = 0;   // CS_AC_READ, CS_AC_WRITE; Capstone 4 leaves some at 0
    std::uint8_t scale = 0;    // X86_OP_MEM: the index's scale (1, 2, 4, 8)
    friend bool operator==(const X86Operand&, const X86Operand&) = default;
};

struct X86Form {
    std::uint16_t id = 0; // x86_insn
    std::uint8_t size = 0;
    bool jump = false; // in X86_GRP_JUMP
    bool call = false; // in X86_GRP_CALL
    bool ret = false;  // in X86_GRP_RET or X86_GRP_IRET
    // cs_regs_access answered; then `written` holds the general registers it
    // writes, bit n for DWARF register n (whole or in part).
    bool regs_known = false;
    std::uint16_t written = 0;
    // An operand names a register besides the general ones, RIP and the
    // segment of a memory operand (a vector, mask, x87 or control register,
    // or a vector index: VSIB).
    bool other_registers = false;
    std::uint8_t op_count = 0;
    std::array<X86Operand, 8> operands{};
    friend bool operator==(const X86Form&, const X86Form&) = default;
};

// The form of `insn`, decoded with details by `handle`.
X86Form x86_form(csh handle, const cs_insn& insn);

// The form of the instruction that starts `bytes`, at `address`, decoded
// with the calling thread's handle; nullopt where Capstone cannot decode it.
std::optional<X86Form> x86_form_at(std::uint64_t address, std::span<const std::uint8_t> bytes);

namespace x86_64_registers {

// The DWARF number (x86-64 psABI figure 3.36) of a general register or any
// of its parts (Capstone's x86_reg); -1 for other registers.
constexpr int dwarf_gpr_number(unsigned reg) noexcept {
    switch (reg) {
    case X86_REG_RAX:
    case X86_REG_EAX:
    case X86_REG_AX:
    case X86_REG_AL:
    case X86_REG_AH:
        return 0;
    case X86_REG_RDX:
    case X86_REG_EDX:
    case X86_REG_DX:
    case X86_REG_DL:
    case X86_REG_DH:
        return 1;
    case X86_REG_RCX:
    case X86_REG_ECX:
    case X86_REG_CX:
    case X86_REG_CL:
    case X86_REG_CH:
        return 2;
    case X86_REG_RBX:
    case X86_REG_EBX:
    case X86_REG_BX:
    case X86_REG_BL:
    case X86_REG_BH:
        return 3;
    case X86_REG_RSI:
    case X86_REG_ESI:
    case X86_REG_SI:
    case X86_REG_SIL:
        return 4;
    case X86_REG_RDI:
    case X86_REG_EDI:
    case X86_REG_DI:
    case X86_REG_DIL:
        return 5;
    case X86_REG_RBP:
    case X86_REG_EBP:
    case X86_REG_BP:
    case X86_REG_BPL:
        return 6;
    case X86_REG_RSP:
    case X86_REG_ESP:
    case X86_REG_SP:
    case X86_REG_SPL:
        return 7;
    case X86_REG_R8:
    case X86_REG_R8D:
    case X86_REG_R8W:
    case X86_REG_R8B:
        return 8;
    case X86_REG_R9:
    case X86_REG_R9D:
    case X86_REG_R9W:
    case X86_REG_R9B:
        return 9;
    case X86_REG_R10:
    case X86_REG_R10D:
    case X86_REG_R10W:
    case X86_REG_R10B:
        return 10;
    case X86_REG_R11:
    case X86_REG_R11D:
    case X86_REG_R11W:
    case X86_REG_R11B:
        return 11;
    case X86_REG_R12:
    case X86_REG_R12D:
    case X86_REG_R12W:
    case X86_REG_R12B:
        return 12;
    case X86_REG_R13:
    case X86_REG_R13D:
    case X86_REG_R13W:
    case X86_REG_R13B:
        return 13;
    case X86_REG_R14:
    case X86_REG_R14D:
    case X86_REG_R14W:
    case X86_REG_R14B:
        return 14;
    case X86_REG_R15:
    case X86_REG_R15D:
    case X86_REG_R15W:
    case X86_REG_R15B:
        return 15;
    default:
        return -1;
    }
}

// dwarf_gpr_number() of every x86_reg, plus one (0: not a general register),
// made at compile time: the reduction asks for every operand of every
// instruction, and the switch, a jump table, cost an indirect branch and the
// optional's assembly in a stack slot each time.
constexpr std::array<std::uint8_t, X86_REG_ENDING> make_dwarf_gpr_table() noexcept {
    std::array<std::uint8_t, X86_REG_ENDING> t{};
    for (std::size_t r = 0; r != t.size(); ++r)
        t[r] = static_cast<std::uint8_t>(dwarf_gpr_number(static_cast<unsigned>(r)) + 1);
    return t;
}
inline constexpr std::array<std::uint8_t, X86_REG_ENDING> dwarf_gpr_table = make_dwarf_gpr_table();

} // namespace x86_64_registers

// The DWARF number (x86-64 psABI figure 3.36) of a general register or any
// of its parts (Capstone's x86_reg); nullopt for other registers.
inline std::optional<std::uint16_t> dwarf_gpr(unsigned reg) noexcept {
    const unsigned plus_one = reg < x86_64_registers::dwarf_gpr_table.size()
                                  ? x86_64_registers::dwarf_gpr_table[reg]
                                  : 0U;
    if (plus_one == 0) return std::nullopt;
    return static_cast<std::uint16_t>(plus_one - 1);
}

// Whether `reg` is a whole 64-bit general register (rax-r15, not rip).
bool is_full(unsigned reg);

// Appends the instruction of `form` at `address` to `out`, with the saves and
// loads of the registers `tracked` (DWARF numbers) it makes.
void reduce_x86_64(const X86Form& form, std::uint64_t address,
                   std::span<const std::uint16_t> tracked, Code& out);

} // namespace sfunwind::callee_saved::detail

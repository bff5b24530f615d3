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

// The DWARF number (x86-64 psABI figure 3.36) of a general register or any
// of its parts (Capstone's x86_reg); nullopt for other registers.
std::optional<std::uint16_t> dwarf_gpr(unsigned reg);

// Whether `reg` is a whole 64-bit general register (rax-r15, not rip).
bool is_full(unsigned reg);

// Appends the instruction of `form` at `address` to `out`, with the saves and
// loads of the registers `tracked` (DWARF numbers) it makes.
void reduce_x86_64(const X86Form& form, std::uint64_t address,
                   std::span<const std::uint16_t> tracked, Code& out);

} // namespace sfunwind::callee_saved::detail

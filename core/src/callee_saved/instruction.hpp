// SPDX-License-Identifier: MIT
// Machine instructions reduced to what the callee-saved analysis needs
// (function_rules.cpp), decoded with Capstone: one decoder per architecture
// (x86_64_decoder.cpp, aarch64_decoder.cpp, s390x_decoder.cpp), one form.
#pragma once

#include "sfunwind/abi.hpp"

#include <cstdint>
#include <span>
#include <vector>

namespace sfunwind::callee_saved::detail {

// How control leaves an instruction.
enum class Flow : std::uint8_t {
    Next,     // to the next instruction
    Jump,     // to `target` only
    Branch,   // to the next instruction or `target`
    Call,     // to the next instruction, after a call (stack below SP clobbered)
    Indirect, // an indirect jump: a switch table or a tail call through a pointer
    Stop,     // ret, ud2, hlt, brk: no successor in the function
};

// The base of a memory operand, as the analysis can place it. SP and FP are
// the ABI's (Abi::sp_reg, Abi::fp_reg: rsp/rbp, sp/x29, r15/r11).
enum class Base : std::uint8_t {
    None,  // no memory operand of interest
    Sp,    // SP + disp
    Fp,    // FP + disp
    Stack, // SP or FP with an index register: somewhere in the frame
    Other, // any other register: not the register save area
};

// What one instruction does to the stack pointer. Memory operands are
// relative to the SP before the instruction, whatever its SP effect (a
// pre-indexed `stp x29, x30, [sp, #-16]!` stores at SP-16, then SP -= 16).
enum class SpEffect : std::uint8_t {
    None,
    Add,    // SP += delta (push: -8, pop: +8, sub/add/lea of constants, writeback)
    FromFp, // SP = FP + delta (mov rsp, rbp; lea rsp, [rbp+d]; leave: +8; mov sp, x29)
    // SP lowered by an amount not known: at or below where it was
    // (and rsp, -16: an AND never makes an unsigned value larger; sub rsp,
    // rax and sub sp, sp, x1: when the register holds less than 2^32,
    // State::narrow). sp_delta: the DWARF number of the register
    // subtracted, or -1 for none (the AND).
    Lower,
    Unknown, // any other write (mov rsp, rax; enter; sub sp, sp, x16)
};

// What one instruction does to the frame pointer.
enum class FpEffect : std::uint8_t {
    None,
    FromSp,  // FP = SP + delta (mov rbp, rsp; lea rbp, [rsp+d]; add x29, sp, #d)
    Unknown, // any other write (pop rbp, leave, mov rbp, rax, ldp x29, x30)
};

// A tracked register stored or loaded whole (its 8 bytes; AArch64 d8-d15:
// the low 64 bits AAPCS64 preserves), at the instruction's memory base +
// disp. Tracked registers are numbered by their index in the ABI's list
// (bit i of a mask = untracked_callee_saved(abi)[i]).
struct RegisterAccess {
    std::uint8_t index = 0;
    std::int64_t disp = 0;
    friend bool operator==(const RegisterAccess&, const RegisterAccess&) = default;
};

// The widest fields first, so that no padding lies between them (80 bytes):
// a module's translation copies each instruction from its memo into the
// function's list.
struct Instruction {
    std::uint64_t address = 0;
    std::uint64_t target = 0; // Jump, Branch, and a direct Call
    std::int64_t sp_delta = 0;
    std::int64_t fp_delta = 0;
    // The memory this instruction writes (one range; push and call write
    // at rsp-8 before their SP change, recorded here as Sp, -8; stmg
    // %r6,%r15,48(%r15): Sp, 48, 80 bytes): store_base, store_disp,
    // store_size.
    std::int64_t store_disp = 0;
    // Every DWARF register below 64 the instruction writes (bit n: register
    // n), which a copy (below) is lost by.
    std::uint64_t written = 0;
    std::uint32_t store_size = 0;
    // Tracked registers stored whole to store_base (push, mov m64, r; stp;
    // stmg), then those loaded whole from load_base (pop, mov r, m64; ldp;
    // lmg): Code::saves() and Code::loads().
    std::uint32_t first_access = 0;
    // Tracked registers written in any other way (whole or in part); never
    // one of the loads.
    std::uint32_t clobbered = 0;
    // A whole 8-byte register copied to another (s390x `ldgr %f2,%r10`,
    // `lgdr %r10,%f2`, `lgr`), by DWARF number, where `copies`. Decoders
    // that give no copies leave copy_from, copy_to and `written`.
    std::uint16_t copy_from = 0;
    std::uint16_t copy_to = 0;
    // The general registers numbered 0-15 in DWARF (x86-64's sixteen,
    // AArch64's x0-x15; bit n: register n) the instruction writes, and of
    // those, the ones it leaves below 2^32: a 32-bit destination is
    // zero-extended into its 64-bit register (Intel SDM vol. 1, section
    // 3.4.1.1; a W register's write zeroes the X register's upper half).
    // s390x's decoder leaves both 0.
    std::uint16_t gpr_written = 0;
    std::uint16_t gpr_narrowed = 0;
    bool copies = false;
    std::uint8_t size = 0;
    Flow flow = Flow::Next;
    bool direct_call = false; // a Call to `target`
    bool returns = false;     // ret, iret: leaves the function to its caller
    bool padding = false;     // nop or int3: what assemblers align code with
    SpEffect sp = SpEffect::None;
    FpEffect fp = FpEffect::None;
    Base store_base = Base::None;
    // Where the loads (Code::loads()) read: pop reads [rsp], ldp x19, x20,
    // [sp, #16] reads Sp + 16 and + 24.
    Base load_base = Base::None;
    std::uint8_t saves = 0;
    std::uint8_t loads = 0;
    friend bool operator==(const Instruction&, const Instruction&) = default;
};
static_assert(sizeof(Instruction) == 80, "no padding between the fields");

// An instruction that sets the SP or the FP from the SP or the FP plus a
// constant (add sp, sp, #d; mov sp, x29; lgr %r11,%r15; la %r15,d(%r11)):
// SP from SP is a step, SP from FP a reset, FP from SP the frame's anchor.
// FP from FP is left to the decoder's write tracking (FP unknown).
inline void set_stack_register(Instruction& in, bool dst_is_sp, bool src_is_sp,
                               std::int64_t delta) {
    if (dst_is_sp) {
        in.sp = src_is_sp ? SpEffect::Add : SpEffect::FromFp;
        in.sp_delta = delta;
    } else if (src_is_sp) {
        in.fp = FpEffect::FromSp;
        in.fp_delta = delta;
    }
}

// A function's decoded instructions, in address order, and the register
// saves and loads they make.
struct Code {
    std::vector<Instruction> instructions;
    std::vector<RegisterAccess> accesses;
    friend bool operator==(const Code&, const Code&) = default;

    // Appends `in` with its saves and loads.
    void add(const Instruction& in, std::span<const RegisterAccess> saves,
             std::span<const RegisterAccess> loads);
    std::span<const RegisterAccess> saves(const Instruction& in) const {
        return std::span<const RegisterAccess>(accesses).subspan(in.first_access, in.saves);
    }
    std::span<const RegisterAccess> loads(const Instruction& in) const {
        return std::span<const RegisterAccess>(accesses).subspan(in.first_access + in.saves,
                                                                 in.loads);
    }
    // Both: the saves, then the loads.
    std::span<const RegisterAccess> saves_and_loads(const Instruction& in) const {
        return std::span<const RegisterAccess>(accesses).subspan(in.first_access,
                                                                 std::size_t{in.saves} + in.loads);
    }
};

// Whether a decoder exists for the ABI's architecture.
bool decodable(const Abi& abi) noexcept;

// Whether `code` starts with the plain return instruction of the ABI's
// architecture, read from its bytes without Capstone: x86-64 `ret` (C3,
// Intel SDM vol. 2B, RET), AArch64 `ret` (D65F03C0, Arm ARM C6.2.254),
// s390x `br %r14` (07FE, z/Architecture Principles of Operation, BCR). The
// question of whether a called function returns asks it of every
// function's epilogue; false says nothing (decode then).
bool starts_with_return(const Abi& abi, std::span<const std::uint8_t> code) noexcept;

class DecodeMemo;

// Decodes [start, start + code.size()) linearly into `out`, until the end or
// the first bytes Capstone cannot decode. `tracked` holds the DWARF numbers
// of the tracked registers (at most 32). `memo` (decode_memo.hpp; x86-64
// only, nullptr for none) gives the encodings it holds and learns the others.
// Returns false when Capstone cannot be opened for the architecture, or
// there is no decoder for it.
bool decode(const Abi& abi, std::uint64_t start, std::span<const std::uint8_t> code,
            std::span<const std::uint16_t> tracked, Code& out, DecodeMemo* memo = nullptr);

// One per architecture; decode() chooses.
bool decode_x86_64(std::uint64_t start, std::span<const std::uint8_t> code,
                   std::span<const std::uint16_t> tracked, Code& out, DecodeMemo* memo);
bool decode_aarch64(ByteOrder order, std::uint64_t start, std::span<const std::uint8_t> code,
                    std::span<const std::uint16_t> tracked, Code& out, DecodeMemo* memo);
bool decode_s390x(std::uint64_t start, std::span<const std::uint8_t> code,
                  std::span<const std::uint16_t> tracked, Code& out);

} // namespace sfunwind::callee_saved::detail

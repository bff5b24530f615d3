// SPDX-License-Identifier: MIT
// x86-64 instructions reduced to what the callee-saved analysis needs
// (function_rules.cpp), decoded with Capstone.
#pragma once

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
    Stop,     // ret, ud2, hlt: no successor in the function
};

// The base of a memory operand, as the analysis can place it.
enum class Base : std::uint8_t {
    None,  // no memory operand of interest
    Sp,    // rsp + disp
    Fp,    // rbp + disp
    Stack, // rsp or rbp with an index register: somewhere in the frame
    Other, // any other register: not the register save area
};

// What one instruction does to the stack pointer.
enum class SpEffect : std::uint8_t {
    None,
    Add,     // rsp += delta (push: -8, pop: +8, sub/add/lea of constants)
    FromFp,  // rsp = rbp + delta (mov rsp, rbp; lea rsp, [rbp+d]; leave: +8)
    Unknown, // any other write (and rsp, -16; mov rsp, rax; enter)
};

// What one instruction does to the frame pointer (rbp).
enum class FpEffect : std::uint8_t {
    None,
    FromSp,  // rbp = rsp + delta (mov rbp, rsp; lea rbp, [rsp+d])
    Unknown, // any other write (pop rbp, leave, mov rbp, rax)
};

// Tracked registers are numbered by their index in the ABI's list (bit i of
// a mask = untracked_callee_saved(abi)[i]).
struct Instruction {
    std::uint64_t address = 0;
    std::uint8_t size = 0;
    Flow flow = Flow::Next;
    std::uint64_t target = 0; // Jump, Branch, and a direct Call
    bool direct_call = false; // a Call to `target`
    bool returns = false;     // ret, iret: leaves the function to its caller
    bool padding = false;     // nop or int3: what assemblers align code with

    SpEffect sp = SpEffect::None;
    std::int64_t sp_delta = 0;
    FpEffect fp = FpEffect::None;
    std::int64_t fp_delta = 0;

    // The memory this instruction writes (one operand; push and call write
    // at rsp-8 before their SP change, recorded here as Sp, -8).
    Base store_base = Base::None;
    std::int64_t store_disp = 0;
    std::uint32_t store_size = 0;

    // A tracked register stored whole to the memory above (push, mov m64, r).
    std::int8_t saved = -1;
    // A tracked register loaded whole from memory (pop, mov r, m64), and
    // where from (Base Sp or Fp with load_disp; pop reads [rsp]).
    std::int8_t loaded = -1;
    Base load_base = Base::None;
    std::int64_t load_disp = 0;
    // Tracked registers written in any other way (whole or in part).
    std::uint32_t clobbered = 0;
};

// Decodes [start, start + code.size()) linearly, until the end or the first
// bytes Capstone cannot decode. `tracked` holds the DWARF numbers of the
// tracked registers. Returns false when Capstone cannot be opened.
bool decode_x86_64(std::uint64_t start, std::span<const std::uint8_t> code,
                   std::span<const std::uint16_t> tracked, std::vector<Instruction>& out);

} // namespace sfunwind::callee_saved::detail

// SPDX-License-Identifier: MIT
// The cases of an x86-64 switch, read from its table: every address its
// indirect jump can go to.
//
// GCC and clang compile a dense switch in position-independent code to a
// range check, a load from a table of offsets and an indirect jump:
//
//     cmp    $N, %esi            the cases are 0..N (unsigned)
//     ja     .Ldefault
//     lea    .Ltable(%rip), %rcx
//     mov    %esi, %eax          a zero-extension (or movzbl %sil, %eax)
//     movslq (%rcx,%rax,4), %rax
//     add    %rcx, %rax
//     jmp    *%rax               (notrack jmp with -fcf-protection)
//
// .Ltable holds N + 1 signed 32-bit offsets from its own address (`.long
// .Lcase - .Ltable`, which the assembler resolves: no relocation applies
// there), in .rodata. The N + 1 offsets read from the file are then every
// address the jump can go to.
//
// Why that is exact: the instructions from the last place the code may be
// entered (`entries`: the function's start, a branch target, a landing pad,
// another switch's case) to the jump run in order, so the values are
// followed through them from that place on: the index bounded by the `ja`
// (or `jae`) after the `cmp` with a constant (unsigned: the index is at most
// N), made a whole 64-bit value by a zero-extension (a 32-bit register write
// zeroes the upper half: Intel SDM vol. 1, section 3.4.1.1), the table's
// address by a RIP-relative `lea`, the entry loaded with that base, that
// index and a scale of 4 (`movsxd` with REX.W and 64-bit registers), and
// the base added to it. Any other write to one of those registers
// (Capstone's register access lists) loses its value; an instruction whose
// writes those lists may miss (outside a list of those that write only
// their operands: Capstone 4 does not list cmpxchg's rax, syscall's rcx,
// xlat's al), a call, a return or another jump on the way ends the reading.
// The table must lie where the program cannot change it
// (CodeFacts::read_only_data). Where any of this is not seen, there is no
// answer, and the analysis takes the jump as one whose targets are not
// known.
#pragma once

#include "instruction.hpp"
#include "sfunwind/callee_saved/function_rules.hpp"

#include <cstddef>
#include <cstdint>
#include <optional>
#include <span>
#include <vector>

namespace sfunwind::callee_saved::detail {

struct SwitchCases {
    // The first instruction of the run that ends at the jump: no place after
    // it up to the jump is entered but from the instruction before.
    std::size_t first = 0;
    // Where each table entry sends the jump (link-time addresses; anywhere:
    // a case in a `.cold` part lies outside the function).
    std::vector<std::uint64_t> targets;
};

// The most entries a table is read for.
inline constexpr std::uint64_t max_switch_cases = 1U << 16;

// The cases of the indirect jump `decoded.instructions[jump]`, of the
// function whose code `code` starts at `start`, when it ends the sequence
// above. entries[k] != 0: instruction k may be entered from other than the
// instruction before it (a branch or call target, a landing pad, the
// function's start); the caller also checks that no table's case lies in
// the run (SwitchCases::first).
std::optional<SwitchCases> x86_64_switch_cases(const Code& decoded,
                                               std::span<const std::uint8_t> code,
                                               std::uint64_t start, std::size_t jump,
                                               std::span<const std::uint8_t> entries,
                                               const CodeAt& read_only_data);

} // namespace sfunwind::callee_saved::detail

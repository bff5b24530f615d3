// SPDX-License-Identifier: MIT
// What the unwinder needs to know about each target ABI: which DWARF register
// is the stack pointer, frame pointer and return-address register, and the
// few ABI rules that SFrame leaves implicit.
#pragma once

#include "sfunwind/bytes.hpp"

#include <cstddef>
#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <string_view>

namespace sfunwind {

enum class Arch : std::uint8_t { X86_64, AArch64, S390x, Ppc64 };

struct Abi {
    Arch arch;
    ByteOrder order;
    std::string_view name; // "amd64", "aarch64", "s390x", "ppc64", "ppc64le"
    std::uint16_t sp_reg;  // DWARF register numbers
    std::uint16_t fp_reg;
    std::uint16_t ra_reg;      // the register a return address lives in (x86-64: rip)
    std::int32_t sp_from_cfa;  // caller SP = CFA + this (s390x: -160; SFrame v3 section 3.1.3)
    bool ra_in_register;       // the RA is passed in a register (LR), not pushed by the call
    std::uint32_t stack_align; // the caller's SP is a multiple of this at a call site
    // Where the call instruction leaves the RA, for the whole function: CFA +
    // this (x86-64: -8, SFrame v3 section 3.1.1 sfh_cfa_fixed_ra_offset); 0
    // where the RA arrives in a register and has rules of its own.
    std::int8_t fixed_ra_offset;
    // Bytes below the SP that asynchronous code (a signal handler's frame)
    // leaves alone: x86-64 psABI section 3.2.2 (128), the 64-bit PowerPC
    // ELF ABIs' protected zone (288), none on AArch64 (AAPCS64) and s390x.
    std::uint16_t red_zone;
};

// CFA = SP + this at a function's first instruction: the caller's SP plus
// what the call pushed (x86-64: 8) or the ABI's CFA bias (s390x: 160).
constexpr std::int32_t entry_cfa_offset(const Abi& abi) noexcept {
    return -abi.sp_from_cfa - abi.fixed_ra_offset;
}

// The ABIs sfunwind knows. Numbers are the DWARF register numbers of each
// psABI (x86-64: rsp 7, rbp 6, rip 16; AArch64: sp 31, x29 29, x30 30; s390x:
// r15 15, r11 11, r14 14; ppc64: r1 1, r31 31, lr 65).
const Abi& abi_amd64() noexcept;
const Abi& abi_aarch64(ByteOrder order) noexcept;
const Abi& abi_s390x() noexcept;
const Abi& abi_ppc64(ByteOrder order) noexcept;

// The ABI whose Abi::name is `name`, or null.
const Abi* abi_named(std::string_view name) noexcept;

// Name of a DWARF register of this ABI ("rbp", "x29", "r14", "f2"), as the
// psABI, GNU as and the debuggers spell it; nullopt for a number it does not
// name.
std::optional<std::string> known_register_name(const Abi& abi, std::uint16_t dwarf_reg);
// known_register_name(), or "r<N>": for messages.
std::string register_name(const Abi& abi, std::uint16_t dwarf_reg);

// The callee-saved registers of an ABI that SFrame has no rule for (DWARF
// numbers): x86-64 psABI section 3.2.1 (rbx, r12-r15; rbp is SFrame's FP),
// AAPCS64 section 6.1.1 (x19-x28, d8-d15; x29 is the FP), s390x ELF ABI
// section 1.2.1.1 (r6-r10, r12, r13, f8-f15; r11 is the FP, r14 the RA).
std::span<const std::uint16_t> untracked_callee_saved(const Abi& abi);
// The most registers untracked_callee_saved() names for any ABI (AArch64:
// x19-x28 and d8-d15).
inline constexpr std::size_t max_untracked_callee_saved = 18;

// The callee-saved registers (DWARF numbers) that Swift's calling
// conventions pass values in, which a call into Swift code may change all
// the same: a throwing function returns its error in the swifterror
// register, and swifttailcc functions do not preserve swiftself and
// swiftasync (Swift's docs/ABI/CallingConventionSummary.rst; LLVM's
// X86CallingConv.td: r12, r13, r14; AArch64CallingConvention.td: x21, x20,
// x22; SystemZCallingConv.td: r9, r10). None for ppc64.
std::span<const std::uint16_t> swift_call_clobbered(const Abi& abi);

} // namespace sfunwind

// SPDX-License-Identifier: MIT
#include "sfunwind/abi.hpp"

#include <array>
#include <string>

namespace sfunwind {
namespace {

// x86-64 psABI figure 3.36: DWARF register numbers 0-16.
constexpr std::array<const char*, 17> amd64_names = {"rax", "rdx", "rcx", "rbx", "rsi", "rdi",
                                                     "rbp", "rsp", "r8",  "r9",  "r10", "r11",
                                                     "r12", "r13", "r14", "r15", "rip"};

// s390x ELF ABI supplement, table "DWARF register number mapping": 16-31 are
// the floating-point registers in this order (as GNU as and objdump number them).
constexpr std::array<const char*, 16> s390x_fpr_names = {"f0", "f2",  "f4",  "f6",  "f1",  "f3",
                                                         "f5", "f7",  "f8",  "f10", "f12", "f14",
                                                         "f9", "f11", "f13", "f15"};

const Abi amd64{Arch::X86_64, ByteOrder::Little, "amd64", 7, 6, 16, 0, false, 16, -8, 128};
const Abi aarch64_le{Arch::AArch64, ByteOrder::Little, "aarch64", 31, 29, 30, 0, true, 16, 0, 0};
const Abi aarch64_be{Arch::AArch64, ByteOrder::Big, "aarch64_be", 31, 29, 30, 0, true, 16, 0, 0};
// s390x ELF ABI: CFA = caller's SP + 160 (SFrame v3 section 3.1.3).
const Abi s390x{Arch::S390x, ByteOrder::Big, "s390x", 15, 11, 14, -160, true, 8, 0, 0};
const Abi ppc64_be{Arch::Ppc64, ByteOrder::Big, "ppc64", 1, 31, 65, 0, true, 16, 0, 288};
const Abi ppc64_le{Arch::Ppc64, ByteOrder::Little, "ppc64le", 1, 31, 65, 0, true, 16, 0, 288};

constexpr std::array<std::uint16_t, 5> amd64_untracked{3, 12, 13, 14, 15};
constexpr std::array<std::uint16_t, 18> aarch64_untracked{19, 20, 21, 22, 23, 24, 25, 26, 27,
                                                          28, 72, 73, 74, 75, 76, 77, 78, 79};
constexpr std::array<std::uint16_t, 15> s390x_untracked{6,  7,  8,  9,  10, 12, 13, 24,
                                                        25, 26, 27, 28, 29, 30, 31};

// Swift's conventions, as LLVM assigns them: swifterror, swiftself,
// swiftasync (X86CallingConv.td: r12, r13, r14; AArch64CallingConvention.td:
// x21, x20, x22; SystemZCallingConv.td: r9, r10, no swiftasync).
constexpr std::array<std::uint16_t, 3> amd64_swift{12, 13, 14};
constexpr std::array<std::uint16_t, 3> aarch64_swift{21, 20, 22};
constexpr std::array<std::uint16_t, 2> s390x_swift{9, 10};

static_assert(amd64_untracked.size() <= max_untracked_callee_saved &&
              aarch64_untracked.size() <= max_untracked_callee_saved &&
              s390x_untracked.size() <= max_untracked_callee_saved);

} // namespace

const Abi& abi_amd64() noexcept {
    return amd64;
}
const Abi& abi_aarch64(ByteOrder order) noexcept {
    return order == ByteOrder::Big ? aarch64_be : aarch64_le;
}
const Abi& abi_s390x() noexcept {
    return s390x;
}
const Abi& abi_ppc64(ByteOrder order) noexcept {
    return order == ByteOrder::Big ? ppc64_be : ppc64_le;
}

const Abi* abi_named(std::string_view name) noexcept {
    for (const Abi* abi : {&amd64, &aarch64_le, &aarch64_be, &s390x, &ppc64_be, &ppc64_le})
        if (abi->name == name) return abi;
    return nullptr;
}

std::optional<std::string> known_register_name(const Abi& abi, std::uint16_t reg) {
    switch (abi.arch) {
    case Arch::X86_64:
        if (reg < amd64_names.size()) return amd64_names[reg];
        break;
    case Arch::AArch64:
        if (reg == 31) return "sp";
        if (reg <= 30) return "x" + std::to_string(reg);
        break;
    case Arch::S390x:
        if (reg <= 15) return "r" + std::to_string(reg);
        if (reg <= 31) return s390x_fpr_names[reg - 16];
        break;
    case Arch::Ppc64:
        if (reg <= 31) return "r" + std::to_string(reg);
        if (reg == 65) return "lr";
        break;
    }
    return std::nullopt;
}

std::string register_name(const Abi& abi, std::uint16_t reg) {
    return known_register_name(abi, reg).value_or("r" + std::to_string(reg));
}

std::span<const std::uint16_t> swift_call_clobbered(const Abi& abi) {
    switch (abi.arch) {
    case Arch::X86_64:
        return amd64_swift;
    case Arch::AArch64:
        return aarch64_swift;
    case Arch::S390x:
        return s390x_swift;
    case Arch::Ppc64:
        break;
    }
    return {};
}

std::span<const std::uint16_t> untracked_callee_saved(const Abi& abi) {
    switch (abi.arch) {
    case Arch::X86_64:
        return amd64_untracked;
    case Arch::AArch64:
        return aarch64_untracked;
    case Arch::S390x:
        return s390x_untracked;
    case Arch::Ppc64:
        break;
    }
    return {};
}

} // namespace sfunwind

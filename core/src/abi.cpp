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

// s390x ELF ABI supplement, "DWARF register number mapping": DWARF
// registers 16-31 are these floating-point registers, in this order.
constexpr std::array<std::uint8_t, 16> s390x_fprs = {0, 2,  4,  6,  1, 3,  5,  7,
                                                     8, 10, 12, 14, 9, 11, 13, 15};

const Abi amd64{Arch::X86_64, ByteOrder::Little, "amd64", 7, 6, 16, 0, false, 16};
const Abi aarch64_le{Arch::AArch64, ByteOrder::Little, "aarch64", 31, 29, 30, 0, true, 16};
const Abi aarch64_be{Arch::AArch64, ByteOrder::Big, "aarch64_be", 31, 29, 30, 0, true, 16};
// s390x ELF ABI: CFA = caller's SP + 160 (SFrame v3 section 3.1.3).
const Abi s390x{Arch::S390x, ByteOrder::Big, "s390x", 15, 11, 14, -160, true, 8};
const Abi ppc64_be{Arch::Ppc64, ByteOrder::Big, "ppc64", 1, 31, 65, 0, true, 16};
const Abi ppc64_le{Arch::Ppc64, ByteOrder::Little, "ppc64le", 1, 31, 65, 0, true, 16};

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
        if (reg <= 31) return "f" + std::to_string(s390x_fprs[reg - 16U]);
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

} // namespace sfunwind

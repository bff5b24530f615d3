// SPDX-License-Identifier: MIT
#include "instruction.hpp"

namespace sfunwind::callee_saved::detail {

void Code::add(const Instruction& in, std::span<const RegisterAccess> saves,
               std::span<const RegisterAccess> loads) {
    // Copied once, into its place.
    Instruction& added = instructions.emplace_back(in);
    added.first_access = static_cast<std::uint32_t>(accesses.size());
    added.saves = static_cast<std::uint8_t>(saves.size());
    added.loads = static_cast<std::uint8_t>(loads.size());
    // Most instructions save and load nothing.
    if (!saves.empty()) accesses.insert(accesses.end(), saves.begin(), saves.end());
    if (!loads.empty()) accesses.insert(accesses.end(), loads.begin(), loads.end());
}

bool decodable(const Abi& abi) noexcept {
    switch (abi.arch) {
    case Arch::X86_64:
    case Arch::AArch64:
    case Arch::S390x:
        return true;
    case Arch::Ppc64:
        break;
    }
    return false;
}

bool starts_with_return(const Abi& abi, std::span<const std::uint8_t> code) noexcept {
    switch (abi.arch) {
    case Arch::X86_64:
        return !code.empty() && code[0] == 0xc3;
    case Arch::AArch64: {
        if (code.size() < 4) return false;
        // A64 instructions are little-endian whatever the data's byte order.
        const std::uint32_t word = std::uint32_t{code[0]} | std::uint32_t{code[1]} << 8 |
                                   std::uint32_t{code[2]} << 16 | std::uint32_t{code[3]} << 24;
        return word == 0xd65f03c0U;
    }
    case Arch::S390x:
        return code.size() >= 2 && code[0] == 0x07 && code[1] == 0xfe;
    case Arch::Ppc64:
        break;
    }
    return false;
}

bool decode(const Abi& abi, std::uint64_t start, std::span<const std::uint8_t> code,
            std::span<const std::uint16_t> tracked, Code& out, DecodeMemo* memo) {
    if (tracked.size() > 32) return false;
    switch (abi.arch) {
    case Arch::X86_64:
        return decode_x86_64(start, code, tracked, out, memo);
    case Arch::AArch64:
        return decode_aarch64(abi.order, start, code, tracked, out, memo);
    case Arch::S390x:
        return decode_s390x(start, code, tracked, out);
    case Arch::Ppc64:
        break;
    }
    return false;
}

} // namespace sfunwind::callee_saved::detail

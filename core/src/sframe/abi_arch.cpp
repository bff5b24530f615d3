// SPDX-License-Identifier: MIT
// The ABI/arch identifiers of the SFrame header (spec v3 section 2.2.1) and
// the Abi each stands for, both ways, in one place.
#include "sfunwind/abi.hpp"
#include "sfunwind/sframe/format.hpp"

namespace sfunwind::sframe {

const Abi* abi_of(AbiArch arch) noexcept {
    switch (arch) {
    case AbiArch::AArch64Big:
        return &abi_aarch64(ByteOrder::Big);
    case AbiArch::AArch64Little:
        return &abi_aarch64(ByteOrder::Little);
    case AbiArch::Amd64Little:
        return &abi_amd64();
    case AbiArch::S390xBig:
        return &abi_s390x();
    }
    return nullptr;
}

std::optional<AbiArch> abi_arch_of(const Abi& abi) noexcept {
    switch (abi.arch) {
    case Arch::X86_64:
        return AbiArch::Amd64Little;
    case Arch::AArch64:
        return abi.order == ByteOrder::Big ? AbiArch::AArch64Big : AbiArch::AArch64Little;
    case Arch::S390x:
        return AbiArch::S390xBig;
    case Arch::Ppc64:
        break;
    }
    return std::nullopt;
}

} // namespace sfunwind::sframe

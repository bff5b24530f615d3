// SPDX-License-Identifier: MIT
// The numbers the SFrame specifications define (v1, v2 with errata 1 and 2,
// v3), named as C++ enumerations. Layout offsets live with the decoder of
// each version (src/sframe/layout_v*.cpp), not here.
#pragma once

#include <cstdint>
#include <optional>

namespace sfunwind {
struct Abi;
}

namespace sfunwind::sframe {

// Spec v3 section 2.1: 0xdee2, stored in target byte order.
inline constexpr std::uint16_t magic = 0xdee2;
// The fixed part of the header is the same 28 bytes in every version.
inline constexpr std::uint32_t header_size = 28;

enum class Version : std::uint8_t { V1 = 1, V2 = 2, V3 = 3 };

// Section flags (spec v3 section 2.1.3).
namespace flag {
inline constexpr std::uint8_t fde_sorted = 0x1;
inline constexpr std::uint8_t frame_pointer = 0x2;        // v1 and v2 only
inline constexpr std::uint8_t fde_func_start_pcrel = 0x4; // v2 erratum 1, and v3
} // namespace flag

// ABI/arch identifier (spec v3 section 2.2.1).
enum class AbiArch : std::uint8_t {
    AArch64Big = 1,
    AArch64Little = 2,
    Amd64Little = 3,
    S390xBig = 4, // v2 erratum 1
};

// The ABI an identifier stands for; null for a value the spec does not define.
const Abi* abi_of(AbiArch arch) noexcept;
// The identifier of an ABI; none for an ABI SFrame does not cover (ppc64).
std::optional<AbiArch> abi_arch_of(const Abi& abi) noexcept;

// Width of an FRE's start-address field (spec v3 section 2.3.3.3).
enum class FreType : std::uint8_t { Addr1 = 0, Addr2 = 1, Addr4 = 2 };

// How an FRE's start address is matched (spec v3 section 2.3.3.1; called the
// FDE type, PCINC/PCMASK, in v1 and v2).
enum class PcType : std::uint8_t { Inc = 0, Mask = 1 };

// How an FRE's data words are read (spec v3 section 2.3.3.2; v3 only).
enum class FdeType : std::uint8_t { Default = 0, Flex = 1 };

// AArch64 pointer-authentication key (FDE info bit 5).
enum class PauthKey : std::uint8_t { A = 0, B = 1 };

// s390x constants (spec v2 erratum 1, section "s390x"; values from sframe.h).
namespace s390x {
inline constexpr std::int32_t sp_val_offset = -160; // SP = CFA - 160
inline constexpr std::int32_t cfa_offset_adjustment = -160;
inline constexpr std::int32_t cfa_offset_alignment_factor = 8;
} // namespace s390x

// Padding data word: "RA not saved" on s390x (v2), and the "no rule" control
// word in v3 flexible FDEs.
inline constexpr std::int32_t fre_ra_offset_invalid = 0;

} // namespace sfunwind::sframe

// SPDX-License-Identifier: MIT
// Private to the decoder: what differs between SFrame versions. Each version's
// byte layout is described in exactly one file (layout_v1.cpp, layout_v2.cpp,
// layout_v3.cpp); the rest of the library asks the Layout.
#pragma once

#include "sfunwind/sframe/section.hpp"

namespace sfunwind::sframe {

struct Geometry {
    ByteView view;
    std::uint64_t vaddr;
    std::uint64_t fde_sub;
    std::uint64_t fre_sub;
    std::uint32_t fre_len;
    bool pcrel;
    AbiArch abi;
};

struct Layout {
    Version version;
    std::uint32_t fde_size;     // bytes per FDE (v3: per FDE index record)
    std::uint8_t valid_flags;   // section flags this version defines
    bool allows_s390x;          // s390x arrived with v2 erratum 1
    bool has_rep_size;          // PC-mask FDEs carry a repeat block size (v2 on)
    // The repeat block size a PC-mask FDE has when the version stores none
    // (v1: the ABI's PLT entry size), 0 when the version defines none for
    // the ABI. Decoders put it in Fde::rep_size; the writer checks it.
    std::uint8_t (*implied_rep_size)(AbiArch abi);
    // v2 on s390x encodes "RA/FP in register N" as an odd data word
    // (spec v2 erratum 1, section s390x); v3 uses flexible FDEs instead.
    bool s390x_regnum_words;
    // v3: a default-type FDE without FREs marks an outermost frame (spec v3
    // section 1.2).
    bool empty_fde_is_outermost;

    // Bytes of the signed function-start field at the head of each FDE
    // (index) record: lookups binary-search on it without decoding the rest.
    std::uint8_t start_field_size;

    // Reads FDE `index`; the caller has checked index < num_fdes.
    Expected<Fde> (*decode_fde)(const Geometry& g, std::uint32_t index);
};

const Layout* layout_for(std::uint8_t version) noexcept;

// Shared between the layouts: the absolute start of a function from its raw
// start field at section offset `field_offset` (spec v2 erratum 1:
// SFRAME_F_FDE_FUNC_START_PCREL).
inline std::uint64_t function_start(const Geometry& g, std::uint64_t field_offset,
                                    std::int64_t field) {
    const std::uint64_t base = g.pcrel ? g.vaddr + field_offset : g.vaddr;
    return base + static_cast<std::uint64_t>(field);
}

// The FDE info byte fields that v1, v2 and v3 share (bits 0-5).
void decode_info_common(Fde& fde);

// Layout::implied_rep_size of the versions that store the size.
std::uint8_t no_implied_rep_size(AbiArch abi);

} // namespace sfunwind::sframe

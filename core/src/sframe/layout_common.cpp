// SPDX-License-Identifier: MIT
#include "layout.hpp"

namespace sfunwind::sframe {

extern const Layout layout_v1;
extern const Layout layout_v2;
extern const Layout layout_v3;

const Layout* layout_for(std::uint8_t version) noexcept {
    switch (version) {
    case 1: return &layout_v1;
    case 2: return &layout_v2;
    case 3: return &layout_v3;
    default: return nullptr;
    }
}

// FDE info byte, bits 0-5, identical in every version (v1 section 1.3.1, v2
// section 2.3.1, v3 section 2.3.3): FRE type, PC type, PAuth key.
void decode_info_common(Fde& fde) {
    fde.fre_type = static_cast<FreType>(fde.info & 0xfU);
    fde.pc_type = (fde.info & 0x10U) != 0 ? PcType::Mask : PcType::Inc;
    fde.pauth_key = (fde.info & 0x20U) != 0 ? PauthKey::B : PauthKey::A;
}

std::uint8_t no_implied_rep_size(AbiArch) { return 0; }

} // namespace sfunwind::sframe

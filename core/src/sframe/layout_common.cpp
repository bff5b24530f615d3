// SPDX-License-Identifier: MIT
#include "layout.hpp"

namespace sfunwind::sframe {

extern const Layout layout_v1;
extern const Layout layout_v2;
extern const Layout layout_v3;

const Layout* layout_for(std::uint8_t version) noexcept {
    switch (version) {
    case 1:
        return &layout_v1;
    case 2:
        return &layout_v2;
    case 3:
        return &layout_v3;
    default:
        return nullptr;
    }
}

std::uint8_t no_implied_rep_size(AbiArch) {
    return 0;
}

} // namespace sfunwind::sframe

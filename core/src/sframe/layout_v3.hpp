// SPDX-License-Identifier: MIT
// The SFrame v3 records (layout_v3.cpp has their fields) as the lookup's
// quick path reads them: inline, in a byte order fixed at compile time, so
// that a lookup does not go through Layout::read_core and Record's run-time
// byte order (section_lookup.cpp, Section::quick_v3).
#pragma once

#include "layout.hpp"

#include <boost/endian/conversion.hpp>
#include <cstdint>

namespace sfunwind::sframe::v3 {

constexpr std::uint32_t fde_size = 16; // FDE index record (spec v3 section 2.3.1)
constexpr std::uint32_t attr_size = 5; // FDE attribute record (section 2.3.2)

// FDE `index`'s FdeCore, with the checks of the layout's read_fde that
// concern those fields: both records lie in the section, and the
// attribute record in the FRE sub-section.
template <boost::endian::order Order>
bool read_core(const Geometry& g, std::uint32_t index, FdeCore& f) noexcept {
    using boost::endian::endian_load;
    const std::uint64_t at = g.fde_sub + std::uint64_t{index} * fde_size;
    if (!g.view.contains(at, fde_size)) return false;
    const std::uint8_t* entry = g.view.bytes().data() + at;
    f.start = function_start(g, at, endian_load<std::int64_t, 8, Order>(entry));
    f.size = endian_load<std::uint32_t, 4, Order>(entry + 8);
    const auto fre_offset = endian_load<std::uint32_t, 4, Order>(entry + 12);
    if (fre_offset > g.fre_len || g.fre_len - fre_offset < attr_size) return false;
    const std::uint64_t attr_at = g.fre_sub + fre_offset;
    if (!g.view.contains(attr_at, attr_size)) return false;
    const std::uint8_t* attr = g.view.bytes().data() + attr_at;
    f.num_fres = endian_load<std::uint16_t, 2, Order>(attr);
    f.info = attr[2];
    f.info2 = attr[3];
    f.fres_begin = attr_at + attr_size;
    return true;
}

} // namespace sfunwind::sframe::v3

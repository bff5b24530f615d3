// SPDX-License-Identifier: MIT
// SFrame version 3 (binutils 2.46 and later): the FDE is split in two (spec
// v3 section 2.3). A 16-byte index record in the FDE sub-section:
//
//   0x00 int64  sfdi_func_start_offset
//   0x08 uint32 sfdi_func_size
//   0x0c uint32 sfdi_func_start_fre_off   (to the attribute record)
//
// and a 5-byte attribute record at the start of the function's data in the
// FRE sub-section, followed by its FREs:
//
//   0x00 uint16 sfda_func_num_fres
//   0x02 uint8  sfda_func_info     (bit 7: signal frame)
//   0x03 uint8  sfda_func_info2    (bits 0-4: FDE type)
//   0x04 uint8  sfda_func_rep_size
#include "layout.hpp"

namespace sfunwind::sframe {
namespace {

constexpr std::uint32_t fde_size = 16;
constexpr std::uint32_t attr_size = 5;

Expected<Fde> decode(const Geometry& g, std::uint32_t index) {
    Fde f;
    f.index = index;
    f.entry_offset = g.fde_sub + std::uint64_t{index} * fde_size;
    const auto at = f.entry_offset;
    if (!g.view.load(at, f.start_field) || !g.view.load(at + 8, f.size) ||
        !g.view.load(at + 12, f.fre_offset))
        return Error(Errc::Truncated, "FDE index " + std::to_string(index) + " runs past the section", at);
    f.start = function_start(g, at, f.start_field);

    // The attribute record must lie inside the FRE sub-section.
    if (f.fre_offset > g.fre_len || g.fre_len - f.fre_offset < attr_size)
        return Error(Errc::Malformed,
                     "FDE " + std::to_string(index) + ": attribute record at FRE offset " +
                         std::to_string(f.fre_offset) + " is outside the FRE sub-section",
                     at + 12);
    f.attr_offset = g.fre_sub + f.fre_offset;
    std::uint16_t num_fres = 0;
    if (!g.view.load(f.attr_offset, num_fres) || !g.view.load(f.attr_offset + 2, f.info) ||
        !g.view.load(f.attr_offset + 3, f.info2) || !g.view.load(f.attr_offset + 4, f.rep_size))
        return Error(Errc::Truncated, "FDE attribute record runs past the section", f.attr_offset);
    f.num_fres = num_fres;
    f.fres_begin = f.attr_offset + attr_size;
    decode_info_common(f);
    f.signal = (f.info & 0x80U) != 0;
    f.fde_type = static_cast<FdeType>(f.info2 & 0x1fU);
    return f;
}

} // namespace

extern const Layout layout_v3;
const Layout layout_v3{Version::V3, fde_size, flag::fde_sorted | flag::fde_func_start_pcrel,
                       /*allows_s390x=*/true, /*has_rep_size=*/true, no_implied_rep_size,
                       /*s390x_regnum_words=*/false, /*empty_fde_is_outermost=*/true,
                       /*start_field_size=*/8, decode};

} // namespace sfunwind::sframe

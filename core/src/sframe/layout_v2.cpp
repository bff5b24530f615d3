// SPDX-License-Identifier: MIT
// SFrame version 2 (binutils 2.41 to 2.45): 20-byte FDEs (spec v2 section
// 2.3); with erratum 1, the SFRAME_F_FDE_FUNC_START_PCREL flag makes the
// function start relative to the field itself.
//
//   0x00 int32  sfde_func_start_address
//   0x04 uint32 sfde_func_size
//   0x08 uint32 sfde_func_start_fre_off
//   0x0c uint32 sfde_func_num_fres
//   0x10 uint8  sfde_func_info
//   0x11 uint8  sfde_func_rep_size
//   0x12 uint16 sfde_func_padding2
#include "layout.hpp"

namespace sfunwind::sframe {
namespace {

constexpr std::uint32_t fde_size = 20;

Expected<Fde> decode(const Geometry& g, std::uint32_t index) {
    Fde f;
    f.index = index;
    f.entry_offset = g.fde_sub + std::uint64_t{index} * fde_size;
    f.attr_offset = f.entry_offset;
    const auto at = f.entry_offset;
    std::int32_t start = 0;
    if (!g.view.load(at, start) || !g.view.load(at + 4, f.size) ||
        !g.view.load(at + 8, f.fre_offset) || !g.view.load(at + 12, f.num_fres) ||
        !g.view.load(at + 16, f.info) || !g.view.load(at + 17, f.rep_size))
        return Error(Errc::Truncated, "FDE " + std::to_string(index) + " runs past the section", at);
    f.start_field = start;
    f.start = function_start(g, at, start);
    f.fres_begin = g.fre_sub + f.fre_offset;
    decode_info_common(f);
    return f;
}

} // namespace

extern const Layout layout_v2;
const Layout layout_v2{Version::V2, fde_size,
                       flag::fde_sorted | flag::frame_pointer | flag::fde_func_start_pcrel,
                       /*allows_s390x=*/true, /*has_rep_size=*/true, no_implied_rep_size,
                       /*s390x_regnum_words=*/true, /*empty_fde_is_outermost=*/false,
                       /*start_field_size=*/4, decode};

} // namespace sfunwind::sframe

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

#include <string>

namespace sfunwind::sframe {
namespace {

constexpr std::uint32_t fde_size = 20;

template <typename Report>
bool read(const Geometry& g, std::uint32_t index, Fde& f, const Report& fail) {
    f.index = index;
    f.entry_offset = g.fde_sub + std::uint64_t{index} * fde_size;
    f.attr_offset = f.entry_offset;
    const auto at = f.entry_offset;
    Record<18> entry; // the fields up to sfde_func_rep_size; the padding is not read
    if (!entry.read(g.view, at))
        return fail(
            Errc::Truncated,
            [&] { return "FDE " + std::to_string(index) + " runs past the section"; }, at);
    const auto start = entry.get<std::int32_t, 0>();
    f.size = entry.get<std::uint32_t, 4>();
    f.fre_offset = entry.get<std::uint32_t, 8>();
    f.num_fres = entry.get<std::uint32_t, 12>();
    f.info = entry.get<std::uint8_t, 16>();
    f.rep_size = entry.get<std::uint8_t, 17>();
    f.start_field = start;
    f.start = function_start(g, at, start);
    f.fres_begin = g.fre_sub + f.fre_offset;
    decode_info_common(f);
    return true;
}

void write(const FdeFields& f, ByteOrder order, std::span<std::uint8_t> entry,
           std::span<std::uint8_t> /*attr*/) {
    RecordWriter<fde_size> w(entry, order);
    w.set<std::int32_t, 0>(static_cast<std::int32_t>(f.start_field));
    w.set<std::uint32_t, 4>(f.size);
    w.set<std::uint32_t, 8>(f.fre_offset);
    w.set<std::uint32_t, 12>(f.num_fres);
    w.set<std::uint8_t, 16>(f.info);
    w.set<std::uint8_t, 17>(f.rep_size);
    w.set<std::uint16_t, 18>(0); // sfde_func_padding2
}

} // namespace

extern const Layout layout_v2;
const Layout layout_v2{Version::V2,
                       fde_size,
                       flag::fde_sorted | flag::frame_pointer | flag::fde_func_start_pcrel,
                       /*allows_s390x=*/true,
                       /*has_rep_size=*/true,
                       no_implied_rep_size,
                       /*s390x_regnum_words=*/true,
                       /*empty_fde_is_outermost=*/false,
                       /*start_field_size=*/4,
                       /*attr_size=*/0,
                       /*fre_offset_field=*/8,
                       /*size_field=*/4,
                       /*max_fres_per_fde=*/0xffffffffU,
                       /*has_fde_types=*/false,
                       /*has_signal_bit=*/false,
                       /*empty_fre_is_outermost=*/true,
                       /*has_ra_padding_word=*/true,
                       explained<read<Explain>>,
                       quiet<read<Quiet>>,
                       /*read_core=*/nullptr,
                       write};

} // namespace sfunwind::sframe

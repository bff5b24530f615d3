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
#include "layout_v3.hpp"

#include <string>

namespace sfunwind::sframe {
namespace {

using v3::attr_size;
using v3::fde_size;

template <typename Report>
bool read(const Geometry& g, std::uint32_t index, Fde& f, const Report& fail) {
    f.index = index;
    f.entry_offset = g.fde_sub + std::uint64_t{index} * fde_size;
    const auto at = f.entry_offset;
    Record<fde_size> entry;
    if (!entry.read(g.view, at))
        return fail(
            Errc::Truncated,
            [&] { return "FDE index " + std::to_string(index) + " runs past the section"; }, at);
    f.start_field = entry.get<std::int64_t, 0>();
    f.size = entry.get<std::uint32_t, 8>();
    f.fre_offset = entry.get<std::uint32_t, 12>();
    f.start = function_start(g, at, f.start_field);

    // The attribute record must lie inside the FRE sub-section.
    if (f.fre_offset > g.fre_len || g.fre_len - f.fre_offset < attr_size)
        return fail(
            Errc::Malformed,
            [&] {
                return "FDE " + std::to_string(index) + ": attribute record at FRE offset " +
                       std::to_string(f.fre_offset) + " is outside the FRE sub-section";
            },
            at + 12);
    f.attr_offset = g.fre_sub + f.fre_offset;
    Record<attr_size> attr;
    if (!attr.read(g.view, f.attr_offset))
        return fail(
            Errc::Truncated,
            [] { return std::string("FDE attribute record runs past the section"); },
            f.attr_offset);
    f.num_fres = attr.get<std::uint16_t, 0>();
    f.info = attr.get<std::uint8_t, 2>();
    f.info2 = attr.get<std::uint8_t, 3>();
    f.rep_size = attr.get<std::uint8_t, 4>();
    f.fres_begin = f.attr_offset + attr_size;
    decode_info_common(f);
    f.signal = (f.info & fde_info::signal) != 0;
    f.fde_type = static_cast<FdeType>(f.info2 & fde_info::info2_fde_type);
    return true;
}

// read() without the fields a lookup does not use, and the same checks on
// the rest: both records lie in the section, the attribute record in the
// FRE sub-section.
bool read_core(const Geometry& g, std::uint32_t index, FdeCore& f) noexcept {
    return g.view.order() == ByteOrder::Little
               ? v3::read_core<boost::endian::order::little>(g, index, f)
               : v3::read_core<boost::endian::order::big>(g, index, f);
}

void write(const FdeFields& f, ByteOrder order, std::span<std::uint8_t> entry,
           std::span<std::uint8_t> attr) {
    RecordWriter<fde_size> index(entry, order);
    index.set<std::int64_t, 0>(f.start_field);
    index.set<std::uint32_t, 8>(f.size);
    index.set<std::uint32_t, 12>(f.fre_offset);
    RecordWriter<attr_size> a(attr, order);
    a.set<std::uint16_t, 0>(static_cast<std::uint16_t>(f.num_fres));
    a.set<std::uint8_t, 2>(f.info);
    a.set<std::uint8_t, 3>(f.info2);
    a.set<std::uint8_t, 4>(f.rep_size);
}

} // namespace

extern const Layout layout_v3;
const Layout layout_v3{Version::V3,
                       fde_size,
                       flag::fde_sorted | flag::fde_func_start_pcrel,
                       /*allows_s390x=*/true,
                       /*has_rep_size=*/true,
                       no_implied_rep_size,
                       /*s390x_regnum_words=*/false,
                       /*empty_fde_is_outermost=*/true,
                       /*start_field_size=*/8,
                       attr_size,
                       /*fre_offset_field=*/12,
                       /*size_field=*/8,
                       /*max_fres_per_fde=*/0xffffU,
                       /*has_fde_types=*/true,
                       /*has_signal_bit=*/true,
                       /*empty_fre_is_outermost=*/true,
                       /*has_ra_padding_word=*/true,
                       explained<read<Explain>>,
                       quiet<read<Quiet>>,
                       read_core,
                       write};

} // namespace sfunwind::sframe

// SPDX-License-Identifier: MIT
// SFrame version 1 (binutils 2.40): 17-byte packed FDEs whose function start
// is relative to the start of the section (v1 spec section 1.3).
//
//   0x00 int32  sfde_func_start_address
//   0x04 uint32 sfde_func_size
//   0x08 uint32 sfde_func_start_fre_off
//   0x0c uint32 sfde_func_num_fres
//   0x10 uint8  sfde_func_info
#include "layout.hpp"

#include <string>

namespace sfunwind::sframe {
namespace {

constexpr std::uint32_t fde_size = 17;

// v1 has no sfde_func_rep_size (v2 added it: v2 spec section 1.2). Its
// PC-mask rule, "PC & FRE_START_ADDR_AS_MASK >= FRE_START_ADDR_AS_MASK" (v1
// spec section 1.3.2), cannot be what a writer meant: with FRE starts 0 and
// 0xb, the second row would match only offsets 0xb and 0xf. The one v1
// writer of PC-mask FDEs, GNU ld 2.40, made them for x86-64 pltN entries
// only, whose FREs are offsets into one 16-byte entry ("in AMD64, the size
// of a pltN entry is 16 bytes", v2 spec section 2.3; libsframe 2.40 notes
// the same size for its mask), so the rows repeat every 16 bytes. No size
// is implied for AArch64: ld 2.40 writes no SFrame for the AArch64 PLT, and
// its entries are 16 or 24 bytes (BTI).
std::uint8_t implied_rep_size(AbiArch abi) {
    return abi == AbiArch::Amd64Little ? 16 : 0;
}

template <typename Report>
bool read(const Geometry& g, std::uint32_t index, Fde& f, const Report& fail) {
    f.index = index;
    f.entry_offset = g.fde_sub + std::uint64_t{index} * fde_size;
    f.attr_offset = f.entry_offset;
    const auto at = f.entry_offset;
    Record<fde_size> entry;
    if (!entry.read(g.view, at))
        return fail(
            Errc::Truncated,
            [&] { return "FDE " + std::to_string(index) + " runs past the section"; }, at);
    const auto start = entry.get<std::int32_t, 0>();
    f.size = entry.get<std::uint32_t, 4>();
    f.fre_offset = entry.get<std::uint32_t, 8>();
    f.num_fres = entry.get<std::uint32_t, 12>();
    f.info = entry.get<std::uint8_t, 16>();
    f.start_field = start;
    // v1 has no PC-relative flag: the start is always section-relative.
    f.start = g.vaddr + static_cast<std::uint64_t>(std::int64_t{start});
    f.fres_begin = g.fre_sub + f.fre_offset;
    decode_info_common(f);
    if (f.pc_type == PcType::Mask) {
        f.rep_size = implied_rep_size(g.abi);
        f.rep_size_implied = f.rep_size != 0;
    }
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
}

} // namespace

extern const Layout layout_v1;
const Layout layout_v1{Version::V1,
                       fde_size,
                       flag::fde_sorted | flag::frame_pointer,
                       /*allows_s390x=*/false,
                       /*has_rep_size=*/false,
                       implied_rep_size,
                       /*s390x_regnum_words=*/false,
                       /*empty_fde_is_outermost=*/false,
                       /*start_field_size=*/4,
                       /*attr_size=*/0,
                       /*fre_offset_field=*/8,
                       /*size_field=*/4,
                       /*max_fres_per_fde=*/0xffffffffU,
                       /*has_fde_types=*/false,
                       /*has_signal_bit=*/false,
                       /*empty_fre_is_outermost=*/false,
                       /*has_ra_padding_word=*/false,
                       explained<read<Explain>>,
                       quiet<read<Quiet>>,
                       /*read_core=*/nullptr,
                       write};

} // namespace sfunwind::sframe

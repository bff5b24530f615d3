// SPDX-License-Identifier: MIT
// Private to the decoder: what differs between SFrame versions. Each version's
// byte layout is described in exactly one file (layout_v1.cpp, layout_v2.cpp,
// layout_v3.cpp); the rest of the library asks the Layout.
#pragma once

#include "sfunwind/sframe/section.hpp"

#include <boost/endian/conversion.hpp>
#include <cstddef>
#include <optional>
#include <span>
#include <string>
#include <type_traits>

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

// One FDE's fields as the writer stores them, in the terms of Fde.
struct FdeFields {
    std::int64_t start_field = 0; // the raw function start (section- or field-relative)
    std::uint32_t size = 0;
    std::uint32_t fre_offset = 0; // to the function's data in the FRE sub-section
    std::uint32_t num_fres = 0;
    std::uint8_t info = 0;
    std::uint8_t info2 = 0; // v3 only
    std::uint8_t rep_size = 0;
};

// The fields of an FDE that a lookup reads, without the rest of Fde.
struct FdeCore {
    std::uint64_t start = 0;      // function start, link-time address
    std::uint64_t fres_begin = 0; // section offset of the first FRE
    std::uint32_t size = 0;
    std::uint32_t num_fres = 0;
    std::uint8_t info = 0;
    std::uint8_t info2 = 0; // v3 only
};

struct Layout {
    Version version;
    std::uint32_t fde_size;   // bytes per FDE (v3: per FDE index record)
    std::uint8_t valid_flags; // section flags this version defines
    bool allows_s390x;        // s390x arrived with v2 erratum 1
    bool has_rep_size;        // PC-mask FDEs carry a repeat block size (v2 on)
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
    // v3: the attribute record (num_fres, info, info2, rep_size) at the
    // head of each function's data in the FRE sub-section; 0 before v3.
    std::uint32_t attr_size;
    // Where the uint32 offset of the function's data in the FRE sub-section
    // lies in each FDE (v3: index) record: a section read on demand
    // fetches that data before the record is decoded (v3: the attribute
    // record is part of it).
    std::uint32_t fre_offset_field;
    // Where the uint32 function size lies in each FDE (v3: index) record.
    std::uint32_t size_field;
    // The most FREs one FDE can count (v3: a 16-bit field).
    std::uint32_t max_fres_per_fde;
    bool has_fde_types;  // v3: flexible FDEs (info2)
    bool has_signal_bit; // v3: FDE info bit 7
    // An FRE without data words means "RA undefined" (the outermost frame):
    // v2 erratum 2 and v3; v1 reads it as a CFA-only row.
    bool empty_fre_is_outermost;
    // A padding data word SFRAME_FRE_RA_OFFSET_INVALID may stand for an RA
    // that is not tracked, so that the FP word can follow (v2 on).
    bool has_ra_padding_word;

    // Reads FDE `index` into `out`, a default-constructed Fde; the caller has
    // checked index < num_fdes. An out-parameter rather than Expected<Fde>:
    // lookups decode one FDE per call, and the Fde need not be copied
    // through a variant on the way.
    Status (*decode_fde)(const Geometry& g, std::uint32_t index, Fde& out);
    // The same reader without the messages: false exactly where decode_fde
    // fails. The lookup fast path calls it, and asks decode_fde why only
    // when it fails.
    bool (*read_fde)(const Geometry& g, std::uint32_t index, Fde& out) noexcept;
    // The lookup's fast path: FDE `index`'s FdeCore, with the checks of
    // read_fde that concern those fields (the records lie in the section,
    // the FREs start inside the FRE sub-section); the caller checks the
    // info bytes. Null where a version has none (v1, v2): lookups there
    // take the general path.
    bool (*read_core)(const Geometry& g, std::uint32_t index, FdeCore& out) noexcept;
    // Writes FDE fields: `entry` is the fde_size bytes of its FDE (v3: index)
    // record, `attr` the attr_size bytes of its attribute record (empty
    // before v3). The writer has checked that every value fits its field.
    void (*write_fde)(const FdeFields& f, ByteOrder order, std::span<std::uint8_t> entry,
                      std::span<std::uint8_t> attr);
};

// A record of Size bytes at a section offset, bounds-checked once as a
// whole; its fields are then read at offsets that the compiler checks lie
// inside it. A lookup reads one or two such records per call, and a check
// per field was a measurable part of its time.
template <std::size_t Size> class Record {
  public:
    // False when the view does not hold all Size bytes at `offset`.
    bool read(const ByteView& view, std::uint64_t offset) noexcept {
        if (!view.contains(offset, Size)) return false;
        bytes_ = view.bytes().data() + offset;
        little_ = view.order() == ByteOrder::Little;
        return true;
    }
    template <typename T, std::size_t Field, std::size_t N = sizeof(T)> T get() const noexcept {
        static_assert(Field + N <= Size && std::is_integral_v<T>);
        using boost::endian::order;
        return little_ ? boost::endian::endian_load<T, N, order::little>(bytes_ + Field)
                       : boost::endian::endian_load<T, N, order::big>(bytes_ + Field);
    }

  private:
    const std::uint8_t* bytes_ = nullptr;
    bool little_ = true;
};

// The writer's side of Record: stores fields of a Size-byte record at
// offsets the compiler checks lie inside it.
template <std::size_t Size> class RecordWriter {
  public:
    // `out` holds at least Size bytes (the writer reserved them).
    RecordWriter(std::span<std::uint8_t> out, ByteOrder order) noexcept
        : bytes_(out.data()), little_(order == ByteOrder::Little) {}
    template <typename T, std::size_t Field, std::size_t N = sizeof(T)> void set(T value) noexcept {
        static_assert(Field + N <= Size && std::is_integral_v<T>);
        using boost::endian::order;
        if (little_)
            boost::endian::endian_store<T, N, order::little>(bytes_ + Field, value);
        else
            boost::endian::endian_store<T, N, order::big>(bytes_ + Field, value);
    }

  private:
    std::uint8_t* bytes_;
    bool little_;
};

// How a layout's FDE reader reports a failure. Each layout writes its reader
// once, as a template over the report, and instantiates it twice: with
// Quiet, which only returns false, so that no message is ever built, and
// with Explain, which keeps the Error. `what` is a callable that builds the
// message. Both also pass on an Error that a Status-returning step made.
struct Quiet {
    template <typename What> bool operator()(Errc, const What&, std::uint64_t) const noexcept {
        return false;
    }
    bool operator()(Error&&) const noexcept { return false; }
};
struct Explain {
    std::optional<Error>& error;
    template <typename What>
    bool operator()(Errc code, const What& what, std::uint64_t where) const {
        error.emplace(code, what(), where);
        return false;
    }
    bool operator()(Error&& e) const {
        error.emplace(std::move(e));
        return false;
    }
};

// decode_fde and read_fde from a layout's reader template.
template <bool (*Read)(const Geometry&, std::uint32_t, Fde&, const Explain&)>
Status explained(const Geometry& g, std::uint32_t index, Fde& out) {
    std::optional<Error> error;
    if (Read(g, index, out, Explain{error})) return ok();
    return std::move(*error);
}
template <bool (*Read)(const Geometry&, std::uint32_t, Fde&, const Quiet&)>
bool quiet(const Geometry& g, std::uint32_t index, Fde& out) noexcept {
    return Read(g, index, out, Quiet{});
}

const Layout* layout_for(std::uint8_t version) noexcept;

// Inline: a lookup asks for it once per call.
inline Geometry Section::geometry() const noexcept {
    return Geometry{view_,           vaddr_,          fde_sub_,        fre_sub_,
                    header_.fre_len, header_.pcrel(), header_.abi_arch};
}

// What every version checks in a decoded FDE before it is used: the field
// values the spec defines (FRE type, v3 FDE type), a repeat block size where
// the version stores one, and FREs that start inside the FRE sub-section
// (`fre_len` bytes from section offset `fre_sub`). Reports like a layout
// reader.
template <typename Report>
bool check_fde(const Layout& layout, const Fde& f, std::uint64_t fre_sub, std::uint32_t fre_len,
               const Report& fail) {
    if (f.fre_type > FreType::Addr4)
        return fail(
            Errc::Malformed,
            [&] {
                return "FDE " + std::to_string(f.index) + ": invalid FRE type " +
                       std::to_string(static_cast<unsigned>(f.fre_type));
            },
            f.attr_offset);
    if (f.fde_type > FdeType::Flex)
        return fail(
            Errc::Unsupported,
            [&] {
                return "FDE " + std::to_string(f.index) + ": unknown FDE type " +
                       std::to_string(static_cast<unsigned>(f.fde_type));
            },
            f.attr_offset);
    if (f.pc_type == PcType::Mask && f.rep_size == 0 && f.num_fres > 0 && layout.has_rep_size)
        return fail(
            Errc::Malformed,
            [&] { return "FDE " + std::to_string(f.index) + ": PC-mask FDE with repeat size 0"; },
            f.attr_offset);
    if (f.num_fres > 0 && f.fres_begin > fre_sub + fre_len)
        return fail(
            Errc::Malformed,
            [&] {
                return "FDE " + std::to_string(f.index) + ": FREs start at FRE offset " +
                       std::to_string(f.fre_offset) + ", past the FRE sub-section (" +
                       std::to_string(fre_len) + " bytes)";
            },
            f.entry_offset);
    return true;
}

// Shared between the layouts: the absolute start of a function from its raw
// start field at section offset `field_offset` (spec v2 erratum 1:
// SFRAME_F_FDE_FUNC_START_PCREL).
inline std::uint64_t function_start(const Geometry& g, std::uint64_t field_offset,
                                    std::int64_t field) {
    const std::uint64_t base = g.pcrel ? g.vaddr + field_offset : g.vaddr;
    return base + static_cast<std::uint64_t>(field);
}

// The FDE info byte (v1 section 1.3.1, v2 section 2.3.1, v3 section 2.3.3),
// read and written here only: bits 0-3 the FRE type, bit 4 the PC type
// (PC-mask), bit 5 the PAuth key (B), bit 7 the signal-frame bit (v3 only;
// 0 before). v3's second info byte holds the FDE type in bits 0-4.
namespace fde_info {
inline constexpr std::uint8_t pc_mask = 0x10U;
inline constexpr std::uint8_t pauth_key_b = 0x20U;
inline constexpr std::uint8_t signal = 0x80U;
inline constexpr std::uint8_t info2_fde_type = 0x1fU;

inline constexpr std::uint8_t make(FreType fre_type, PcType pc_type, PauthKey key,
                                   bool signal_frame) {
    return static_cast<std::uint8_t>(
        static_cast<unsigned>(fre_type) | (pc_type == PcType::Mask ? pc_mask : 0U) |
        (key == PauthKey::B ? pauth_key_b : 0U) | (signal_frame ? signal : 0U));
}
} // namespace fde_info

// FDE info byte, bits 0-5, identical in every version.
inline void decode_info_common(Fde& fde) {
    fde.fre_type = static_cast<FreType>(fde.info & 0xfU);
    fde.pc_type = (fde.info & fde_info::pc_mask) != 0 ? PcType::Mask : PcType::Inc;
    fde.pauth_key = (fde.info & fde_info::pauth_key_b) != 0 ? PauthKey::B : PauthKey::A;
}

// The FRE info byte (v3 section 2.4.1; the same bits in v1 and v2), read and
// written here only: bit 0 the CFA base register (SFRAME_BASE_REG_SP is 1,
// FP 0), bits 1-4 the data word count, bits 5-6 the word size code (1, 2 or
// 4 bytes; 3 is invalid), bit 7 the mangled-RA bit.
namespace fre_info {
inline constexpr bool cfa_base_sp(std::uint8_t info) {
    return (info & 0x1U) != 0;
}
inline constexpr unsigned word_count(std::uint8_t info) {
    return (info >> 1U) & 0xfU;
}
inline constexpr unsigned size_code(std::uint8_t info) {
    return (info >> 5U) & 0x3U;
}
inline constexpr unsigned invalid_size_code = 3;
inline constexpr bool mangled_ra(std::uint8_t info) {
    return (info & 0x80U) != 0;
}
// The size code of a data word of 1, 2 or 4 bytes.
inline constexpr unsigned size_code_of(unsigned word_size) {
    return word_size == 1 ? 0U : word_size == 2 ? 1U : 2U;
}
inline constexpr std::uint8_t make(bool base_sp, unsigned words, unsigned code, bool mangled) {
    return static_cast<std::uint8_t>((base_sp ? 1U : 0U) | (words << 1U) | (code << 5U) |
                                     (mangled ? 0x80U : 0U));
}
} // namespace fre_info

// Layout::implied_rep_size of the versions that store the size.
std::uint8_t no_implied_rep_size(AbiArch abi);

} // namespace sfunwind::sframe

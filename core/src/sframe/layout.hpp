// SPDX-License-Identifier: MIT
// Private to the decoder: what differs between SFrame versions. Each version's
// byte layout is described in exactly one file (layout_v1.cpp, layout_v2.cpp,
// layout_v3.cpp); the rest of the library asks the Layout.
#pragma once

#include "sfunwind/sframe/section.hpp"

#include <boost/endian/conversion.hpp>
#include <cstddef>
#include <optional>
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

    // Reads FDE `index` into `out`, a default-constructed Fde; the caller has
    // checked index < num_fdes. An out-parameter rather than Expected<Fde>:
    // lookups decode one FDE per call, and the Fde need not be copied
    // through a variant on the way.
    Status (*decode_fde)(const Geometry& g, std::uint32_t index, Fde& out);
    // The same reader without the messages: false exactly where decode_fde
    // fails. The lookup fast path calls it, and asks decode_fde why only
    // when it fails.
    bool (*read_fde)(const Geometry& g, std::uint32_t index, Fde& out) noexcept;
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

// FDE info byte, bits 0-5, identical in every version (v1 section 1.3.1, v2
// section 2.3.1, v3 section 2.3.3): FRE type, PC type, PAuth key.
inline void decode_info_common(Fde& fde) {
    fde.fre_type = static_cast<FreType>(fde.info & 0xfU);
    fde.pc_type = (fde.info & 0x10U) != 0 ? PcType::Mask : PcType::Inc;
    fde.pauth_key = (fde.info & 0x20U) != 0 ? PauthKey::B : PauthKey::A;
}

// Layout::implied_rep_size of the versions that store the size.
std::uint8_t no_implied_rep_size(AbiArch abi);

} // namespace sfunwind::sframe

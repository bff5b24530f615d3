// SPDX-License-Identifier: MIT
#include "sfunwind/sframe/section.hpp"

#include "layout.hpp"
#include "rules.hpp"

#include <algorithm>
#include <atomic>
#include <cstdio>
#include <optional>
#include <string>

namespace sfunwind::sframe {

Expected<Section> Section::parse(std::span<const std::uint8_t> bytes, std::uint64_t vaddr,
                                 const SectionFetcher* fetcher) {
    // The header and the longest auxiliary header (an 8-bit length).
    constexpr std::uint64_t most_header = header_size + 0xffU;
    if (fetcher != nullptr &&
        !fetcher->fetch(0, std::min<std::uint64_t>(bytes.size(), most_header)))
        return Error(Errc::Io, "cannot read the SFrame header: " + fetcher->problem(), 0);
    // Spec v3 section 2.1.1: the magic tells the byte order.
    if (bytes.size() < 4)
        return Error(Errc::Truncated,
                     "section is " + std::to_string(bytes.size()) +
                         " bytes, too short for the SFrame preamble",
                     0);
    ByteOrder order;
    if (bytes[0] == 0xe2 && bytes[1] == 0xde)
        order = ByteOrder::Little;
    else if (bytes[0] == 0xde && bytes[1] == 0xe2)
        order = ByteOrder::Big;
    else
        return Error(Errc::BadMagic,
                     "bad SFrame magic " +
                         to_hex(std::uint64_t{bytes[0]} | std::uint64_t{bytes[1]} << 8U),
                     0);

    Section s;
    s.view_ = ByteView(bytes, order);
    s.vaddr_ = vaddr;
    Header& h = s.header_;
    const std::uint8_t version = bytes[2];
    s.layout_ = layout_for(version);
    if (s.layout_ == nullptr)
        return Error(Errc::Unsupported, "unknown SFrame version " + std::to_string(version), 2);
    h.version = s.layout_->version;
    h.flags = bytes[3];
    if (bytes.size() < header_size)
        return Error(Errc::Truncated,
                     "section is " + std::to_string(bytes.size()) +
                         " bytes, too short for the 28-byte SFrame header",
                     0);
    std::uint8_t abi = 0;
    (void)s.view_.load(4, abi);
    (void)s.view_.load(5, h.cfa_fixed_fp_offset);
    (void)s.view_.load(6, h.cfa_fixed_ra_offset);
    (void)s.view_.load(7, h.auxhdr_len);
    (void)s.view_.load(8, h.num_fdes);
    (void)s.view_.load(12, h.num_fres);
    (void)s.view_.load(16, h.fre_len);
    (void)s.view_.load(20, h.fdeoff);
    (void)s.view_.load(24, h.freoff);

    if ((h.flags & ~s.layout_->valid_flags) != 0)
        return Error(Errc::Malformed,
                     "flags " + to_hex(h.flags) + " not defined for SFrame version " +
                         std::to_string(version),
                     3);
    if (abi < 1 || abi > 4 || (abi == 4 && !s.layout_->allows_s390x))
        return Error(Errc::Unsupported,
                     "unknown ABI/arch " + std::to_string(abi) + " for SFrame version " +
                         std::to_string(version),
                     4);
    h.abi_arch = static_cast<AbiArch>(abi);
    s.abi_ = abi_of(h.abi_arch);

    // Sub-sections are offsets from the end of the header, auxiliary header
    // included (spec v3 section 2.2).
    const std::uint64_t end_of_header = header_size + std::uint64_t{h.auxhdr_len};
    s.fde_sub_ = end_of_header + h.fdeoff;
    s.fre_sub_ = end_of_header + h.freoff;
    if (!s.view_.contains(0, end_of_header))
        return Error(Errc::Truncated,
                     "auxiliary header of " + std::to_string(h.auxhdr_len) +
                         " bytes runs past the section",
                     7);
    if (s.fde_sub_ > bytes.size())
        return Error(Errc::Truncated,
                     "FDE sub-section offset " + to_hex(h.fdeoff) + " points past the end of the " +
                         std::to_string(bytes.size()) + "-byte section",
                     20);
    if (s.fre_sub_ > bytes.size())
        return Error(Errc::Truncated,
                     "FRE sub-section offset " + to_hex(h.freoff) + " points past the end of the " +
                         std::to_string(bytes.size()) + "-byte section",
                     24);
    const std::uint64_t fde_bytes = std::uint64_t{h.num_fdes} * s.layout_->fde_size;
    if (!s.view_.contains(s.fde_sub_, fde_bytes))
        return Error(Errc::Truncated,
                     std::to_string(h.num_fdes) + " FDEs at section offset " + to_hex(s.fde_sub_) +
                         " need " + std::to_string(fde_bytes) + " bytes; the section has " +
                         std::to_string(bytes.size()),
                     8);
    if (!s.view_.contains(s.fre_sub_, h.fre_len))
        return Error(Errc::Truncated,
                     "FRE sub-section at section offset " + to_hex(s.fre_sub_) + " of " +
                         std::to_string(h.fre_len) + " bytes runs past the section (" +
                         std::to_string(bytes.size()) + " bytes)",
                     16);
    if (fetcher != nullptr) {
        // The FDE (v3: index) records, which the indexes below read whole;
        // the FRE sub-section comes FDE by FDE (fetch_fde()).
        if (!fetcher->fetch(s.fde_sub_, fde_bytes))
            return Error(Errc::Io,
                         "cannot read the " + std::to_string(h.num_fdes) +
                             " FDE records: " + fetcher->problem(),
                         s.fde_sub_);
        s.fetcher_ = fetcher;
        s.fetched_.assign((std::uint64_t{h.num_fdes} + 63U) / 64U, 0);
    }

    s.build_indexes();
    return s;
}

ByteView Section::view() const noexcept {
    if (fetch_all()) return view_;
    return {view_.bytes().subspan(0, std::min<std::uint64_t>(fre_sub_, view_.size())),
            view_.order()};
}

bool Section::fetch_all() const noexcept {
    if (fetcher_ == nullptr) return true;
    std::atomic_ref<std::uint8_t> all(all_fetched_);
    if (all.load(std::memory_order_acquire) != 0) return true;
    if (!fetcher_->fetch(0, view_.size())) return false;
    all.store(1, std::memory_order_release);
    return true;
}

bool Section::fetch_fde(std::uint32_t index) const noexcept {
    if (fetcher_ == nullptr || index >= header_.num_fdes) return true;
    if (std::atomic_ref<std::uint8_t>(all_fetched_).load(std::memory_order_acquire) != 0)
        return true;
    std::atomic_ref<std::uint64_t> word(fetched_[index / 64U]);
    const std::uint64_t bit = std::uint64_t{1} << (index % 64U);
    if ((word.load(std::memory_order_acquire) & bit) != 0) return true;
    // The function's data: at fre_offset in the FRE sub-section (the FDE
    // record was fetched by parse()), up to the sub-section's end.
    std::uint32_t fre_offset = 0;
    const std::uint64_t field =
        fde_sub_ + std::uint64_t{index} * layout_->fde_size + layout_->fre_offset_field;
    const std::uint64_t end = fre_sub_ + header_.fre_len; // parse(): inside the section
    if (!view_.load(field, fre_offset) || fre_offset >= header_.fre_len)
        return true; // the decoders report it
    const std::uint64_t data = fre_sub_ + fre_offset;
    // v3: the attribute record first, which counts the FREs.
    if (layout_->attr_size != 0 &&
        !fetcher_->fetch(data, std::min<std::uint64_t>(layout_->attr_size, end - data)))
        return false;
    Fde fde;
    if (!layout_->read_fde(geometry(), index, fde) || fde.fres_begin > end)
        return true; // malformed: the decoders report it
    // Its FREs, as far as they go: each one's start field and info byte
    // give its length (spec v3 section 2.4.1). Walked as the decoders walk
    // them, stopping where they stop (past the sub-section, the invalid word
    // size code), so that every byte they read is fetched, and fetched in
    // pieces of at least 256 bytes.
    const std::uint64_t width = std::uint64_t{1} << static_cast<unsigned>(fde.fre_type);
    std::uint64_t have = fde.fres_begin; // fetched up to here
    auto need = [&](std::uint64_t upto) {
        if (upto <= have) return true;
        const std::uint64_t to = std::min(end, std::max(upto, have + 256U));
        if (!fetcher_->fetch(have, to - have)) return false;
        have = to;
        return true;
    };
    std::uint64_t at = fde.fres_begin;
    for (std::uint32_t k = 0; k < fde.num_fres && end - at >= width + 1U; ++k) {
        if (!need(at + width + 1U)) return false;
        std::uint8_t info = 0;
        (void)view_.load(at + width, info);
        if (fre_info::size_code(info) == fre_info::invalid_size_code) break;
        const std::uint64_t length =
            width + 1U + (fre_info::word_count(info) << fre_info::size_code(info));
        if (!need(std::min(end, at + length))) return false;
        if (end - at < length) break;
        at += length;
    }
    word.fetch_or(bit, std::memory_order_release);
    return true;
}

Error Section::fetch_error(std::uint32_t index) const {
    return Error(Errc::Io,
                 "cannot read the FREs of FDE " + std::to_string(index) + ": " +
                     (fetcher_ != nullptr ? fetcher_->problem() : std::string()),
                 fde_sub_ + std::uint64_t{index} * layout_->fde_size);
}

std::uint64_t Section::start_of(std::uint32_t index) const noexcept {
    const std::uint64_t at = fde_sub_ + std::uint64_t{index} * layout_->fde_size;
    std::int64_t field = 0;
    if (layout_->start_field_size == 8) {
        (void)view_.load(at, field);
    } else {
        std::int32_t narrow = 0;
        (void)view_.load(at, narrow);
        field = narrow;
    }
    return (header_.pcrel() ? vaddr_ + at : vaddr_) + static_cast<std::uint64_t>(field);
}

Status Section::decode_fde(std::uint32_t index, Fde& out) const {
    if (index >= header_.num_fdes)
        return Error(Errc::NotFound, "FDE " + std::to_string(index) +
                                         " out of range (the section has " +
                                         std::to_string(header_.num_fdes) + ")");
    if (!fetch_fde(index)) return fetch_error(index);
    if (auto st = layout_->decode_fde(geometry(), index, out); !st) return st;
    std::optional<Error> error;
    if (!check_fde(*layout_, out, fre_sub_, header_.fre_len, Explain{error}))
        return std::move(*error);
    return ok();
}

std::optional<Section::FunctionRange> Section::function_range(std::uint32_t index) const noexcept {
    std::uint32_t size = 0;
    if (index >= header_.num_fdes ||
        !view_.load(fde_sub_ + std::uint64_t{index} * layout_->fde_size + layout_->size_field,
                    size))
        return std::nullopt;
    return FunctionRange{start_of(index), size};
}

Expected<Fde> Section::fde(std::uint32_t index) const {
    Fde f;
    if (auto st = decode_fde(index, f); !st) return std::move(st).error();
    return f;
}

Status Section::decode_fre(const Fde& fde, std::uint64_t offset, Fre& fre) const {
    if (!fetch_fde(fde.index)) return fetch_error(fde.index);
    // FREs must lie inside the FRE sub-section (spec v3 section 2.4).
    const ByteView frev(view_.bytes().subspan(0, fre_sub_ + header_.fre_len), view_.order());
    if (offset < fre_sub_) return Error(Errc::Malformed, "FRE before the FRE sub-section", offset);
    if (offset >= frev.size())
        // Past the end: the FDE's FRE count promises more than there is, so
        // point at the count (spec v3 section 2.3.2; v1/v2 keep it at 0x0c).
        return Error(Errc::Truncated,
                     "FDE " + std::to_string(fde.index) + " claims " +
                         std::to_string(fde.num_fres) + " FREs, but the FRE sub-section ends at " +
                         to_hex(frev.size()) + " before all of them",
                     fde.attr_offset == fde.entry_offset ? fde.entry_offset + 12 : fde.attr_offset);
    fre.offset = offset;
    const unsigned start_width = 1U << static_cast<unsigned>(fde.fre_type);
    if (!frev.load_sized(offset, start_width, fre.start) ||
        !frev.load(offset + start_width, fre.info))
        return Error(Errc::Truncated,
                     "FRE of FDE " + std::to_string(fde.index) + " runs past the FRE sub-section",
                     offset);
    fre.cfa_base_fp = !fre_info::cfa_base_sp(fre.info);
    fre.word_count = static_cast<std::uint8_t>(fre_info::word_count(fre.info));
    const unsigned size_code = fre_info::size_code(fre.info);
    fre.mangled_ra = fre_info::mangled_ra(fre.info);
    if (size_code == fre_info::invalid_size_code)
        return Error(Errc::Malformed,
                     "FRE of FDE " + std::to_string(fde.index) + ": invalid data word size code 3",
                     offset + start_width);
    fre.word_size = static_cast<std::uint8_t>(1U << size_code);
    std::uint64_t at = offset + start_width + 1;
    for (unsigned i = 0; i < fre.word_count; ++i, at += fre.word_size)
        if (!frev.load_sized(at, fre.word_size, fre.words[i]))
            return Error(Errc::Truncated,
                         "data word " + std::to_string(i) + " of an FRE of FDE " +
                             std::to_string(fde.index) + " runs past the FRE sub-section",
                         offset);
    fre.size = static_cast<std::uint32_t>(at - offset);
    return ok();
}

Expected<Fre> Section::fre_at(const Fde& fde, std::uint64_t offset) const {
    Fre fre;
    if (auto st = decode_fre(fde, offset, fre); !st) return std::move(st).error();
    return fre;
}

Expected<std::vector<Fre>> Section::fres(const Fde& fde) const {
    std::vector<Fre> out;
    out.reserve(std::min<std::uint32_t>(fde.num_fres, 4096));
    std::uint64_t at = fde.fres_begin;
    for (std::uint32_t i = 0; i < fde.num_fres; ++i) {
        Fre& fre = out.emplace_back();
        if (auto st = decode_fre(fde, at, fre); !st) return std::move(st).error();
        at += fre.size;
    }
    return out;
}

Status Section::fill_row(const Fde& fde, std::uint64_t fre_offset, std::uint32_t fre_start,
                         bool mangled_ra, const FreWords& words, std::uint32_t fre_index,
                         std::uint64_t next_start, Row& row) const {
    fill_row_fields(fde, fre_start, mangled_ra, fre_index, next_start, row);
    const RuleContext ctx{*abi_, header_, *layout_, fre_offset};
    return fde.fde_type == FdeType::Flex ? read_flex_rules(ctx, words, row)
                                         : read_default_rules(ctx, words, row);
}

Expected<Row> Section::row(const Fde& fde, const Fre& fre, std::uint32_t fre_index,
                           std::uint64_t next_start) const {
    Row row;
    if (auto st = fill_row(fde, fre.offset, fre.start, fre.mangled_ra, FreWords::of(fre), fre_index,
                           next_start, row);
        !st)
        return std::move(st).error();
    return row;
}

} // namespace sfunwind::sframe

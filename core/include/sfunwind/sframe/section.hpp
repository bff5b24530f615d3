// SPDX-License-Identifier: MIT
// A version-neutral view of an SFrame section. Each version's byte layout is
// decoded in one place (src/sframe/layout_v1.cpp, _v2.cpp, _v3.cpp); what
// callers see here is the same for every version: a Header, FDEs and FREs
// with decoded fields, and Rows of rules.
//
// A Section does not own its bytes: keep them alive as long as the Section.
#pragma once

#include "sfunwind/abi.hpp"
#include "sfunwind/bytes.hpp"
#include "sfunwind/error.hpp"
#include "sfunwind/row.hpp"
#include "sfunwind/sframe/format.hpp"

#include <array>
#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <vector>

namespace sfunwind::sframe {

struct Layout;   // one per version, private to the decoder
struct Geometry; // where the sub-sections are, for the Layout
struct FreWords; // an FRE's data words as the rules read them, private too

struct Header {
    Version version = Version::V3;
    std::uint8_t flags = 0;
    AbiArch abi_arch = AbiArch::Amd64Little;
    std::int8_t cfa_fixed_fp_offset = 0;
    std::int8_t cfa_fixed_ra_offset = 0;
    std::uint8_t auxhdr_len = 0;
    std::uint32_t num_fdes = 0;
    std::uint32_t num_fres = 0;
    std::uint32_t fre_len = 0;
    std::uint32_t fdeoff = 0;
    std::uint32_t freoff = 0;

    bool sorted() const { return (flags & flag::fde_sorted) != 0; }
    bool pcrel() const { return (flags & flag::fde_func_start_pcrel) != 0; }
};

// A function descriptor entry, whichever version it came from. In v3 it
// combines the FDE index record and the FDE attribute record.
struct Fde {
    std::uint32_t index = 0;
    std::uint64_t entry_offset = 0; // section offset of the FDE (v3: index) record
    std::uint64_t attr_offset =
        0;                        // v3: section offset of the attribute record; else = entry_offset
    std::int64_t start_field = 0; // the raw function start field
    std::uint64_t start = 0;      // function start, link-time address
    std::uint32_t size = 0;
    std::uint32_t fre_offset = 0; // raw start-FRE offset, relative to the FRE sub-section
    std::uint64_t fres_begin = 0; // section offset of the first FRE
    std::uint32_t num_fres = 0;
    std::uint8_t info = 0;
    std::uint8_t info2 = 0; // v3 only
    // Repeat block size of PC-mask FDEs: stored in v2 and v3; in v1, which
    // has no field, the ABI's PLT entry size (16 on AMD64; none elsewhere,
    // then 0), and rep_size_implied is set.
    std::uint8_t rep_size = 0;
    bool rep_size_implied = false;
    FreType fre_type = FreType::Addr1;
    PcType pc_type = PcType::Inc;
    FdeType fde_type = FdeType::Default;
    PauthKey pauth_key = PauthKey::A;
    bool signal = false; // v3

    std::uint64_t end() const { return start + size; }
};

// A frame row entry with its data words read (sign-extended; see uword()).
struct Fre {
    static constexpr unsigned max_words = 15; // 4-bit count (spec v3 section 2.4.1)

    std::uint64_t offset = 0; // section offset of the FRE
    std::uint32_t size = 0;   // bytes, start field through the last data word
    std::uint32_t start = 0;  // start address offset from the function start
    std::uint8_t info = 0;
    bool cfa_base_fp = false;
    bool mangled_ra = false;
    std::uint8_t word_count = 0;
    std::uint8_t word_size = 1; // 1, 2 or 4 bytes
    std::array<std::int32_t, max_words> words{};

    // A data word read as unsigned (flexible-FDE control words).
    std::uint32_t uword(unsigned i) const {
        const auto raw = static_cast<std::uint32_t>(words[i]);
        return word_size == 4 ? raw : raw & ((1U << (8U * word_size)) - 1U);
    }
};

// Where a Section's bytes come from when they are read on demand (a file
// read in chunks, elf::ElfFile): until fetched, bytes may be zeros. With a
// fetcher, parse() fetches the header and the FDE sub-section, a lookup or
// fde() the data of the FDE it decodes (v3: its attribute record; its FREs,
// as many bytes as its FRE count allows), and view() everything; a debugger
// then keeps the FRE bytes of the functions it unwinds, not of the module.
class SectionFetcher {
  public:
    SectionFetcher() = default;
    SectionFetcher(const SectionFetcher&) = delete;
    SectionFetcher& operator=(const SectionFetcher&) = delete;
    virtual ~SectionFetcher() = default;
    // Makes [offset, offset + length) of the section (offsets from its
    // first byte) hold the section's bytes; false when they cannot be read.
    virtual bool fetch(std::uint64_t offset, std::uint64_t length) const noexcept = 0;
    // Why the last fetch() failed.
    virtual std::string problem() const = 0;
};

class Section {
  public:
    // Decodes the header and checks that the sub-sections fit. `vaddr` is the
    // link-time virtual address of the section (function starts are relative
    // to it, or to their own field). Individual FDEs are checked when read.
    // With a `fetcher` (it must outlive the Section), `bytes` are read on
    // demand (SectionFetcher); without, they are all there.
    static Expected<Section> parse(std::span<const std::uint8_t> bytes, std::uint64_t vaddr,
                                   const SectionFetcher* fetcher = nullptr);

    const Header& header() const noexcept { return header_; }
    Version version() const noexcept { return header_.version; }
    const Abi& abi() const noexcept { return *abi_; }
    // The section's bytes, every one fetched first (SectionFetcher); if that
    // fails, only those before the FRE sub-section, so that a reader finds
    // the FREs missing rather than zeros.
    ByteView view() const noexcept;
    std::uint64_t vaddr() const noexcept { return vaddr_; }
    // Bytes the section really uses (the PT_GNU_SFRAME segment can be larger).
    std::uint64_t used_size() const noexcept { return fre_sub_ + header_.fre_len; }
    std::uint64_t fde_subsection() const noexcept { return fde_sub_; }
    std::uint64_t fre_subsection() const noexcept { return fre_sub_; }
    std::uint32_t fde_count() const noexcept { return header_.num_fdes; }
    // Whether lookups binary-search the FDE array in place: the section says
    // it is sorted and it really is. Otherwise a sorted index is kept.
    bool searches_in_place() const noexcept { return order_.empty(); }

    Expected<Fde> fde(std::uint32_t index) const;
    // FDE `index`'s function range from its FDE (v3: index) record alone,
    // unchecked: without reading the FDE's data in the FRE sub-section,
    // as fde() does (and a section read on demand then fetches). For a
    // module's extent over every FDE; nullopt past the last FDE.
    struct FunctionRange {
        std::uint64_t start = 0;
        std::uint32_t size = 0;
    };
    std::optional<FunctionRange> function_range(std::uint32_t index) const noexcept;
    // The FRE at section offset `offset` (fde.fres_begin for the first; then
    // the previous FRE's offset + size). Checked against the FRE sub-section.
    Expected<Fre> fre_at(const Fde& fde, std::uint64_t offset) const;
    // All FREs of an FDE, or the first error.
    Expected<std::vector<Fre>> fres(const Fde& fde) const;

    // The rules an FRE gives, as a Row (pc range, rules, flags).
    // `next_start` is the next FRE's start offset, or the function size.
    Expected<Row> row(const Fde& fde, const Fre& fre, std::uint32_t fre_index,
                      std::uint64_t next_start) const;

    // The FDE covering a link-time PC (Errc::NotFound when none does).
    Expected<Fde> find_fde(std::uint64_t pc) const;
    // The row for a link-time PC: FDE search, then the last FRE whose start
    // is <= the PC's offset, or for a PC-mask FDE its offset modulo the
    // repeat block size (Errc::Unsupported when the FDE has none: v1 off
    // AMD64).
    Expected<Row> lookup(std::uint64_t pc) const;

    // Memory used beyond the section bytes: the FDE order index, if any, the
    // page index (1 to 2 bytes per FDE; none below 64 FDEs) and the FRE
    // marks (4 bytes per FDE, sorted sections only).
    std::size_t extra_memory() const noexcept {
        return (order_.capacity() + pages_.capacity() + fre_marks_.capacity()) *
               sizeof(std::uint32_t);
    }

  private:
    Section() = default;
    std::uint64_t start_of(std::uint32_t index) const noexcept;
    Geometry geometry() const noexcept;
    // section_lookup.cpp: the FDE order and page indexes (parse() builds
    // them), the FDE search, and the row search behind lookup(), run with a
    // Report that either only fails or explains (layout.hpp).
    void build_indexes();
    void build_fre_marks();
    // FDE `index`'s FRE marks word (fre_marks_), built at its first lookup;
    // 0 (none) for unsorted sections.
    std::uint32_t fre_marks_of(std::uint32_t index, FreType type, std::uint64_t fres_begin,
                               std::uint32_t count) const noexcept;
    std::uint32_t fdes_starting_at_or_below(std::uint64_t pc) const noexcept;
    // The start of the FDE at `position` in start order (~0 past the last):
    // where the row of an FDE before it ends at the latest, when FDEs overlap.
    std::uint64_t start_in_order(std::uint32_t position) const noexcept;
    template <typename Report> bool find_row(std::uint64_t pc, Row& row, const Report& fail) const;
    // The common case of find_row() in fewer steps (v3, a PC-increment FDE
    // of the default type with FREs, nothing malformed); false for
    // anything else, which find_row() then does.
    bool quick_row(std::uint64_t pc, Row& row) const noexcept;
    // quick_row() for a v3 section, in byte order Little or big, its FDE
    // start reader fixed at compile time.
    template <bool Little> bool quick_v3(std::uint64_t pc, Row& row) const noexcept;
    // The FDEs (in start order) whose starts the page index puts in pc's
    // page: [lo, lo + n) of [0, num_fdes), narrowed only when there are
    // pages. False: pc is below every start.
    bool page_range(std::uint64_t pc, std::uint32_t& lo, std::uint32_t& n) const noexcept;
    // The workers behind fde(), fre_at(), row() and find_fde(): they fill a
    // caller's object, so a lookup copies no Fde or Fre through an Expected.
    Status decode_fde(std::uint32_t index, Fde& out) const;
    Status decode_fre(const Fde& fde, std::uint64_t offset, Fre& fre) const;
    Status fill_row(const Fde& fde, std::uint64_t fre_offset, std::uint32_t fre_start,
                    bool mangled_ra, const FreWords& words, std::uint32_t fre_index,
                    std::uint64_t next_start, Row& row) const;
    Status find_fde_into(std::uint64_t pc, Fde& out) const;
    // With a fetcher: FDE `index`'s data in the FRE sub-section fetched
    // (fetched_), or every byte (all_fetched_). True without a fetcher, and
    // for an FDE whose record is out of bounds or malformed (the decoders
    // say so); false when the fetcher failed.
    bool fetch_fde(std::uint32_t index) const noexcept;
    bool fetch_all() const noexcept;
    // The error of a failed fetch_fde(), at the FDE's record.
    Error fetch_error(std::uint32_t index) const;

    ByteView view_;
    const SectionFetcher* fetcher_ = nullptr;
    // One bit per FDE (section order): its data fetched. Mutable, read and
    // set atomically: lookups may run on several threads.
    mutable std::vector<std::uint64_t> fetched_;
    mutable std::uint8_t all_fetched_ = 0;
    Header header_;
    const Layout* layout_ = nullptr;
    const Abi* abi_ = nullptr;
    std::uint64_t vaddr_ = 0;
    std::uint64_t fde_sub_ = 0;
    std::uint64_t fre_sub_ = 0;
    std::vector<std::uint32_t> order_; // FDE indices by start, when not searchable in place
    // Page index: the FDE starts' range cut into 2^page_shift_-byte pages;
    // pages_[p] counts the FDEs (in start order) that start before page p.
    // A search then only looks at the FDEs that start inside the PC's page.
    std::vector<std::uint32_t> pages_;
    std::uint64_t page_origin_ = 0; // the lowest FDE start
    std::uint8_t page_shift_ = 0;
    // FRE marks, one word per FDE (section order): where four of its FREs,
    // evenly spaced by index, lie, so that a lookup scans from the last mark
    // at or below the PC instead of from the first FRE (section_lookup.cpp).
    // Empty for unsorted sections, whose order index takes that memory.
    // Mutable: a word is built at its FDE's first lookup (fre_marks_of()).
    mutable std::vector<std::uint32_t> fre_marks_;
    // quick_v3() applies: v3 (its layout has read_core), with FDEs.
    bool quick_v3_ = false;
};

} // namespace sfunwind::sframe

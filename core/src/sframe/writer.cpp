// SPDX-License-Identifier: MIT
// The SFrame encoder. Layouts per version, as the decoder reads them:
//   v1 (spec v1 section 1.3): 17-byte packed FDEs, starts section-relative;
//   v2 (spec v2 section 2.3): 20-byte FDEs with a repeat size and padding;
//      erratum 1 adds SFRAME_F_FDE_FUNC_START_PCREL and s390x;
//   v3 (spec v3 section 2.3): 16-byte FDE index records, and a 5-byte FDE
//      attribute record at the head of each function's FREs.
// Header fields and sub-section offsets follow spec v3 section 2.2, which is
// the same in every version: the FDE sub-section starts right after the
// (auxiliary) header, the FRE sub-section right after the FDEs.
#include "sfunwind/sframe/writer.hpp"

#include "layout.hpp"
#include "sfunwind/abi.hpp"

#include <algorithm>
#include <cstdio>
#include <limits>
#include <numeric>
#include <string>

namespace sfunwind::sframe {
namespace {

// fre_dataword_count is 4 bits wide (spec v3 section 2.4.1).
constexpr std::size_t max_data_words = 15;

// A data word and how it is read back: offsets are signed, flexible-FDE
// control words unsigned (spec v3 section 3.2).
struct Word {
    std::int64_t value;
    bool is_unsigned;

    bool fits(unsigned width) const {
        const unsigned bits = 8 * width;
        if (is_unsigned) return value >= 0 && (bits >= 63 || value < (std::int64_t{1} << bits));
        const std::int64_t lim = std::int64_t{1} << (bits - 1);
        return value >= -lim && value < lim;
    }
};

struct EncodedFre {
    std::uint32_t start = 0;
    bool cfa_base_sp = false;
    bool mangled_ra = false;
    unsigned word_size = 1;
    std::vector<Word> words;
};

// Appends integers of 1, 2, 4 or 8 bytes in the section's byte order, byte
// by byte: FREs are unaligned (spec v3 section 2.4).
class Emitter {
  public:
    explicit Emitter(ByteOrder order) : order_(order) {}

    void put(std::uint64_t v, unsigned width) {
        const std::size_t at = bytes_.size();
        bytes_.resize(at + width);
        put_at(at, v, width);
    }
    void put_at(std::size_t at, std::uint64_t v, unsigned width) {
        for (unsigned i = 0; i < width; ++i) {
            const unsigned shift = order_ == ByteOrder::Little ? 8 * i : 8 * (width - 1 - i);
            bytes_[at + i] = static_cast<std::uint8_t>((v >> shift) & 0xffU);
        }
    }
    void append(const std::vector<std::uint8_t>& raw) {
        bytes_.insert(bytes_.end(), raw.begin(), raw.end());
    }
    // `size` zero bytes, to be filled in place later.
    std::size_t reserve(std::size_t size) {
        const std::size_t at = bytes_.size();
        bytes_.resize(at + size);
        return at;
    }
    std::span<std::uint8_t> span(std::size_t at, std::size_t size) {
        return std::span<std::uint8_t>(bytes_).subspan(at, size);
    }
    ByteOrder order() const { return order_; }
    std::size_t size() const { return bytes_.size(); }
    std::vector<std::uint8_t> take() { return std::move(bytes_); }

  private:
    ByteOrder order_;
    std::vector<std::uint8_t> bytes_;
};

class Encoder {
  public:
    Encoder(const WriterOptions& o, const std::vector<FdeSpec>& fdes)
        : o_(o), fdes_(fdes), abi_(abi_of(o.abi) != nullptr ? *abi_of(o.abi) : abi_amd64()),
          layout_(layout_for(static_cast<std::uint8_t>(o.version))) {
        fixed_ra_ = o.cfa_fixed_ra_offset.value_or(abi_.fixed_ra_offset);
        fixed_fp_ = o.cfa_fixed_fp_offset.value_or(std::int8_t{0});
    }

    Expected<std::vector<std::uint8_t>> run(SectionMap* map);

  private:
    Error unsupported(const std::string& what) const {
        return Error(Errc::Unsupported, context_ + what);
    }
    Error malformed(const std::string& what) const {
        return Error(Errc::Malformed, context_ + what);
    }

    Status check_section() const;
    Status check_fde(const FdeSpec& f);
    Expected<std::vector<EncodedFre>> encode_fres(const FdeSpec& f);
    Status default_words(const FreSpec& fre, EncodedFre& out) const;
    Status flex_words(const FreSpec& fre, EncodedFre& out) const;
    Expected<std::int64_t> cfa_word(std::int32_t offset) const;
    Expected<std::int64_t> saved_word(const RegRule& r, const char* what) const;
    Expected<Word> flex_control(const RegRule& r, const char* what) const;

    // Every function's FREs, encoded before anything is written: the header
    // needs their count, and each FDE its FRE type.
    struct Functions {
        std::vector<std::vector<EncodedFre>> fres;
        std::vector<FreType> fre_types;
        std::uint64_t total_fres = 0;
    };
    std::vector<std::size_t> section_order() const;
    Status check_overlaps() const;
    Expected<Functions> encode_functions();
    Expected<FreType> fre_type_of(const FdeSpec& f) const;
    std::uint8_t header_flags() const;
    void write_header(Emitter& out, const Functions& fns) const;
    void write_fre_subsection(Emitter& out, const Functions& fns,
                              std::vector<WrittenFde>& written) const;
    Status write_fde_records(Emitter& out, const Functions& fns,
                             const std::vector<std::size_t>& order, std::uint64_t fde_sub,
                             std::vector<WrittenFde>& written) const;

    const WriterOptions& o_;
    const std::vector<FdeSpec>& fdes_;
    const Abi& abi_;
    const Layout* layout_; // null for a version that does not exist (check_section says so)
    std::int8_t fixed_ra_ = 0;
    std::int8_t fixed_fp_ = 0;
    std::string context_; // "function 2 (0x401000), FRE 1 (+0x4): "
};

Status Encoder::check_section() const {
    const unsigned version = static_cast<unsigned>(o_.version);
    if (layout_ == nullptr)
        return Error(Errc::Unsupported, "cannot write SFrame version " + std::to_string(version));
    if (o_.abi == AbiArch::S390xBig && !layout_->allows_s390x)
        return Error(Errc::Unsupported, "SFrame version " + std::to_string(version) +
                                            " has no s390x ABI (added by v2 erratum 1)");
    const auto abi = static_cast<unsigned>(o_.abi);
    if (abi < 1 || abi > 4)
        return Error(Errc::Unsupported, "unknown ABI/arch identifier " + std::to_string(abi));
    // Spec v3 section 2.1.3: SFRAME_F_FRAME_POINTER exists in v1 and v2 only.
    if (o_.frame_pointer && (layout_->valid_flags & flag::frame_pointer) == 0)
        return Error(Errc::Unsupported, "SFRAME_F_FRAME_POINTER is not defined in SFrame version " +
                                            std::to_string(version));
    if (o_.quirks.auxhdr.size() > 255)
        return Error(Errc::Unsupported, "auxiliary header of " +
                                            std::to_string(o_.quirks.auxhdr.size()) +
                                            " bytes; sfh_auxhdr_len holds at most 255");
    return ok();
}

Status Encoder::check_fde(const FdeSpec& f) {
    if (f.fde_type != FdeType::Default && f.fde_type != FdeType::Flex)
        return unsupported("unknown FDE type " + std::to_string(static_cast<unsigned>(f.fde_type)));
    // Spec v3 section 1.2: signal bits and FDE types are new in v3.
    if (f.fde_type == FdeType::Flex && !layout_->has_fde_types)
        return unsupported("flexible FDEs need SFrame version 3");
    if (f.signal && !layout_->has_signal_bit)
        return unsupported("signal-frame FDEs need SFrame version 3");
    if (f.pc_type == PcType::Mask) {
        // v1 has no repeat block size field; a reader takes the one v1
        // implies for the ABI (layout_v1.cpp), so only that one can be
        // written. The field arrived with v2.
        if (!layout_->has_rep_size) {
            const std::uint8_t implied = layout_->implied_rep_size(o_.abi);
            if (implied == 0)
                return unsupported("PC-mask FDEs on " + std::string(abi_.name) +
                                   " need SFrame version 2 (a repeat block size)");
            if (f.rep_size != implied && !o_.quirks.unchecked)
                return unsupported(
                    "repeat block size " + std::to_string(f.rep_size) + " in SFrame version " +
                    std::to_string(static_cast<unsigned>(o_.version)) + ", which stores none (" +
                    std::string(abi_.name) + " PC-mask FDEs repeat every " +
                    std::to_string(implied) + " bytes); version 2 stores it");
        }
        if (f.rep_size == 0 && !o_.quirks.unchecked)
            return malformed("PC-mask FDE with repeat block size 0");
    }
    if (!o_.quirks.unchecked && f.pauth_key == PauthKey::B && abi_.arch != Arch::AArch64)
        return unsupported("PAuth key B on " + std::string(abi_.name) + " (AArch64 only)");
    if (f.fres.size() > layout_->max_fres_per_fde)
        return unsupported(std::to_string(f.fres.size()) + " FREs; an SFrame version " +
                           std::to_string(static_cast<unsigned>(o_.version)) +
                           " FDE counts at most " + std::to_string(layout_->max_fres_per_fde));
    return ok();
}

// s390x stores the CFA offset as (offset + SFRAME_S390X_CFA_OFFSET_ADJUSTMENT)
// / SFRAME_S390X_CFA_OFFSET_ALIGNMENT_FACTOR, i.e. (offset - (-160)) / 8 is
// undone as word * 8 + 160 (spec v2 erratum 1 and v3 section 3.1.3,
// SFRAME_V2_S390X_CFA_OFFSET_ENCODE); other ABIs store it as is.
Expected<std::int64_t> Encoder::cfa_word(std::int32_t offset) const {
    if (abi_.arch != Arch::S390x) return std::int64_t{offset};
    const std::int64_t shifted = std::int64_t{offset} + s390x::cfa_offset_adjustment;
    if (shifted % s390x::cfa_offset_alignment_factor != 0)
        return unsupported("s390x CFA offset " + std::to_string(offset) +
                           " is not 160 plus a multiple of 8 (spec v3 section 3.1.3)");
    return shifted / s390x::cfa_offset_alignment_factor;
}

// An RA or FP rule of a default FDE as its data word (spec v3 section 3.1;
// v2 erratum 1 for s390x register numbers).
Expected<std::int64_t> Encoder::saved_word(const RegRule& r, const char* what) const {
    const bool s390x_v2 = abi_.arch == Arch::S390x && layout_->s390x_regnum_words;
    if (r.kind == RegRule::Kind::AtCfa) {
        // An odd offset reads back as "in register offset >> 1" on v2 s390x.
        if (s390x_v2 && (r.offset & 1) != 0)
            return unsupported(
                std::string(what) + " rule " + describe(r, abi_) +
                ": v2 s390x reads odd offsets as register numbers (spec v2 erratum 1)");
        return std::int64_t{r.offset};
    }
    if (r.kind == RegRule::Kind::ValReg && r.offset == 0 && s390x_v2)
        return (std::int64_t{r.reg} << 1) | 1; // SFRAME_V2_S390X_OFFSET_ENCODE_REGNUM
    if (r.kind == RegRule::Kind::ValReg && r.offset == 0 && abi_.arch == Arch::S390x)
        return unsupported(std::string(what) + " rule " + describe(r, abi_) +
                           ": v3 encodes registers with flexible FDEs (spec v3 section 1.2)");
    return unsupported(std::string(what) + " rule " + describe(r, abi_) +
                       " cannot be encoded in a default " + std::string(abi_.name) + " FDE" +
                       (layout_->has_fde_types ? "; use a flexible FDE" : ""));
}

// Default FDE data words (spec v3 section 3.1): CFA offset; the RA offset
// unless the header fixes it (AMD64, 3.1.1); the FP offset if saved. Where
// the RA is tracked but not saved while the FP is, a padding word
// SFRAME_FRE_RA_OFFSET_INVALID (0) holds the RA's place (3.1.3).
Status Encoder::default_words(const FreSpec& fre, EncodedFre& out) const {
    const CfaRule& cfa = fre.cfa;
    if (cfa.deref)
        return unsupported("CFA rule " + describe(cfa, abi_) +
                           " dereferences; that needs a flexible FDE");
    if (cfa.reg == abi_.sp_reg)
        out.cfa_base_sp = true;
    else if (cfa.reg != abi_.fp_reg)
        return unsupported("CFA rule " + describe(cfa, abi_) +
                           " is based on neither SP nor FP; that needs a " + "flexible FDE");
    auto cw = cfa_word(cfa.offset);
    if (!cw) return std::move(cw).error();
    out.words.push_back({*cw, false});

    std::optional<std::int64_t> ra_word;
    bool ra_pending_padding = false;
    const RegRule& ra = fre.ra;
    if (fixed_ra_ != 0) {
        // AMD64: sfh_cfa_fixed_ra_offset gives the RA; no word for it.
        if (ra.kind != RegRule::Kind::AtCfa || ra.offset != fixed_ra_)
            return unsupported("RA rule " + describe(ra, abi_) + ": the header fixes the RA at " +
                               describe(RegRule::at_cfa(fixed_ra_), abi_) +
                               (layout_->has_fde_types ? "; other rules need a flexible FDE" : ""));
    } else if (ra.kind == RegRule::Kind::SameValue) {
        ra_pending_padding = true;
    } else {
        if (ra.kind == RegRule::Kind::AtCfa && ra.offset == fre_ra_offset_invalid)
            return unsupported(
                "RA rule [CFA+0]: offset 0 is the padding word SFRAME_FRE_RA_OFFSET_INVALID");
        auto w = saved_word(ra, "RA");
        if (!w) return std::move(w).error();
        ra_word = *w;
    }

    std::optional<std::int64_t> fp_word;
    const RegRule& fp = fre.fp;
    if (fp.kind == RegRule::Kind::SameValue) {
        if (fixed_fp_ != 0)
            return unsupported("FP rule 'same': the header fixes the FP at " +
                               describe(RegRule::at_cfa(fixed_fp_), abi_));
    } else if (fixed_fp_ != 0 && fp.source != RegRule::Source::Fre &&
               fp.kind == RegRule::Kind::AtCfa && fp.offset == fixed_fp_) {
        // Given by sfh_cfa_fixed_fp_offset.
    } else {
        auto w = saved_word(fp, "FP");
        if (!w) return std::move(w).error();
        fp_word = *w;
    }

    if (ra_word) {
        out.words.push_back({*ra_word, false});
    } else if (ra_pending_padding && (fp_word || ra.source == RegRule::Source::Padding)) {
        // v1 predates the padding word: its second word is the FP when the RA
        // is not tracked (spec v1 section 1.4), which needs a header-fixed RA.
        if (!layout_->has_ra_padding_word)
            return unsupported(
                "RA in its register with the FP saved: SFrame version 1 has no padding word");
        out.words.push_back({fre_ra_offset_invalid, false});
    }
    if (fp_word) out.words.push_back({*fp_word, false});
    return ok();
}

// A flexible FDE control word (spec v3 section 3.2): (regnum << 3) |
// (deref_p << 1) | reg_p; reg_p = 0 means "based on the CFA".
Expected<Word> Encoder::flex_control(const RegRule& r, const char* what) const {
    switch (r.kind) {
    case RegRule::Kind::AtCfa:
        return Word{2, true};
    case RegRule::Kind::AtReg:
        return Word{(std::int64_t{r.reg} << 3) | 3, true};
    case RegRule::Kind::ValReg:
        return Word{(std::int64_t{r.reg} << 3) | 1, true};
    case RegRule::Kind::ValCfa:
        return unsupported(std::string(what) + " rule " + describe(r, abi_) +
                           ": its control word would be 0, the padding word (spec v3 section 3.2)");
    case RegRule::Kind::Undefined:
    case RegRule::Kind::SameValue:
        break;
    }
    return unsupported(std::string(what) + " rule " + describe(r, abi_) +
                       " has no flexible encoding");
}

// Flexible FDE data words (spec v3 section 3.2): (control, offset) pairs for
// the CFA, the RA and the FP, in that order. An RA or FP at its ABI default
// needs no pair; when only the FP needs one, a single padding word 0 stands
// in for the RA's pair.
Status Encoder::flex_words(const FreSpec& fre, EncodedFre& out) const {
    const CfaRule& cfa = fre.cfa;
    auto cw = cfa_word(cfa.offset);
    if (!cw) return std::move(cw).error();
    out.cfa_base_sp = false; // GNU as leaves the base-register bit clear: the control word names it
    out.words.push_back({(std::int64_t{cfa.reg} << 3) | (cfa.deref ? 2 : 0) | 1, true});
    out.words.push_back({*cw, false});

    const RegRule default_ra = fixed_ra_ != 0 ? RegRule::at_cfa(fixed_ra_) : RegRule::same_value();
    const RegRule default_fp = fixed_fp_ != 0 ? RegRule::at_cfa(fixed_fp_) : RegRule::same_value();
    auto is_default = [](const RegRule& r, const RegRule& d) {
        if (r.source == RegRule::Source::Fre && r.kind != RegRule::Kind::SameValue) return false;
        return r.kind == d.kind && (r.kind == RegRule::Kind::SameValue || r.offset == d.offset);
    };
    auto check_default = [&](const RegRule& r, const RegRule& d, const char* what) -> Status {
        if (is_default(r, d) || r.source == RegRule::Source::Fre) return ok();
        return unsupported(std::string(what) + " rule " + describe(r, abi_) +
                           " is marked as the ABI default, " + "which is " + describe(d, abi_));
    };
    if (fre.ra.kind == RegRule::Kind::SameValue && fixed_ra_ != 0)
        return unsupported("RA rule 'same': the header fixes the RA at " +
                           describe(RegRule::at_cfa(fixed_ra_), abi_) +
                           "; name its register with a ValReg rule");
    if (fre.fp.kind == RegRule::Kind::SameValue && fixed_fp_ != 0)
        return unsupported("FP rule 'same': the header fixes the FP at " +
                           describe(RegRule::at_cfa(fixed_fp_), abi_));
    if (auto s = check_default(fre.ra, default_ra, "RA"); !s) return s;
    if (auto s = check_default(fre.fp, default_fp, "FP"); !s) return s;

    const bool ra_default = is_default(fre.ra, default_ra);
    const bool fp_default = is_default(fre.fp, default_fp);
    const bool fp_padding = fp_default && fre.fp.source == RegRule::Source::Padding;
    const bool fp_written = !fp_default || fp_padding;

    if (!ra_default) {
        auto c = flex_control(fre.ra, "RA");
        if (!c) return std::move(c).error();
        out.words.push_back(*c);
        out.words.push_back({fre.ra.offset, false});
    } else if (fp_written || fre.ra.source == RegRule::Source::Padding) {
        out.words.push_back({0, true});
    }
    if (fp_padding) {
        out.words.push_back({0, true});
    } else if (!fp_default) {
        auto c = flex_control(fre.fp, "FP");
        if (!c) return std::move(c).error();
        out.words.push_back(*c);
        out.words.push_back({fre.fp.offset, false});
    }
    return ok();
}

Expected<std::vector<EncodedFre>> Encoder::encode_fres(const FdeSpec& f) {
    std::vector<EncodedFre> out;
    out.reserve(f.fres.size());
    const std::string fde_context = context_;
    const std::uint64_t limit = f.pc_type == PcType::Mask ? f.rep_size : f.size;
    for (std::size_t k = 0; k < f.fres.size(); ++k) {
        const FreSpec& fre = f.fres[k];
        context_ = fde_context + "FRE " + std::to_string(k) + " (+" + to_hex(fre.start) + "): ";
        if (!o_.quirks.unchecked) {
            if (k > 0 && fre.start <= f.fres[k - 1].start)
                return malformed("start is not above the previous FRE's (+" +
                                 to_hex(f.fres[k - 1].start) + ")");
            // An FRE at offset 0 of an empty function is what GNU as writes
            // for a zero-sized function (e.g. gas test cfi-sframe-common-1).
            if (fre.start >= limit && fre.start != 0)
                return malformed(
                    "start is outside the " +
                    std::string(f.pc_type == PcType::Mask ? "repeat block" : "function") + " (" +
                    std::to_string(limit) + " bytes)");
            if (fre.mangled_ra && abi_.arch != Arch::AArch64)
                return unsupported("mangled-RA bit on " + std::string(abi_.name) +
                                   " (AArch64 only)");
        }
        EncodedFre e;
        e.start = fre.start;
        e.mangled_ra = fre.mangled_ra;
        if (fre.ra.kind == RegRule::Kind::Undefined) {
            // Zero data words: RA undefined, the outermost frame (spec v2
            // erratum 2; v3 section 2.4.1).
            if (!layout_->empty_fre_is_outermost)
                return unsupported(
                    "RA undefined (outermost frame) needs SFrame version 2 erratum 2");
        } else {
            auto s = f.fde_type == FdeType::Flex ? flex_words(fre, e) : default_words(fre, e);
            if (!s) return std::move(s).error();
        }
        if (e.words.size() > max_data_words)
            return unsupported(std::to_string(e.words.size()) +
                               " data words; the FRE info byte counts at most 15");
        // Spec v3 section 2.4.1: one data word size for the whole FRE.
        if (fre.word_size) {
            e.word_size = *fre.word_size;
            if (e.word_size != 1 && e.word_size != 2 && e.word_size != 4)
                return unsupported("data word size " + std::to_string(e.word_size) +
                                   " (only 1, 2 or 4)");
        } else {
            e.word_size = 1;
            for (const Word& w : e.words)
                while (!w.fits(e.word_size) && e.word_size < 4)
                    e.word_size *= 2;
        }
        for (std::size_t i = 0; i < e.words.size(); ++i)
            if (!e.words[i].fits(e.word_size))
                return unsupported("data word " + std::to_string(i) + " (" +
                                   std::to_string(e.words[i].value) + ") does not fit in " +
                                   std::to_string(e.word_size) + " bytes");
        out.push_back(std::move(e));
    }
    context_ = fde_context;
    return out;
}

// Section order: by start when sorted (spec v3 section 2.3.1), else as given.
std::vector<std::size_t> Encoder::section_order() const {
    std::vector<std::size_t> order(fdes_.size());
    std::iota(order.begin(), order.end(), std::size_t{0});
    if (o_.sorted && !o_.quirks.keep_fde_order)
        std::stable_sort(order.begin(), order.end(), [&](std::size_t a, std::size_t b) {
            return fdes_[a].start < fdes_[b].start;
        });
    return order;
}

// Lookups find one FDE per PC (spec v3 section 2.3.1).
Status Encoder::check_overlaps() const {
    if (o_.quirks.unchecked) return ok();
    std::vector<std::size_t> by_start(fdes_.size());
    std::iota(by_start.begin(), by_start.end(), std::size_t{0});
    std::stable_sort(by_start.begin(), by_start.end(),
                     [&](std::size_t a, std::size_t b) { return fdes_[a].start < fdes_[b].start; });
    for (std::size_t i = 1; i < by_start.size(); ++i) {
        const FdeSpec& a = fdes_[by_start[i - 1]];
        const FdeSpec& b = fdes_[by_start[i]];
        if (b.start < a.start + a.size)
            return Error(Errc::Malformed,
                         "function " + std::to_string(by_start[i]) + " (" + to_hex(b.start) +
                             ") overlaps function " + std::to_string(by_start[i - 1]) + " [" +
                             to_hex(a.start) + ", " + to_hex(a.start + a.size) + ")");
    }
    return ok();
}

// Spec v3 section 2.3.3.3: the narrowest FRE start field that fits, unless
// the function asks for another.
Expected<FreType> Encoder::fre_type_of(const FdeSpec& f) const {
    std::uint32_t max_start = 0;
    for (const FreSpec& fre : f.fres)
        max_start = std::max(max_start, fre.start);
    const FreType fitting = max_start <= 0xffU     ? FreType::Addr1
                            : max_start <= 0xffffU ? FreType::Addr2
                                                   : FreType::Addr4;
    const FreType type = f.fre_type.value_or(fitting);
    if (type > FreType::Addr4)
        return unsupported("unknown FRE type " + std::to_string(static_cast<unsigned>(type)));
    if (type < fitting)
        return unsupported("FRE start +" + to_hex(max_start) + " does not fit FRE type " +
                           std::to_string(static_cast<unsigned>(type)));
    return type;
}

Expected<Encoder::Functions> Encoder::encode_functions() {
    Functions fns;
    fns.fres.resize(fdes_.size());
    fns.fre_types.resize(fdes_.size());
    for (std::size_t i = 0; i < fdes_.size(); ++i) {
        const FdeSpec& f = fdes_[i];
        context_ = "function " + std::to_string(i) + " (" + to_hex(f.start) + "): ";
        if (auto s = check_fde(f); !s) return std::move(s).error();
        auto e = encode_fres(f);
        if (!e) return std::move(e).error();
        fns.fres[i] = std::move(*e);
        auto type = fre_type_of(f);
        if (!type) return std::move(type).error();
        fns.fre_types[i] = *type;
        fns.total_fres += f.fres.size();
    }
    context_.clear();
    const std::uint64_t fde_bytes = std::uint64_t{layout_->fde_size} * fdes_.size();
    if (fns.total_fres > std::numeric_limits<std::uint32_t>::max() ||
        fde_bytes > std::numeric_limits<std::uint32_t>::max())
        return Error(Errc::Unsupported, "too many FDEs or FREs for the 32-bit header counts");
    return fns;
}

std::uint8_t Encoder::header_flags() const {
    std::uint8_t flags = 0;
    if (o_.sorted) flags |= flag::fde_sorted;
    if (o_.frame_pointer) flags |= flag::frame_pointer;
    if (o_.pcrel && (layout_->valid_flags & flag::fde_func_start_pcrel) != 0)
        flags |= flag::fde_func_start_pcrel;
    return flags | o_.quirks.extra_flags;
}

// The header (spec v3 section 2.2), the auxiliary header, and room for the
// FDE records: FDEs follow the header, FREs follow the FDEs. sfh_fre_len
// and the records are filled in once the FREs are written.
void Encoder::write_header(Emitter& out, const Functions& fns) const {
    const std::uint64_t fde_bytes = std::uint64_t{layout_->fde_size} * fdes_.size();
    out.put(magic, 2);
    out.put(static_cast<std::uint8_t>(o_.version), 1);
    out.put(header_flags(), 1);
    out.put(static_cast<std::uint8_t>(o_.abi), 1);
    out.put(static_cast<std::uint8_t>(fixed_fp_), 1);
    out.put(static_cast<std::uint8_t>(fixed_ra_), 1);
    out.put(o_.quirks.auxhdr.size(), 1);
    out.put(fdes_.size(), 4);   // sfh_num_fdes
    out.put(fns.total_fres, 4); // sfh_num_fres
    out.put(0, 4);              // sfh_fre_len
    out.put(0, 4);              // sfh_fdeoff
    out.put(fde_bytes, 4);      // sfh_freoff
    out.append(o_.quirks.auxhdr);
    out.reserve(fde_bytes);
}

// Each function's data in the order the functions were given (GNU ld, too,
// sorts only the FDEs and leaves each input's FREs where they were): its
// attribute record where the version has one (filled in with the FDE), then
// its FREs.
void Encoder::write_fre_subsection(Emitter& out, const Functions& fns,
                                   std::vector<WrittenFde>& written) const {
    for (std::size_t i = 0; i < fdes_.size(); ++i) {
        WrittenFde& w = written[i];
        w.input_index = i;
        w.attr_offset = out.reserve(layout_->attr_size);
        const unsigned start_width = 1U << static_cast<unsigned>(fns.fre_types[i]);
        for (const EncodedFre& e : fns.fres[i]) {
            w.fre_offsets.push_back(out.size());
            out.put(e.start, start_width);
            out.put(fre_info::make(e.cfa_base_sp, static_cast<unsigned>(e.words.size()),
                                   fre_info::size_code_of(e.word_size), e.mangled_ra),
                    1);
            for (const Word& word : e.words)
                out.put(static_cast<std::uint64_t>(word.value), e.word_size);
        }
    }
}

// The FDE records, in section order, through the version's layout.
Status Encoder::write_fde_records(Emitter& out, const Functions& fns,
                                  const std::vector<std::size_t>& order, std::uint64_t fde_sub,
                                  std::vector<WrittenFde>& written) const {
    const std::uint64_t fre_sub = fde_sub + std::uint64_t{layout_->fde_size} * fdes_.size();
    const bool pcrel = (header_flags() & flag::fde_func_start_pcrel) != 0;
    for (std::size_t slot = 0; slot < order.size(); ++slot) {
        const std::size_t i = order[slot];
        const FdeSpec& f = fdes_[i];
        const std::uint64_t at = fde_sub + std::uint64_t{slot} * layout_->fde_size;
        WrittenFde& w = written[i];
        w.entry_offset = at;
        FdeFields fields;
        // Function start: relative to the field itself with PCREL (v2
        // erratum 1, v3 section 2.3.1), else to the section's start.
        const std::uint64_t base = o_.section_vaddr + (pcrel ? at : 0);
        fields.start_field = static_cast<std::int64_t>(f.start - base);
        if (layout_->start_field_size == 4 &&
            (fields.start_field < std::numeric_limits<std::int32_t>::min() ||
             fields.start_field > std::numeric_limits<std::int32_t>::max()))
            return Error(Errc::Unsupported,
                         "function " + std::to_string(i) + " (" + to_hex(f.start) +
                             ") is too far from the section for a 32-bit start field");
        fields.size = f.size;
        // To the function's data: its attribute record (v3), or first FRE.
        fields.fre_offset = static_cast<std::uint32_t>(w.attr_offset - fre_sub);
        fields.num_fres = static_cast<std::uint32_t>(f.fres.size());
        fields.info = fde_info::make(fns.fre_types[i], f.pc_type, f.pauth_key,
                                     layout_->has_signal_bit && f.signal);
        fields.info2 = static_cast<std::uint8_t>(f.fde_type);
        fields.rep_size = layout_->has_rep_size ? f.rep_size : 0;
        layout_->write_fde(fields, out.order(), out.span(at, layout_->fde_size),
                           out.span(w.attr_offset, layout_->attr_size));
        if (layout_->attr_size == 0) w.attr_offset = at;
    }
    return ok();
}

Expected<std::vector<std::uint8_t>> Encoder::run(SectionMap* map) {
    if (auto s = check_section(); !s) return std::move(s).error();
    if (auto s = check_overlaps(); !s) return std::move(s).error();
    auto fns = encode_functions();
    if (!fns) return std::move(fns).error();

    Emitter out(o_.quirks.byte_order.value_or(abi_.order));
    write_header(out, *fns);
    const std::uint64_t fde_sub = header_size + o_.quirks.auxhdr.size();
    const std::uint64_t fre_sub = out.size();
    std::vector<WrittenFde> written(fdes_.size());
    write_fre_subsection(out, *fns, written);
    const std::uint64_t fre_len = out.size() - fre_sub;
    if (fre_len > std::numeric_limits<std::uint32_t>::max())
        return Error(Errc::Unsupported,
                     "FRE sub-section of " + std::to_string(fre_len) + " bytes exceeds 4 GiB");
    out.put_at(16, fre_len, 4); // sfh_fre_len
    const std::vector<std::size_t> order = section_order();
    if (auto s = write_fde_records(out, *fns, order, fde_sub, written); !s)
        return std::move(s).error();

    if (map != nullptr) {
        map->fde_subsection = fde_sub;
        map->fre_subsection = fre_sub;
        map->fdes.clear();
        for (std::size_t i : order)
            map->fdes.push_back(std::move(written[i]));
    }
    return out.take();
}

} // namespace

Writer::Writer(WriterOptions options) : options_(std::move(options)) {}

void Writer::add(FdeSpec fde) {
    fdes_.push_back(std::move(fde));
}

Expected<std::vector<std::uint8_t>> Writer::write(SectionMap* map) const {
    return Encoder(options_, fdes_).run(map);
}

} // namespace sfunwind::sframe

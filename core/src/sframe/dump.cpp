// SPDX-License-Identifier: MIT
// objdump --sframe's text, from the version-neutral view. The column layout
// is binutils' (libsframe sframe-dump.c); the rule spellings ("sp+16", "c-8",
// "f", "u", "U", "(fp-8)", "r3+0", "[s]") follow what it prints for each rule.
#include "sfunwind/sframe/dump.hpp"

#include <cinttypes>
#include <cstdio>
#include <string>

namespace sfunwind::sframe {
namespace {

template <typename... Args> std::string format(const char* fmt, Args... args) {
    char buf[128];
    std::snprintf(buf, sizeof buf, fmt, args...);
    return buf;
}

std::string base_name(const Abi& abi, std::uint16_t reg) {
    if (reg == abi.sp_reg) return "sp";
    if (reg == abi.fp_reg) return "fp";
    return "r" + std::to_string(reg);
}

// Default FDEs print the CFA as "%s+%d" (so a negative offset shows as
// "sp+-8", as objdump does); flexible ones as "%s%+d", in parentheses when
// dereferenced.
std::string cfa_text(const Row& row, const Abi& abi, bool flex) {
    if (!flex) return base_name(abi, row.cfa.reg) + format("+%d", row.cfa.offset);
    std::string s = base_name(abi, row.cfa.reg) + format("%+d", row.cfa.offset);
    return row.cfa.deref ? "(" + s + ")" : s;
}

// FP and RA columns. `is_ra` selects the RA's spelling of the header-fixed
// rule ("f"; binutils 2.40 printed it as "u") and of padding ("U"; an FP
// padding word has no offset after it, which objdump shows as "u").
std::string reg_text(const RegRule& r, const Abi& abi, bool is_ra, bool flex, DumpStyle style) {
    if (r.source == RegRule::Source::Padding) return is_ra ? "U" : "u";
    // v2 s390x "saved in register N" words (spec v2 erratum 1).
    if (!flex && r.kind == RegRule::Kind::ValReg) return format("r%d", r.reg);
    switch (r.kind) {
    case RegRule::Kind::Undefined:
        return "U";
    case RegRule::Kind::SameValue:
        return "u";
    case RegRule::Kind::AtCfa:
        if (r.source == RegRule::Source::Header)
            return is_ra && style == DumpStyle::Binutils2_47 ? "f" : "u";
        return format("c%+d", r.offset);
    case RegRule::Kind::ValCfa:
        return format("c%+d", r.offset);
    case RegRule::Kind::AtReg:
        return "(" + base_name(abi, r.reg) + format("%+d", r.offset) + ")";
    case RegRule::Kind::ValReg:
        return base_name(abi, r.reg) + format("%+d", r.offset);
    }
    return "?";
}

std::string flags_text(std::uint8_t flags, DumpStyle style) {
    static const struct {
        std::uint8_t bit;
        const char* name;
    } names[] = {{flag::fde_sorted, "SFRAME_F_FDE_SORTED"},
                 {flag::frame_pointer, "SFRAME_F_FRAME_POINTER"},
                 {flag::fde_func_start_pcrel, "SFRAME_F_FDE_FUNC_START_PCREL"}};
    std::string s;
    for (const auto& n : names) {
        if ((flags & n.bit) == 0) continue;
        // binutils 2.40 copies each name over the previous one, so only the
        // last set flag shows; 2.45 on prints one per line.
        if (style == DumpStyle::Binutils2_40)
            s.clear();
        else if (!s.empty())
            s += ",\n           ";
        s += n.name;
    }
    return s.empty() ? "NONE" : s;
}

class Dumper {
  public:
    Dumper(const Section& s, const DumpOptions& o)
        : s_(s), o_(o), style_(o.style != DumpStyle::Auto   ? o.style
                               : s.version() == Version::V1 ? DumpStyle::Binutils2_40
                                                            : DumpStyle::Binutils2_47) {}

    std::string run() {
        const Header& h = s_.header();
        out_ += "Contents of the SFrame section " + o_.section_name + ":\n";
        out_ += "  Header :\n\n";
        out_ += format("    Version: SFRAME_VERSION_%u\n", static_cast<unsigned>(h.version));
        out_ += "    Flags: " + flags_text(h.flags, style_) + "\n";
        if (style_ == DumpStyle::Binutils2_47) {
            if (h.cfa_fixed_fp_offset != 0)
                out_ += format("    CFA fixed FP offset: %d\n", h.cfa_fixed_fp_offset);
            if (h.cfa_fixed_ra_offset != 0)
                out_ += format("    CFA fixed RA offset: %d\n", h.cfa_fixed_ra_offset);
        }
        out_ += format("    Num FDEs: %u\n", h.num_fdes);
        out_ += format("    Num FREs: %u\n", h.num_fres);
        out_ += "\n  Function Index :\n";
        for (std::uint32_t i = 0; i < h.num_fdes; ++i)
            function(i);
        return std::move(out_);
    }

  private:
    void function(std::uint32_t i) {
        out_ += "\n";
        auto f = s_.fde(i);
        if (!f) {
            out_ += format("    func idx [%u]: <corrupt FDE: ", i) + f.error().message() + ">\n";
            return;
        }
        const Fde& fde = *f;
        out_ += format("    func idx [%u]: pc = 0x%" PRIx64 ", size = %u bytes", i, fde.start,
                       fde.size);
        std::string attr;
        if (fde.signal) attr += "S";
        if (fde.fde_type == FdeType::Flex) attr += "F";
        if (!attr.empty()) out_ += ", attr = \"" + attr + "\"";
        if (fde.pauth_key == PauthKey::B) out_ += ", pauth = B key";
        const bool mask = fde.pc_type == PcType::Mask;
        out_ += mask ? "\n    STARTPC[m]      CFA       FP        RA           \n"
                     : "\n    STARTPC         CFA       FP        RA           \n";
        std::uint64_t at = fde.fres_begin;
        const std::uint64_t limit = mask && fde.rep_size ? fde.rep_size : fde.size;
        for (std::uint32_t k = 0; k < fde.num_fres; ++k) {
            auto fre = s_.fre_at(fde, at);
            if (!fre) {
                out_ += "    <corrupt FRE: " + fre.error().message() + ">\n";
                return;
            }
            at += fre->size;
            // Mask FDEs print the FRE's start offset as is; others the address.
            const std::uint64_t start = mask ? fre->start : fde.start + fre->start;
            out_ += format("    %016" PRIx64, start);
            auto row = s_.row(fde, *fre, k, limit);
            if (!row) {
                out_ += "  <" + row.error().message() + ">\n";
                continue;
            }
            if (fre->word_count == 0) {
                out_ += "  RA undefined\n";
                continue;
            }
            const Abi& abi = s_.abi();
            const bool flex = fde.fde_type == FdeType::Flex;
            std::string ra = reg_text(row->ra, abi, true, flex, style_);
            if (row->mangled_ra) ra += "[s]";
            out_ += format("  %-10s%-10s%-13s\n", cfa_text(*row, abi, flex).c_str(),
                           reg_text(row->fp, abi, false, flex, style_).c_str(), ra.c_str());
        }
    }

    const Section& s_;
    const DumpOptions& o_;
    DumpStyle style_;
    std::string out_;
};

} // namespace

std::string dump(const Section& section, const DumpOptions& options) {
    return Dumper(section, options).run();
}

} // namespace sfunwind::sframe

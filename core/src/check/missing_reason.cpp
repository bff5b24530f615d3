// SPDX-License-Identifier: MIT
#include "missing_reason.hpp"

#include "sfunwind/row.hpp"

#include <cstdio>
#include <dwarf.h>
#include <elfutils/libdw.h>

namespace sfunwind::check::detail {
namespace {

std::string version_text(std::optional<sframe::Version> v) {
    return "SFrame v" + std::to_string(static_cast<unsigned>(*v));
}

// Whether a default (non-flexible) FDE of this ABI can hold the RA rule
// (spec v3 section 3.1): AMD64 fixes the RA at CFA-8 (3.1.1); AArch64 and
// s390x keep it in its register or at CFA+N.
bool default_ra(const RegRule& ra, const Abi& abi) {
    using K = RegRule::Kind;
    if (ra.kind == K::Undefined) return true; // an FRE without data words
    if (abi.fixed_ra_offset != 0) return is_fixed_ra_rule(ra, abi);
    return ra.kind == K::SameValue || ra.kind == K::AtCfa;
}

bool default_fp(const RegRule& fp) {
    return fp.kind == RegRule::Kind::SameValue || fp.kind == RegRule::Kind::AtCfa;
}

} // namespace

struct SourceLanguages::Impl {
    Dwarf* dwarf = nullptr;
    ~Impl() {
        if (dwarf != nullptr) dwarf_end(dwarf);
    }
};

SourceLanguages::SourceLanguages(const elf::ElfFile& file) : impl_(std::make_unique<Impl>()) {
    if (file.has_section(".debug_info"))
        impl_->dwarf = dwarf_begin_elf(file.libelf_handle(), DWARF_C_READ, nullptr);
}

SourceLanguages::~SourceLanguages() = default;

std::optional<std::string> SourceLanguages::assembly_unit(std::uint64_t pc) const {
    if (impl_->dwarf == nullptr) return std::nullopt;
    Dwarf_Die cu;
    if (dwarf_addrdie(impl_->dwarf, pc, &cu) == nullptr) return std::nullopt;
    if (dwarf_srclang(&cu) != DW_LANG_Mips_Assembler) return std::nullopt;
    const char* name = dwarf_diename(&cu);
    return "DWARF: compile unit " + std::string(name != nullptr ? name : "(unnamed)") +
           ", DW_LANG_Mips_Assembler";
}

Missing classify_missing(const std::vector<cfi::CfiRow>& rows, const Abi& abi,
                         std::optional<sframe::Version> version, const SourceLanguages& languages) {
    if (!version) return {MissingReason::NoSection, "the file has no SFrame section"};
    if (!rows.empty())
        if (auto unit = languages.assembly_unit(rows.front().begin))
            return {MissingReason::Assembly, "hand-written assembly (" + *unit + ")"};
    const bool v3 = *version == sframe::Version::V3;
    const std::string flex = v3 ? "; a v3 flexible FDE could hold it"
                                : "; " + version_text(version) + " cannot (v3 flexible FDEs can)";
    // The first row that needs something, by how sure a cause it is: an
    // expression has no SFrame form in any version; the others need a
    // flexible FDE or a newer version.
    for (const auto& r : rows) {
        const cfi::RuleState* bad = !r.cfa_state.representable  ? &r.cfa_state
                                    : !r.ra_state.representable ? &r.ra_state
                                    : !r.fp_state.representable ? &r.fp_state
                                                                : nullptr;
        if (bad != nullptr)
            return {MissingReason::CfiExpression, "at " + to_hex(r.begin) + ": " + bad->reason};
    }
    for (const auto& r : rows) {
        const CfaRule& c = r.rules.cfa;
        const bool outermost =
            r.ra_state.representable && r.rules.ra.kind == RegRule::Kind::Undefined;
        if (!outermost && (c.deref || (c.reg != abi.sp_reg && c.reg != abi.fp_reg)))
            return {MissingReason::Drap, "at " + to_hex(r.begin) + ": " + describe(r.rules, abi) +
                                             " (DRAP or realigned stack)" + flex};
    }
    for (const auto& r : rows)
        if (!default_ra(r.rules.ra, abi))
            return {MissingReason::RaRule,
                    "at " + to_hex(r.begin) + ": " + describe(r.rules, abi) + flex};
    for (const auto& r : rows)
        if (!default_fp(r.rules.fp))
            return {MissingReason::FpRule,
                    "at " + to_hex(r.begin) + ": " + describe(r.rules, abi) + flex};
    for (const auto& r : rows)
        if (r.rules.signal_frame)
            return {MissingReason::SignalFrame,
                    "a signal frame (CIE augmentation \"S\")" +
                        std::string(v3 ? "; v3 FDEs can mark it"
                                       : "; " + version_text(version) + " cannot mark it")};
    for (const auto& r : rows)
        if (r.rules.ra.kind == RegRule::Kind::Undefined)
            return {
                MissingReason::Outermost,
                "RA undefined from " + to_hex(r.begin) + " (the outermost frame)" +
                    std::string(*version == sframe::Version::V1
                                    ? "; SFrame v1 cannot say so"
                                    : "; SFrame v2 (erratum 2) and v3 can, so the object was most "
                                      "likely assembled without --gsframe")};
    return {
        MissingReason::Unknown,
        "every CFI row has an SFrame form: the object was most likely assembled without --gsframe"};
}

} // namespace sfunwind::check::detail

// SPDX-License-Identifier: MIT
#include "sfunwind/convert/from_cfi.hpp"

#include "../check/cfi_probe.hpp"
#include "sfunwind/row.hpp"

#include <algorithm>
#include <cstdio>
#include <optional>

namespace sfunwind::convert {
namespace {

// x86-64 PLT entries (lazy .plt and IBT .plt.sec) are 16 bytes (psABI
// section A.2 "Procedure Linkage Table"); GNU ld's PC-mask FDE repeats
// with that size.
constexpr std::uint32_t x86_64_plt_entry = 16;

bool is_plt_section(const std::string& name) {
    return name == ".plt" || name == ".plt.sec" || name == ".iplt" || name == ".plt.bnd";
}

const elf::SectionInfo* section_info_of(const elf::ElfFile& file, std::uint64_t pc) {
    for (const auto& s : file.sections())
        if ((s.flags & 0x2) != 0 && pc >= s.vaddr && pc - s.vaddr < s.size) return &s; // SHF_ALLOC
    return nullptr;
}

std::string section_of(const elf::ElfFile& file, std::uint64_t pc) {
    const elf::SectionInfo* s = section_info_of(file, pc);
    return s != nullptr ? s->name : std::string();
}

using K = RegRule::Kind;

// Whether a default FDE (spec v3 section 3.1) can hold the row's rules.
bool default_fde_holds(const Row& r, const Abi& abi) {
    if (r.ra.kind == K::Undefined) return true; // an FRE with no data words
    if (r.cfa.deref || (r.cfa.reg != abi.sp_reg && r.cfa.reg != abi.fp_reg)) return false;
    const bool ra_ok = abi.fixed_ra_offset != 0
                           ? is_fixed_ra_rule(r.ra, abi)
                           : r.ra.kind == K::SameValue || r.ra.kind == K::AtCfa;
    const bool fp_ok = r.fp.kind == K::SameValue || r.fp.kind == K::AtCfa;
    return ra_ok && fp_ok;
}

// The row as the writer takes it. Rules at the ABI default are marked so
// that the writer relies on the default (no data word, or a padding word)
// where GNU as does: AMD64's RA at CFA-8 is the header's fixed offset
// (spec v3 section 3.1.1), a register not saved needs no word.
sframe::FreSpec fre_from(const Row& r, std::uint32_t start, const Abi& abi) {
    sframe::FreSpec f;
    f.start = start;
    if (r.ra.kind == K::Undefined) {
        f.ra = RegRule::undefined();
        return f;
    }
    f.cfa = r.cfa;
    f.ra = r.ra;
    f.fp = r.fp;
    f.ra.source = RegRule::Source::Fre;
    f.fp.source = RegRule::Source::Fre;
    if (is_fixed_ra_rule(r.ra, abi)) f.ra.source = RegRule::Source::Header;
    if (r.ra.kind == K::SameValue) f.ra = RegRule::same_value(RegRule::Source::Absent);
    if (r.fp.kind == K::SameValue) f.fp = RegRule::same_value(RegRule::Source::Absent);
    return f;
}

// Same rules, so no new FRE (the Source of a rule does not count).
bool same_rules(const sframe::FreSpec& a, const sframe::FreSpec& b) {
    auto same = [](const RegRule& x, const RegRule& y) {
        return x.kind == y.kind && x.reg == y.reg && x.offset == y.offset;
    };
    if (a.ra.kind == K::Undefined || b.ra.kind == K::Undefined) return a.ra.kind == b.ra.kind;
    return a.cfa == b.cfa && same(a.ra, b.ra) && same(a.fp, b.fp) && a.mangled_ra == b.mangled_ra;
}

void append(std::vector<sframe::FreSpec>& fres, sframe::FreSpec f) {
    if (!fres.empty() && same_rules(fres.back(), f)) return;
    fres.push_back(f);
}

// The x86-64 PLT tail [begin, end): its CFA expression evaluated by libdwfl
// at every byte, folded into a PC-mask FDE if it repeats every `period`.
Expected<sframe::FdeSpec> plt_fde(check::detail::CfiProbe& probe, std::uint64_t begin,
                                  std::uint64_t end, std::uint32_t period, const Abi& abi) {
    if (end - begin < period || (end - begin) % period != 0)
        return Error(Errc::Unsupported, "PLT range [" + to_hex(begin) + ", " + to_hex(end) +
                                            ") is not a whole number of " + std::to_string(period) +
                                            "-byte entries");
    std::vector<Row> block(period);
    for (std::uint64_t pc = begin; pc < end; ++pc) {
        auto values = probe.step(pc);
        if (!values) return std::move(values).error();
        auto row = check::detail::rules_from_values(*values, abi);
        if (!row)
            return Error(Errc::Unsupported,
                         "the CFI at " + to_hex(pc) + " evaluates to values no SFrame rule gives",
                         Address{pc});
        const auto k = static_cast<std::size_t>((pc - begin) % period);
        if (pc < begin + period) {
            block[k] = *row;
        } else if (!(block[k].cfa == row->cfa && block[k].ra.kind == row->ra.kind &&
                     block[k].ra.offset == row->ra.offset && block[k].fp.kind == row->fp.kind &&
                     block[k].fp.offset == row->fp.offset)) {
            return Error(Errc::Unsupported,
                         "the CFI at " + to_hex(pc) + " (" + describe(*row, abi) +
                             ") does not repeat every " + std::to_string(period) + " bytes",
                         Address{pc});
        }
    }
    sframe::FdeSpec fde;
    fde.start = begin;
    fde.size = static_cast<std::uint32_t>(end - begin);
    fde.pc_type = sframe::PcType::Mask;
    fde.rep_size = static_cast<std::uint8_t>(period);
    for (std::uint32_t k = 0; k < period; ++k) {
        if (!default_fde_holds(block[k], abi))
            return Error(Errc::Unsupported,
                         "PLT rule " + describe(block[k], abi) + " needs a flexible FDE");
        append(fde.fres, fre_from(block[k], k, abi));
    }
    return fde;
}

} // namespace

Expected<sframe::FdeSpec> fde_from_rows(const std::vector<cfi::CfiRow>& rows, std::uint64_t begin,
                                        std::uint64_t end, const Abi& abi) {
    if (end <= begin || end - begin > 0xffffffffULL)
        return Error(Errc::Unsupported,
                     "function [" + to_hex(begin) + ", " + to_hex(end) + ") has no 32-bit size");
    sframe::FdeSpec fde;
    fde.start = begin;
    fde.size = static_cast<std::uint32_t>(end - begin);
    for (const auto& r : rows) {
        if (r.begin < begin || r.begin >= end) continue;
        // A register rule SFrame cannot hold matters only while the frame
        // has a caller: an outermost row has no data words.
        const bool outermost = r.ra_state.representable && r.rules.ra.kind == K::Undefined;
        const cfi::RuleState* bad = !r.ra_state.representable    ? &r.ra_state
                                    : outermost                  ? nullptr
                                    : !r.cfa_state.representable ? &r.cfa_state
                                    : !r.fp_state.representable  ? &r.fp_state
                                                                 : nullptr;
        if (bad != nullptr)
            return Error(Errc::Unsupported, "at " + to_hex(r.begin) + ": " + bad->reason, r.begin);
        if (!outermost && r.rules.fp.kind == K::Undefined)
            return Error(Errc::Unsupported,
                         "at " + to_hex(r.begin) + ": FP undefined has no SFrame form", r.begin);
        if (!outermost && r.rules.ra.kind == K::SameValue && !abi.ra_in_register)
            return Error(Errc::Unsupported,
                         "at " + to_hex(r.begin) + ": RA 'same value' has no x86-64 meaning",
                         r.begin);
        if (!default_fde_holds(r.rules, abi)) fde.fde_type = sframe::FdeType::Flex;
        if (r.rules.signal_frame) fde.signal = true;
        append(fde.fres, fre_from(r.rules, static_cast<std::uint32_t>(r.begin - begin), abi));
    }
    if (fde.fres.empty())
        return Error(Errc::Malformed, "function at " + to_hex(begin) + " has no CFI rows");
    return fde;
}

Expected<Result> from_cfi(const elf::ElfFile& file, const Options& options) {
    const auto abi = file.abi();
    if (!abi)
        return Error(Errc::Unsupported, file.name() + ": no sfunwind ABI for ELF machine " +
                                            std::to_string(file.machine()));
    auto arch = sframe::abi_arch_of(*abi);
    if (!arch)
        return Error(Errc::Unsupported,
                     file.name() + ": SFrame has no ABI identifier for " + std::string(abi->name));
    auto table = cfi::CfiTable::open(file, options.cfi_source);
    if (!table) return std::move(table).error();

    Result result;
    std::optional<check::detail::CfiProbe> probe;
    std::string probe_error;
    auto skip = [&](std::uint64_t b, std::uint64_t e, std::string why) {
        Skipped s;
        s.begin = b;
        s.end = e;
        if (const auto* sym = file.symbol_for(b); sym != nullptr && sym->value == b)
            s.name = sym->name;
        else
            s.name = section_of(file, b);
        s.reason = std::move(why);
        result.skipped.push_back(std::move(s));
    };

    for (const auto& range : table->fdes()) {
        auto rows = table->rows(range);
        if (!rows) {
            skip(range.begin, range.end, rows.error().message());
            continue;
        }
        auto fde = fde_from_rows(*rows, range.begin, range.end, *abi);
        if (fde) {
            result.fdes.push_back(std::move(*fde));
            continue;
        }
        // GNU ld's .plt FDE: rows for PLT0, then one expression row for
        // every entry after it.
        const elf::SectionInfo* plt = section_info_of(file, range.begin);
        const std::string section = plt != nullptr ? plt->name : std::string();
        auto first_bad = std::find_if(rows->begin(), rows->end(),
                                      [](const cfi::CfiRow& r) { return !r.representable(); });
        const bool tail_only = first_bad != rows->end() &&
                               std::all_of(first_bad, rows->end(),
                                           [](const cfi::CfiRow& r) { return !r.representable(); });
        if (!(options.plt && abi->arch == Arch::X86_64 && is_plt_section(section) && tail_only)) {
            skip(range.begin, range.end, fde.error().message());
            continue;
        }
        // The PLT is probed byte by byte, so the FDE must stay inside the PLT
        // section it starts in, as GNU ld's does, and that section must be in
        // the file: a corrupt address range (or section size) would
        // otherwise make billions of libdwfl steps.
        if (!plt->in_file || range.end - plt->vaddr > plt->size) {
            skip(range.begin, range.end,
                 fde.error().message() + "; the FDE [" + to_hex(range.begin) + ", " +
                     to_hex(range.end) + ") is not inside " + section + " [" + to_hex(plt->vaddr) +
                     ", " + to_hex(plt->vaddr + plt->size) + ") as stored in the file");
            continue;
        }
        if (!probe && probe_error.empty()) {
            auto p = check::detail::CfiProbe::open(file, *abi);
            if (p)
                probe.emplace(std::move(*p));
            else
                probe_error = p.error().message();
        }
        if (!probe) {
            skip(range.begin, range.end,
                 fde.error().message() + "; cannot evaluate it: " + probe_error);
            continue;
        }
        const std::uint64_t tail = first_bad->begin;
        std::optional<sframe::FdeSpec> head;
        if (tail > range.begin) {
            std::vector<cfi::CfiRow> head_rows(rows->begin(), first_bad);
            auto h = fde_from_rows(head_rows, range.begin, tail, *abi);
            if (!h) {
                skip(range.begin, range.end, h.error().message());
                continue;
            }
            head = std::move(*h);
        }
        auto mask = plt_fde(*probe, tail, range.end, x86_64_plt_entry, *abi);
        if (!mask) {
            skip(range.begin, range.end, section + ": " + mask.error().message());
            continue;
        }
        if (head) result.fdes.push_back(std::move(*head));
        result.fdes.push_back(std::move(*mask));
        ++result.pc_mask;
    }

    // The writer refuses overlapping functions (lookups find one FDE per
    // PC); CfiTable::fdes() is sorted, so keep the first of each overlap.
    std::stable_sort(
        result.fdes.begin(), result.fdes.end(),
        [](const sframe::FdeSpec& a, const sframe::FdeSpec& b) { return a.start < b.start; });
    // A rule the writer cannot encode (an s390x CFA offset that is not 160
    // plus a multiple of 8, an offset too wide for a data word) leaves that
    // function out, not the whole section.
    sframe::WriterOptions wo;
    wo.version = sframe::Version::V3;
    wo.abi = *arch;
    wo.section_vaddr = options.section_vaddr;
    wo.pcrel = options.pcrel;
    wo.sorted = true;
    std::vector<sframe::FdeSpec> kept;
    for (auto& f : result.fdes) {
        if (!kept.empty() && f.start < kept.back().start + kept.back().size) {
            skip(f.start, f.start + f.size,
                 "overlaps the function at " + to_hex(kept.back().start));
            continue;
        }
        sframe::Writer alone(wo);
        alone.add(f);
        if (auto test = alone.write(); !test) {
            skip(f.start, f.start + f.size, test.error().message());
            continue;
        }
        kept.push_back(std::move(f));
    }
    result.fdes = std::move(kept);
    std::sort(result.skipped.begin(), result.skipped.end(),
              [](const Skipped& a, const Skipped& b) { return a.begin < b.begin; });

    sframe::Writer writer(wo);
    for (const auto& f : result.fdes) {
        writer.add(f);
        result.fres += f.fres.size();
        if (f.fde_type == sframe::FdeType::Flex) ++result.flexible;
    }
    auto bytes = writer.write();
    if (!bytes) return Error(bytes.error().code(), file.name() + ": " + bytes.error().message());
    result.section = std::move(*bytes);
    return result;
}

} // namespace sfunwind::convert

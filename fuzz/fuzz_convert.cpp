// SPDX-License-Identifier: MIT
// The CFI-to-SFrame converter, its output re-read by the decoder. The input is
// an ELF file; convert::from_cfi() reads its .eh_frame / .debug_frame with
// libdw and writes an SFrame v3 section.
//
// Properties: whatever the converter writes, Section::parse() reads and
// validate() finds no error in; and the decoded section holds
// what Result::fdes says was written, FDE for FDE and FRE for FRE.
#include "sfunwind/convert/from_cfi.hpp"
#include "sfunwind/elf/elf_file.hpp"
#include "sfunwind/sframe/section.hpp"
#include "sfunwind/sframe/validate.hpp"
#include "support.hpp"

#include <cstddef>
#include <cstdint>
#include <span>

using namespace sfunwind;
using fuzz::require;

namespace {

void check_fde(const sframe::Section& s, std::uint32_t i, const sframe::FdeSpec& spec) {
    const std::string where = "FDE " + std::to_string(i) + " at " + to_hex(spec.start);
    auto fde = s.fde(i);
    require(fde.has_value(), "a written FDE decodes", where);
    require(fde->start == spec.start && fde->size == spec.size, "FDE range round-trips", where);
    require(fde->pc_type == spec.pc_type && fde->fde_type == spec.fde_type &&
                fde->signal == spec.signal,
            "FDE type round-trips", where);
    auto fres = s.fres(*fde);
    require(fres.has_value() && fres->size() == spec.fres.size(), "FRE count round-trips", where);
    const std::uint64_t limit = spec.pc_type == sframe::PcType::Mask ? spec.rep_size : spec.size;
    for (std::size_t k = 0; k < fres->size(); ++k) {
        const sframe::FreSpec& want = spec.fres[k];
        const sframe::Fre& fre = (*fres)[k];
        const std::string at = where + " FRE " + std::to_string(k);
        require(fre.start == want.start, "FRE start round-trips", at);
        const std::uint64_t next = k + 1 < fres->size() ? (*fres)[k + 1].start : limit;
        auto row = s.row(*fde, fre, static_cast<std::uint32_t>(k), next);
        require(row.has_value(), "a written FRE's rules decode",
                at + (row ? "" : ": " + row.error().message()));
        if (want.ra.kind == RegRule::Kind::Undefined) {
            require(row->outermost, "an outermost FRE round-trips", at);
            continue;
        }
        require(row->cfa == want.cfa && same_rule(row->ra, want.ra) && same_rule(row->fp, want.fp),
                "FRE rules round-trip", at + ": " + describe(*row, s.abi()));
    }
}

} // namespace

// elfutils 0.188's CFA interpreter grows its register table to the highest
// register number an FDE names and clears it on every query: one
// DW_CFA_same_value for register 216006642 costs a 1.7 GB realloc and memset
// per row (20 s for one 18 KB file, outside any sanitizer). sfunwind reads
// CFI only through libdw, so it cannot refuse such a register before libdw
// does. Failing allocations above 64 MiB, as a smaller machine would, makes
// libdw report DWARF_E_NOMEM instead, and leaves the fuzzer's time for
// sfunwind's own code (README, Hardening: a known libdw limit).
// NOLINTNEXTLINE(bugprone-reserved-identifier): the name ASan looks up
extern "C" const char* __asan_default_options() {
    return "allocator_may_return_null=1:max_allocation_size_mb=64";
}

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
    auto file = elf::ElfFile::from_bytes(std::span<const std::uint8_t>(data, size), "fuzz");
    if (!file) return 0;
    convert::Options options;
    options.section_vaddr = 0x2000;
    // Both start encodings, chosen by the input so each seed tries one.
    options.pcrel = (size & 1U) == 0;
    auto result = convert::from_cfi(*file, options);
    if (!result) return 0;

    auto section = sframe::Section::parse(result->section, options.section_vaddr);
    require(section.has_value(), "the converter's section parses",
            section ? "" : section.error().message());
    // Warnings are allowed: they flag what is legal but unusual, such as an
    // AArch64 FRE with the RA saved and the FP not (2 data words), which is
    // the only encoding of CFI that saves x30 alone.
    for (const auto& p : sframe::validate(*section))
        require(p.severity != sframe::Problem::Severity::Error,
                "the converter's section validates clean", to_hex(p.offset) + ": " + p.message);
    require(section->fde_count() == result->fdes.size(), "one FDE per written function");
    for (std::uint32_t i = 0; i < section->fde_count(); ++i)
        check_fde(*section, i, result->fdes[i]);
    return 0;
}

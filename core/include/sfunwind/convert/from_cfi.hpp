// SPDX-License-Identifier: MIT
// Making an SFrame v3 section from a file's DWARF CFI, for binaries whose
// compiler or assembler wrote none (`sfunwind convert`).
//
// Each CFI FDE becomes one SFrame FDE. Its rows (read by libdw, see
// sfunwind/cfi/cfi_table.hpp) become FREs; a row that changes none of the
// CFA, RA and FP rules adds no FRE, as GNU as does. A function whose CFA is
// based on a register other than SP and FP, or read through memory, or
// whose RA or FP rule a default FDE cannot say, gets a v3 flexible FDE (spec
// v3 section 3.2). A function with a rule that has no SFrame form at all (a
// DWARF expression) is left out and listed, except the x86-64 PLT: its CFA
// expression is evaluated by libdwfl at each byte, and when the rules repeat
// with the section's entry size they become a PC-mask FDE (spec v3 section
// 2.3.3.1), as GNU ld writes for its .plt.
//
// Not carried over: AArch64 return-address signing (libdw does not expose
// DW_CFA_AARCH64_negate_ra_state), so pac-ret code gets FREs without the
// mangled-RA bit.
#pragma once

#include "sfunwind/cfi/cfi_table.hpp"
#include "sfunwind/elf/elf_file.hpp"
#include "sfunwind/error.hpp"
#include "sfunwind/sframe/writer.hpp"

#include <cstdint>
#include <string>
#include <vector>

namespace sfunwind::convert {

struct Options {
    cfi::Source cfi_source = cfi::Source::EhFrameThenDebugFrame;
    // The link-time address the section will have: function starts are
    // stored relative to it (v3 section 2.3.1).
    std::uint64_t section_vaddr = 0;
    // SFRAME_F_FDE_FUNC_START_PCREL: starts relative to each start field
    // rather than to the section's first byte.
    bool pcrel = true;
    // PC-mask FDEs for the x86-64 PLT, from libdwfl's evaluation of its CFA.
    bool plt = true;
};

// A function left out, and why.
struct Skipped {
    std::uint64_t begin = 0;
    std::uint64_t end = 0;
    std::string name; // the symbol at begin, if any
    std::string reason;
};

struct Result {
    std::vector<std::uint8_t> section; // the .sframe section's bytes
    std::vector<sframe::FdeSpec> fdes; // what was written, by address
    std::vector<Skipped> skipped;      // by address
    std::size_t fres = 0;
    std::size_t flexible = 0; // FDEs written as flexible FDEs
    std::size_t pc_mask = 0;  // PC-mask FDEs made for PLTs
};

// One function's CFI rows as an FDE. Errc::Unsupported, saying which row and
// rule, when a row has no SFrame form.
Expected<sframe::FdeSpec> fde_from_rows(const std::vector<cfi::CfiRow>& rows, std::uint64_t begin,
                                        std::uint64_t end, const Abi& abi);

// Errc::NotFound without CFI; Errc::Unsupported for an ABI SFrame lacks.
Expected<Result> from_cfi(const elf::ElfFile& file, const Options& options = {});

} // namespace sfunwind::convert

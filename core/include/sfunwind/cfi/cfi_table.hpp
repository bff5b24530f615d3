// SPDX-License-Identifier: MIT
// The DWARF CFI reference: what an ELF file's .eh_frame or .debug_frame says
// at a link-time PC, read with elfutils libdw and put in sfunwind's own terms
// (a Row), so that SFrame rows can be checked against it.
//
// DWARF rules become Row rules when they mean the same: a CFA expression that
// reduces to reg + offset, dereferenced at most once (gcc's DRAP form
// DW_OP_breg6 -8; DW_OP_deref), and register rules offset(N), val_offset(N),
// register(R), and expressions that reduce to CFA + N or R + N. Anything else
// is "unrepresentable", with the DWARF operations as the reason.
// sfunwind/cfi/row_comparison.hpp says when a CfiRow and an SFrame Row agree.
//
// Register numbers are DWARF numbers. A CfiTable refers to the ElfFile's
// image and libelf handle: keep the ElfFile alive (moving it is fine) as long
// as the table. libdw's CFI caches are not thread-safe: one table per thread.
#pragma once

#include "sfunwind/abi.hpp"
#include "sfunwind/elf/elf_file.hpp"
#include "sfunwind/error.hpp"
#include "sfunwind/row.hpp"

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

namespace sfunwind::cfi {

enum class Source : std::uint8_t {
    EhFrame,
    DebugFrame,
    // Both when present: a PC is looked up in .eh_frame first, then in
    // .debug_frame (as GDB does; gcc -fno-asynchronous-unwind-tables -g puts
    // the program's CFI in .debug_frame while the C runtime's stays in .eh_frame).
    EhFrameThenDebugFrame,
};

const char* to_string(Source source) noexcept;

// Whether one rule of a CfiRow has a Row equivalent. When it does not, the
// matching field of CfiRow::rules is meaningless and `reason` says what DWARF
// had ("CFA is a DWARF expression: DW_OP_breg7 8; DW_OP_breg16 0; ...").
struct RuleState {
    bool representable = true;
    std::string reason;
};

struct CfiRow {
    Source source = Source::EhFrame; // the section the row came from
    // [begin, end): where these rules hold. From at(), `begin` is what libdw
    // reports, which after DW_CFA_restore_state (elfutils 0.188) is the start
    // of the remembered row, i.e. too early; rows() corrects it, since it
    // knows where the previous row ended. `end` is always right.
    std::uint64_t begin = 0;
    std::uint64_t end = 0;
    // The FDE (function): [initial_location, + address_range). Both 0 when
    // the FDE could not be enumerated (see CfiTable::fde_errors()).
    std::uint64_t fde_begin = 0;
    std::uint64_t fde_end = 0;
    std::uint16_t ra_column = 0; // the CIE's return-address register
    // pc_begin/pc_end = [begin, end), func_start/func_size = the FDE,
    // fde_index = index in CfiTable::fdes(), fre_index = row number (rows()
    // only), cfa, ra, fp, signal_frame, outermost (RA undefined),
    // topmost_only (a rule reads a register other than SP and FP).
    Row rules;
    RuleState cfa_state;
    RuleState ra_state;
    RuleState fp_state;
    // The rules of the callee-saved registers SFrame has none for
    // (untracked_callee_saved(abi)), in that order.
    struct Register {
        std::uint16_t reg = 0;
        RegRule rule;
        RuleState state;
    };
    std::vector<Register> callee_saved;

    bool representable() const {
        return cfa_state.representable && ra_state.representable && fp_state.representable;
    }
};

struct FdeRange {
    Source source = Source::EhFrame; // EhFrame or DebugFrame
    std::uint64_t begin = 0;         // link-time [initial_location, + address_range)
    std::uint64_t end = 0;
    std::uint64_t offset = 0; // offset of the FDE in its section
};

class CfiTable {
  public:
    // Errc::NotFound when the file has none of the requested CFI;
    // Errc::Unsupported when its ABI is not one sfunwind knows.
    static Expected<CfiTable> open(const elf::ElfFile& file,
                                   Source which = Source::EhFrameThenDebugFrame);

    CfiTable(CfiTable&&) noexcept;
    CfiTable& operator=(CfiTable&&) noexcept;
    ~CfiTable();

    // EhFrame, DebugFrame, or EhFrameThenDebugFrame when both are in use.
    Source source() const noexcept;
    const Abi& abi() const noexcept;

    // The rules at a link-time PC (Errc::NotFound when no FDE covers it).
    Expected<CfiRow> at(std::uint64_t pc) const;

    // Every FDE with a non-empty range, sorted by begin. With both sources,
    // a .debug_frame FDE that overlaps an .eh_frame FDE is left out: at()
    // would never reach it.
    const std::vector<FdeRange>& fdes() const noexcept;
    // Entries dwarf_next_cfi could not decode, or FDEs whose address
    // encoding sfunwind does not read; each with its section offset.
    const std::vector<Error>& fde_errors() const noexcept;
    // The rows of one FDE in address order: at() at the FDE start, then at
    // each row's end. fre_index numbers them.
    Expected<std::vector<CfiRow>> rows(const FdeRange& fde) const;

  private:
    struct Impl;
    explicit CfiTable(std::unique_ptr<Impl> impl);
    std::unique_ptr<Impl> impl_;
};

} // namespace sfunwind::cfi

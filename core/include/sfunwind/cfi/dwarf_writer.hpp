// SPDX-License-Identifier: MIT
// Translating an SFrame section into DWARF call frame information: a
// .debug_frame section (DWARF 5 section 6.4.1; CIE version 3) whose rows are
// exactly the SFrame rows, so that a debugger that only reads DWARF CFI
// (LLDB through a generated debug file) unwinds by SFrame.
//
// Every SFrame rule has an exact DWARF form:
//   CFA = reg + off            DW_CFA_def_cfa / _def_cfa_offset / _def_cfa_register
//   CFA = *(reg + off)         DW_CFA_def_cfa_expression: DW_OP_breg<reg> off; DW_OP_deref
//   R at CFA + off             DW_CFA_offset / _offset_extended_sf (factored by -8),
//                              else DW_CFA_expression: DW_OP_consts off; DW_OP_plus
//   R = CFA + off              DW_CFA_val_expression: DW_OP_consts off; DW_OP_plus
//   R at reg + off             DW_CFA_expression: DW_OP_breg<reg> off
//   R = reg (+ off)            DW_CFA_register (off 0), else DW_CFA_val_expression
//   R same / undefined         DW_CFA_same_value / DW_CFA_undefined
//   signed RA (AArch64)        DW_CFA_AARCH64_negate_ra_state at each change of state;
//                              PAuth key B: CIE augmentation "zB"
//   signal frame (v3)          CIE augmentation "zS"
//   PC-mask FDEs (PLT)         the repeat block's rows written out for every block
// DW_CFA_val_offset is never used: LLDB (19 and earlier) skips it without
// reading its operands and misparses everything after it.
//
// A row is written as the rules that differ from the row before. FDEs whose
// first rows are alike share a CIE that holds that row (its initial
// instructions), and a row that takes up an earlier row's rules again (a
// function's body after an epilogue) is a DW_CFA_restore_state of them where
// that is shorter, as GCC's CFI does: the section is what LLDB indexes and
// keeps mapped, and the plugin's cache holds it.
//
// Registers that the ABI says a callee preserves but SFrame does not track
// (x86-64 rbx, r12-r15; ...) are DW_CFA_undefined in the CIE: a debugger then
// reports them unavailable in caller frames instead of showing the callee's
// (stale) values. Where the caller supplies their rules for a function
// (DebugFrameOptions::callee_saved, for example from the analysis of its
// instructions), the FDE's rows are split where those rules change and say
// where each register is: DW_CFA_offset et al. (saved at CFA + N, as for the
// RA above), DW_CFA_same_value, or DW_CFA_undefined (unknown).
#pragma once

#include "sfunwind/abi.hpp"
#include "sfunwind/error.hpp"
#include "sfunwind/row.hpp"
#include "sfunwind/sframe/section.hpp"

#include <algorithm>
#include <array>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <optional>
#include <span>
#include <vector>

namespace sfunwind::cfi {

// From `pc` (link-time) to the next change, or the end of the function, the
// rules of the registers untracked_callee_saved(abi) names, in that order.
// Only Undefined, SameValue and AtCfa are written; other kinds count as
// Undefined.
struct CalleeSavedChange {
    // The rules, held in place: a module's translation makes one list at each
    // instruction where a rule changes, and a heap block each was a twentieth
    // of its time in malloc and free.
    class Rules {
      public:
        Rules() = default;
        // Implicit, from the rules as a span or a vector. A list longer than
        // any ABI's (max_untracked_callee_saved) keeps its length alone,
        // which the writer then refuses like any other length that is not
        // the ABI's.
        Rules(std::span<const RegRule> rules) : size_(rules.size()) {
            std::copy_n(rules.begin(), std::min(rules.size(), rules_.size()), rules_.begin());
        }
        Rules(const std::vector<RegRule>& rules) : Rules(std::span<const RegRule>(rules)) {}
        std::size_t size() const noexcept { return size_; }
        // i < size() and i < max_untracked_callee_saved.
        const RegRule& operator[](std::size_t i) const noexcept { return rules_[i]; }
        bool operator==(const Rules& o) const noexcept {
            return size_ == o.size_ &&
                   std::equal(rules_.begin(), rules_.begin() + held(), o.rules_.begin());
        }

      private:
        std::ptrdiff_t held() const noexcept {
            return static_cast<std::ptrdiff_t>(std::min(size_, rules_.size()));
        }
        std::array<RegRule, max_untracked_callee_saved> rules_{};
        std::size_t size_ = 0;
    };

    std::uint64_t pc = 0;
    Rules rules;
};

// The changes for the function [start, start + size), by increasing pc; empty
// when there are none to give (the CIE's rules then hold in the whole FDE).
using CalleeSavedRules =
    std::function<std::vector<CalleeSavedChange>(std::uint64_t start, std::uint64_t size)>;

// A function given by its link-time range.
struct FunctionRange {
    std::uint64_t start = 0;
    std::uint64_t size = 0;
};

struct DebugFrameOptions {
    // Mark the callee-saved registers SFrame cannot restore undefined.
    bool undefine_untracked_callee_saved = true;
    // Where each function keeps those registers, when known. Not consulted
    // for PC-mask FDEs (PLT blocks) nor FDEs without FREs.
    CalleeSavedRules callee_saved;
    // The function the process starts in (elf::ElfFile::entry_function).
    // When no SFrame FDE covers its start (crt1.o's _start is hand-written
    // assembly, without SFrame), an FDE is written for it, up to the next
    // SFrame FDE at most, whose RA is undefined throughout, the rule its own
    // CFI states (glibc's start.S: cfi_undefined), so that a debugger ends
    // the stack there instead of unwinding the entry by guesswork (LLDB: a
    // repeated _start frame).
    std::optional<FunctionRange> entry_function;
};

// One DWARF FDE written: the function it describes (link-time addresses).
struct WrittenFunction {
    std::uint64_t start = 0;
    std::uint64_t size = 0;
    std::uint32_t sframe_fde = 0;           // index of the SFrame FDE it came from
    bool entry_function = false;            // DebugFrameOptions::entry_function, not SFrame's
    std::uint64_t offset = 0;               // offset of the DWARF FDE in .debug_frame
    std::uint32_t rows = 0;                 // DWARF rows written (PC-mask FDEs: all blocks)
    std::uint32_t callee_saved_changes = 0; // of CalleeSavedRules, used
    bool pc_mask = false;
};

struct DebugFrame {
    std::vector<std::uint8_t> bytes;        // the .debug_frame section, in the ABI's byte order
    std::vector<WrittenFunction> functions; // in SFrame FDE order, then the entry function's
    // SFrame FDEs that could not be read (each error names the FDE and its
    // offset in the SFrame section); the rest of the section is still written.
    std::vector<Error> skipped;
};

// Translates every FDE of the section. Fails only when the ABI has no DWARF
// mapping here (ppc64) or nothing could be written.
Expected<DebugFrame> write_debug_frame(const sframe::Section& section,
                                       const DebugFrameOptions& options = {});

} // namespace sfunwind::cfi

// SPDX-License-Identifier: MIT
// Checking traceback-table rows against the DWARF CFI of the same file, at
// every instruction of every function that has both.
//
// The two describe the same frame differently, so "agree" is wider than
// cfi::compare()'s equality:
//  - CFA: CFI's r1 + N equals the table's *(r1) where the frame analysis
//    knows the frame is N bytes (the back chain at r1 holds r1 + N). CFI's
//    <alloca_reg> + N (GCC's CFA once r31 is the frame pointer) agrees with
//    *(r1) when N is the prologue's allocation: equivalent, because the
//    analysis does not prove that r31 = r1 after the prologue. A frame
//    whose size is in a register (stdux for frames over 32 KiB) is also
//    equivalent: the back chain holds the CFA, the size cannot be compared.
//  - RA and r31: a value both in its register and in its save slot is
//    described by CFI with one and by the table rules with the other
//    (GCC places `.cfi_offset lr, 16` after the stack update that follows
//    the store, and `.cfi_restore` after the reload). When the table rule is
//    the slot and CFI says the register (same_value, or LR in r0 after
//    mflr r0), they are equivalent; the reverse (CFI: saved, table: still in
//    the register) is a difference, as is any other mismatch.
//  - CFI's "RA undefined" (the outermost frame, _start) has no table
//    counterpart: counted apart.
//  - Inline jump tables and unreached alignment no-ops are not compared.
//    Other instructions the frame analysis did not reach (code after a call
//    it could not tell was noreturn, code only a computed branch reaches in
//    a function without a bctr) or reached with conflicting stack heights
//    get the table's body state; their differences are counted apart
//    (`unanalysed_different`).
#pragma once

#include "sfunwind/cfi/cfi_table.hpp"
#include "sfunwind/ppc64/index.hpp"

#include <cstdint>
#include <string>
#include <vector>

namespace sfunwind::ppc64 {

struct CfiCheckEntry {
    enum class Verdict : std::uint8_t { Same, Equivalent, Different, Outermost };
    Verdict verdict = Verdict::Same;
    std::uint64_t pc = 0;
    std::string function;
    std::string message; // the table rule, the CFI rule and why they (dis)agree
};

struct CfiCheckResult {
    std::uint64_t functions = 0;    // with a table, a known start and CFI
    std::uint64_t instructions = 0; // compared
    std::uint64_t same = 0;
    std::uint64_t equivalent = 0;
    std::uint64_t different = 0;
    std::uint64_t outermost = 0;
    std::uint64_t unanalysed = 0;           // compared instructions with the body state
    std::uint64_t unanalysed_different = 0; // of those, differing (not in `different`)
    std::uint64_t without_cfi = 0;          // instructions of those functions with no FDE
    std::vector<CfiCheckEntry>
        entries; // every Different and Outermost, and Equivalent when asked for
};

struct CfiCheckOptions {
    bool keep_equivalent = false;
};

// Compares the rows of every table in `tables` (from by_symbols() or
// by_scan()) with `cfi` at each instruction.
CfiCheckResult check_against_cfi(const TracebackIndex& index, const Listing& tables,
                                 const cfi::CfiTable& cfi, const CfiCheckOptions& options = {});

// One instruction's verdict (exposed for tests).
CfiCheckEntry compare_row(const RowDetail& table_row, const cfi::CfiRow& cfi, const Abi& abi);

} // namespace sfunwind::ppc64

// SPDX-License-Identifier: MIT
// Checking the callee-saved register rules recovered from instructions
// (sfunwind/callee_saved/function_rules.hpp) against the file's DWARF CFI, at
// every instruction of every function both the SFrame section and the CFI
// describe.
//
// At each instruction start, for each register of untracked_callee_saved(),
// the analysis's rule is classified against the CFI's:
//   equal     the same rule (same value, or saved at the same CFA offset)
//   equivalent  the analysis says "same value" where the CFI gives a slot
//             the analysis proved holds the value too (GCC notes saves late
//             and keeps slots after restoring pops), or the CFI gives a
//             register the analysis proved holds a copy of it (s390x leaf
//             functions keep r6-r13 in FPRs: FunctionRules::copy_at())
//   unknown   the analysis declined (unwinders say "not saved")
//   wrong     the analysis gave a rule the CFI does not: a debugger would
//             show a value the CFI would not
// CFI rules without a Row form (DWARF expressions) are not compared, nor is
// alignment padding that no path runs (it is never a frame's pc).
#pragma once

#include "sfunwind/cfi/cfi_table.hpp"
#include "sfunwind/elf/elf_file.hpp"
#include "sfunwind/error.hpp"

#include <cstdint>
#include <functional>
#include <string>
#include <vector>

namespace sfunwind::check {

struct CalleeSavedCounts {
    std::uint64_t compared = 0; // (instruction, register) pairs the CFI has a rule for
    std::uint64_t equal = 0;
    std::uint64_t equivalent = 0; // CFI a slot or register the analysis proved holds it too
    std::uint64_t unknown = 0;
    std::uint64_t wrong = 0;
    std::uint64_t not_compared = 0; // the CFI's rule has no Row form
    // Not compared either: the CFI says "same value" (or does not mention
    // the register, which reads the same), and the module's calls need not
    // preserve it (CodeFacts::call_clobbered, Swift code): that proves
    // nothing.
    std::uint64_t not_preserved = 0;
};

// One (instruction, register) where the analysis and the CFI differ.
struct CalleeSavedWrong {
    std::uint64_t pc = 0;
    std::string function;
    std::string reg;
    std::string analysis; // describe(RegRule)
    std::string cfi;
};

// Why a function got no analysis (every register unknown).
struct CalleeSavedDeclined {
    std::uint64_t function = 0;
    std::string name;
    std::string why;
};

struct CalleeSavedReport {
    std::string file;
    std::string abi;
    std::uint64_t functions = 0;            // analysed (SFrame FDE and CFI)
    std::uint64_t instructions = 0;         // compared
    std::uint64_t padding_instructions = 0; // alignment padding no path runs: not compared
    CalleeSavedCounts counts;
    std::vector<CalleeSavedWrong> wrong;       // the first `max_listed`
    std::vector<CalleeSavedDeclined> declined; // the first `max_listed`
    std::uint64_t declined_total = 0;
    std::uint64_t unreached_seeds = 0;  // code regions seeded from the body's state
    std::uint64_t switch_tables = 0;    // indirect jumps whose cases were read from their table
    std::uint64_t anchor_conflicts = 0; // instructions whose SFrame row disagreed with the count
    std::uint64_t memory_bytes = 0;     // the analyses' rule tables, all functions
    std::uint64_t largest_function_bytes = 0;
};

struct CalleeSavedOptions {
    cfi::Source cfi_source = cfi::Source::EhFrameThenDebugFrame;
    std::size_t max_listed = 50;
    // Called after each function: (done, total).
    std::function<void(std::size_t, std::size_t)> progress;
};

// Errc::NotFound when the file has no SFrame section or no CFI;
// Errc::Unsupported for an ABI the analysis does not cover.
Expected<CalleeSavedReport> check_callee_saved(const elf::ElfFile& file,
                                               const CalleeSavedOptions& options = {});

} // namespace sfunwind::check

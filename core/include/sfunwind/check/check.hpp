// SPDX-License-Identifier: MIT
// Checking a file's SFrame section against its DWARF CFI, at every place
// where either table starts a row.
//
// Code is grouped into functions: the union of the SFrame FDEs and CFI FDEs
// whose ranges overlap (usually one of each, with the same range; GNU ld's
// .plt is one CFI FDE and two SFrame FDEs). Inside a function, the
// breakpoints are the starts of every SFrame row (FRE; for PC-mask FDEs,
// each FRE start in every repeat block), of every CFI row, and of every FDE.
// Between two breakpoints neither table changes its rules, so comparing at
// each breakpoint compares every instruction boundary without disassembly.
// The one exception is a CFI rule that depends on the PC itself (the x86-64
// PLT's CFA expression): such a row has no Row form, and is evaluated by
// libdwfl at every byte of it instead (`Verdict::AgreeEvaluated`).
//
// Rows are compared with cfi::compare() (sfunwind/cfi/row_comparison.hpp defines
// when a CFI row and an SFrame row agree); SFrame rows are found with
// sframe::Section::lookup(), i.e. exactly as an unwinder finds them.
#pragma once

#include "sfunwind/cfi/cfi_table.hpp"
#include "sfunwind/elf/elf_file.hpp"
#include "sfunwind/error.hpp"

#include <array>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <limits>
#include <string>
#include <vector>

namespace sfunwind::check {

// What covers a function.
enum class Coverage : std::uint8_t {
    Both,       // an SFrame FDE and a CFI FDE
    Plt,        // linker stubs (in .plt/.plt.got/.plt.sec/.iplt, or a PC-mask SFrame FDE)
                // with an SFrame FDE and a CFI FDE; stubs only one covers are
                // CfiOnly (reason Plt) or SframeOnly
    CfiOnly,    // CFI and no SFrame FDE
    SframeOnly, // an SFrame FDE and no CFI
};
inline constexpr std::size_t coverage_count = 4;
const char* to_string(Coverage coverage) noexcept; // "both", "plt", "cfi-only", "sframe-only"

// Why a function with CFI has no SFrame FDE, as far as its CFI tells.
enum class MissingReason : std::uint8_t {
    None,          // the function has an SFrame FDE
    NoSection,     // the file has no (readable) SFrame section at all
    Plt,           // linker-made stubs (.plt.got, .plt.sec) the linker wrote no SFrame for
    Assembly,      // DWARF says its compile unit is assembly (DW_LANG_Mips_Assembler)
    CfiExpression, // a CFA/RA/FP rule is a DWARF expression SFrame has no form for
    Drap,          // CFA based on a register other than SP and FP, or dereferenced:
                   // a DRAP or realigned stack (needs a v3 flexible FDE)
    RaRule,        // the RA is where a default FDE cannot say (x86-64: not at CFA-8)
    FpRule,        // the FP is saved relative to a register or in one
    Outermost,     // the RA is undefined (an outermost frame: _start)
    SignalFrame,   // a signal trampoline (CIE augmentation "S")
    Unknown,       // every CFI row has an SFrame form: most likely assembled without --gsframe
};
const char* to_string(MissingReason reason) noexcept; // "drap", "cfi-expression", ...

// The comparison at one breakpoint, which holds up to the next one.
enum class Verdict : std::uint8_t {
    Agree,
    AgreeEvaluated, // the CFI rule has no Row form; libdwfl's evaluation gives the same values
    Mismatch,       // different rules (or, evaluated, different values)
    Unevaluated,    // the CFI rule has no Row form and could not be evaluated
    NoSframe,       // inside the function, SFrame has no row here
    NoCfi,          // inside the function, CFI has no row here
    Error,          // a row of either table could not be read
};
const char* to_string(Verdict verdict) noexcept;
inline bool agrees(Verdict v) {
    return v == Verdict::Agree || v == Verdict::AgreeEvaluated;
}

// A breakpoint where the tables do not agree, with the interval it covers.
struct Finding {
    Verdict verdict = Verdict::Mismatch;
    std::uint64_t pc = 0;
    std::uint64_t end = 0;
    std::string sframe;                   // the SFrame row (describe()), or why there is none
    std::string cfi;                      // the CFI row, or why there is none
    std::vector<std::string> differences; // "CFA: CFI rsp+8, SFrame rsp+16"
    std::string known;                    // a known writer issue this matches, or empty
};

struct Function {
    std::uint64_t begin = 0; // union of the overlapping FDE ranges
    std::uint64_t end = 0;
    std::string name;    // the symbol at begin, else the section name
    std::string section; // the section holding begin, if any
    Coverage coverage = Coverage::Both;
    std::vector<std::uint32_t> sframe_fdes; // SFrame FDE indices
    std::vector<std::uint32_t> cfi_fdes;    // indices in CfiTable::fdes()
    std::uint64_t breakpoints = 0;          // compared (Both and Plt only)
    std::uint64_t agreeing = 0;
    std::uint64_t bytes_compared = 0;
    std::uint64_t bytes_agreeing = 0;
    std::uint64_t evaluated = 0;                // breakpoints compared through libdwfl
    MissingReason reason = MissingReason::None; // CfiOnly
    std::string detail; // the reason's evidence (CfiOnly), or why there is no CFI (SframeOnly)
    std::vector<Finding> findings;

    bool agrees() const { return findings.empty(); }
    std::uint64_t size() const { return end - begin; }
};

// A row that is legal but that no lookup of any PC ever returns.
struct UnreachableRow {
    enum class Table : std::uint8_t { Sframe, Cfi };
    Table table = Table::Sframe;
    std::uint32_t fde = 0;      // SFrame FDE index, or index in CfiTable::fdes()
    std::uint32_t row = 0;      // FRE index, or CFI row number
    std::uint64_t function = 0; // the FDE's start
    std::uint64_t pc_begin = 0; // the row as written: [begin, end)
    std::uint64_t pc_end = 0;
    std::string rule;
    std::string why;
};

struct Totals {
    std::uint64_t functions = 0;
    std::uint64_t functions_agreeing = 0; // Both/Plt: no finding
    std::uint64_t bytes = 0;
    std::uint64_t breakpoints = 0;
    std::uint64_t agreeing = 0;
    std::uint64_t bytes_compared = 0;
    std::uint64_t bytes_agreeing = 0;
};

struct Report {
    std::string file;
    std::string abi;
    std::string sframe; // "SFrame v3, sorted, PC-relative starts", or empty without SFrame
    std::string cfi;    // ".eh_frame", ".debug_frame", ".eh_frame+.debug_frame", or empty
    std::vector<Function> functions; // by address
    std::vector<UnreachableRow> unreachable;
    // What could not be read (whole FDEs of either table), each saying where.
    std::vector<std::string> problems;
    std::array<Totals, coverage_count> totals{};
    std::uint64_t breakpoints = 0; // every breakpoint walked, compared or not
    std::uint64_t bytes = 0;       // code covered by either table
    std::uint64_t evaluated = 0;   // breakpoints compared through libdwfl

    const Totals& total(Coverage c) const { return totals[static_cast<std::size_t>(c)]; }
    // Breakpoints compared in functions both tables cover (Both and Plt)
    // whose verdict is not an agreement.
    std::uint64_t disagreements() const;
};

struct Options {
    cfi::Source cfi_source = cfi::Source::EhFrameThenDebugFrame;
    // Evaluate CFI rules that have no Row form with libdwfl (x86-64).
    bool evaluate = true;
    // A CFI row without a Row form is evaluated at every byte up to this
    // many bytes; beyond, at its breakpoints only.
    std::uint64_t evaluate_bytes = 1U << 16;
    // Called after each function: (functions done, functions in all).
    std::function<void(std::size_t, std::size_t)> progress;
};

// Errc::NotFound when the file has neither SFrame nor CFI, Errc::Unsupported
// for an ABI sfunwind does not know. A broken section or FDE is not an
// error: it is reported in Report::problems and the rest is checked.
Expected<Report> check(const elf::ElfFile& file, const Options& options = {});

} // namespace sfunwind::check

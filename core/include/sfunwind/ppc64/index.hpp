// SPDX-License-Identifier: MIT
// Unwinding PowerPC64 code with its traceback tables: the ppc64 counterpart
// of sframe::Section. lookup(pc) gives a Row, which step() (with
// abi_ppc64(order)) applies unchanged, so debugger adapters treat both alike.
//
// Finding a table (ABI 3.3): scan forward, word by word, from the PC to the
// first zero word, at most IndexOptions::max_scan bytes and never past the
// end of the executable section (or PF_X segment) that holds the PC; decode
// and validate it (ppc64/traceback.hpp); a zero word that does not validate
// is skipped and the scan goes on. The function starts at the table's
// address minus tb_offset when the table has one (-mtraceback=full, glibc's
// assembly); otherwise at the function symbol that contains the PC (on
// ELFv1 the symbol is a function descriptor in .opd, whose first doubleword
// is the entry point). When the zero word lies past the end of the symbol
// that contains the PC, or at or past the next function symbol, the PC's
// function has no table of its own (crtstuff.c, _init/_fini fragments):
// NotFound, rather than rules from the next function's table.
//
// The rules at a PC (DWARF numbers: r1 = 1, r31 = 31, LR = 65):
//   CFA  frame allocated (see ppc64/frame_analysis.hpp): *(r1 + 0), the
//        back chain; otherwise (frameless leaf, int_proc, prologue before
//        the stack update, after the epilogue's pop) r1 + 0.
//   RA   [CFA + 16], the LR save doubleword in the caller's frame (both
//        ELFv1 and ELFv2), once saved; before that, the value still in LR
//        (SameValue, topmost frame only) or in the GPR mflr copied it to.
//   FP   r31: [CFA + slot] once saved, else SameValue. The slot is where
//        the code stores it; GCC's is CFA - 8 * fp_saved - 8 (the GPR save
//        area sits below the FPR save area), which the body state uses.
// Caller SP = CFA (abi_ppc64: sp_from_cfa = 0). The stack ends where a
// saved LR is 0 (glibc's __libc_start_main saves the LR _start left), which
// step() reports as Errc::Outermost.
//
// A TracebackIndex refers to the ElfFile's bytes: keep the ElfFile alive
// (moving it is fine) as long as the index.
#pragma once

#include "sfunwind/abi.hpp"
#include "sfunwind/bytes.hpp"
#include "sfunwind/elf/elf_file.hpp"
#include "sfunwind/error.hpp"
#include "sfunwind/ppc64/frame_analysis.hpp"
#include "sfunwind/ppc64/traceback.hpp"
#include "sfunwind/row.hpp"

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace sfunwind::ppc64 {

struct IndexOptions {
    std::uint64_t max_scan = std::uint64_t{1} << 20; // bytes scanned forward from a PC
    DecodeLimits decode;
    AnalysisLimits analysis;
};

// A function from the symbol table, by its code address.
struct Function {
    std::uint64_t start = 0;                 // first instruction (ELFv2: the global entry point)
    std::uint64_t size = 0;                  // st_size: the code and its traceback table
    std::vector<std::string> names;          // every symbol at this start, in symbol-table order
    std::optional<std::uint64_t> descriptor; // ELFv1: the .opd entry the symbol names
};

// A range of executable bytes at a link-time address.
struct CodeRange {
    std::string name; // section name, or "PT_LOAD[i]"
    std::uint64_t vaddr = 0;
    ByteView bytes;
};

struct FoundTable {
    enum class StartSource : std::uint8_t { TbOffset, Symbol, Unknown };
    TracebackTable table;
    std::optional<std::uint64_t> function_start;
    StartSource start_source = StartSource::Unknown;
    const Function* function = nullptr;   // the symbol whose start is function_start, if any
    std::uint32_t skipped_zero_words = 0; // zero words that did not decode as tables
};

const char* to_string(FoundTable::StartSource source) noexcept;

// A Row with what it was derived from.
struct RowDetail {
    Row row;
    FoundTable found;
    FrameState state;
    FrameAnalysis::Origin origin = FrameAnalysis::Origin::Unreached;
    std::optional<Error> analysis_error; // why the body state was used for the whole function
};

struct Listing {
    std::vector<FoundTable> tables;
    std::vector<Error> problems; // functions without a table, rejected candidates
};

class TracebackIndex {
  public:
    // Errc::Unsupported unless the file is EM_PPC64; Errc::NotFound without
    // executable code.
    static Expected<TracebackIndex> build(const elf::ElfFile& file,
                                          const IndexOptions& options = {});

    // Move-only: FoundTable::function points into functions().
    TracebackIndex(TracebackIndex&&) noexcept = default;
    TracebackIndex& operator=(TracebackIndex&&) noexcept = default;
    TracebackIndex(const TracebackIndex&) = delete;
    TracebackIndex& operator=(const TracebackIndex&) = delete;
    ~TracebackIndex() = default;

    const Abi& abi() const noexcept { return *abi_; }
    // ELFv1: function symbols name descriptors in .opd.
    bool uses_descriptors() const noexcept { return descriptors_; }
    const std::vector<Function>& functions() const noexcept { return functions_; }
    const std::vector<CodeRange>& code() const noexcept { return code_; }
    const IndexOptions& options() const noexcept { return options_; }
    // The function symbol whose [start, start + size) holds a code address.
    const Function* function_at(std::uint64_t pc) const;

    // The traceback table for a link-time PC and its function's start.
    Expected<FoundTable> find(std::uint64_t pc) const;
    // The rules at a link-time PC (see above). pc_begin/pc_end bound the run
    // of instructions with the same rules; fre_index counts the runs before
    // it in the function; fde_index is 0 (tables are not numbered).
    //
    // A PC that is not word-aligned is a caller frame's return address
    // minus one (FrameAddress::lookup_address(), unwind/frame_address.hpp): when it falls in a
    // call instruction, the rules are those after the call, for LR no
    // longer holds this frame's return address there. The row then covers
    // that instruction only.
    Expected<Row> lookup(std::uint64_t pc) const;
    Expected<RowDetail> lookup_detail(std::uint64_t pc) const;
    // The rows of a whole function, one per run of equal rules (Split::Rules),
    // or of equal rules and frame state (Split::State: one RowDetail::state
    // holds for every instruction of the run).
    enum class Split : std::uint8_t { Rules, State };
    Expected<std::vector<RowDetail>> rows(const FoundTable& found,
                                          Split split = Split::Rules) const;

    // Whether the function a direct call to `target` enters never returns:
    // its code (up to its traceback table, at most 64 KiB) has no return
    // (bclr), no branch through CTR and no branch out of it (a tail call).
    // False when the function is unknown.
    bool never_returns(std::uint64_t target) const;

    // Every function symbol's table (by scanning from its start).
    Listing by_symbols() const;
    // Every table in the executable code, by a linear scan: a zero word that
    // follows a non-zero word and decodes is a table; the scan resumes after it.
    Listing by_scan() const;

  private:
    TracebackIndex() = default;
    const CodeRange* range_of(std::uint64_t pc) const;
    // The function's analysis, or why there is none.
    Expected<FrameAnalysis> analyse(const FoundTable& found) const;

    const Abi* abi_ = nullptr;
    bool descriptors_ = false;
    IndexOptions options_;
    std::vector<Function> functions_; // sorted by start, one per start
    std::vector<CodeRange> code_;     // sorted by vaddr
};

} // namespace sfunwind::ppc64

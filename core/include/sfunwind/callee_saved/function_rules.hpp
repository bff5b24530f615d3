// SPDX-License-Identifier: MIT
// Where a function keeps its caller's callee-saved registers, from the
// function's own instructions, anchored by its SFrame rows.
//
// SFrame has rules for the CFA, the return address and the frame pointer
// only (SFrame v3 section 2.4). The other callee-saved registers of the ABI
// (sfunwind::untracked_callee_saved(): x86-64 rbx, r12-r15) are preserved by
// every function that follows the psABI, which either leaves a register alone
// or saves it on its stack before writing it and restores it before
// returning. So the caller's value of such a register, at a PC of the
// function, is in one of two places: still in the register ("same value"),
// or in a stack slot at CFA+N. FunctionRules finds which, by a forward
// data-flow pass over the function's instructions (decoded with Capstone):
//
//  - Control flow: fall-through, direct jumps and conditional branches
//    inside the function; a call returns to the next instruction unless its
//    target never returns (CodeFacts::never_returns); `ret`, a
//    jump out of the function (a tail call) and an indirect jump end a path,
//    but for an x86-64 switch's jump whose table is read (its bound from the
//    range check before it, its case offsets from a read-only segment:
//    x86_64_switch_table.hpp), which goes to its cases.
//    Code no path reaches (other jump-table cases, exception landing pads)
//    starts from the meet of the states at the function's other indirect
//    jumps and, where the file may have landing pads (CodeFacts), its calls:
//    the only places such code is entered from.
//  - The stack pointer: pushes, pops, `sub`/`add`/`lea` of constants, `mov
//    rsp, rbp` and `leave` with a known frame pointer; anything else makes it
//    unknown. Where it is unknown but only lowered since it was known (a
//    stack probe loop, `and rsp, -16`, `sub rsp, r64` with a value below
//    2^32: an alloca), it is bounded: at or below CFA - d. The SFrame row
//    that covers each instruction is the anchor: a row whose CFA is SP-based
//    (FP-based) gives the offset exactly, and one that disagrees with the
//    path's own count turns every register of that path to unknown. A
//    disagreement is never resolved by a guess.
//  - Saves: a push, or an 8-byte store relative to SP or FP, of a register
//    that still holds its caller's value gives its slot (CFA-relative). A
//    slot stays valid until a store overlaps it, a store through SP at an
//    offset the count does not know (nor bounds below the slot), or a call
//    clobbering the stack below SP. Stores through other registers, through
//    rbp at an unknown offset (rbp used as a pointer), and indexed stores
//    (arrays) are taken not to reach the register save area, as the psABI's
//    frame layout implies.
//  - Restores: a pop or 8-byte load from the register's own valid slot gives
//    the caller's value back; any other write (Capstone's register access
//    lists, so sub-registers and implicit writes count) loses it.
//  - At a join, a fact holds only where it holds on every path.
//
// The rule at a PC is then: "same value" while the register holds its
// caller's value; else the slot, while it is valid (also after the
// restoring pop, within the red zone); else unknown, which unwinders show
// as "not saved". A function is assumed to start with every register
// holding its caller's value only where its first SFrame row is the ABI's
// entry row (x86-64: CFA = rsp+8): a `.cold` part entered with a frame is
// not a function entry, and starts unknown.
//
// Bounded work: at most Limits::max_bytes of code and Limits::max_visits
// instruction visits (each fact only weakens at a join, so a pass ends well
// within that); past a limit the function is declined. Bytes Capstone cannot
// decode end the linear decode there: what follows is unknown.
//
// Register copies: a whole register copied to another while it holds its
// caller's value (s390x leaf functions keep r6-r13 in FPRs: `ldgr %f2,%r10`)
// is followed until the copy is written or a call; copying it back restores
// the register, and copy_at() gives it as a second answer (DWARF CFI names
// such registers), not as a rule.
//
// x86-64 (rbx, r12-r15), AArch64 (x19-x28, d8-d15) and s390x (r6-r10, r12,
// r13, f8-f15; s390x_decoder.cpp) are analysed (supported()); other ABIs
// (PowerPC64), and signal
// trampolines (rows with the signal flag: the caller's registers are in the
// signal frame), are declined (every register unknown).
#pragma once

#include "sfunwind/abi.hpp"
#include "sfunwind/error.hpp"
#include "sfunwind/row.hpp"

#include <array>
#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <utility>
#include <vector>

namespace sfunwind::callee_saved {

// The SFrame row that covers a link-time PC, or nullopt. The row must be
// the answer for every PC from that one up to its pc_end (Row): the
// analysis asks once per row, not per instruction.
using RowAt = std::function<std::optional<Row>(std::uint64_t pc)>;

// RowAt over a row table (an sframe::Section, a RowSource: anything with
// lookup(pc) -> Expected<Row>) that `table` points to, raw or shared; the
// callback keeps the pointer. A lookup error reads as "no row".
template <class TablePtr> RowAt rows_from(TablePtr table) {
    return [table = std::move(table)](std::uint64_t pc) -> std::optional<Row> {
        auto row = table->lookup(pc);
        return row ? std::optional<Row>(std::move(*row)) : std::nullopt;
    };
}

// The module's bytes at link-time [vaddr, vaddr + size), if it has them all
// (elf::ElfFile::loaded_bytes). The bytes must live as long as the ModuleRules.
using CodeAt = std::function<std::optional<std::span<const std::uint8_t>>(std::uint64_t vaddr,
                                                                          std::uint64_t size)>;

struct Limits {
    std::uint64_t max_bytes = 1U << 20;  // code per function
    std::uint64_t max_visits = 4U << 20; // instruction visits in the pass
};

// A call site of a function's exception table (the LSDA): a throw out of a
// call whose return address - 1 lies in [begin, end) enters `landing_pad`.
struct CallSite {
    std::uint64_t begin = 0;
    std::uint64_t end = 0;
    std::uint64_t landing_pad = 0;
};

// What the file tells about how code no path reaches is entered.
struct CodeFacts {
    // Exception landing pads may exist (the file has .gcc_except_table, or
    // it is not known): code no path reaches may then be entered from any
    // call (with that call's state), not only from indirect jumps.
    bool landing_pads = true;
    // Whether the function at a call's target never returns (abort-like:
    // module_rules.hpp never_returns()): such a call has no fall-through
    // edge. Unset: every call returns.
    std::function<bool(std::uint64_t target)> never_returns;
    // Whether the function at a call's target is known to return
    // (module_rules.hpp add_call_facts(): a return instruction in an
    // epilogue or anywhere in its code, or a tail call to a function that
    // returns): the code after such a call is its continuation, where the
    // code after any other call may be a landing pad or a switch case the
    // fall-through does not describe. Unset: no call is known to return.
    std::function<bool(std::uint64_t target)> returns;
    // The call sites with a landing pad of the function that starts at
    // `start`, when the file's exception tables describe it (its .eh_frame
    // FDE and LSDA were read): then each call has an edge to its landing
    // pad, and `landing_pads` does not apply to it. nullopt, or unset: not
    // known.
    std::function<std::optional<std::vector<CallSite>>(std::uint64_t start)> call_sites;
    // Callee-saved registers (DWARF numbers) that a call may change all the
    // same: code of another calling convention passes values in them
    // (swift_call_clobbered(), where the file holds Swift code). After a
    // call each holds its caller's value only where it was restored from
    // a slot.
    std::vector<std::uint16_t> call_clobbered;
    // The file's bytes at link-time [vaddr, vaddr + size) where the program
    // cannot change them: in a segment without write permission, in a file
    // without text relocations (module_facts()). The analysis reads a
    // switch's table of case offsets there, so that the jump goes to its
    // cases only (x86-64: x86_64_switch_table.hpp). Unset, or nullopt: not
    // known, and the jump is taken to enter any code no path reaches.
    CodeAt read_only_data;
};

// How far the pass got, per function.
struct Stats {
    std::uint32_t instructions = 0;     // decoded
    std::uint32_t unreached = 0;        // seeded from the body's states (no path reached them)
    std::uint32_t undecoded_bytes = 0;  // after the first byte Capstone could not decode
    std::uint32_t anchor_conflicts = 0; // instructions whose SFrame row disagreed with the count
    std::uint32_t switch_tables = 0;    // indirect jumps whose cases were read from their table
    std::uint64_t visits = 0;
};

// The analysis's own version: raised whenever a change may give any
// function other rules, so that what was made from them and kept (the LLDB
// plugin's debug files) is made again. 2: Swift's call-clobbered registers,
// a switch's cases that branches reach too, AArch64 structure loads, and
// the paths into undecoded code and the returns of 2026-12-01. 3: x86-64
// switch tables read.
inline constexpr int analysis_version = 3;

// Whether the analysis reads this ABI's code: the one place that says which
// architectures have callee-saved rules (every consumer asks it).
bool supported(const Abi& abi) noexcept;

// Whether a row's CFA rule is the one at a function's first instruction,
// CFA = SP + entry_cfa_offset(abi): the stack as the call left it. The
// first row of a function entry has it; a later row has it where the
// function has given its frame back (before a return or a tail call).
bool entry_cfa(const Row& row, const Abi& abi) noexcept;

namespace detail {
class DecodeMemo;
struct AnalysisScratch;
} // namespace detail

class FunctionRules {
  public:
    // Analyses the function whose code is `code`, starting at link-time
    // address `start` (an SFrame FDE start). Errc::Unsupported for ABIs not
    // supported(), and when a limit (Limits) is reached.
    static Expected<FunctionRules> analyse(const Abi& abi, std::uint64_t start,
                                           std::span<const std::uint8_t> code, const RowAt& rows,
                                           const Limits& limits = {}, const CodeFacts& facts = {});

    // The registers ruled on, in this order (untracked_callee_saved(abi)).
    std::span<const std::uint16_t> registers() const noexcept { return registers_; }
    // The rule of each of registers() at a link-time PC of the function:
    // AtCfa(N), SameValue, or Undefined (unknown). A PC outside the decoded
    // code gives Undefined for all. `out` must have registers().size() room.
    void at(std::uint64_t pc, std::span<RegRule> out) const;
    // One register's rule (Undefined when `reg` is not one of registers()).
    RegRule at(std::uint64_t pc, std::uint16_t reg) const;
    // The slot (CFA offset) that also holds register registers()[index]'s
    // caller value at `pc`, when the analysis proved one: where at() says
    // "same value", the slot is a second, equal answer (DWARF CFI often gives
    // that one: GCC notes a save after later instructions, and keeps the slot
    // after the restoring pop). Where the register holds the value on every
    // path into `pc` but the slot only on some (a shrink-wrapped early exit
    // joining the epilogue), that slot: CFI rows follow addresses, not
    // paths, and give it there.
    std::optional<std::int32_t> slot_at(std::uint64_t pc, std::size_t index) const;
    // The register (DWARF number) that also holds register registers()[index]'s
    // caller value at `pc`, when the analysis proved one: a whole-register
    // copy made while the register held it (s390x leaf functions keep r6-r13
    // in FPRs: `ldgr %f2,%r10`), not written since. DWARF CFI gives such a
    // register as the rule; the analysis's own rule stays "same value" or
    // the slot.
    std::optional<std::uint16_t> copy_at(std::uint64_t pc, std::size_t index) const;

    std::uint64_t start() const noexcept { return start_; }
    // The byte order of the ABI analysed: how a saved slot is read.
    ByteOrder byte_order() const noexcept { return order_; }
    // The start of each decoded instruction, in order.
    std::vector<std::uint64_t> instruction_starts() const;
    // The instructions where a rule of at(), slot_at() or copy_at() changes,
    // in order, the first decoded instruction first: each answer is the same
    // from one to the next (and to decoded_end()).
    std::vector<std::uint64_t> change_starts() const;
    // Whether the instruction at `pc` is alignment padding (nop, int3) no
    // path runs: it is never a frame's pc. Its rules are not proven: they
    // are those of the first instruction after its padding (which changes no
    // register), or Undefined at the function's end.
    bool never_run(std::uint64_t pc) const noexcept;
    // The end of the decoded code: from there to the function's end, at()
    // gives Undefined for all.
    std::uint64_t decoded_end() const noexcept { return decoded_end_; }
    const Stats& stats() const noexcept { return stats_; }
    // Heap bytes this analysis keeps (the rule table and instruction starts).
    std::size_t memory_bytes() const noexcept;

    // Encoded rule of one register: a CFA offset, or one of these.
    static constexpr std::int32_t unknown = INT32_MIN;
    static constexpr std::int32_t same_value = INT32_MIN + 1;
    static constexpr std::size_t max_registers = 20;

  private:
    friend class Analyser;
    static Expected<FunctionRules> analyse(const Abi& abi, std::uint64_t start,
                                           std::span<const std::uint8_t> code, const RowAt& rows,
                                           const Limits& limits, const CodeFacts& facts,
                                           detail::DecodeMemo* memo,
                                           detail::AnalysisScratch& scratch);
    std::optional<std::size_t> change_at(std::uint64_t pc) const;
    std::uint64_t start_ = 0;
    std::uint64_t end_ = 0;
    ByteOrder order_ = ByteOrder::Little;
    std::uint64_t decoded_end_ = 0;
    std::span<const std::uint16_t> registers_;
    // Where the rules change (offsets from start_, analyse() caps a function
    // below 4 GiB), and per change `stride_` rules then `stride_` slots
    // (stride_ = registers().size()), and `stride_` register copies where
    // the code makes any (width_: 2 or 3 strides): about 8 bytes a register
    // per change.
    std::size_t stride_ = 0;
    std::size_t width_ = 0;
    std::vector<std::uint32_t> change_offsets_;
    std::vector<std::int32_t> change_codes_;
    std::vector<std::uint32_t> offsets_;   // instruction starts
    std::vector<std::uint32_t> never_run_; // offsets, sorted
    Stats stats_;
};

// Analyses function after function, one thread's, with the rules
// FunctionRules::analyse() gives, and decodes an instruction encoding it
// has decoded before from a memo (x86-64 and AArch64 code:
// src/callee_saved/decode_memo.hpp; up to 2^15 encodings, 2 MB, 2^13 for
// x86-64, growing from 2^6 as it fills), and an x86-64 encoding that differs from one
// decoded before in its displacement or immediate alone from the form it
// remembers (src/callee_saved/x86_64_form_memo.hpp; up to 2^15 forms, about
// 288 bytes each). What analyses a whole module (the LLDB debug file,
// `sfunwind check --callee-saved`) uses, and the debuggers' walks, one for
// all the modules of a process (ModuleRules): most of a module's
// instructions repeat an encoding or a form, and Capstone's decoding is
// most of the analysis's cost without them.
class Analyser {
  public:
    Analyser();
    ~Analyser();
    Analyser(Analyser&&) noexcept;
    Analyser& operator=(Analyser&&) noexcept;
    Analyser(const Analyser&) = delete;
    Analyser& operator=(const Analyser&) = delete;

    Expected<FunctionRules> analyse(const Abi& abi, std::uint64_t start,
                                    std::span<const std::uint8_t> code, const RowAt& rows,
                                    const Limits& limits = {}, const CodeFacts& facts = {});

  private:
    std::unique_ptr<detail::DecodeMemo> memo_;
    // The pass's working vectors, kept from one function to the next (given
    // back after a function that made them exceed 1 MiB): a fresh set per
    // function was a tenth of a module's translation in malloc and free.
    std::unique_ptr<detail::AnalysisScratch> scratch_;
};

} // namespace sfunwind::callee_saved

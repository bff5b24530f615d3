// SPDX-License-Identifier: MIT
// Where a PC is in its function's frame setup, from the code itself.
//
// A traceback table describes a function's body: it stores the back chain,
// saves LR, saves so many GPRs and FPRs. It says nothing about the prologue
// before the stack update (`stdu r1,-N(r1)`), about the window between
// `mflr r0` and the LR store, or about the epilogue after the frame is
// popped, and the ABI gives no other record of them. So the frame state at a
// PC comes from a bounded forward data-flow pass over the function's
// instructions, from its first instruction (the traceback table's tb_offset
// or the symbol table gives it) to the table:
//
//  - r1: lowered by `stdu r1,-N(r1)` or `stdux rS,r1,rB` (which store the
//    back chain, as the ABI requires of every stack update), raised by
//    `addi r1,r1,N` or `addi r1,rA,N` (N > 0) and `ld r1,0(r1)`; `mr r1,rX`
//    or `addi r1,rX,0` with rX a copy of the post-prologue r1 (`mr rX,r1`),
//    or the alloca register, returns to the frame as the prologue left it;
//    any other `mr r1,rX` keeps the frame, of unknown size.
//  - the return address: in LR at entry; copied by `mflr rX`; saved by
//    `std rX,16` relative to the CFA; reloaded by `ld rX` from that slot and
//    `mtlr rX`; LR is lost at every call (`bl`, `bcl`, `bctrl`, `blrl`), and
//    the volatile registers with it.
//  - r31: the first `std r31,D(r1)` while r31 still holds the caller's
//    value gives its save slot (GCC: CFA - 8 * fp_saved - 8, the slot the
//    table's counts imply; glibc's system-call stubs use CFA - 16, which
//    their dummy tables do not describe).
//
// Paths are followed through direct branches (b, bc, conditional bclr) and
// over calls, except calls to functions that never return (no return or
// tail branch in their code: see TracebackIndex::never_returns());
// a state reached two ways with different stack heights is a conflict.
// GCC's inline switch tables (the words right after a `bctr`, each the
// offset of a case label from the table) give that bctr's successors. Other
// code that only `bctr` reaches (tables in .rodata: GCC dispatches within
// the function body) starts from the state at the function's other bctr
// instructions. Instructions still unreached, conflicting ones, functions
// longer than the limit, and functions whose start is unknown get the body
// state the traceback table describes.
//
// Known limits: saves through another base register (large frames that
// address the save area off r12), `mtlr` from a computed value, out-of-line
// save routines (_savegpr0_N at -Os), and paths that merge a "LR lost" state
// from a call the analysis cannot tell is noreturn. Where LR is lost and no
// save was seen, the table's saves_lr decides (the LR save doubleword).
#pragma once

#include "sfunwind/bytes.hpp"
#include "sfunwind/error.hpp"
#include "sfunwind/ppc64/traceback.hpp"
#include "sfunwind/row.hpp"

#include <cstdint>
#include <optional>
#include <vector>

namespace sfunwind::ppc64 {

// The frame before an instruction executes.
struct FrameState {
    bool allocated = false;                  // r1 lowered: *(r1) is the back chain, CFA = *(r1)
    std::optional<std::uint32_t> frame_size; // bytes from r1 up to the CFA, when constants set it
    std::optional<std::uint32_t> fixed_size; // the prologue's allocation, kept through alloca
    bool ra_in_lr = true;                    // LR still holds the return address
    std::uint32_t ra_gprs = 0; // GPRs (bit n = rn) holding a copy of it (mflr, reload)
    bool ra_saved = false;     // the LR save doubleword (CFA+16) holds it
    // Where the caller's r31 is saved, relative to the CFA, once stored
    // there; and whether r31 itself still holds the caller's value.
    std::optional<std::int32_t> r31_slot;
    bool r31_callers = true;
    // GPRs (bit n = rn) that hold r1 as the prologue left it (`mr rX,r1`
    // right after the stack update): GCC's frame pointer r31, and the copies
    // it keeps to undo alloca/VLA areas with `mr r1,rX`.
    std::uint32_t frame_copies = 0;

    bool operator==(const FrameState&) const = default;
};

// The state the table describes for the body (after the prologue).
FrameState body_state(const TracebackTable& table);

// Which direct call targets never return (abort, __stack_chk_fail, ...):
// GCC places unrelated code right after such a call, which must not inherit
// the "LR lost" state of the call.
class CallTargets {
  public:
    virtual ~CallTargets() = default;
    virtual bool never_returns(std::uint64_t target) const = 0;
};

struct AnalysisLimits {
    std::uint32_t max_instructions = 65536; // 256 KiB of code
};

class FrameAnalysis {
  public:
    enum class Origin : std::uint8_t {
        Code,      // the data-flow pass reached the instruction
        Indirect,  // reached only through bctr: the state at the function's bctr(s)
        Unreached, // not reached at all (dead code, or no bctr to come from)
        Conflict,  // reached with different stack heights
        Data,      // an inline jump table after a bctr, not an instruction
        Padding,   // an unreached no-op: alignment between code blocks
    };

    // Analyses [start, table.address) of `code` (mapped at `code_vaddr`).
    // Errors: the range is not inside the code, not word-aligned, or longer
    // than the limit.
    // `calls`, when given, tells which `bl` targets do not return.
    static Expected<FrameAnalysis> run(ByteView code, std::uint64_t code_vaddr, std::uint64_t start,
                                       const TracebackTable& table,
                                       const AnalysisLimits& limits = {},
                                       const CallTargets* calls = nullptr);

    std::uint64_t start() const noexcept { return start_; }
    std::uint64_t end() const noexcept { return end_; }
    std::size_t instructions() const noexcept { return states_.size(); }
    // The state before the instruction at `pc` (word-aligned down), and how
    // it was found; origins other than Code and Indirect give the table's
    // body state.
    FrameState state_at(std::uint64_t pc) const;
    Origin origin_at(std::uint64_t pc) const;
    // Whether the instruction at `pc` is a call (bl, bcl, bctrl, blrl), and
    // the state once it has executed: what a caller frame that returns
    // there sees (LR and the volatile registers no longer hold the RA).
    bool is_call_at(std::uint64_t pc) const;
    FrameState state_after(std::uint64_t pc) const;

  private:
    struct Cell {
        Origin origin = Origin::Unreached;
        FrameState state;
    };
    std::size_t index_of(std::uint64_t pc) const;
    std::uint32_t word_at(std::uint64_t pc) const;
    ByteView code_;
    std::uint64_t code_vaddr_ = 0;
    TracebackTable table_;
    std::uint64_t start_ = 0;
    std::uint64_t end_ = 0;
    FrameState body_;
    std::vector<Cell> states_;
};

// The unwind rules for a frame state (see ppc64/index.hpp for the rules).
// Fills cfa, ra, fp and topmost_only; the caller sets the ranges.
void apply_rules(const FrameState& state, const TracebackTable& table, Row& row);

} // namespace sfunwind::ppc64

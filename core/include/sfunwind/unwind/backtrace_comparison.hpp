// SPDX-License-Identifier: MIT
// Two unwinds of the same stop, frame by frame: sfunwind's SFrame walk and a
// reference (a debugger's own unwinder, libdwfl's CFI walk). The result says
// which frames agree and explains the first place the two part, naming the
// SFrame limit behind it when one does (no SFrame data for a PC, a rule only
// valid in the topmost frame, ...), so that a test can tell a known
// limitation from a wrong row.
//
// Used by LLDB's `sframe compare` and, through its C API, by the GDB bridge.
#pragma once

#include "sfunwind/error.hpp"
#include "sfunwind/unwind/backtrace.hpp"

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace sfunwind {

// One frame as an unwinder gave it. A value that unwinder does not know is
// left empty and is not compared.
struct FrameView {
    std::uint64_t pc = 0; // the frame's PC (a caller's: the return address)
    std::optional<std::uint64_t>
        cfa; // the CFA of this frame (= the caller's SP plus the ABI offset)
    std::optional<std::uint64_t> sp;
    std::optional<std::uint64_t> fp;
    std::string function; // "recurse+0x12", for messages; may be empty
    std::string module;   // for messages; may be empty
    // SFrame side: the PC lies in a module that has an SFrame section (which
    // tells "no FDE for this PC" from "no SFrame in this module").
    bool in_sframe_module = false;
    // SFrame side: the row used to step out of the frame ("CFA=rsp+16
    // RA=[CFA-8] FP=u") and where it came from ("FDE 3, FRE 1").
    std::string rule;
};

// The SFrame limit that explains a divergence, if one does.
enum class SframeLimit : std::uint8_t {
    None,           // no limit explains it: the SFrame row or the reference is wrong
    NoModuleSframe, // the PC is in a module without an SFrame section (glibc built without
                    // --gsframe)
    NoFde, // the module has SFrame, but no FDE covers the PC (PLT without FDEs, static glibc)
    TopmostOnlyRule,  // the row reads a register known only in the topmost frame (spec v3 appendix
                      // A)
    Outermost,        // the SFrame row ends the stack (RA undefined) where the reference goes on
    UnreadableMemory, // a rule pointed at memory the target does not have
    BadFrame,         // the step gave an impossible frame (stack growing up, misaligned CFA, loop)
    FrameLimit,       // the walk stopped at its frame limit
    ReferenceEnded,   // the reference unwinder stopped first; SFrame went on
};

const char* to_string(SframeLimit limit) noexcept;

struct FrameMatch {
    bool pc = true;
    bool cfa = true, cfa_compared = false;
    bool sp = true, sp_compared = false;
    bool fp = true, fp_compared = false;
    bool equal() const { return pc && cfa && sp && fp; }
};

struct Divergence {
    enum class Kind : std::uint8_t {
        Pc,  // both have frame `frame`, with different PCs
        Cfa, // same PC, different CFA
        Sp,
        Fp,
        SframeEnded,    // the SFrame walk has fewer frames
        ReferenceEnded, // the reference has fewer frames
    };
    Kind kind = Kind::Pc;
    std::size_t frame = 0; // the first frame that differs or is missing on one side
    SframeLimit limit = SframeLimit::None;
    // What differs and why, in a few sentences: the values on both sides, the
    // row SFrame used for the frame below, and the limit if one applies.
    std::string explanation;
    // The difference in one line, naming the reference: "pc 0x401234
    // (SFrame) vs 0x401240 (CFI)", "CFI ended after 4 frames, SFrame has 6".
    std::string summary;
};

const char* to_string(Divergence::Kind kind) noexcept;

struct BacktraceComparison {
    std::vector<FrameMatch> frames;  // one per frame both lists have
    std::size_t equal = 0;           // leading frames that agree on every compared value
    std::optional<Divergence> first; // empty: the lists are the same length and agree
    bool agree() const { return !first; }
};

// `sframe_stop` is why the SFrame walk ended (Backtrace::stop); an Outermost
// stop with a reference that goes on is reported as such.
// `reference_name` names the reference in Divergence::summary ("CFI",
// "LLDB", "GDB"). A value one side knows and the other does not is not
// compared, unless `one_sided_differs` (two walks by the same debugger, which
// knows the same values of a frame either way, must agree on which it knows).
BacktraceComparison compare_backtraces(const std::vector<FrameView>& sframe,
                                       const BacktraceStop& sframe_stop,
                                       const std::vector<FrameView>& reference,
                                       const std::string& reference_name = "reference",
                                       bool one_sided_differs = false);

// The views of a Backtrace's frames (pc, sp, fp, CFA once stepped, the row
// used, the module name); `function` is left for the caller to fill in.
std::vector<FrameView> frame_views(const Backtrace& bt);

} // namespace sfunwind

// SPDX-License-Identifier: MIT
// Frame-by-frame comparison of an SFrame backtrace with libdwfl's CFI
// backtrace of the same stop.
#pragma once

#include "dwfl_session.hpp"
#include "sfunwind/abi.hpp"
#include "sfunwind/unwind/backtrace.hpp"

#include <cstddef>
#include <optional>
#include <string>
#include <vector>

namespace sfunwind::cli::bt {

// One frame both unwinders produced. A field is compared only when both know
// it: the CFA of a frame is known to SFrame once the frame has been stepped
// and to CFI through the caller's SP (the CFA is the caller's SP plus the
// ABI's offset: x86-64 CFI defines rsp as CFA+0, psABI section 3.6); SP and
// FP when libdwfl has a value for the register.
struct FrameMatch {
    bool pc = true;
    bool sp = true;
    bool cfa = true;
    bool fp = true;
    bool sp_compared = false;
    bool cfa_compared = false;
    bool fp_compared = false;
    std::optional<std::uint64_t> cfi_cfa;

    bool equal() const { return pc && sp && cfa && fp; }
};

struct Comparison {
    std::vector<FrameMatch> frames; // min(SFrame frames, CFI frames)
    std::size_t equal = 0;          // frames that agree on every compared field
    std::optional<std::size_t> first_difference;
    std::string first_difference_what;
    std::size_t cfi_beyond = 0; // CFI frames past SFrame's last one

    bool agree() const { return !first_difference; }
};

// `sframe_complete`: SFrame ended at the outermost frame, so CFI must end
// there too. Otherwise SFrame stopped where it has no data, and CFI only has
// to match every frame SFrame produced.
Comparison compare(const Backtrace& sframe, bool sframe_complete, const CfiBacktrace& cfi,
                   const Abi& abi);

} // namespace sfunwind::cli::bt

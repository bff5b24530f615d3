// SPDX-License-Identifier: MIT
// An SFrame backtrace against libdwfl's CFI backtrace of the same stop,
// compared by the core's engine (unwind/backtrace_comparison.hpp), and what the CLI
// reports of it.
#pragma once

#include "dwfl_session.hpp"
#include "sfunwind/abi.hpp"
#include "sfunwind/callee_saved/module_rules.hpp"
#include "sfunwind/unwind/backtrace.hpp"
#include "sfunwind/unwind/backtrace_comparison.hpp"

#include <cstddef>
#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <vector>

namespace sfunwind::cli::bt {

// The recovered rbx, r12-r15 against libdwfl's (callee_saved::compare_values()).
using callee_saved::RegisterComparison;

struct CfiComparison {
    // libdwfl's frames as the engine compares them: a frame's CFA is the
    // caller's SP minus the ABI's offset (x86-64 CFI defines rsp as CFA+0,
    // psABI section 3.6), known when libdwfl has the caller's SP.
    std::vector<FrameView> cfi;
    BacktraceComparison result;
    std::size_t equal = 0; // compared frames that agree on every compared value
    // The first difference. An SFrame walk that stopped where it has no data
    // before CFI did is not one (CFI only has to match the frames SFrame
    // produced); one that reached the outermost frame is.
    std::optional<std::size_t> first_difference;
    std::string first_difference_what;
    std::size_t cfi_beyond = 0; // CFI frames past SFrame's last one
    // When the walk recovered the callee-saved registers.
    std::optional<RegisterComparison> registers;

    bool agree() const {
        return !first_difference && (!registers || registers->differences.empty());
    }
};

// `saved`: ThreadWalk::saved (empty when the registers were not recovered).
CfiComparison compare_with_cfi(const Backtrace& sframe,
                               std::span<const callee_saved::FrameValues> saved,
                               const CfiBacktrace& cfi, const Abi& abi);

} // namespace sfunwind::cli::bt

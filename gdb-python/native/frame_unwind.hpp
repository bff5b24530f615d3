// SPDX-License-Identifier: MIT
// Unwinding one GDB frame: the row (ModuleTable::lookup_frame), the stack
// window its step reads (sfunwind::plan_reads), the step, and the record of
// the caller it produced. Shared by the ctypes entry point (Python path) and
// the JIT reader (native path), so both paths make the same choices.
#pragma once

#include "module_table.hpp"
#include "sfunwind/unwind/step.hpp"
#include "sfunwind/unwind/window.hpp"

#include <cstdint>
#include <optional>
#include <span>

namespace sfunwind::gdb {

struct FrameInput {
    std::uint64_t pc = 0;
    std::uint64_t sp = 0;
    // Absent: fetched from `registers` if the row's rules read it; when
    // they only keep it (FP unchanged) the output's caller FP is 0.
    std::optional<std::uint64_t> fp;
    // The link register, when the caller already read it (topmost frames).
    std::optional<std::uint64_t> ra;
    std::int32_t level = -1; // GDB's frame level; -1: unknown
};

struct FrameOutput {
    StepResult step;
    FoundRow found; // the row used (link-time addresses)
    bool topmost = false;
    ReadWindow plan;       // the window the row's step reads
    bool needs_fp = false; // the row's rules read the FP's value
    std::uint32_t fallback_reads = 0;
};

// `window` is stack memory the caller prefetched at `window_addr` (may be
// empty); when it does not hold the row's planned window, that window is
// read from `target` in one request. The link register and any other
// register a topmost frame's rules name come from `registers`.
Expected<FrameOutput> unwind_frame(ModuleTable& table, const FrameInput& in,
                                   std::uint64_t window_addr, std::span<const std::uint8_t> window,
                                   MemoryReader& target, RegisterSource& registers);

} // namespace sfunwind::gdb

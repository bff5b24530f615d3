// SPDX-License-Identifier: MIT
// Unwinding one GDB frame: the row (ModuleTable::lookup_frame), the stack
// window its step reads (sfunwind::plan_reads, once per frame), the step,
// and the record of the caller it produced. Shared by the ctypes entry point
// (Python path) and the JIT reader (native path), so both paths make the
// same choices.
#pragma once

#include "module_table.hpp"
#include "sfunwind/unwind/step.hpp"

#include <array>
#include <cstdint>
#include <optional>
#include <span>

namespace sfunwind::gdb {

struct FrameInput {
    std::uint64_t pc = 0;
    // Absent: the values the table recorded when a step produced this frame
    // (ModuleTable::produced_caller, which knows the frame by its level, or
    // by its SP when the level is unknown), else read from `registers`.
    std::optional<std::uint64_t> sp;
    std::optional<std::uint64_t> fp;
    std::int32_t level = -1; // GDB's frame level; -1: unknown
};

struct FrameOutput {
    StepResult step;
    FoundRow found; // the row used (link-time addresses)
    bool topmost = false;
    std::uint32_t fallback_reads = 0; // reads the window did not serve
    // The caller's callee-saved registers (callee_saved::recover), when the
    // module's analysis covers the function: saved_count entries, each a
    // Value (a "same value" resolved to the frame's own) or NotSaved.
    std::array<callee_saved::SavedRegister, callee_saved::FunctionRules::max_registers> saved{};
    std::size_t saved_count = 0;
};

// Reads the row's planned window through the table's stack chunk (bytes
// of this run of frames, read from `target`); step()'s other reads go to `target`. The link
// register and any other register a topmost frame's rules name come from
// `registers`.
Expected<FrameOutput> unwind_frame(ModuleTable& table, const FrameInput& in, MemoryReader& target,
                                   RegisterSource& registers);

} // namespace sfunwind::gdb

// SPDX-License-Identifier: MIT
// The two unwinds `sframe bt` and `sframe compare` work from: the core's
// SFrame walk of a thread (sfunwind::backtrace() on the thread's live
// registers and memory, read through the SB API) and LLDB's own frames.
#pragma once

#include "module_catalog.hpp"
#include "sfunwind/abi.hpp"
#include "sfunwind/callee_saved/module_rules.hpp"
#include "sfunwind/error.hpp"
#include "sfunwind/unwind/backtrace.hpp"
#include "sfunwind/unwind/backtrace_comparison.hpp"

#include <cstdint>
#include <lldb/API/SBDebugger.h>
#include <lldb/API/SBProcess.h>
#include <lldb/API/SBTarget.h>
#include <lldb/API/SBThread.h>
#include <memory>
#include <optional>
#include <vector>

namespace sfunwind::lldb_plugin {

struct StopContext {
    lldb::SBTarget target;
    lldb::SBProcess process;
    lldb::SBThread thread;
    const Abi* abi = nullptr;
};

// The selected target's process and a thread of it: the one with LLDB index
// `thread_index` (as `thread list` numbers them), else the selected one.
// Errors say what is missing (no target, no process, running, no ABI).
Expected<StopContext> current_stop(lldb::SBDebugger& debugger,
                                   std::optional<std::uint32_t> thread_index);

struct SframeWalk {
    const Abi* abi = nullptr; // the stop's
    std::vector<TargetModule> modules;
    ModuleSet set; // Backtrace frames point into it
    Backtrace bt;
    std::vector<FrameView> views; // bt's frames with function and module names
    // Per frame: the file of the module holding the PC and the link-time
    // address rows are looked up at (FrameAddress::lookup_address()).
    std::vector<std::string> module_paths;
    std::vector<std::uint64_t> link_pcs;
    std::uint64_t memory_reads = 0;
    // Whether frame 0's registers are the thread's own (not --from-registers).
    bool from_thread = false;
    // After recover_callee_saved(): each frame's own rbx, r12-r15
    // (untracked_callee_saved(abi) order), one per frame.
    std::vector<callee_saved::FrameValues> saved;
};

// The core's walk of the thread from its topmost frame, or from `top` when
// given (the frame provider passes the registers of LLDB's own frame 0, as
// asking the thread for its frames from inside a provider would recurse).
Expected<std::unique_ptr<SframeWalk>> sframe_walk(ModuleCatalog& catalog, StopContext& stop,
                                                  std::uint32_t max_frames,
                                                  std::optional<FrameRegs> given = std::nullopt);

// Fills walk.saved: each frame's callee-saved registers, outward from the
// thread's own values in frame 0 (unknown when the walk started from given
// registers), by the core's analysis of each frame's function
// (callee_saved::walk_values()). Nothing for an ABI the analysis does not
// cover (walk.saved stays empty).
void recover_callee_saved(SframeWalk& walk, StopContext& stop);

// One frame's values of untracked_callee_saved(abi), in that order, as LLDB
// gives them (nullopt where LLDB has none).
using RegisterValues = std::vector<std::optional<std::uint64_t>>;

// LLDB's frames of the thread, inlined and artificial frames left out (they
// share the registers of the concrete frame below them): pc, CFA, sp and the
// frame pointer when LLDB has a value for it. With `callee_saved`, also
// each frame's callee-saved registers, one entry per frame.
std::vector<FrameView> lldb_frames(StopContext& stop, std::uint32_t max_frames,
                                   std::vector<RegisterValues>* callee_saved = nullptr);

} // namespace sfunwind::lldb_plugin

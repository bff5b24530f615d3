// SPDX-License-Identifier: MIT
#include "walk.hpp"

#include "sb_target.hpp"

#include <lldb/API/SBFrame.h>
#include <lldb/lldb-defines.h>
#include <lldb/lldb-enumerations.h>
#include <map>
#include <memory>
#include <optional>

namespace sfunwind::lldb_plugin {
namespace {

const TargetModule* module_at(const std::vector<TargetModule>& modules, std::uint64_t addr) {
    for (const auto& m : modules)
        if (m.loaded && addr >= m.begin && addr < m.end) return &m;
    return nullptr;
}

} // namespace

Expected<StopContext> current_stop(lldb::SBDebugger& debugger,
                                   std::optional<std::uint32_t> thread_index) {
    StopContext c;
    c.target = debugger.GetSelectedTarget();
    if (!c.target.IsValid()) return Error(Errc::NotFound, "no target: use 'target create' first");
    c.process = c.target.GetProcess();
    if (!c.process.IsValid())
        return Error(Errc::NotFound, "the target has no process: run or load a core first");
    const lldb::StateType state = c.process.GetState();
    if (state != lldb::eStateStopped && state != lldb::eStateCrashed &&
        state != lldb::eStateSuspended)
        return Error(Errc::NotFound, "the process is not stopped");
    c.thread =
        thread_index ? c.process.GetThreadByIndexID(*thread_index) : c.process.GetSelectedThread();
    if (!c.thread.IsValid())
        return Error(Errc::NotFound, thread_index ? "no thread #" + std::to_string(*thread_index)
                                                  : std::string("no selected thread"));
    c.abi = abi_of(c.target);
    if (c.abi == nullptr)
        return Error(Errc::Unsupported,
                     std::string("no SFrame ABI for target triple '") +
                         (c.target.GetTriple() != nullptr ? c.target.GetTriple() : "?") + "'");
    return c;
}

Expected<std::unique_ptr<SframeWalk>> sframe_walk(ModuleCatalog& catalog, StopContext& stop,
                                                  std::uint32_t max_frames,
                                                  std::optional<FrameRegs> given) {
    auto walk = std::make_unique<SframeWalk>();
    walk->abi = stop.abi;
    walk->modules = catalog.modules(stop.target);
    walk->set = sframe_module_set(walk->modules);
    std::optional<lldb::SBFrame> top;
    std::optional<FrameRegs> regs = given;
    if (!regs) {
        top = stop.thread.GetFrameAtIndex(0);
        regs = frame_registers(*top, *stop.abi);
        walk->from_thread = true;
    }
    if (!regs)
        return Error(Errc::NotFound, "cannot read the registers of the thread's topmost frame");
    SbMemory memory(stop.process);
    std::optional<SbRegisters> extra;
    if (top) extra.emplace(*top, *stop.abi);
    BacktraceOptions options;
    options.max_frames = max_frames;
    walk->bt = backtrace(walk->set, *regs, memory, extra ? &*extra : nullptr, options);
    walk->memory_reads = memory.reads();
    walk->views = frame_views(walk->bt);
    for (std::size_t i = 0; i < walk->views.size(); ++i) {
        FrameView& v = walk->views[i];
        const FrameAddress address = walk->bt.frames[i].address;
        v.function = symbol_at(stop.target, address);
        const std::uint64_t lookup = address.lookup_address();
        const TargetModule* m = module_at(walk->modules, lookup);
        if (v.module.empty() && m != nullptr) v.module = m->name;
        walk->module_paths.push_back(m != nullptr ? m->path : std::string());
        walk->link_pcs.push_back(m != nullptr ? lookup - m->bias : lookup);
    }
    return walk;
}

void recover_callee_saved(SframeWalk& walk, StopContext& stop) {
    walk.saved.clear();
    if (!callee_saved::supported(*stop.abi)) return;
    const auto registers = untracked_callee_saved(*stop.abi);
    RegisterValues initial(registers.size());
    if (walk.from_thread) {
        lldb::SBFrame top = stop.thread.GetFrameAtIndex(0);
        for (std::size_t k = 0; k < registers.size(); ++k)
            initial[k] = read_register(top, *stop.abi, registers[k]);
    }
    // One analysis per module for this walk: its code from the module's
    // file at link-time addresses (what the rows give), kept alive by the
    // lambdas. Built per command, not kept: a backtrace asks for a few
    // functions, each cheap to analyse.
    std::map<const Module*, std::unique_ptr<callee_saved::ModuleRules>> analyses;
    // One decoder memo for all of them (callee_saved::ModuleRules).
    const auto analyser = std::make_shared<callee_saved::Analyser>();
    const auto rules_of = [&](const Frame& f) -> const callee_saved::FunctionRules* {
        if (f.module == nullptr || !f.row || !f.module->rows) return nullptr;
        auto it = analyses.find(f.module);
        if (it == analyses.end()) {
            std::unique_ptr<callee_saved::ModuleRules> made;
            const TargetModule* m = module_at(walk.modules, f.address.lookup_address());
            if (m != nullptr && m->table && m->table->file) {
                made = callee_saved::module_rules(m->table->file, f.module->rows, analyser);
            }
            it = analyses.emplace(f.module, std::move(made)).first;
        }
        return it->second ? it->second->function(f.row->func_start, f.row->func_size) : nullptr;
    };
    SbMemory memory(stop.process);
    walk.saved = callee_saved::walk_values(walk.bt.frames, registers, initial, rules_of, memory);
}

std::vector<FrameView> lldb_frames(StopContext& stop, std::uint32_t max_frames,
                                   std::vector<RegisterValues>* callee_saved) {
    std::vector<FrameView> out;
    // Frame by frame, not GetNumFrames(): LLDB computes frames up to the one
    // asked for, and a caller may need it to stop early (see cmd_compare).
    const std::uint32_t n = 0xffffffffU;
    // LLDB lists inlined functions as frames of their own, innermost first,
    // followed by the concrete frame they are inlined into. All share one set
    // of registers; the innermost one has the real PC (the concrete frame
    // reports the inlined call site), so a group is reported once, with
    // the innermost frame's values and the concrete frame's name.
    std::optional<lldb::SBFrame> group_first;
    for (std::uint32_t i = 0; i < n && out.size() < max_frames; ++i) {
        if (i >= max_frames + 64 && out.size() < max_frames) break; // runaway inlined chains
        lldb::SBFrame concrete = stop.thread.GetFrameAtIndex(i);
        if (!concrete.IsValid()) break;
        if (concrete.IsArtificial()) continue;
        if (concrete.IsInlined()) {
            if (!group_first) group_first = concrete;
            continue;
        }
        lldb::SBFrame f = group_first ? *group_first : concrete;
        group_first.reset();
        FrameView v;
        v.pc = f.GetPC();
        const std::uint64_t cfa = f.GetCFA();
        if (cfa != LLDB_INVALID_ADDRESS) v.cfa = cfa;
        const std::uint64_t sp = f.GetSP();
        if (sp != LLDB_INVALID_ADDRESS) v.sp = sp;
        v.fp = read_register(f, *stop.abi, stop.abi->fp_reg);
        // LLDB's own symbol for its frame: LLDB knows which of its frames
        // were interrupted by a signal and so have a precise PC.
        v.function = symbol_text(stop.target, f.GetSymbol(), v.pc);
        lldb::SBModule m = concrete.GetModule();
        if (m.IsValid() && m.GetFileSpec().GetFilename() != nullptr)
            v.module = m.GetFileSpec().GetFilename();
        if (callee_saved != nullptr) {
            RegisterValues values;
            for (const std::uint16_t reg : untracked_callee_saved(*stop.abi))
                values.push_back(read_register(f, *stop.abi, reg));
            callee_saved->push_back(std::move(values));
        }
        out.push_back(std::move(v));
    }
    return out;
}

} // namespace sfunwind::lldb_plugin

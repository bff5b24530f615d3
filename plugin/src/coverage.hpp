// SPDX-License-Identifier: MIT
// Making stock LLDB unwind by SFrame (issue 4, part 2): for every module with
// an SFrame section, a generated debug file (see debug_file_cache.hpp) that
// LLDB loads as the module's symbol file, so that its own UnwindPlans for
// those functions are 'DWARF CFI' made from the SFrame rows.
//
// LLDB finds the files itself through target.debug-file-search-paths (the
// cache directory is appended to it) when they exist before it first looks
// for the module's symbols. When it looked earlier (a cold cache: LLDB loads
// symbols as soon as a module is added), install() adds the file with
// `target symbols add`.
//
// The file must be in place before LLDB first unwinds through the module:
// LLDB 19 keeps the unwind plans it made for a function, and a stop unwinds
// frame 0 and its caller before anything else runs (measured: a debug file
// added at the first stop leaves those functions on 'assembly insn
// profiling'), and LLDB looks for a module's symbols as soon as the module
// is added (target.preload-symbols). So:
//  - `sframe cover` right after `target create` (before `run` or loading a
//    core) generates the files and adds them: complete coverage;
//  - with the files in the cache (any earlier session), LLDB finds them
//    itself, for the program and every library, with no command;
//  - an event thread writes the files of every module LLDB reports loaded
//    (so the next session finds them); it never runs LLDB commands and asks
//    nothing that makes LLDB look for symbols (an LLDB command on a second
//    thread deadlocked against SBTarget::LoadCore in LLDB 23, measured;
//    turning preload-symbols off made LLDB 19 report its own entry
//    breakpoint as a SIGTRAP);
//  - a stop hook (on the dummy target, so every new target has it) runs
//    install() at each stop: modules first seen at that stop are covered for
//    every function not unwound yet.
#pragma once

#include "debug_file_cache.hpp"
#include "module_catalog.hpp"

#include <lldb/API/SBDebugger.h>
#include <lldb/API/SBListener.h>
#include <lldb/API/SBTarget.h>

#include <atomic>
#include <thread>

#include <map>
#include <memory>
#include <mutex>
#include <set>
#include <string>
#include <vector>

namespace sfunwind::lldb_plugin {

struct ModuleCoverage {
    enum class State : std::uint8_t {
        NoSframe,     // nothing to translate
        Failed,       // no debug file: see `detail`
        Generated,    // the debug file exists, LLDB does not use it (yet): see `detail`
        InUse,        // LLDB's symbol file for the module is the generated file
    };
    std::string module;        // file name
    std::string path;
    State state = State::NoSframe;
    std::string debug_file;
    // How LLDB found the file ("target.debug-file-search-paths", "target
    // symbols add"), or why there is none / why LLDB does not use it.
    std::string detail;
    bool has_eh_frame = false; // LLDB prefers the module's .eh_frame where it covers a PC
    CacheEntry cache;          // sizes and times, when generated in this session
};

const char* to_string(ModuleCoverage::State state) noexcept;

class Coverage {
public:
    explicit Coverage(ModuleCatalog& catalog) : catalog_(catalog), cache_(std::make_unique<DebugFileCache>(default_cache_dir())) {}

    bool enabled() const;
    void set_enabled(bool on);
    std::string cache_dir() const;
    // Moves the cache and points target.debug-file-search-paths at it.
    void set_cache_dir(lldb::SBDebugger& debugger, const std::string& dir);

    // At plugin load: the search path, the stop hook (dummy target and every
    // existing target), the event thread, and install() for the existing targets.
    void initialize(lldb::SBDebugger& debugger);
    // Ends the event thread (when the last debugger goes away).
    void stop_listening();
    // Generates missing files and has LLDB use them. Returns one line per
    // change or new problem (empty when nothing changed). With `wait` false
    // it gives up at once when another thread is installing: the stop hook
    // runs while LLDB holds the target's API lock, which that thread's SB
    // calls need, so waiting there would deadlock.
    std::vector<std::string> install(lldb::SBDebugger& debugger, lldb::SBTarget& target, bool wait = true);
    // Only writes the missing debug files (the event thread): no LLDB
    // command, and nothing that makes LLDB look for symbols.
    void generate(lldb::SBDebugger& debugger, lldb::SBTarget& target);
    // The state of every module of the target.
    std::vector<ModuleCoverage> report(lldb::SBTarget& target);

private:
    ModuleCoverage examine(lldb::SBDebugger& debugger, const TargetModule& m, bool generate);
    // An existing separate debug file of the module (by build-id, in the
    // debug-file search paths other than the cache, and /usr/lib/debug):
    // the base of ours, so that its DWARF stays. Empty when there is none.
    std::string separate_debug_file(lldb::SBDebugger& debugger, const ModuleFile& file) const;

    void listen();
    static void debugger_destroyed(lldb::user_id_t id, void* baton);

    ModuleCatalog& catalog_;
    mutable std::mutex mutex_;
    std::mutex install_mutex_;          // one install() at a time, from any thread
    std::mutex listener_mutex_;
    std::unique_ptr<lldb::SBListener> listener_;
    std::thread listener_thread_;
    std::atomic<bool> stop_listener_{false};
    std::set<lldb::user_id_t> debuggers_;  // debuggers the plugin serves
    std::unique_ptr<DebugFileCache> cache_;
    bool enabled_ = true;
    std::map<std::string, CacheEntry> generated_;      // by debug file path, this session
    std::map<std::string, std::string> failures_;      // by module path + uuid: why, reported once
    std::set<std::string> added_with_command_;         // module path + debug file given with `target symbols add`
    std::set<std::string> search_paths_set_;           // debugger id + cache dir, appended to the setting
};

} // namespace sfunwind::lldb_plugin

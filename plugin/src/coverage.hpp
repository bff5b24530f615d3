// SPDX-License-Identifier: MIT
// Making stock LLDB unwind by SFrame (issue 4, part 2): for every module with
// an SFrame section, a generated debug file (see debug_file_cache.hpp) that
// LLDB loads as the module's symbol file, so that its own UnwindPlans for
// those functions are 'DWARF CFI' made from the SFrame rows.
//
// The file must be LLDB's before LLDB first unwinds through the module: LLDB
// 19 keeps the unwind plans it made for a function, a stop unwinds frame 0's
// two callers on LLDB's private state thread before any plugin code runs, and
// loading a core unwinds at once (measured with `log enable lldb unwind`). LLDB looks for a
// module's symbols as soon as it adds the module, so the files are made before that, with no
// command:
//  - the cache directory is first in target.debug-file-search-paths, where
//    LLDB finds a file made earlier by itself;
//  - `target create` (also `file`, `lldb PROG`, `lldb -c CORE`) is seen
//    before it runs (target_create_hook.hpp): the files of the program, of
//    the libraries it needs and of the files a core names are made then;
//  - for any other module LLDB asks its debuginfod servers, and the plugin
//    is one of them (debuginfod_responder.hpp): the file is made while LLDB
//    waits, for a module whose file the plugin can find (build_id_files.hpp:
//    libraries the dynamic loader reports at launch, attach and dlopen, the
//    modules of a core, a program LLDB has mapped).
//
// What remains for install() (`sframe cover`, and the stop hook at every
// stop): a module none of those reached (a program given to
// SBDebugger::CreateTarget that LLDB read without mapping it, which LLVM
// does for files under 16 KiB; a module with DWARF of its own; LLDB's
// debuginfod client off, or built without libcurl); it gets its file with
// `target symbols add`. Added at a stop, the file comes too late for the
// functions LLDB 19 unwound at that stop, which keep their earlier plans:
// install() then says so once per module, with the command that avoids it.
//
// Measured and rejected: an event thread on eBroadcastBitModulesLoaded (the
// event comes after LLDB looked for symbols, and an LLDB command from that
// thread deadlocked against SBTarget::LoadCore in LLDB 23); turning
// target.preload-symbols off (LLDB 19 then reported its own launch stop as a
// SIGTRAP); stopping at the dynamic loader's breakpoint
// (target.process.stop-on-sharedlibrary-events with an auto-continuing stop
// hook) covers launched processes only, not cores, nor a static program.
#pragma once

#include "build_id_files.hpp"
#include "debug_file_cache.hpp"
#include "debuginfod_responder.hpp"
#include "module_catalog.hpp"
#include "needed_libraries.hpp"

#include <lldb/API/SBDebugger.h>
#include <lldb/API/SBTarget.h>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <set>
#include <string>
#include <vector>

namespace sfunwind::lldb_plugin {

struct ModuleCoverage {
    enum class State : std::uint8_t {
        NoSframe,  // nothing to translate
        Failed,    // no debug file: see `detail`
        Generated, // the debug file exists, LLDB does not use it (yet): see `detail`
        InUse, // LLDB's symbol file for the module is the generated file (or the copy LLDB keeps of
               // it)
    };
    std::string module; // file name
    std::string path;
    State state = State::NoSframe;
    std::string debug_file;
    // How LLDB found the file ("target.debug-file-search-paths", "target
    // symbols add", the debuginfod responder), or why there is none / why
    // LLDB does not use it.
    std::string detail;
    bool has_eh_frame = false; // LLDB prefers the module's .eh_frame where it covers a PC
    CacheEntry cache;          // sizes and times, when generated in this session
};

const char* to_string(ModuleCoverage::State state) noexcept;

// What the debuginfod responder has done, for `sframe status`.
struct ResponderStatus {
    std::string url;     // empty when it is not running
    std::string problem; // why it is not running
    std::uint64_t requests = 0;
    std::uint64_t served = 0;
};

class Coverage {
  public:
    explicit Coverage(ModuleCatalog& catalog)
        : catalog_(catalog), cache_(std::make_shared<DebugFileCache>(default_cache_dir())) {}

    bool enabled() const;
    // Off: the responder answers 404, and the cache and the responder leave
    // LLDB's settings, so LLDB loads modules from then on without the
    // plugin's files (files in use stay in use). On: all come back.
    void set_enabled(lldb::SBDebugger& debugger, bool on);
    std::string cache_dir() const;
    // Moves the cache: target.debug-file-search-paths holds the new
    // directory instead of the old one.
    void set_cache_dir(lldb::SBDebugger& debugger, const std::string& dir);

    // Whether the debug files generated from now on say where each function
    // keeps rbx and r12-r15 (debug_file_cache.hpp). Modules LLDB loaded
    // already keep the file they have.
    bool callee_saved() const;
    void set_callee_saved(bool on);

    // The cache's size limit (cache_limit.hpp; 0: none). Setting it applies
    // it at once.
    std::uint64_t cache_limit() const;
    // How many times the cache was listed to apply the limit
    // (DebugFileCache::listings()).
    std::uint64_t cache_listings() const;
    // How many stamps the cache checked (DebugFileCache::stamp_checks()).
    std::uint64_t stamp_checks() const;
    // How many modules install() listed in full (located, their files
    // read): a stop lists only the modules not settled at an earlier one.
    std::uint64_t listed_modules() const;
    Eviction set_cache_limit(std::uint64_t bytes);
    // Why the environment's limit was not used (empty: it was, or unset).
    std::string cache_limit_problem() const;
    // Empty when every debug file handed out is locked against other LLDBs'
    // evictions (DebugFileCache::hold_problem()); else a sentence saying
    // which lock failed and what that means.
    std::string unlocked_files_warning() const;

    // At plugin load: the search path, the responder and its URL in LLDB's
    // debuginfod settings, the stop hook (dummy target and every existing
    // target), and install() for the existing targets.
    void initialize(lldb::SBDebugger& debugger);
    // Generates missing files and has LLDB use them. Returns one line per
    // change or new problem (empty when nothing changed); a line starting
    // with "hint:" says what to run for full coverage. With `wait` false it
    // gives up at once when another thread is installing: the stop hook
    // runs while LLDB holds the target's API lock, which that thread's SB
    // calls need, so waiting there would deadlock.
    std::vector<std::string> install(lldb::SBDebugger& debugger, lldb::SBTarget& target,
                                     bool wait = true);
    // Before `target create` runs (target_create_hook.hpp): the debug files
    // of the program, the libraries it needs and the files the core names,
    // so that LLDB finds them through the search paths as it adds each
    // module; the responder learns the paths too. Paths may be empty.
    void prepare(const std::string& debugger_name, const std::string& program,
                 const std::string& core);
    // The state of every module of the target.
    std::vector<ModuleCoverage> report(lldb::SBTarget& target);
    ResponderStatus responder_status() const;

  private:
    // The responder's answer for a build-id (its own thread; no SB call):
    // the debug file of the local module with that build-id, made now if
    // missing, or empty.
    std::string serve(const std::string& build_id);
    // Writes the missing debug files of the target's modules and of the
    // libraries its program needs (LLDB finds those itself when the dynamic
    // loader adds them), asking LLDB nothing that makes it look for symbols.
    // `dirs` are debug_search_dirs().
    void generate(lldb::SBDebugger& debugger, lldb::SBTarget& target,
                  const std::vector<std::string>& dirs);
    // What LLDB uses for the module, and with `dirs` (debug_search_dirs()),
    // the module's debug file made first if missing.
    ModuleCoverage examine(const TargetModule& m,
                           const std::optional<std::vector<std::string>>& dirs);
    // The libraries `program` needs (needed_libraries(): each a file
    // opened on the RUNPATH), found once per program file and session.
    std::vector<std::string> needed_of(const TargetModule& program);
    // Keeps the paths of `libs` as the needed libraries of the program at
    // `key` (its path + '\n' + uuid_key(its UUID)), unless already kept;
    // returns the kept list.
    std::vector<std::string> keep_needed(const std::string& key,
                                         const std::vector<NeededLibrary>& libs);
    // Records that LLDB reads the plugin's file for this module (in_use_).
    void settle(const std::string& key, const std::string& path);
    // The debugger's debug-file search paths (read once per pass over the
    // modules: a settings read is an SB call), kept for the responder's
    // thread, which must not call LLDB.
    std::vector<std::string> debug_search_dirs(const std::string& debugger_name);
    // An existing separate debug file of the module (by build-id, in the
    // search paths `dirs` other than the cache, and /usr/lib/debug): the
    // base of ours, so that its DWARF stays. Empty when there is none.
    std::string separate_debug_file(std::vector<std::string> dirs,
                                    const elf::ModuleRows& file) const;
    // The debug file of one local file, made if missing (no SB call).
    // `dirs` are debug_search_dirs(); `opened`, when given, is that path
    // opened already (no descriptor kept).
    void prepare_file(const std::vector<std::string>& dirs, const std::string& path,
                      std::shared_ptr<const elf::ElfFile> opened = nullptr);
    // Whether `symbols` is a copy LLDB's debuginfod client keeps of a file
    // the responder sent for build-id `id` (now `debug_file`).
    bool is_served_copy(const std::string& symbols, const std::string& id,
                        const std::string& debug_file);
    std::shared_ptr<DebugFileCache> cache() const;
    // Puts `dir` first in the global target.debug-file-search-paths, or removes it.
    void set_search_path(lldb::SBDebugger& debugger, const std::string& dir, bool present);
    // Puts the responder's URL first in plugin.symbol-locator.debuginfod.server-urls.
    void set_debuginfod_url(lldb::SBDebugger& debugger);
    static void debugger_destroyed(lldb::user_id_t id, void* baton);

    ModuleCatalog& catalog_;
    BuildIdFiles build_id_files_;
    DebuginfodResponder responder_;
    mutable std::mutex mutex_;
    std::mutex install_mutex_; // one install() at a time, from any thread
    std::shared_ptr<DebugFileCache> cache_;
    bool enabled_ = true;
    int lldb_major_ = 0;
    std::string responder_problem_;
    std::vector<std::string> search_dirs_; // the cache directory the plugin put in the search paths
    std::string url_in_settings_;          // the responder URL the settings hold
    std::vector<std::string> urls_before_; // the debuginfod setting before the plugin changed it
    std::string parallel_load_before_; // target.parallel-module-load, if the plugin turned it off
    std::set<lldb::user_id_t> debuggers_;         // debuggers the plugin serves
    std::map<std::string, CacheEntry> generated_; // by debug file path, this session
    // Search directories found to exist and not be the cache (by `dir` +
    // '\n' + the cache's path): separate_debug_file() asks for each module.
    mutable std::set<std::string> other_than_cache_;
    std::set<std::string> reported_;      // debug files whose generation install() reported
    std::set<std::string> asked_;         // build-ids LLDB asked the responder for
    std::map<std::string, bool> copies_;  // is_served_copy() answers, by both files' versions
    std::vector<std::string> debug_dirs_; // target.debug-file-search-paths, last read
    std::map<std::string, std::string> failures_; // by module path + uuid: why, reported once
    std::set<std::string> hinted_; // module path + uuid: the late-coverage hint was given
    // Modules whose symbol file is the plugin's (module path + uuid, and the
    // paths alone): settled for the session, as LLDB keeps a module's symbol
    // file, so install() at later stops skips them instead of checking each
    // one's stamp again (a hash of its .sframe: 21 ms a stop with 300
    // libraries). Emptied when the cache moves or coverage is switched.
    std::set<std::string> in_use_;
    std::set<std::string> in_use_paths_;
    std::uint64_t listed_modules_ = 0;
    std::map<std::string, std::vector<std::string>> needed_; // needed_of(), by program path + uuid
    std::set<std::string>
        added_with_command_; // module path + debug file given with `target symbols add`
};

} // namespace sfunwind::lldb_plugin

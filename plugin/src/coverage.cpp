// SPDX-License-Identifier: MIT
#include "coverage.hpp"

#include "core_files.hpp"
#include "elf_probe.hpp"
#include "needed_libraries.hpp"
#include "sb_target.hpp"
#include "sfunwind/elf/debug_file_writer.hpp"
#include "target_create_hook.hpp"

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <lldb/API/SBCommandInterpreter.h>
#include <lldb/API/SBCommandReturnObject.h>
#include <lldb/API/SBExecutionContext.h>
#include <lldb/API/SBFile.h>
#include <lldb/API/SBFileSpec.h>
#include <lldb/API/SBProcess.h>
#include <lldb/API/SBStringList.h>
#include <system_error>
#include <utility>

namespace sfunwind::lldb_plugin {
namespace {

// Where a long translation is announced when no debugger handle is at hand
// (target creation's preparation, the debuginfod responder's thread): the
// process's standard error, which is LLDB's own error output in a terminal.
void progress_to_stderr(const std::string& line) {
    std::fputs(line.c_str(), stderr);
    std::fflush(stderr);
}

std::string spec_path(const lldb::SBFileSpec& spec) {
    if (!spec.IsValid()) return {};
    char buf[4096];
    const std::uint32_t n = spec.GetPath(buf, sizeof buf);
    return n > 0 && n < sizeof buf ? std::string(buf, n) : std::string();
}

bool same_file(const std::string& a, const std::string& b) {
    if (a.empty() || b.empty()) return false;
    if (a == b) return true; // the common case, without two stat(2) calls
    std::error_code ec;
    return std::filesystem::equivalent(a, b, ec) && !ec;
}

// LLDB quotes arguments with backslashes or double quotes.
std::string lldb_quoted(const std::string& s) {
    std::string q = "\"";
    for (const char c : s) {
        if (c == '"' || c == '\\') q += '\\';
        q += c;
    }
    return q + '"';
}

// The entries of a file-list setting. GetInternalVariableValue gives them
// as LLDB prints them, all in one string ("  [0]: /a  [1]: /b").
std::vector<std::string> setting_paths(const char* name, const char* debugger_name) {
    std::string all;
    lldb::SBStringList values = lldb::SBDebugger::GetInternalVariableValue(name, debugger_name);
    for (std::uint32_t i = 0; i < values.GetSize(); ++i)
        if (const char* v = values.GetStringAtIndex(i)) all += std::string(v) + " ";
    // The positions of the "[N]: " markers; an entry runs to the next one.
    std::vector<std::pair<std::size_t, std::size_t>> markers; // (start, length)
    for (std::size_t at = all.find('['); at != std::string::npos; at = all.find('[', at + 1)) {
        std::size_t k = at + 1;
        while (k < all.size() && all[k] >= '0' && all[k] <= '9')
            ++k;
        if (k > at + 1 && all.compare(k, 3, "]: ") == 0) markers.emplace_back(at, k + 3 - at);
    }
    std::vector<std::string> out;
    for (std::size_t i = 0; i < markers.size(); ++i) {
        const std::size_t from = markers[i].first + markers[i].second;
        const std::size_t to = i + 1 < markers.size() ? markers[i + 1].first : all.size();
        std::string d = all.substr(from, to - from);
        while (!d.empty() && (d.back() == ' ' || d.back() == '\t' || d.back() == '\n'))
            d.pop_back();
        if (d.size() >= 2 && d.front() == '"' && d.back() == '"') d = d.substr(1, d.size() - 2);
        if (!d.empty()) out.push_back(d);
    }
    return out;
}

bool run_command(lldb::SBDebugger& debugger, const lldb::SBTarget& target,
                 const std::string& command, std::string* error) {
    lldb::SBCommandReturnObject result;
    lldb::SBExecutionContext context(target);
    debugger.GetCommandInterpreter().HandleCommand(command.c_str(), context, result, false);
    if (!result.Succeeded() && error != nullptr)
        *error = result.GetError() != nullptr ? result.GetError() : "failed";
    return result.Succeeded();
}

// DEBUGINFOD_URLS: the servers LLDB's debuginfod client asks when its
// setting is empty (debuginfod-client(7): a space-separated list).
std::vector<std::string> env_debuginfod_urls() {
    std::vector<std::string> out;
    const char* v = std::getenv("DEBUGINFOD_URLS");
    if (v == nullptr) return out;
    const std::string all = v;
    std::size_t at = 0;
    while ((at = all.find_first_not_of(" \t\n", at)) != std::string::npos) {
        const std::size_t end = std::min(all.find_first_of(" \t\n", at), all.size());
        out.push_back(all.substr(at, end - at));
        at = end;
    }
    return out;
}

std::uint64_t file_size(const std::string& path) {
    std::error_code ec;
    const auto n = std::filesystem::file_size(path, ec);
    return ec ? 0 : n;
}

constexpr const char* search_paths_setting = "target.debug-file-search-paths";
constexpr const char* debuginfod_setting = "plugin.symbol-locator.debuginfod.server-urls";
// LLDB 21 and later load a core's modules on a thread pool, and LLDB 23.1.4
// can deadlock there: two pool workers block on mutexes inside a call_once
// while SBTarget::LoadCore waits for the pool (llvm-project PRs 166480 and
// 213094; seen in tests/lldb/test_cores.py, intermittently, with and without
// a debuginfod server in the settings, first with one). The responder makes
// LLDB download and index a debug file per module as it loads: while it is in
// the settings, modules load one at a time; the setting goes back when
// coverage is switched off.
constexpr const char* parallel_load_setting = "target.parallel-module-load";

// The setting's value ("true"/"false"), or "" where this LLDB has none.
std::string bool_setting(const char* name, const char* debugger_name) {
    lldb::SBStringList values = lldb::SBDebugger::GetInternalVariableValue(name, debugger_name);
    if (values.GetSize() != 1 || values.GetStringAtIndex(0) == nullptr) return {};
    const std::string v = values.GetStringAtIndex(0);
    return v == "true" || v == "false" ? v : std::string();
}

} // namespace

const char* to_string(ModuleCoverage::State state) noexcept {
    switch (state) {
    case ModuleCoverage::State::NoSframe:
        return "no-sframe";
    case ModuleCoverage::State::Failed:
        return "failed";
    case ModuleCoverage::State::Generated:
        return "generated";
    case ModuleCoverage::State::InUse:
        return "in-use";
    }
    return "?";
}

bool Coverage::enabled() const {
    const std::lock_guard lock(mutex_);
    return enabled_;
}

void Coverage::set_enabled(lldb::SBDebugger& debugger, bool on) {
    std::vector<std::string> dirs;
    {
        const std::lock_guard lock(mutex_);
        enabled_ = on;
        dirs = search_dirs_;
        in_use_.clear();
        in_use_paths_.clear();
    }
    for (const auto& dir : dirs)
        set_search_path(debugger, dir, on);
    if (!responder_.running()) return;
    if (on) {
        set_debuginfod_url(debugger);
    } else if (!url_in_settings_.empty()) {
        // Off must also keep LLDB's debuginfod client from the copies it
        // keeps of the files the responder sent, which it would reuse for
        // the same build-id without asking: the setting goes back to what
        // it was before the plugin.
        std::string value;
        for (const auto& u : urls_before_)
            value += lldb_quoted(u) + " ";
        lldb::SBDebugger::SetInternalVariable(debuginfod_setting, value.c_str(),
                                              debugger.GetInstanceName());
        url_in_settings_.clear();
        if (!parallel_load_before_.empty())
            lldb::SBDebugger::SetInternalVariable(
                parallel_load_setting, parallel_load_before_.c_str(), debugger.GetInstanceName());
        parallel_load_before_.clear();
    }
}

std::shared_ptr<DebugFileCache> Coverage::cache() const {
    const std::lock_guard lock(mutex_);
    return cache_;
}

std::uint64_t Coverage::cache_listings() const {
    return cache()->listings();
}

std::uint64_t Coverage::stamp_checks() const {
    return cache()->stamp_checks();
}

std::uint64_t Coverage::listed_modules() const {
    const std::lock_guard lock(mutex_);
    return listed_modules_;
}

std::string Coverage::cache_dir() const {
    return cache()->dir();
}

void Coverage::set_cache_dir(lldb::SBDebugger& debugger, const std::string& dir) {
    std::vector<std::string> old;
    {
        // Holders of the old cache (the responder's thread) keep it alive.
        const std::lock_guard lock(mutex_);
        const bool callee_saved = cache_->callee_saved();
        cache_ = std::make_shared<DebugFileCache>(dir, cache_->limit());
        cache_->set_callee_saved(callee_saved);
        old = std::exchange(search_dirs_, {dir});
        in_use_.clear();
        in_use_paths_.clear();
    }
    // The cache moves: LLDB stops finding the files of the old one.
    for (const auto& d : old)
        if (d != dir) set_search_path(debugger, d, false);
    if (enabled()) set_search_path(debugger, dir, true);
}

bool Coverage::callee_saved() const {
    return cache()->callee_saved();
}

void Coverage::set_callee_saved(bool on) {
    cache()->set_callee_saved(on);
}

std::uint64_t Coverage::cache_limit() const {
    return cache()->limit();
}

std::string Coverage::cache_limit_problem() const {
    return cache()->limit_problem();
}

std::string Coverage::unlocked_files_warning() const {
    const std::string why = cache()->hold_problem();
    if (why.empty()) return {};
    return "debug files in use are not locked (" + why +
           "): another LLDB's cache limit may remove them while this one uses them";
}

Eviction Coverage::set_cache_limit(std::uint64_t bytes) {
    const auto files = cache();
    files->set_limit(bytes);
    return files->trim();
}

void Coverage::set_search_path(lldb::SBDebugger& debugger, const std::string& dir, bool present) {
    // SymbolVendorELF searches the debugger-wide default of this setting
    // (Target::GetDefaultDebugFileSearchPaths), which is only reachable
    // without an execution context, which HandleCommand always supplies:
    // hence SetInternalVariable, an assignment of the whole list.
    // First in the list: LLDB takes the first file with the module's
    // build-id, and the plugin's copy of a separate debug file holds that
    // file's DWARF and the SFrame-derived .debug_frame.
    const std::vector<std::string> now =
        setting_paths(search_paths_setting, debugger.GetInstanceName());
    std::string value = present ? lldb_quoted(dir) + " " : std::string();
    bool had = false;
    for (const auto& d : now) {
        if (d == dir) {
            had = true;
            continue;
        }
        value += lldb_quoted(d) + " ";
    }
    if (had == present && (!present || now.front() == dir)) return;
    lldb::SBDebugger::SetInternalVariable(search_paths_setting, value.c_str(),
                                          debugger.GetInstanceName());
}

void Coverage::set_debuginfod_url(lldb::SBDebugger& debugger) {
    const std::string ours = responder_.url();
    std::vector<std::string> urls = setting_paths(debuginfod_setting, debugger.GetInstanceName());
    std::vector<std::string> others;
    for (const auto& u : urls)
        if (u != ours && u != url_in_settings_) others.push_back(u);
    if (url_in_settings_.empty()) urls_before_ = others;
    // An empty setting means DEBUGINFOD_URLS to LLDB; once the setting
    // holds the responder, it must hold those servers too.
    if (others.empty()) others = env_debuginfod_urls();
    std::vector<std::string> wanted{ours};
    wanted.insert(wanted.end(), others.begin(), others.end());
    if (urls != wanted) {
        std::string value;
        for (const auto& u : wanted)
            value += lldb_quoted(u) + " ";
        lldb::SBDebugger::SetInternalVariable(debuginfod_setting, value.c_str(),
                                              debugger.GetInstanceName());
    }
    url_in_settings_ = ours;
    // Also when the servers were already right (another debugger of this
    // process set them): the parallel loading may have been switched back on.
    const std::string parallel = bool_setting(parallel_load_setting, debugger.GetInstanceName());
    if (parallel == "true") {
        parallel_load_before_ = parallel;
        lldb::SBDebugger::SetInternalVariable(parallel_load_setting, "false",
                                              debugger.GetInstanceName());
    }
}

void Coverage::initialize(lldb::SBDebugger& debugger) {
    bool first = false;
    {
        const std::lock_guard lock(mutex_);
        if (!debuggers_.insert(debugger.GetID()).second) return; // the plugin was loaded twice
        first = debuggers_.size() == 1;
        lldb_major_ = lldb_major_version();
    }
    debugger.AddDestroyCallback(&Coverage::debugger_destroyed, this);
    const std::string dir = cache_dir();
    {
        const std::lock_guard lock(mutex_);
        if (std::find(search_dirs_.begin(), search_dirs_.end(), dir) == search_dirs_.end())
            search_dirs_.push_back(dir);
    }
    if (enabled()) set_search_path(debugger, dir, true);
    if (first && !responder_.running()) {
        Status started = responder_.start([this](const std::string& id) { return serve(id); });
        const std::lock_guard lock(mutex_);
        responder_problem_ = started ? std::string() : started.error().message();
    }
    if (responder_.running()) set_debuginfod_url(debugger);
    install_target_create_hook(debugger, *this);
    // Stop hooks of the dummy target are copied into every target created
    // later; targets that exist already get their own.
    const std::string hook = "target stop-hook add -o \"sframe cover --stop-hook\"";
    run_command(debugger, debugger.GetDummyTarget(), hook, nullptr);
    for (std::uint32_t i = 0; i < debugger.GetNumTargets(); ++i) {
        lldb::SBTarget t = debugger.GetTargetAtIndex(i);
        run_command(debugger, t, hook, nullptr);
        (void)install(debugger, t);
    }
}

void Coverage::debugger_destroyed(lldb::user_id_t id, void* baton) {
    auto* self = static_cast<Coverage*>(baton);
    bool last = false;
    {
        const std::lock_guard lock(self->mutex_);
        self->debuggers_.erase(id);
        last = self->debuggers_.empty();
    }
    // The server thread must not outlive the last debugger: LLDB tears
    // itself down after it.
    if (last) self->responder_.stop();
}

ResponderStatus Coverage::responder_status() const {
    ResponderStatus s;
    s.url = responder_.url();
    s.requests = responder_.requests();
    s.served = responder_.served();
    const std::lock_guard lock(mutex_);
    s.problem = responder_problem_;
    return s;
}

std::string Coverage::serve(const std::string& build_id) {
    if (!enabled()) return {};
    {
        const std::lock_guard lock(mutex_);
        asked_.insert(build_id);
    }
    // Most modules LLDB asks about have no SFrame (LLDB 23 asks its
    // debuginfod servers before looking in the search paths): those are
    // answered without reading more than their headers.
    const BuildIdFiles::Found found = build_id_files_.find(build_id);
    if (found.path.empty() || !found.sframe) return {};
    const auto files = cache();
    // Made by prepare() or install() with the right base (their stamps
    // are checked there): sent as it is.
    std::error_code ec;
    if (std::string made = files->path_for(build_id); std::filesystem::exists(made, ec))
        return made;
    const auto file = catalog_.file(found.path, build_id);
    if (!file->sframe()) return {};
    // See examine(): LLDB 19 would lose the module's load addresses.
    if (file->file && file->file->has_section(".debug_info") && lldb_major_ < 23) return {};
    std::vector<std::string> dirs;
    {
        const std::lock_guard lock(mutex_);
        dirs = debug_dirs_;
    }
    auto entry = files->ensure(*file, separate_debug_file(dirs, *file), progress_to_stderr);
    if (!entry) return {}; // install() reports it when LLDB has the module
    const std::lock_guard lock(mutex_);
    if (entry->generated_now) generated_[entry->path] = *entry;
    return entry->path;
}

void Coverage::prepare_file(const std::vector<std::string>& dirs, const std::string& path,
                            std::shared_ptr<const elf::ElfFile> opened) {
    // One open of the file for its build-id, whether it has SFrame and the
    // catalog's table (a probe for each opened it again: 300 libraries were
    // about 600 opens more), its descriptor kept for the reads up to the
    // catalog's table (the notes, the .sframe header and FDEs); or the one
    // the walk of the needed libraries made.
    if (!opened) {
        auto own = elf::ElfFile::open(path, true);
        if (!own) return;
        opened = std::make_shared<const elf::ElfFile>(std::move(*own));
    }
    const auto raw_id = opened->build_id();
    if (!raw_id) return; // LLDB matches debug files by build-id: nothing to prepare
    const std::string id = build_id_hex(*raw_id);
    build_id_files_.remember(path);
    // A program may need dozens of libraries, few with SFrame: the others
    // are not read past their headers.
    if (!opened->find_sframe()) return;
    const auto file = catalog_.file(path, id, opened);
    opened->close_descriptor();
    if (!file->sframe()) return;
    if (file->file && file->file->has_section(".debug_info") && lldb_major_ < 23) return;
    auto entry = cache()->ensure(*file, separate_debug_file(dirs, *file), progress_to_stderr);
    if (entry && entry->generated_now) {
        const std::lock_guard lock(mutex_);
        generated_[entry->path] = *entry;
    }
}

void Coverage::prepare(const std::string& debugger_name, const std::string& program,
                       const std::string& core) {
    if (!enabled()) return;
    std::vector<NeededLibrary> paths;
    if (!program.empty()) {
        paths.push_back({program, nullptr});
        const auto id = read_build_id(program);
        if (const auto file = catalog_.file(program, id ? *id : std::string()); file->file) {
            std::vector<NeededLibrary> libs = needed_libraries(*file->file, program);
            // Kept for needed_of(), which the first stop asks: the walk
            // opens every library again otherwise (300 libraries: about
            // 40 ms of that stop).
            if (id) keep_needed(program + '\n' + uuid_key(*id), libs);
            for (auto& lib : libs)
                paths.push_back(std::move(lib));
        }
    }
    // The program and libraries the core was dumped with, by the names it
    // recorded; LLDB loads those files (and LLDB 23 prefers the core's
    // program to the one given).
    if (!core.empty())
        if (auto names = core_file_names(core))
            for (auto& name : *names)
                paths.push_back({std::move(name), nullptr});
    const std::vector<std::string> dirs = debug_search_dirs(debugger_name);
    for (auto& [path, file] : paths)
        prepare_file(dirs, path, std::move(file));
}

std::vector<std::string> Coverage::debug_search_dirs(const std::string& debugger_name) {
    std::vector<std::string> dirs = setting_paths(search_paths_setting, debugger_name.c_str());
    const std::lock_guard lock(mutex_);
    debug_dirs_ = dirs;
    return dirs;
}

std::string Coverage::separate_debug_file(std::vector<std::string> dirs,
                                          const elf::ModuleRows& file) const {
    const auto id = file.file ? file.file->build_id() : std::nullopt;
    if (!id || id->size() < 2) return {};
    const std::string hex_id = build_id_hex(*id);
    const std::string rel = "/.build-id/" + hex_id.substr(0, 2) + "/" + hex_id.substr(2) + ".debug";
    dirs.emplace_back("/usr/lib/debug");
    const std::string ours = cache_dir();
    for (const auto& d : dirs) {
        // Asked for every module: a directory known to be another than the
        // cache is not compared again (two stat(2) calls each time).
        std::string key = d;
        key += '\n';
        key += ours;
        bool other = false;
        {
            const std::lock_guard lock(mutex_);
            other = other_than_cache_.count(key) != 0;
        }
        if (!other) {
            if (same_file(d, ours)) continue;
            // Remembered only once both exist: the cache is made at its
            // first file, and may then turn out to be `d`.
            std::error_code ec;
            if (std::filesystem::exists(d, ec) && std::filesystem::exists(ours, ec)) {
                const std::lock_guard lock(mutex_);
                other_than_cache_.insert(key);
            }
        }
        std::string candidate = d + rel;
        std::error_code ec;
        if (std::filesystem::exists(candidate, ec)) return candidate;
    }
    return {};
}

bool Coverage::is_served_copy(const std::string& symbols, const std::string& id,
                              const std::string& debug_file) {
    if (symbols.empty() || id.empty() || same_file(symbols, debug_file)) return false;
    // LLDB keeps what its debuginfod client got under names of its own
    // (llvmcache-HASH in LLDB 19, llvmcache-ID... in LLDB 23), and LLDB 23
    // reuses it for the build-id without asking again, also for another file
    // with the same build-id (a program and its stripped copy, whose symbol
    // tables differ). So a copy is recognized by what makes it the plugin's:
    // the build-id and the generator section, or in a file written before
    // there was one, the .debug_frame translated from the SFrame section.
    std::error_code ec;
    const auto stamp = [&](const std::string& p) {
        return std::to_string(file_size(p)) + ":" +
               std::to_string(std::filesystem::last_write_time(p, ec).time_since_epoch().count());
    };
    const std::string key =
        symbols + '\n' + stamp(symbols) + '\n' + debug_file + '\n' + stamp(debug_file);
    {
        const std::lock_guard lock(mutex_);
        if (auto it = copies_.find(key); it != copies_.end()) return it->second;
    }
    // A copy LLDB kept from before the translation changed (a new sfunwind,
    // the other callee-saved setting) is still the plugin's, not a base:
    // taken for one, it made every session translate the module again.
    const auto their_id = read_build_id(symbols);
    bool copy = false;
    if (their_id && *their_id == id) {
        const auto generator = read_section(symbols, elf::generator_section);
        if (generator && is_generated(*generator)) {
            copy = true;
        } else {
            const auto theirs = read_section(symbols, ".debug_frame");
            const auto ours = read_section(debug_file, ".debug_frame");
            copy = theirs && ours && !ours->empty() && *theirs == *ours;
            // A file from before the generator section: the symbols the
            // plugin names FDEs with (__sframe_fde_<start>) are its own.
            if (!copy && theirs)
                if (auto file = elf::ElfFile::open(symbols))
                    copy = std::any_of(file->function_symbols().begin(),
                                       file->function_symbols().end(), [](const elf::Symbol& f) {
                                           return f.name.rfind(fde_symbol_prefix, 0) == 0;
                                       });
        }
    }
    const std::lock_guard lock(mutex_);
    copies_[key] = copy;
    return copy;
}

std::vector<std::string> Coverage::keep_needed(const std::string& key,
                                               const std::vector<NeededLibrary>& libs) {
    std::vector<std::string> paths;
    paths.reserve(libs.size());
    for (const auto& lib : libs)
        paths.push_back(lib.path);
    const std::lock_guard lock(mutex_);
    return needed_.emplace(key, std::move(paths)).first->second;
}

std::vector<std::string> Coverage::needed_of(const TargetModule& program) {
    const std::string key = program.path + '\n' + uuid_key(program.uuid);
    {
        const std::lock_guard lock(mutex_);
        if (auto it = needed_.find(key); it != needed_.end()) return it->second;
    }
    return keep_needed(key, needed_libraries(*program.table->file, program.path));
}

void Coverage::generate(lldb::SBDebugger& debugger, lldb::SBTarget& target,
                        const std::vector<std::string>& dirs) {
    if (!enabled() || !target.IsValid()) return;
    std::vector<TargetModule> modules = catalog_.module_files(target);
    // The libraries the program needs, which LLDB may not have added yet
    // (it adds them when the dynamic loader reports them, and looks for
    // their symbols at once).
    if (!modules.empty() && modules.front().table->file) {
        // Those LLDB has added are in the list already.
        std::set<std::string> added;
        for (const auto& m : modules)
            added.insert(m.path);
        for (const auto& lib : needed_of(modules.front())) {
            if (added.count(lib) != 0) continue;
            TargetModule m;
            m.path = lib;
            m.name = std::filesystem::path(lib).filename().string();
            m.table = catalog_.file(lib, "");
            modules.push_back(std::move(m));
        }
    }
    const auto files = cache();
    // Straight to the debugger's error file: this runs inside `target create`.
    const auto progress = [&debugger](const std::string& line) {
        lldb::SBFile err = debugger.GetErrorFile();
        std::size_t written = 0;
        err.Write(reinterpret_cast<const std::uint8_t*>(line.data()), line.size(), &written);
        err.Flush();
    };
    for (const TargetModule& m : modules) {
        {
            // Remembered by build_id_files_ when first seen. A library the
            // program needs is known by its path alone (no uuid).
            const std::lock_guard lock(mutex_);
            if (m.uuid.empty() ? in_use_paths_.count(m.path) != 0
                               : in_use_.count(m.path + '\n' + m.uuid) != 0)
                continue;
        }
        build_id_files_.remember(m.path);
        if (!m.table->sframe()) continue;
        if (m.table->file && m.table->file->has_section(".debug_info") && lldb_major_ < 23)
            continue;
        auto entry = files->ensure(*m.table, separate_debug_file(dirs, *m.table), progress);
        if (entry && entry->generated_now) {
            const std::lock_guard lock(mutex_);
            generated_[entry->path] = *entry;
        }
    }
}

ModuleCoverage Coverage::examine(const TargetModule& m,
                                 const std::optional<std::vector<std::string>>& dirs) {
    const bool generate = dirs.has_value();
    ModuleCoverage c;
    c.module = m.name;
    c.path = m.path;
    if (!m.table->sframe()) {
        c.state =
            broken(*m.table) ? ModuleCoverage::State::Failed : ModuleCoverage::State::NoSframe;
        c.detail = m.table->problem();
        return c;
    }
    c.has_eh_frame = m.table->file && m.table->file->has_section(".eh_frame");
    const auto files = cache();
    const std::string symbols = spec_path(m.module.GetSymbolFileSpec());
    const auto id = m.table->file ? m.table->file->build_id() : std::nullopt;
    const std::string id_hex = id && !id->empty() ? build_id_hex(*id) : std::string();
    const std::string own_debug_file = id_hex.empty() ? std::string() : files->path_for(id_hex);
    const bool served_copy = is_served_copy(symbols, id_hex, own_debug_file);
    // A separate debug file LLDB found for the module (not ours, nor LLDB's
    // copy of ours) is the base of ours, so that its DWARF stays.
    std::string base;
    if (!symbols.empty() && !same_file(symbols, m.path) && !same_file(symbols, own_debug_file) &&
        !served_copy)
        base = symbols;
    else if (generate && !served_copy)
        base = separate_debug_file(*dirs, *m.table);
    // LLDB before 23 loads a symbol file for a module that has DWARF of its
    // own as a separate object whose sections never get load addresses:
    // breakpoints, variables and every frame above frame 0 break (measured
    // with LLDB 19; LLDB 23 merges the sections).
    if (m.table->file && m.table->file->has_section(".debug_info") && lldb_major_ < 23 &&
        !same_file(symbols, own_debug_file)) {
        c.state = ModuleCoverage::State::Failed;
        c.detail =
            "the module carries its own DWARF, and LLDB " + std::to_string(lldb_major_) +
            " cannot add a debug file to such a module without losing its section load addresses "
            "(LLDB 23 can); move the module's DWARF into a separate debug file";
        return c;
    }
    if (generate) {
        auto entry = files->ensure(*m.table, base);
        if (!entry) {
            c.state = ModuleCoverage::State::Failed;
            c.detail = entry.error().message();
            return c;
        }
        c.debug_file = entry->path;
        const std::lock_guard lock(mutex_);
        if (entry->generated_now) generated_[entry->path] = *entry;
    } else {
        if (id_hex.empty()) {
            c.state = ModuleCoverage::State::Failed;
            c.detail = "no GNU build-id";
            return c;
        }
        c.debug_file = own_debug_file;
        std::error_code ec;
        if (!std::filesystem::exists(c.debug_file, ec)) {
            c.state = ModuleCoverage::State::Failed;
            c.detail = "not generated yet (run 'sframe cover')";
            return c;
        }
    }
    {
        const std::lock_guard lock(mutex_);
        if (auto it = generated_.find(c.debug_file); it != generated_.end()) c.cache = it->second;
    }
    if (same_file(symbols, c.debug_file)) {
        c.state = ModuleCoverage::State::InUse;
        const std::lock_guard lock(mutex_);
        c.detail = added_with_command_.count(m.path + '\n' + c.debug_file) != 0
                       ? "added with 'target symbols add'"
                       : "found by LLDB through target.debug-file-search-paths";
    } else if (served_copy) {
        c.state = ModuleCoverage::State::InUse;
        c.detail = "sent by the plugin's debuginfod responder when LLDB loaded the module (this "
                   "session or an "
                   "earlier one); LLDB reads its copy " +
                   symbols;
    } else {
        c.state = ModuleCoverage::State::Generated;
        c.detail = symbols.empty() ? "LLDB has no symbol file for the module"
                                   : "LLDB's symbol file for the module is " + symbols;
    }
    return c;
}

void Coverage::settle(const std::string& key, const std::string& path) {
    const std::lock_guard lock(mutex_);
    in_use_.insert(key);
    in_use_paths_.insert(path);
}

std::vector<std::string> Coverage::install(lldb::SBDebugger& debugger, lldb::SBTarget& target,
                                           bool wait) {
    std::vector<std::string> lines;
    if (!enabled() || !target.IsValid()) return lines;
    std::unique_lock install_lock(install_mutex_, std::defer_lock);
    if (wait)
        install_lock.lock();
    else if (!install_lock.try_lock())
        return lines;
    // Files first, before anything below makes LLDB look for symbols: then
    // LLDB finds them itself where it had not looked yet.
    const std::vector<std::string> dirs = debug_search_dirs(debugger.GetInstanceName());
    generate(debugger, target, dirs);
    // With a process, LLDB has stopped at least once and unwound at that stop.
    const bool late = target.GetProcess().IsValid();
    // Modules settled at an earlier stop are not listed again.
    const auto unsettled = [this](const TargetModule& m) {
        const std::lock_guard lock(mutex_);
        return in_use_.count(m.path + '\n' + m.uuid) == 0;
    };
    const std::vector<TargetModule> listed = catalog_.modules(target, unsettled);
    {
        const std::lock_guard lock(mutex_);
        listed_modules_ += listed.size();
    }
    for (const TargetModule& m : listed) {
        if (!m.table->sframe()) continue;
        const std::string key = m.path + '\n' + m.uuid;
        ModuleCoverage c = examine(m, dirs);
        if (c.state == ModuleCoverage::State::InUse) settle(key, m.path);
        if (c.cache.generated_now && c.state != ModuleCoverage::State::Failed) {
            const std::uint64_t limit = cache_limit(); // before the lock: it takes it
            const std::lock_guard lock(mutex_);
            // Each generation once, whoever made the file (this call, or the
            // responder while LLDB loaded the module).
            if (reported_.insert(c.debug_file).second) {
                char buf[256];
                std::snprintf(buf, sizeof buf,
                              "%llu bytes of .debug_frame from %llu bytes of SFrame, %.1f ms",
                              static_cast<unsigned long long>(c.cache.debug_frame_bytes),
                              static_cast<unsigned long long>(c.cache.sframe_bytes),
                              c.cache.milliseconds);
                std::string line =
                    "generated " + c.debug_file + " for " + m.name + " (" + buf + ")";
                // A damaged FDE has no DWARF FDE: LLDB unwinds that function
                // with its other plans.
                if (c.cache.skipped_fdes != 0)
                    line += "; " + std::to_string(c.cache.skipped_fdes) +
                            " SFrame FDE(s) not translated, the first: " + c.cache.first_skipped;
                if (c.cache.evicted != 0)
                    line += "; " + std::to_string(c.cache.evicted) +
                            " least recently used file(s) removed from the cache (limit " +
                            format_size(limit) + ")";
                if (c.cache.busy != 0)
                    line += "; " + std::to_string(c.cache.busy) +
                            " file(s) over the limit left in place, in use by another process";
                lines.push_back(line);
            }
        }
        if (c.state == ModuleCoverage::State::Failed) {
            const std::lock_guard lock(mutex_);
            if (failures_.emplace(key, c.detail).second)
                lines.push_back(m.name + ": not covered: " + c.detail);
            continue;
        }
        if (c.state != ModuleCoverage::State::Generated) continue;
        // Ours replaces LLDB's symbol file: the module itself, or a separate
        // debug file ours was copied from (examine() used it as the base).
        const std::string symbols = spec_path(m.module.GetSymbolFileSpec());
        const bool had_separate = !symbols.empty() && !same_file(symbols, m.path);
        std::string error;
        bool added = run_command(debugger, target,
                                 "target symbols add " + lldb_quoted(c.debug_file), &error);
        // LLDB matches the file to modules by UUID; when two modules share
        // it (a library seen before under another path), name the module.
        if (!added && error.find("multiple modules match") != std::string::npos) {
            error.clear();
            added = run_command(debugger, target,
                                "target symbols add --shlib " + lldb_quoted(m.path) + " " +
                                    lldb_quoted(c.debug_file),
                                &error);
        }
        if (!added && error.find("invalid target") != std::string::npos)
            return lines; // deleted meanwhile
        // LLDB 23 gets the file through its symbol locators, its debuginfod
        // client (the responder) first, uses what that gives, and still
        // reports "does not match any existing module" (measured): what
        // counts is the symbol file LLDB has now.
        if (!added && examine(m, std::nullopt).state == ModuleCoverage::State::InUse) added = true;
        if (!added) {
            const std::lock_guard lock(mutex_);
            if (failures_.emplace(key, error).second)
                lines.push_back(m.name + ": 'target symbols add' failed: " + error);
            continue;
        }
        {
            const std::lock_guard lock(mutex_);
            added_with_command_.insert(m.path + '\n' + c.debug_file);
        }
        settle(key, m.path);
        lines.push_back(m.name + ": LLDB now reads " + c.debug_file + " (target symbols add)");
        // LLDB 23 unwinds nothing on its own at a stop before the stop hook
        // runs, and takes the new file for every frame (measured).
        if (!late || lldb_major_ >= 23) continue;
        const std::lock_guard lock(mutex_);
        if (!hinted_.insert(key).second) continue;
        const auto id = m.table->file ? m.table->file->build_id() : std::nullopt;
        const bool asked = id && asked_.count(build_id_hex(*id)) != 0;
        std::string why;
        if (had_separate)
            why = "LLDB found a separate debug file of the module's own first";
        else if (!responder_problem_.empty())
            why = "the plugin's debuginfod responder is not running: " + responder_problem_;
        else if (asked)
            why = "LLDB asked the plugin for it before the plugin could find the module's file, as "
                  "for a small "
                  "program given to SBDebugger::CreateTarget";
        else
            why = "LLDB did not ask the plugin's debuginfod responder: "
                  "symbols.enable-external-lookup off, or an "
                  "LLDB without libcurl";
        lines.push_back(
            "hint: " + m.name + ": SFrame debug file added only at this stop (" + why +
            "), so functions LLDB already unwound keep their plans; for full coverage run 'sframe "
            "cover' right after creating the target, before 'run' or loading a core");
    }
    return lines;
}

std::vector<ModuleCoverage> Coverage::report(lldb::SBTarget& target) {
    std::vector<ModuleCoverage> out;
    for (const TargetModule& m : catalog_.modules(target))
        out.push_back(examine(m, std::nullopt));
    return out;
}

} // namespace sfunwind::lldb_plugin

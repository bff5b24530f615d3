// SPDX-License-Identifier: MIT
#include "coverage.hpp"

#include "needed_libraries.hpp"
#include "sb_target.hpp"

#include <lldb/API/SBCommandInterpreter.h>
#include <lldb/API/SBCommandReturnObject.h>
#include <lldb/API/SBExecutionContext.h>
#include <lldb/API/SBEvent.h>
#include <lldb/API/SBFile.h>
#include <lldb/API/SBFileSpec.h>
#include <lldb/API/SBProcess.h>
#include <lldb/API/SBStringList.h>

#include <cstdio>
#include <filesystem>
#include <system_error>

namespace sfunwind::lldb_plugin {
namespace {

std::string spec_path(const lldb::SBFileSpec& spec) {
    if (!spec.IsValid()) return {};
    char buf[4096];
    const std::uint32_t n = spec.GetPath(buf, sizeof buf);
    return n > 0 && n < sizeof buf ? std::string(buf, n) : std::string();
}

bool same_file(const std::string& a, const std::string& b) {
    if (a.empty() || b.empty()) return false;
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
        while (k < all.size() && all[k] >= '0' && all[k] <= '9') ++k;
        if (k > at + 1 && all.compare(k, 3, "]: ") == 0) markers.emplace_back(at, k + 3 - at);
    }
    std::vector<std::string> out;
    for (std::size_t i = 0; i < markers.size(); ++i) {
        const std::size_t from = markers[i].first + markers[i].second;
        const std::size_t to = i + 1 < markers.size() ? markers[i + 1].first : all.size();
        std::string d = all.substr(from, to - from);
        while (!d.empty() && (d.back() == ' ' || d.back() == '\t' || d.back() == '\n')) d.pop_back();
        if (d.size() >= 2 && d.front() == '"' && d.back() == '"') d = d.substr(1, d.size() - 2);
        if (!d.empty()) out.push_back(d);
    }
    return out;
}

bool run_command(lldb::SBDebugger& debugger, lldb::SBTarget target, const std::string& command, std::string* error) {
    lldb::SBCommandReturnObject result;
    lldb::SBExecutionContext context(target);
    debugger.GetCommandInterpreter().HandleCommand(command.c_str(), context, result, false);
    if (!result.Succeeded() && error != nullptr)
        *error = result.GetError() != nullptr ? result.GetError() : "failed";
    return result.Succeeded();
}

} // namespace

const char* to_string(ModuleCoverage::State state) noexcept {
    switch (state) {
    case ModuleCoverage::State::NoSframe: return "no-sframe";
    case ModuleCoverage::State::Failed: return "failed";
    case ModuleCoverage::State::Generated: return "generated";
    case ModuleCoverage::State::InUse: return "in-use";
    }
    return "?";
}

bool Coverage::enabled() const {
    const std::lock_guard lock(mutex_);
    return enabled_;
}

void Coverage::set_enabled(bool on) {
    const std::lock_guard lock(mutex_);
    enabled_ = on;
}

std::string Coverage::cache_dir() const {
    const std::lock_guard lock(mutex_);
    return cache_->dir();
}

void Coverage::set_cache_dir(lldb::SBDebugger& debugger, const std::string& dir) {
    {
        const std::lock_guard lock(mutex_);
        cache_ = std::make_unique<DebugFileCache>(dir);
        // Settings belong to a debugger: each gets the path once.
        if (!search_paths_set_.insert(std::to_string(debugger.GetID()) + '\n' + dir).second) return;
    }
    // Target settings live in each target and in the debugger's global
    // defaults, which targets created later copy: set both. The defaults are
    // only reachable without an execution context, which HandleCommand
    // always supplies, hence SetInternalVariable (an assignment: the list is
    // rebuilt with the directory added).
    const char* name = "target.debug-file-search-paths";
    std::string value;
    for (const auto& d : setting_paths(name, debugger.GetInstanceName()))
        if (d != dir) value += lldb_quoted(d) + " ";
    value += lldb_quoted(dir);
    lldb::SBDebugger::SetInternalVariable(name, value.c_str(), debugger.GetInstanceName());
    for (std::uint32_t i = 0; i < debugger.GetNumTargets(); ++i)
        run_command(debugger, debugger.GetTargetAtIndex(i),
                    "settings append target.debug-file-search-paths " + lldb_quoted(dir), nullptr);
}

void Coverage::initialize(lldb::SBDebugger& debugger) {
    set_cache_dir(debugger, cache_dir());
    {
        const std::lock_guard lock(listener_mutex_);
        if (!debuggers_.insert(debugger.GetID()).second) return; // the plugin was loaded twice
        debugger.AddDestroyCallback(&Coverage::debugger_destroyed, this);
        if (!listener_) {
            listener_ = std::make_unique<lldb::SBListener>("sfunwind.coverage");
            stop_listener_ = false;
            listener_thread_ = std::thread([this] { listen(); });
        }
        listener_->StartListeningForEventClass(debugger, lldb::SBTarget::GetBroadcasterClassName(),
                                               lldb::SBTarget::eBroadcastBitModulesLoaded);
    }
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

void Coverage::listen() {
    while (!stop_listener_) {
        lldb::SBEvent event;
        if (!listener_->WaitForEvent(1, event) || !event.IsValid()) continue;
        if (!lldb::SBTarget::EventIsTargetEvent(event)) continue;
        lldb::SBTarget target = lldb::SBTarget::GetTargetFromEvent(event);
        if (!target.IsValid()) continue;
        // Not while a process starts or runs: SB calls from this thread then
        // raced with the launch (LLDB 19 reported its launch stop as a
        // SIGSTOP at _start, measured). The stop hook covers those modules.
        if (lldb::SBProcess process = target.GetProcess(); process.IsValid()) continue;
        lldb::SBDebugger debugger = target.GetDebugger();
        try {
            generate(debugger, target);
        } catch (...) {
            // A failure here must not end the thread, let alone LLDB.
        }
    }
}

void Coverage::stop_listening() {
    std::thread t;
    {
        const std::lock_guard lock(listener_mutex_);
        stop_listener_ = true;
        t = std::move(listener_thread_);
    }
    if (t.joinable() && t.get_id() != std::this_thread::get_id()) t.join();
    const std::lock_guard lock(listener_mutex_);
    listener_.reset();
}

void Coverage::debugger_destroyed(lldb::user_id_t id, void* baton) {
    auto* self = static_cast<Coverage*>(baton);
    bool last = false;
    {
        const std::lock_guard lock(self->listener_mutex_);
        self->debuggers_.erase(id);
        last = self->debuggers_.empty();
    }
    if (last) self->stop_listening();
}

std::string Coverage::separate_debug_file(lldb::SBDebugger& debugger, const ModuleFile& file) const {
    const auto id = file.elf ? file.elf->build_id() : std::nullopt;
    if (!id || id->size() < 2) return {};
    const std::string hex_id = build_id_hex(*id);
    const std::string rel = "/.build-id/" + hex_id.substr(0, 2) + "/" + hex_id.substr(2) + ".debug";
    std::vector<std::string> dirs = setting_paths("target.debug-file-search-paths", debugger.GetInstanceName());
    dirs.emplace_back("/usr/lib/debug");
    const std::string ours = cache_dir();
    for (const auto& d : dirs) {
        if (same_file(d, ours)) continue;
        const std::string candidate = d + rel;
        std::error_code ec;
        if (std::filesystem::exists(candidate, ec)) return candidate;
    }
    return {};
}

void Coverage::generate(lldb::SBDebugger& debugger, lldb::SBTarget& target) {
    if (!enabled() || !target.IsValid()) return;
    std::vector<TargetModule> modules = catalog_.module_files(target);
    // The libraries the program needs, which LLDB may not have added yet
    // (it adds them when the dynamic loader reports them, and looks for
    // their symbols at once).
    if (!modules.empty() && modules.front().file->elf) {
        for (const auto& lib : needed_libraries(*modules.front().file->elf, modules.front().path)) {
            TargetModule m;
            m.path = lib;
            m.name = std::filesystem::path(lib).filename().string();
            m.file = catalog_.file(lib, "");
            modules.push_back(std::move(m));
        }
    }
    for (const TargetModule& m : modules) {
        if (!m.file->section) continue;
        if (m.file->elf && m.file->elf->has_section(".debug_info") && lldb_major_version() < 23) continue;
        DebugFileCache* cache = nullptr;
        {
            const std::lock_guard lock(mutex_);
            cache = cache_.get();
        }
        auto entry = cache->ensure(*m.file, separate_debug_file(debugger, *m.file));
        if (entry && entry->generated_now) {
            const std::lock_guard lock(mutex_);
            generated_[entry->path] = *entry;
        }
    }
}

ModuleCoverage Coverage::examine(lldb::SBDebugger& debugger, const TargetModule& m, bool generate) {
    ModuleCoverage c;
    c.module = m.name;
    c.path = m.path;
    if (!m.file->section) {
        c.state = m.file->broken ? ModuleCoverage::State::Failed : ModuleCoverage::State::NoSframe;
        c.detail = m.file->problem;
        return c;
    }
    c.has_eh_frame = m.file->elf && m.file->elf->has_section(".eh_frame");
    DebugFileCache* cache = nullptr;
    {
        const std::lock_guard lock(mutex_);
        cache = cache_.get();
    }
    const std::string symbols = spec_path(m.module.GetSymbolFileSpec());
    const std::string own_debug_file = [&] {
        const auto id = m.file->elf ? m.file->elf->build_id() : std::nullopt;
        return id && !id->empty() ? cache->path_for(build_id_hex(*id)) : std::string();
    }();
    // A separate debug file LLDB found for the module (not ours) is the base
    // of ours, so that its DWARF stays.
    std::string base;
    if (!symbols.empty() && !same_file(symbols, m.path) && !same_file(symbols, own_debug_file))
        base = symbols;
    else if (generate)
        base = separate_debug_file(debugger, *m.file);
    // LLDB before 23 loads a symbol file for a module that has DWARF of its
    // own as a separate object whose sections never get load addresses:
    // breakpoints, variables and every frame above frame 0 break (measured
    // with LLDB 19; LLDB 23 merges the sections).
    if (m.file->elf && m.file->elf->has_section(".debug_info") && lldb_major_version() < 23 &&
        !same_file(symbols, own_debug_file)) {
        c.state = ModuleCoverage::State::Failed;
        c.detail = "the module carries its own DWARF, and LLDB " + std::to_string(lldb_major_version()) +
                   " cannot add a debug file to such a module without losing its section load addresses "
                   "(LLDB 23 can); move the module's DWARF into a separate debug file";
        return c;
    }
    if (generate) {
        auto entry = cache->ensure(*m.file, base);
        if (!entry) {
            c.state = ModuleCoverage::State::Failed;
            c.detail = entry.error().message();
            return c;
        }
        c.debug_file = entry->path;
        const std::lock_guard lock(mutex_);
        if (entry->generated_now) generated_[entry->path] = *entry;
    } else {
        const auto id = m.file->elf ? m.file->elf->build_id() : std::nullopt;
        if (!id || id->empty()) {
            c.state = ModuleCoverage::State::Failed;
            c.detail = "no GNU build-id";
            return c;
        }
        c.debug_file = cache->path_for(build_id_hex(*id));
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
    } else {
        c.state = ModuleCoverage::State::Generated;
        c.detail = symbols.empty() ? "LLDB has no symbol file for the module"
                                   : "LLDB's symbol file for the module is " + symbols;
    }
    return c;
}

std::vector<std::string> Coverage::install(lldb::SBDebugger& debugger, lldb::SBTarget& target, bool wait) {
    std::vector<std::string> lines;
    if (!enabled() || !target.IsValid()) return lines;
    std::unique_lock install_lock(install_mutex_, std::defer_lock);
    if (wait)
        install_lock.lock();
    else if (!install_lock.try_lock())
        return lines;
    // Files first, before anything below makes LLDB look for symbols: then
    // LLDB finds them itself where it had not looked yet.
    generate(debugger, target);
    for (const TargetModule& m : catalog_.modules(target)) {
        if (!m.file->section) continue;
        const std::string key = m.path + '\n' + m.uuid;
        ModuleCoverage c = examine(debugger, m, true);
        if (c.cache.generated_now && c.state != ModuleCoverage::State::Failed) {
            const std::lock_guard lock(mutex_);
            // Report each generation once: later examinations see the same entry.
            if (generated_[c.debug_file].generated_now) {
                char buf[256];
                std::snprintf(buf, sizeof buf, "%llu bytes of .debug_frame from %llu bytes of SFrame, %.1f ms",
                              static_cast<unsigned long long>(c.cache.debug_frame_bytes),
                              static_cast<unsigned long long>(c.cache.sframe_bytes), c.cache.milliseconds);
                lines.push_back("generated " + c.debug_file + " for " + m.name + " (" + buf + ")");
                generated_[c.debug_file].generated_now = false;
            }
        }
        if (c.state == ModuleCoverage::State::Failed) {
            const std::lock_guard lock(mutex_);
            if (failures_.emplace(key, c.detail).second) lines.push_back(m.name + ": not covered: " + c.detail);
            continue;
        }
        if (c.state != ModuleCoverage::State::Generated) continue;
        // Ours replaces LLDB's symbol file: the module itself, or a separate
        // debug file ours was copied from (examine() used it as the base).
        std::string error;
        bool added = run_command(debugger, target, "target symbols add " + lldb_quoted(c.debug_file), &error);
        // LLDB matches the file to modules by UUID; when two modules share
        // it (a library seen before under another path), name the module.
        if (!added && error.find("multiple modules match") != std::string::npos) {
            error.clear();
            added = run_command(debugger, target,
                                "target symbols add --shlib " + lldb_quoted(m.path) + " " + lldb_quoted(c.debug_file),
                                &error);
        }
        if (!added && error.find("invalid target") != std::string::npos) return lines; // deleted meanwhile
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
        lines.push_back(m.name + ": LLDB now reads " + c.debug_file + " (target symbols add)");
    }
    return lines;
}

std::vector<ModuleCoverage> Coverage::report(lldb::SBTarget& target) {
    std::vector<ModuleCoverage> out;
    lldb::SBDebugger debugger = target.GetDebugger();
    for (const TargetModule& m : catalog_.modules(target)) out.push_back(examine(debugger, m, false));
    return out;
}

} // namespace sfunwind::lldb_plugin

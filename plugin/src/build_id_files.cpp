// SPDX-License-Identifier: MIT
#include "build_id_files.hpp"

#include "core_files.hpp"
#include "elf_probe.hpp"
#include "mapped_files.hpp"

#include <sys/stat.h>

namespace sfunwind::lldb_plugin {

BuildIdFiles::FileInfo* BuildIdFiles::info(const std::string& path) {
    struct stat st {};
    if (::stat(path.c_str(), &st) != 0 || !S_ISREG(st.st_mode)) return nullptr;
    const FileKey key{static_cast<std::uint64_t>(st.st_dev), static_cast<std::uint64_t>(st.st_ino),
                      static_cast<std::int64_t>(st.st_size),
                      static_cast<std::int64_t>(st.st_mtim.tv_sec) * 1'000'000'000 +
                          st.st_mtim.tv_nsec};
    auto it = files_.find(key);
    if (it == files_.end()) {
        // One open for most files: LLDB's process maps about 150, and each
        // is looked at by the first request. A core file has no build-id
        // note of its own (its notes are the kernel's or GDB's), and
        // whether a file has SFrame is asked only of one with the build-id
        // asked for (has_sframe_of()).
        FileInfo fi;
        if (auto id = read_build_id(path))
            fi.build_id = std::move(*id);
        else
            fi.core = is_core_file(path);
        if (fi.core)
            if (auto names = core_file_names(path)) fi.named = std::move(*names);
        it = files_.emplace(key, std::move(fi)).first;
    }
    return &it->second;
}

bool BuildIdFiles::has_sframe_of(const std::string& path, FileInfo& fi) {
    if (!fi.sframe) fi.sframe = has_sframe(path);
    return *fi.sframe;
}

bool BuildIdFiles::matches(const std::string& path, const std::string& build_id) {
    const FileInfo* fi = info(path);
    return fi != nullptr && fi->build_id == build_id;
}

const std::vector<std::string>& BuildIdFiles::debugged() {
    // Only a descendant (LLDB's lldb-server) debugs, so the list changes
    // with them: a launch or an attach starts one. The second bounds what a
    // tracee added by a running lldb-server (a followed fork) waits for.
    constexpr auto reuse_for = std::chrono::seconds(1);
    const auto now = std::chrono::steady_clock::now();
    const auto descendants = descendant_processes();
    // Without the children lists (no descendants), every request reads
    // /proc again.
    if (descendants && debugged_at_ && *descendants == debugged_descendants_ &&
        now - *debugged_at_ < reuse_for)
        return debugged_;
    debugged_ = debugged_processes();
    debugged_descendants_ = descendants.value_or(std::vector<long>{});
    debugged_at_ = now;
    return debugged_;
}

BuildIdFiles::Found BuildIdFiles::find(const std::string& build_id) {
    if (build_id.empty()) return {};
    const std::lock_guard lock(mutex_);
    // The first candidate with SFrame; else the first with the build-id. A
    // separate debug file of the module (LLDB maps the ones it reads) has
    // the build-id but not the SFrame bytes.
    Found first;
    const auto found = [&](const std::string& path) {
        FileInfo* fi = info(path);
        const Found f{path, fi != nullptr && has_sframe_of(path, *fi)};
        if (first.path.empty()) first = f;
        return f.sframe;
    };
    for (const auto& path : remembered_)
        if (matches(path, build_id) && found(path)) return Found{path, true};
    std::vector<std::string> named;
    for (const auto& path : mapped_files("self")) {
        const FileInfo* fi = info(path);
        if (fi == nullptr) continue;
        if (fi->build_id == build_id && found(path)) return Found{path, true};
        if (fi->core) named.insert(named.end(), fi->named.begin(), fi->named.end());
    }
    for (const auto& path : named)
        if (matches(path, build_id) && found(path)) return Found{path, true};
    for (const auto& pid : debugged())
        for (const auto& path : mapped_files(pid))
            if (matches(path, build_id) && found(path)) return Found{path, true};
    return first;
}

void BuildIdFiles::remember(const std::string& path) {
    if (path.empty() || path.front() != '/') return;
    const std::lock_guard lock(mutex_);
    if (!remembered_set_.insert(path).second) return;
    remembered_.insert(remembered_.begin(), path);
}

} // namespace sfunwind::lldb_plugin

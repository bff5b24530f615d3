// SPDX-License-Identifier: MIT
// Which local file has a given GNU build-id: LLDB's debuginfod client asks
// for a debug file by build-id alone (GET /buildid/ID/debuginfo, see
// debuginfod_responder.hpp), and the debug file is made from the module.
//
// The module LLDB asks about is not always mapped in LLDB's own process when
// it asks (LLDB 19 reads a program's headers into memory, looks for its
// symbols, and maps it later: measured), so the candidates are, in order:
//  - paths the plugin was told about (`target create` arguments, the
//    libraries a program needs, the files a core names);
//  - the files LLDB has mapped, and the files each mapped core names;
//  - the files mapped by the processes LLDB debugs (mapped_files.hpp), where
//    a library the dynamic loader just reported already is.
// Each file is looked at once per (device, inode, size, mtime), through
// elf_probe.hpp.
#pragma once

#include <chrono>
#include <cstdint>
#include <map>
#include <mutex>
#include <optional>
#include <set>
#include <string>
#include <tuple>
#include <vector>

namespace sfunwind::lldb_plugin {

class BuildIdFiles {
  public:
    struct Found {
        std::string path;    // empty when no candidate has the build-id
        bool sframe = false; // the file has SFrame
    };
    // A readable regular file whose build-id is `build_id` (lowercase hex).
    // Thread-safe.
    Found find(const std::string& build_id);
    // One more candidate, searched first from now on.
    void remember(const std::string& path);

  private:
    // What identifies one version of a file on disk.
    using FileKey = std::tuple<std::uint64_t, std::uint64_t, std::int64_t,
                               std::int64_t>; // dev, inode, size, mtime ns
    struct FileInfo {
        std::string build_id;           // empty when the file has none
        std::optional<bool> sframe;     // whether it has SFrame, once asked
        bool core = false;              // an ELF core file
        std::vector<std::string> named; // a core's NT_FILE names
    };

    // The file's info, read once per version; null when it is no regular file.
    FileInfo* info(const std::string& path);
    // debugged_processes(), read again only when this process's descendants
    // changed or a second passed since (mutex_ held): LLDB asks about every
    // module it loads, one after another, and most are answered only after
    // every candidate was looked at (a module without SFrame, the vdso).
    const std::vector<std::string>& debugged();
    // Whether the file of `fi` has SFrame, read the first time it is asked.
    static bool has_sframe_of(const std::string& path, FileInfo& fi);
    bool matches(const std::string& path, const std::string& build_id);

    std::mutex mutex_;
    std::map<FileKey, FileInfo> files_;
    std::vector<std::string> remembered_; // most recent first
    std::vector<std::string> debugged_;
    std::vector<long> debugged_descendants_;
    std::optional<std::chrono::steady_clock::time_point> debugged_at_;
    std::set<std::string> remembered_set_;
};

} // namespace sfunwind::lldb_plugin

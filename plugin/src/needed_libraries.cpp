// SPDX-License-Identifier: MIT
#include "needed_libraries.hpp"

#include <deque>
#include <filesystem>
#include <set>
#include <system_error>

namespace sfunwind::lldb_plugin {
namespace {

constexpr std::size_t max_libraries = 64;

struct Dynamic {
    std::vector<std::string> needed;
    std::vector<std::string> search; // RUNPATH, or RPATH when there is none
};

std::vector<std::string> split_path(const std::string& list, const std::string& origin) {
    std::vector<std::string> out;
    std::size_t start = 0;
    while (start <= list.size()) {
        std::size_t end = list.find(':', start);
        if (end == std::string::npos) end = list.size();
        std::string dir = list.substr(start, end - start);
        for (const char* token : {"$ORIGIN", "${ORIGIN}"}) {
            const std::string t = token;
            for (std::size_t at = dir.find(t); at != std::string::npos; at = dir.find(t))
                dir.replace(at, t.size(), origin);
        }
        if (!dir.empty()) out.push_back(dir);
        start = end + 1;
    }
    return out;
}

// DT_NEEDED and the search path of one ELF file (RUNPATH, else RPATH). Only
// the dynamic section and its strings are read, not the whole file: the
// program of a big application is tens of MB.
Dynamic read_dynamic(const elf::ElfFile& file, const std::string& origin) {
    const elf::DynamicInfo info = file.dynamic_info();
    Dynamic d;
    d.needed = info.needed;
    d.search = split_path(!info.runpath.empty() ? info.runpath : info.rpath, origin);
    return d;
}

} // namespace

std::vector<NeededLibrary> needed_libraries(const elf::ElfFile& program, const std::string& path) {
    const std::vector<std::string> system_dirs = {"/lib/x86_64-linux-gnu",
                                                  "/usr/lib/x86_64-linux-gnu",
                                                  "/lib/aarch64-linux-gnu",
                                                  "/usr/lib/aarch64-linux-gnu",
                                                  "/lib/s390x-linux-gnu",
                                                  "/usr/lib/s390x-linux-gnu",
                                                  "/lib64",
                                                  "/usr/lib64",
                                                  "/lib",
                                                  "/usr/lib"};
    std::vector<NeededLibrary> out;
    std::set<std::string> seen_names;
    std::deque<std::pair<Dynamic, std::string>>
        queue; // (its dynamic section, the file's directory)
    queue.emplace_back(read_dynamic(program, std::filesystem::path(path).parent_path().string()),
                       "");
    while (!queue.empty() && out.size() < max_libraries) {
        const Dynamic d = std::move(queue.front().first);
        queue.pop_front();
        for (const auto& name : d.needed) {
            if (!seen_names.insert(name).second) continue;
            std::vector<std::string> dirs = d.search;
            dirs.insert(dirs.end(), system_dirs.begin(), system_dirs.end());
            for (const auto& dir : dirs) {
                std::string candidate = dir;
                candidate += '/';
                candidate += name;
                std::error_code ec;
                if (!std::filesystem::is_regular_file(candidate, ec)) continue;
                NeededLibrary& found = out.emplace_back(NeededLibrary{candidate, nullptr});
                // One descriptor for the headers and the dynamic section.
                if (auto lib = elf::ElfFile::open(candidate, true)) {
                    queue.emplace_back(
                        read_dynamic(*lib, std::filesystem::path(candidate).parent_path().string()),
                        "");
                    lib->close_descriptor();
                    found.file = std::make_shared<const elf::ElfFile>(std::move(*lib));
                }
                break;
            }
        }
    }
    return out;
}

} // namespace sfunwind::lldb_plugin

// SPDX-License-Identifier: MIT
#include "mapped_files.hpp"

#include <filesystem>
#include <fstream>
#include <map>
#include <set>
#include <string_view>
#include <system_error>
#include <unistd.h>

namespace sfunwind::lldb_plugin {
namespace {

// A decimal /proc field, or -1.
long field(const std::string& status, std::string_view name) {
    const std::size_t at = status.find(name);
    if (at == std::string::npos) return -1;
    long v = 0;
    bool any = false;
    for (std::size_t i = at + name.size(); i < status.size(); ++i) {
        const char c = status[i];
        if (c == ' ' || c == '\t') {
            if (any) break;
            continue;
        }
        if (c < '0' || c > '9' || v > 1'000'000'000L) break;
        v = v * 10 + (c - '0');
        any = true;
    }
    return any ? v : -1;
}

} // namespace

std::vector<std::string> mapped_files(const std::string& pid) {
    std::vector<std::string> out;
    std::set<std::string> seen;
    std::ifstream maps("/proc/" + pid + "/maps");
    std::string line;
    // "start-end perms offset dev inode   path": the path runs to the end of
    // the line and may hold spaces.
    while (std::getline(maps, line)) {
        std::size_t at = 0;
        for (int f = 0; f < 5 && at != std::string::npos; ++f) {
            at = line.find_first_not_of(' ', at);
            if (at != std::string::npos) at = line.find(' ', at);
        }
        if (at == std::string::npos) continue;
        at = line.find_first_not_of(' ', at);
        if (at == std::string::npos || line[at] != '/') continue; // anonymous, [heap], [vdso], ...
        std::string path = line.substr(at);
        // Replaced or removed since it was mapped: the name now belongs to
        // another file or to none.
        constexpr std::string_view deleted = " (deleted)";
        if (path.size() >= deleted.size() &&
            path.compare(path.size() - deleted.size(), deleted.size(), deleted) == 0)
            continue;
        if (seen.insert(path).second) out.push_back(std::move(path));
    }
    return out;
}

std::vector<std::string> debugged_processes() {
    std::map<long, long> parent;
    std::map<long, long> tracer;
    std::error_code ec;
    for (std::filesystem::directory_iterator it("/proc", ec), end; !ec && it != end;
         it.increment(ec)) {
        const std::string name = it->path().filename().string();
        if (name.empty() || name.find_first_not_of("0123456789") != std::string::npos ||
            name.size() > 9)
            continue;
        std::ifstream in(it->path() / "status");
        const std::string status((std::istreambuf_iterator<char>(in)),
                                 std::istreambuf_iterator<char>());
        const long pid = std::stol(name);
        parent[pid] = field(status, "\nPPid:");
        tracer[pid] = field(status, "\nTracerPid:");
    }
    std::set<long> ours{static_cast<long>(::getpid())};
    // Descendants: repeat until no process is added (a tree of at most
    // parent.size() levels; each pass adds at least one or stops).
    for (bool grew = true; grew;) {
        grew = false;
        for (const auto& [pid, ppid] : parent)
            if (ours.count(ppid) != 0 && ours.insert(pid).second) grew = true;
    }
    std::vector<std::string> out;
    for (const auto& [pid, ppid] : parent) {
        const bool descendant = ours.count(pid) != 0 && pid != static_cast<long>(::getpid());
        const bool traced = tracer[pid] > 0 && ours.count(tracer[pid]) != 0;
        if (descendant || traced) out.push_back(std::to_string(pid));
    }
    return out;
}

std::optional<std::vector<long>> descendant_processes() {
    // Breadth first, each process once: a bounded walk whatever the lists
    // say (the kernel gives a tree; a pid reused meanwhile could repeat).
    constexpr std::size_t max_processes = 1U << 16;
    const long self = static_cast<long>(::getpid());
    std::set<long> found;
    std::vector<long> queue{self};
    bool self_listed = false;
    for (std::size_t next = 0; next < queue.size() && found.size() < max_processes; ++next) {
        const long pid = queue[next];
        std::error_code ec;
        const std::string tasks = "/proc/" + std::to_string(pid) + "/task";
        for (std::filesystem::directory_iterator it(tasks, ec), end; !ec && it != end;
             it.increment(ec)) {
            std::ifstream in(it->path() / "children");
            if (!in) continue;
            if (pid == self) self_listed = true;
            for (long child = 0; in >> child;)
                if (child > 0 && child != self && found.insert(child).second)
                    queue.push_back(child);
        }
    }
    if (!self_listed) return std::nullopt;
    return std::vector<long>(found.begin(), found.end());
}

} // namespace sfunwind::lldb_plugin

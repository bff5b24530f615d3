// SPDX-License-Identifier: MIT
// /proc/PID/maps of a live process (proc(5)).
#pragma once

#include "sfunwind/error.hpp"

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <sys/types.h>
#include <vector>

namespace sfunwind::cli::bt {

struct MapEntry {
    std::uint64_t start = 0;
    std::uint64_t end = 0;
    std::uint64_t offset = 0; // file offset of `start`
    std::string perms;        // "r-xp"
    std::string dev;          // "fd:01"
    std::uint64_t inode = 0;
    std::string path;     // file path, "[vdso]", "[stack]", or empty
    bool deleted = false; // the file was unlinked (" (deleted)" suffix)

    bool executable() const { return perms.size() > 2 && perms[2] == 'x'; }
};

// One line; nullopt when it does not have the proc(5) shape.
std::optional<MapEntry> parse_maps_line(std::string_view line);

// Errors name the pid.
Expected<std::vector<MapEntry>> read_proc_maps(pid_t pid);

} // namespace sfunwind::cli::bt

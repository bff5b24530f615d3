// SPDX-License-Identifier: MIT
// The size limit of the plugin's debug-file cache (debug_file_cache.hpp).
// An entry is a debug file (DIR/.build-id/xx/yyyy.debug) and its stamp
// (yyyy.debug.stamp); its last use is the later of their modification times
// (the cache touches the stamp whenever it hands the file out, and never the
// debug file, whose time LLDB may compare). When the entries together
// exceed the limit, the least recently used are removed until they fit.
// Entries in use by this process are never removed: a file LLDB was told
// about must stay until LLDB has read it, so the limit can be exceeded by
// what one session needs. Another process's entries have no such
// protection; a removed file is regenerated when next asked for.
//
// No LLDB dependency: the unit tests exercise it directly.
#pragma once

#include "sfunwind/error.hpp"

#include <cstdint>
#include <set>
#include <string>
#include <vector>

namespace sfunwind::lldb_plugin {

// 1 GiB.
inline constexpr std::uint64_t default_cache_limit = std::uint64_t{1} << 30;

// A size as the settings take it: a decimal count of bytes with an optional
// binary suffix K, M, G or T (KiB/MiB/... and KB/MB/... read the same,
// powers of 1024; case-insensitive); "0" means no limit. Errors quote the
// text.
Expected<std::uint64_t> parse_size(const std::string& text);

// "1 GiB", "512 MiB", "1536 KiB", "100 bytes", or "no limit" for 0: the
// largest unit that divides the size.
std::string format_size(std::uint64_t bytes);

// The limit of a new cache: $SFUNWIND_LLDB_CACHE_LIMIT when set (a malformed
// value is an error naming the variable), else default_cache_limit.
Expected<std::uint64_t> cache_limit_from_environment();

struct Eviction {
    std::uint64_t bytes_before = 0; // the entries' total size before
    std::uint64_t bytes_after = 0;
    std::vector<std::string> removed; // the debug files removed, oldest first
    std::vector<std::string> errors;  // entries that could not be removed, and why
};

// Removes the least recently used entries under `dir` until their total is
// at most `limit` (0: no limit), never one whose debug file is in `keep`.
Eviction evict_to_limit(const std::string& dir, std::uint64_t limit,
                        const std::set<std::string>& keep);

} // namespace sfunwind::lldb_plugin

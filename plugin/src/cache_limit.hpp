// SPDX-License-Identifier: MIT
// The size limit of the plugin's debug-file cache (debug_file_cache.hpp).
// An entry is a debug file (DIR/.build-id/xx/yyyy.debug) and its stamp
// (yyyy.debug.stamp); its last use is the later of their modification times
// (the cache touches the stamp whenever it hands the file out, and never the
// debug file, whose time LLDB may compare). When the entries together
// exceed the limit, the least recently used are removed until they fit.
// Entries in use are never removed: a file LLDB was told about must stay
// until LLDB has read it, so the limit can be exceeded by what the sessions
// need. A process marks the files it uses with a shared flock(2) on each
// (EntryHold); an eviction, in whichever process, takes an exclusive lock
// without waiting and leaves an entry it cannot lock in place. This
// process's own files are also protected by path (`keep`), which still
// works where the file system has no flock. A removed file is regenerated
// when next asked for.
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

// How long EntryHold::take waits for an eviction's exclusive lock to end.
inline constexpr unsigned hold_wait_ms = 2000;

// A shared flock(2) on a cache entry's debug file, held for as long as this
// process uses the file: evict_to_limit, in any process, leaves the entry
// in place while a hold on it exists. The lock belongs to the open file
// description (flock(2)), so it follows the inode, also across a rename,
// and ends when the hold is destroyed or the process exits.
class EntryHold {
  public:
    EntryHold() = default; // holds nothing
    EntryHold(EntryHold&& other) noexcept;
    EntryHold& operator=(EntryHold&& other) noexcept;
    EntryHold(const EntryHold&) = delete;
    EntryHold& operator=(const EntryHold&) = delete;
    ~EntryHold();

    // Opens `debug_file` and takes the shared lock. That waits only while
    // an eviction holds its exclusive lock around the unlink, and at most
    // hold_wait_ms: an evicting process stopped mid-unlink must not stop
    // this one. Errors (Errc::Io) name the file and the system's reason;
    // a file system without flock gives one (ENOLCK, EOPNOTSUPP, ...).
    static Expected<EntryHold> take(const std::string& debug_file);

    bool held() const noexcept { return fd_ >= 0; }
    // Whether `path` names the file this hold locked (same st_dev and
    // st_ino): false once it was removed, or replaced by a rename, which
    // can happen between the open and the lock.
    bool names(const std::string& path) const;
    void release() noexcept;

  private:
    explicit EntryHold(int fd) noexcept : fd_(fd) {}
    int fd_ = -1;
};

struct Eviction {
    std::uint64_t bytes_before = 0; // the entries' total size before
    std::uint64_t bytes_after = 0;
    std::vector<std::string> removed; // the debug files removed, oldest first
    std::vector<std::string> busy;    // in use by a process (an EntryHold), left in place
    std::vector<std::string> errors;  // entries that could not be removed, and why
};

// Removes the least recently used entries under `dir` until their total is
// at most `limit` (0: no limit), never one whose debug file is in `keep`
// nor one held by an EntryHold (of any process, this one included: two
// open files' flocks conflict even in one process).
Eviction evict_to_limit(const std::string& dir, std::uint64_t limit,
                        const std::set<std::string>& keep);

} // namespace sfunwind::lldb_plugin

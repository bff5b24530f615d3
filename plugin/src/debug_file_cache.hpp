// SPDX-License-Identifier: MIT
// The cache of generated debug files: for each module with SFrame, a copy of
// the module with a .debug_frame translated from its SFrame rows and a symbol
// for every FDE (core: cfi::write_debug_frame, elf::write_debug_file), stored
// under the module's build-id in the layout LLDB searches
// (DIR/.build-id/xx/yyyyyyyy.debug, target.debug-file-search-paths).
//
// A stamp file next to each debug file records the generator version and a
// hash of the SFrame bytes it was made from, so a rebuilt module with a
// reused build-id is regenerated. Writes go to a temporary name and are
// renamed into place, so a concurrent reader never sees half a file.
#pragma once

#include "module_catalog.hpp"
#include "sfunwind/error.hpp"

#include <cstdint>
#include <mutex>
#include <string>

namespace sfunwind::lldb_plugin {

struct CacheEntry {
    std::string path;           // the debug file
    bool generated_now = false; // false: it was already in the cache
    double milliseconds = 0;    // time to translate and write (when generated now)
    std::uint64_t sframe_bytes = 0;
    std::uint64_t debug_frame_bytes = 0;
    std::uint64_t functions = 0;     // DWARF FDEs written
    std::uint64_t symbols_added = 0; // function symbols added for FDEs without one
    std::uint64_t skipped_fdes = 0;  // SFrame FDEs that could not be read
    std::string first_skipped;       // why the first of them could not
};

// The directory used when none is configured: $SFUNWIND_LLDB_CACHE, else
// $XDG_CACHE_HOME/sfunwind/lldb, else $HOME/.cache/sfunwind/lldb.
std::string default_cache_dir();

// Lowercase hex of a build-id.
std::string build_id_hex(const std::vector<std::uint8_t>& id);

class DebugFileCache {
  public:
    explicit DebugFileCache(std::string dir) : dir_(std::move(dir)) {}

    const std::string& dir() const noexcept { return dir_; }
    // Where the debug file of a build-id goes.
    std::string path_for(const std::string& build_id) const;
    // The debug file for a module with SFrame, generated if missing or stale.
    // `base` is the file to copy: the module's existing separate debug file
    // (so its DWARF stays usable), or empty for the module itself.
    // Errc::NotFound when the module has no build-id (LLDB could not match it).
    Expected<CacheEntry> ensure(const elf::ModuleRows& file, const std::string& base = {});

  private:
    std::string dir_;
    std::mutex mutex_; // one generation at a time per process
};

} // namespace sfunwind::lldb_plugin

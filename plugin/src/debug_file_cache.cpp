// SPDX-License-Identifier: MIT
#include "debug_file_cache.hpp"

#include "sfunwind/callee_saved/debug_frame_rules.hpp"
#include "sfunwind/callee_saved/function_rules.hpp"
#include "sfunwind/cfi/dwarf_writer.hpp"
#include "sfunwind/elf/debug_file_writer.hpp"

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <optional>
#include <sstream>
#include <string_view>
#include <system_error>
#include <unistd.h>
// xxHash compiled in: no library for LLDB to load with the plugin.
#define XXH_INLINE_ALL
#include <xxhash.h>

namespace sfunwind::lldb_plugin {
namespace {

// Bump when the generated files change meaning, so old caches are redone.
constexpr int generator_version = 9;

// The fewest symbols for which a debug file gets the empty compile unit
// (elf::DebugFileContents::compile_unit_min_symbols). Measured with LLDB 19's
// `statistics dump` (README, "LLDB's debug files"): the unit spares LLDB the
// second parse of the symbols, 2-3 us a symbol (7.6 ms over a module of
// 2,558), and costs it the indexing of one more DWARF unit, 0.7 ms a module
// whatever its size (300 libraries of 25 symbols each: 216 ms of index time
// for 15 ms of parsing spared, and their first backtrace 1.27x slower).
// Even at about 250-350 symbols.
constexpr std::size_t compile_unit_min_symbols = 300;

std::string env(const char* name) {
    const char* v = std::getenv(name);
    return v != nullptr ? std::string(v) : std::string();
}

// The SFrame bytes' hash and size in a stamp: the hash detects a different
// section under the same build-id, not an adversary. XXH3 (64 bits) reads 8
// bytes a step: a byte-at-a-time FNV-1a took 2.7 ms for the big program's
// 2.6 MB of .sframe, XXH3 0.15 ms, and every session checks each module's
// stamp. The bytes are read a piece at a time from the file and not kept
// (ElfFile::scan_sframe): a warm session reads only the FREs it unwinds
// with, and kept whole, the big program's sections were 2 MB of LLDB's
// resident memory.
struct SframeDigest {
    std::uint64_t hash = 0;
    std::uint64_t size = 0;
};

Expected<SframeDigest> sframe_digest(const elf::ElfFile& file, const elf::SframeLocation& where) {
    // XXH3's streaming state gives the one-shot function's value.
    XXH3_state_t state;
    XXH3_INITSTATE(&state);
    XXH3_64bits_reset(&state);
    SframeDigest d;
    auto st = file.scan_sframe(where, [&](std::span<const std::uint8_t> piece) {
        XXH3_64bits_update(&state, piece.data(), piece.size());
        d.size += piece.size();
    });
    if (!st) return std::move(st).error();
    d.hash = XXH3_64bits_digest(&state);
    return d;
}

std::string stamp_text(const SframeDigest& sframe, const std::string& base, bool callee_saved) {
    char buf[96];
    std::snprintf(buf, sizeof buf, "sfunwind-lldb-debug-file %d %016llx %llu ", generator_version,
                  static_cast<unsigned long long>(sframe.hash),
                  static_cast<unsigned long long>(sframe.size));
    std::string s = buf;
    // The rules depend on the analysis's version too.
    s += callee_saved ? "callee-saved " + std::to_string(callee_saved::analysis_version) + " "
                      : "no-callee-saved ";
    if (!base.empty()) {
        std::error_code ec;
        const auto size = std::filesystem::file_size(base, ec);
        const auto mtime = std::filesystem::last_write_time(base, ec).time_since_epoch().count();
        s += "base " + base + " " + std::to_string(size) + " " + std::to_string(mtime);
    }
    return s + "\n";
}

std::string read_small_file(const std::string& path) {
    std::ifstream in(path);
    std::stringstream ss;
    ss << in.rdbuf();
    return ss.str();
}

std::string temporary_name(const std::string& final_path) {
    static std::atomic<unsigned> counter{0};
    return final_path + ".tmp." + std::to_string(::getpid()) + "." +
           std::to_string(counter.fetch_add(1));
}

// The file the callee-saved analysis reads the module's code from. The
// analysis reads every function's code into an ElfFile's image, where it
// stays as long as the file: the module's own file lives for the session
// (30 MB of code for the big program's three modules, bench/big_program).
// A file opened for the translation alone gives it back when the
// translation ends. It must be the same file: the same build-id and the
// same .sframe bytes (the rows the analysis anchors on); otherwise (or when
// it cannot be opened again) nullopt, and the module's own file is read.
std::optional<elf::ElfFile> translation_code_file(const elf::ModuleRows& module) {
    auto opened = elf::ElfFile::open(module.file->name());
    if (!opened || opened->build_id() != module.file->build_id()) return std::nullopt;
    const auto where = opened->find_sframe();
    if (!where) return std::nullopt;
    const auto bytes = opened->sframe_bytes(*where);
    const std::span<const std::uint8_t> own = module.sframe()->view().bytes();
    if (!bytes || !std::equal(bytes->begin(), bytes->end(), own.begin(), own.end()))
        return std::nullopt;
    return std::move(*opened);
}

} // namespace

std::string generator_text() {
    return "sfunwind LLDB plugin, debug file version " + std::to_string(generator_version);
}

bool is_generated(std::span<const std::uint8_t> generator_section) {
    static constexpr std::string_view prefix = "sfunwind LLDB plugin, ";
    return generator_section.size() >= prefix.size() &&
           std::equal(prefix.begin(), prefix.end(), generator_section.begin());
}

std::string default_cache_dir() {
    if (auto d = env("SFUNWIND_LLDB_CACHE"); !d.empty()) return d;
    if (auto d = env("XDG_CACHE_HOME"); !d.empty()) return d + "/sfunwind/lldb";
    if (auto d = env("HOME"); !d.empty()) return d + "/.cache/sfunwind/lldb";
    return "/tmp/sfunwind-lldb-" + std::to_string(::getuid());
}

std::string build_id_hex(const std::vector<std::uint8_t>& id) {
    std::string s;
    for (const std::uint8_t b : id) {
        char buf[4];
        std::snprintf(buf, sizeof buf, "%02x", static_cast<unsigned>(b));
        s += buf;
    }
    return s;
}

DebugFileCache::DebugFileCache(std::string dir, std::optional<std::uint64_t> limit)
    : dir_(std::move(dir)) {
    if (limit) {
        limit_ = *limit;
    } else if (auto from_env = cache_limit_from_environment()) {
        limit_ = *from_env;
    } else {
        limit_problem_ =
            from_env.error().message() + "; the limit is " + format_size(default_cache_limit);
    }
}

Eviction DebugFileCache::trim() {
    const std::lock_guard lock(mutex_);
    return evict();
}

std::string DebugFileCache::hold_problem() {
    const std::lock_guard lock(mutex_);
    return hold_problem_;
}

std::uint64_t DebugFileCache::listings() {
    const std::lock_guard lock(mutex_);
    return listings_;
}

Eviction DebugFileCache::evict() {
    std::set<std::string> keep;
    for (const auto& [path, hold] : in_use_)
        keep.insert(keep.end(), path);
    Eviction out = evict_to_limit(dir_, limit_, keep);
    ++listings_;
    estimate_ = out.bytes_after;
    written_since_listing_ = 0;
    return out;
}

Eviction DebugFileCache::evict_if_due(std::uint64_t bytes) {
    const std::uint64_t limit = limit_;
    if (limit == 0) return {}; // no limit: nothing to list for
    if (estimate_) {
        *estimate_ += bytes;
        written_since_listing_ += bytes;
        if (*estimate_ <= limit && written_since_listing_ < limit / 16) return {};
    }
    return evict();
}

void DebugFileCache::note_unheld(const Error& why) {
    if (hold_problem_.empty()) hold_problem_ = why.message();
}

bool DebugFileCache::hold_existing(const std::string& path) {
    const auto it = in_use_.find(path);
    if (it != in_use_.end() && it->second.names(path)) return true;
    auto hold = EntryHold::take(path);
    if (hold) {
        if (!hold->names(path)) return false;
        in_use_.insert_or_assign(path, std::move(*hold));
        return true;
    }
    std::error_code ec;
    if (!std::filesystem::exists(path, ec)) return false;
    // It is there but cannot be locked (a file system without flock(2), no
    // file descriptor left): handed out anyway, as a debug session matters
    // more than the other processes' evictions.
    note_unheld(hold.error());
    in_use_.insert_or_assign(path, EntryHold{});
    return true;
}

std::string DebugFileCache::path_for(const std::string& id) const {
    if (id.size() < 3) return dir_ + "/.build-id/" + id + ".debug";
    return dir_ + "/.build-id/" + id.substr(0, 2) + "/" + id.substr(2) + ".debug";
}

Expected<CacheEntry>
DebugFileCache::ensure(const elf::ModuleRows& file, const std::string& base,
                       const std::function<void(const std::string&)>& progress) {
    if (!file.file || !file.sframe() || !file.where)
        return Error(Errc::NotFound, "the module has no usable SFrame section");
    const auto id = file.file->build_id();
    if (!id || id->empty())
        return Error(Errc::NotFound,
                     file.file->name() +
                         " has no GNU build-id: LLDB could not match a debug file to it");
    CacheEntry entry;
    entry.path = path_for(build_id_hex(*id));
    // Read once: the setting may change on another thread meanwhile.
    const bool callee_saved = callee_saved_ && callee_saved::supported(file.sframe()->abi());
    {
        const std::lock_guard lock(mutex_);
        const auto it = ensured_.find(entry.path);
        if (it != ensured_.end() && it->second.module.lock() == file.file &&
            it->second.base == base && it->second.callee_saved == callee_saved &&
            hold_existing(entry.path)) {
            CacheEntry again = it->second.entry;
            again.generated_now = false;
            again.evicted = 0;
            again.busy = 0;
            return again;
        }
    }
    const auto digest = sframe_digest(*file.file, *file.where);
    if (!digest) return digest.error();
    entry.sframe_bytes = file.sframe()->used_size();
    const std::string stamp = stamp_text(*digest, base, callee_saved);
    ++stamp_checks_;
    const std::string stamp_path = entry.path + ".stamp";

    const std::lock_guard lock(mutex_);
    std::error_code ec;
    // hold_existing() finds out whether the file is there.
    if (read_small_file(stamp_path) == stamp && hold_existing(entry.path)) {
        entry.debug_frame_bytes = 0; // not re-read: the file is LLDB's now
        // Its last use, for the limit (cache_limit.hpp): the stamp's time,
        // never the debug file's, which LLDB may compare.
        std::filesystem::last_write_time(stamp_path, std::filesystem::file_time_type::clock::now(),
                                         ec);
        ensured_[entry.path] = Ensured{file.file, base, callee_saved, entry};
        return entry;
    }
    // The callee-saved analysis reads every function's instructions: about
    // 0.3 s per MB of .sframe on 2 cores (bench/debug_file_size.cpp), so a
    // large module gets a line first, instead of a silent pause.
    constexpr std::uint64_t announce_from = std::uint64_t{256} << 10;
    if (progress && callee_saved && entry.sframe_bytes >= announce_from) {
        char mb[32];
        std::snprintf(mb, sizeof mb, "%.1f", static_cast<double>(entry.sframe_bytes) / 1048576.0);
        progress("sframe: writing LLDB's unwind tables for " +
                 std::filesystem::path(file.file->name()).filename().string() + " (" + mb +
                 " MB of SFrame, with the callee-saved register analysis); once per build, kept "
                 "in " +
                 dir_ +
                 " ('sframe callee-saved off' is faster, without upper frames' "
                 "registers)\n");
    }
    const auto t0 = std::chrono::steady_clock::now();
    // Declared before the options, whose analysis reads it: destroyed after.
    std::optional<elf::ElfFile> code_file;
    cfi::DebugFrameOptions options;
    // The analysis of each function's instructions, run ahead on every core
    // (the writer asks in FDE order): almost all of a translation's time
    // (bench/debug_file_size.cpp).
    if (callee_saved) {
        code_file = translation_code_file(file);
        options.callee_saved = callee_saved::module_debug_frame_rules(
            code_file ? *code_file : *file.file, *file.sframe());
    }
    if (auto start = file.file->entry_function())
        options.entry_function = cfi::FunctionRange{start->value, start->size};
    auto frame = cfi::write_debug_frame(*file.sframe(), options);
    // The analysis's threads end, then the code it read is given back.
    options.callee_saved = nullptr;
    code_file.reset();
    if (!frame)
        return Error(frame.error().code(), file.file->name() + ": " + frame.error().message());
    elf::DebugFileContents contents;
    contents.debug_frame = frame->bytes;
    contents.generator = generator_text();
    contents.compile_unit_min_symbols = compile_unit_min_symbols;
    for (const auto& fn : frame->functions) {
        // A PC-mask FDE covers a PLT, whose entries LLDB names itself
        // (puts@plt, from the PLT relocations); one symbol over all of them
        // would hide those names.
        if (fn.pc_mask) continue;
        char name[48];
        std::snprintf(name, sizeof name, "%s%llx", fde_symbol_prefix,
                      static_cast<unsigned long long>(fn.start));
        contents.functions.push_back({name, fn.start, fn.size});
    }
    // A separate debug file is copied instead of the module, so that its
    // DWARF stays; the module's own symbols are merged in.
    std::optional<elf::ElfFile> base_file;
    if (!base.empty()) {
        auto opened = elf::ElfFile::open(base);
        if (!opened) return opened.error();
        if (opened->build_id() != id)
            return Error(Errc::Malformed,
                         base + " does not have the build-id of " + file.file->name());
        base_file.emplace(std::move(*opened));
        contents.symbol_sources.push_back(file.file.get());
    }
    std::filesystem::create_directories(std::filesystem::path(entry.path).parent_path(), ec);
    if (ec)
        return Error(Errc::Io, "cannot create " +
                                   std::filesystem::path(entry.path).parent_path().string() + ": " +
                                   ec.message());
    const std::string tmp = temporary_name(entry.path);
    auto written = elf::write_debug_file(base_file ? *base_file : *file.file, contents, tmp);
    if (!written) {
        std::filesystem::remove(tmp, ec);
        return written.error();
    }
    // Held before it has its name, so that no eviction sees it unheld; the
    // lock stays with the file through the rename.
    auto hold = EntryHold::take(tmp);
    if (!hold) note_unheld(hold.error());
    std::filesystem::rename(tmp, entry.path, ec);
    if (ec) {
        std::filesystem::remove(tmp, ec);
        return Error(Errc::Io, "cannot rename " + tmp + " to " + entry.path + ": " + ec.message());
    }
    {
        const std::string stamp_tmp = temporary_name(stamp_path);
        std::ofstream(stamp_tmp) << stamp;
        std::filesystem::rename(stamp_tmp, stamp_path, ec);
    }
    const auto t1 = std::chrono::steady_clock::now();
    in_use_.insert_or_assign(entry.path, hold ? std::move(*hold) : EntryHold{});
    std::uint64_t bytes = stamp.size();
    if (const auto size = std::filesystem::file_size(entry.path, ec); !ec) bytes += size;
    const Eviction eviction = evict_if_due(bytes);
    entry.evicted = eviction.removed.size();
    entry.busy = eviction.busy.size();
    entry.generated_now = true;
    entry.milliseconds = std::chrono::duration<double, std::milli>(t1 - t0).count();
    entry.debug_frame_bytes = frame->bytes.size();
    entry.symbols_added = written->added_functions;
    for (const auto& fn : frame->functions) {
        (fn.entry_function ? entry.entry_function : entry.functions) += 1;
        entry.callee_saved_functions += fn.callee_saved_changes != 0 ? 1U : 0U;
    }
    entry.skipped_fdes = frame->skipped.size();
    if (!frame->skipped.empty()) entry.first_skipped = frame->skipped.front().message();
    ensured_[entry.path] = Ensured{file.file, base, callee_saved, entry};
    return entry;
}

} // namespace sfunwind::lldb_plugin

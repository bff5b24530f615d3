// SPDX-License-Identifier: MIT
#include "cache_limit.hpp"

#include <algorithm>
#include <cctype>
#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <limits>
#include <string_view>
#include <system_error>

namespace sfunwind::lldb_plugin {
namespace {

namespace fs = std::filesystem;

struct CacheEntryFiles {
    fs::path debug_file;
    fs::path stamp;
    std::uint64_t bytes = 0;
    fs::file_time_type last_use{};
};

// The size and time of a file, if it is a regular file.
bool stat_file(const fs::path& p, std::uint64_t& bytes, fs::file_time_type& time) {
    std::error_code ec;
    const auto status = fs::symlink_status(p, ec);
    if (ec || !fs::is_regular_file(status)) return false;
    const auto size = fs::file_size(p, ec);
    if (ec) return false;
    const auto t = fs::last_write_time(p, ec);
    if (ec) return false;
    bytes = size;
    time = t;
    return true;
}

std::vector<CacheEntryFiles> list_entries(const std::string& dir) {
    std::vector<CacheEntryFiles> out;
    std::error_code ec;
    const fs::path root = fs::path(dir) / ".build-id";
    for (fs::recursive_directory_iterator it(root, ec), end; !ec && it != end; it.increment(ec)) {
        if (it.depth() > 1) {
            it.disable_recursion_pending();
            continue;
        }
        const fs::path& p = it->path();
        if (p.extension() != ".debug") continue;
        CacheEntryFiles e;
        e.debug_file = p;
        if (!stat_file(p, e.bytes, e.last_use)) continue;
        e.stamp = p;
        e.stamp += ".stamp";
        std::uint64_t stamp_bytes = 0;
        fs::file_time_type stamp_time{};
        if (stat_file(e.stamp, stamp_bytes, stamp_time)) {
            e.bytes += stamp_bytes;
            e.last_use = std::max(e.last_use, stamp_time);
        }
        out.push_back(std::move(e));
    }
    return out;
}

} // namespace

Expected<std::uint64_t> parse_size(const std::string& text) {
    const auto bad = [&](const std::string& why) {
        return Error(Errc::Malformed,
                     "'" + text + "' is not a size (" + why +
                         "; a number of bytes with an optional K, M, G or T suffix, 0 for no "
                         "limit)");
    };
    std::size_t i = 0;
    std::uint64_t value = 0;
    while (i < text.size() && std::isdigit(static_cast<unsigned char>(text[i])) != 0) {
        const auto digit = static_cast<std::uint64_t>(text[i] - '0');
        if (value > (std::numeric_limits<std::uint64_t>::max() - digit) / 10)
            return bad("too large");
        value = value * 10 + digit;
        ++i;
    }
    if (i == 0) return bad("no number");
    std::string unit;
    for (; i < text.size(); ++i)
        unit += static_cast<char>(std::toupper(static_cast<unsigned char>(text[i])));
    unsigned shift = 0;
    if (unit.empty() || unit == "B") {
        shift = 0;
    } else {
        static constexpr std::string_view units = "KMGT";
        const auto at = units.find(unit[0]);
        const std::string rest = unit.substr(1);
        if (at == std::string_view::npos || !(rest.empty() || rest == "B" || rest == "IB"))
            return bad("unknown unit '" + text.substr(text.size() - unit.size()) + "'");
        shift = 10 * static_cast<unsigned>(at + 1);
    }
    if (shift != 0 && value > (std::numeric_limits<std::uint64_t>::max() >> shift))
        return bad("too large");
    return value << shift;
}

std::string format_size(std::uint64_t bytes) {
    if (bytes == 0) return "no limit";
    static constexpr const char* units[] = {"TiB", "GiB", "MiB", "KiB"};
    for (unsigned i = 0; i < 4; ++i) {
        const unsigned shift = 10 * (4 - i);
        if (bytes % (std::uint64_t{1} << shift) == 0)
            return std::to_string(bytes >> shift) + " " + units[i];
    }
    return std::to_string(bytes) + " bytes";
}

Expected<std::uint64_t> cache_limit_from_environment() {
    const char* v = std::getenv("SFUNWIND_LLDB_CACHE_LIMIT");
    if (v == nullptr || *v == '\0') return default_cache_limit;
    auto size = parse_size(v);
    if (!size)
        return Error(size.error().code(), "SFUNWIND_LLDB_CACHE_LIMIT: " + size.error().message());
    return size;
}

Eviction evict_to_limit(const std::string& dir, std::uint64_t limit,
                        const std::set<std::string>& keep) {
    Eviction out;
    auto entries = list_entries(dir);
    for (const auto& e : entries)
        out.bytes_before += e.bytes;
    out.bytes_after = out.bytes_before;
    if (limit == 0 || out.bytes_before <= limit) return out;
    std::sort(entries.begin(), entries.end(),
              [](const auto& a, const auto& b) { return a.last_use < b.last_use; });
    for (const auto& e : entries) {
        if (out.bytes_after <= limit) break;
        if (keep.count(e.debug_file.string()) != 0) continue;
        std::error_code ec;
        // The debug file first: without it the stamp means nothing, and a
        // stamp left behind is only a few bytes.
        if (!fs::remove(e.debug_file, ec) && ec) {
            out.errors.push_back(e.debug_file.string() + ": " + ec.message());
            continue;
        }
        fs::remove(e.stamp, ec);
        out.bytes_after -= e.bytes;
        out.removed.push_back(e.debug_file.string());
    }
    return out;
}

} // namespace sfunwind::lldb_plugin

// SPDX-License-Identifier: MIT
// The LLDB plugin's cache limit (plugin/src/cache_limit.hpp): sizes as the
// settings take them, and eviction of the least recently used entries, the
// last use being the later of the debug file's and its stamp's times.
#include "cache_limit.hpp"
#include "catch.hpp"

#include <chrono>
#include <filesystem>
#include <fstream>
#include <string>
#include <unistd.h>

using namespace sfunwind::lldb_plugin;
namespace fs = std::filesystem;

TEST_CASE("cache limit: sizes") {
    CHECK(*parse_size("0") == 0);
    CHECK(*parse_size("100") == 100);
    CHECK(*parse_size("100B") == 100);
    CHECK(*parse_size("2k") == 2048);
    CHECK(*parse_size("512M") == 512ULL << 20);
    CHECK(*parse_size("1G") == 1ULL << 30);
    CHECK(*parse_size("1GiB") == 1ULL << 30);
    CHECK(*parse_size("3tb") == 3ULL << 40);
    CHECK_FALSE(parse_size(""));
    CHECK_FALSE(parse_size("G"));
    CHECK_FALSE(parse_size("-1"));
    CHECK_FALSE(parse_size("1X"));
    CHECK_FALSE(parse_size("1 G"));
    CHECK_FALSE(parse_size("18446744073709551616"));
    CHECK_FALSE(parse_size("16777216T"));
    CHECK(parse_size("1X").error().message().find("'1X'") != std::string::npos);
    CHECK(format_size(0) == "no limit");
    CHECK(format_size(1ULL << 30) == "1 GiB");
    CHECK(format_size(1536ULL << 10) == "1536 KiB");
    CHECK(format_size(1000) == "1000 bytes");
    CHECK(default_cache_limit == 1ULL << 30);
}

namespace {

// A cache entry: a debug file of `bytes` bytes written `debug_age` seconds
// ago, and its 10-byte stamp `stamp_age` seconds ago (none if negative).
std::string make_entry(const fs::path& dir, const std::string& id, std::size_t bytes, int debug_age,
                       int stamp_age) {
    const fs::path sub = dir / ".build-id" / id.substr(0, 2);
    fs::create_directories(sub);
    const fs::path debug = sub / (id.substr(2) + ".debug");
    std::ofstream(debug) << std::string(bytes, 'x');
    const auto now = fs::file_time_type::clock::now();
    fs::last_write_time(debug, now - std::chrono::seconds(debug_age));
    if (stamp_age >= 0) {
        fs::path stamp = debug;
        stamp += ".stamp";
        std::ofstream(stamp) << std::string(10, 's');
        fs::last_write_time(stamp, now - std::chrono::seconds(stamp_age));
    }
    return debug.string();
}

} // namespace

TEST_CASE("cache limit: the least recently used entries go first, kept ones stay") {
    const fs::path dir =
        fs::temp_directory_path() / ("sfunwind-cache-limit-" + std::to_string(::getpid()));
    fs::remove_all(dir);
    const std::string a = make_entry(dir, "aa01", 1000, 400, 400); // oldest, but in use
    const std::string b = make_entry(dir, "bb02", 1000, 300, 10);  // old file, used just now
    const std::string c = make_entry(dir, "cc03", 1000, 200, 200);
    const std::string d = make_entry(dir, "dd04", 1000, 100, -1); // no stamp
    // Not entries: a temporary file and a stray file.
    std::ofstream(dir / ".build-id" / "aa" / "01.debug.tmp.1.2") << std::string(5000, 't');
    std::ofstream(dir / "provider.py") << std::string(5000, 'p');

    SECTION("no limit, or under it: nothing goes") {
        auto none = evict_to_limit(dir.string(), 0, {});
        CHECK(none.bytes_before == 4030);
        CHECK(none.removed.empty());
        auto under = evict_to_limit(dir.string(), 4030, {});
        CHECK(under.removed.empty());
        CHECK(fs::exists(a));
        CHECK(fs::exists(d));
    }
    SECTION("over it: c then d (b's stamp is recent, a is kept)") {
        auto ev = evict_to_limit(dir.string(), 2100, {a});
        CHECK(ev.bytes_before == 4030);
        CHECK(ev.bytes_after == 2020);
        REQUIRE(ev.removed.size() == 2);
        CHECK(ev.removed[0] == c);
        CHECK(ev.removed[1] == d);
        CHECK(ev.errors.empty());
        CHECK(fs::exists(a));
        CHECK(fs::exists(b));
        CHECK_FALSE(fs::exists(c));
        CHECK_FALSE(fs::exists(c + ".stamp"));
        CHECK_FALSE(fs::exists(d));
        CHECK(fs::exists(dir / ".build-id" / "aa" / "01.debug.tmp.1.2"));
        CHECK(fs::exists(dir / "provider.py"));
    }
    SECTION("kept entries stay even when the limit cannot be met") {
        auto ev = evict_to_limit(dir.string(), 1, {a, b});
        CHECK(ev.removed.size() == 2);
        CHECK(ev.bytes_after == 2020);
        CHECK(fs::exists(a));
        CHECK(fs::exists(b));
    }
    fs::remove_all(dir);
}

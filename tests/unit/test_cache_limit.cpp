// SPDX-License-Identifier: MIT
// The LLDB plugin's cache limit (plugin/src/cache_limit.hpp): sizes as the
// settings take them, eviction of the least recently used entries, the
// last use being the later of the debug file's and its stamp's times, and
// entries held (EntryHold) by this or another process left in place; and
// when the debug-file cache (plugin/src/debug_file_cache.hpp) lists itself
// to apply the limit.
#include "cache_limit.hpp"
#include "catch.hpp"
#include "debug_file_cache.hpp"
#include "sfunwind/elf/module_rows.hpp"

#include <cerrno>
#include <chrono>
#include <csignal>
#include <cstring>
#include <fcntl.h>
#include <filesystem>
#include <fstream>
#include <poll.h>
#include <string>
#include <sys/wait.h>
#include <thread>
#include <unistd.h>
#include <vector>

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

TEST_CASE("cache limit: a held entry stays, listed busy; the next unheld ones go") {
    const fs::path dir =
        fs::temp_directory_path() / ("sfunwind-cache-hold-" + std::to_string(::getpid()));
    fs::remove_all(dir);
    const std::string a = make_entry(dir, "aa01", 1000, 400, 400); // oldest, held
    const std::string b = make_entry(dir, "bb02", 1000, 300, 300);
    const std::string c = make_entry(dir, "cc03", 1000, 200, 200);
    const std::string d = make_entry(dir, "dd04", 1000, 100, 100);
    using List = std::vector<std::string>;

    // A hold of its own open file: to flock(2) the same as another
    // process's, and not in `keep`.
    auto hold = EntryHold::take(a);
    REQUIRE(hold);
    CHECK(hold->held());
    CHECK(hold->names(a));
    CHECK_FALSE(hold->names(b));
    auto ev = evict_to_limit(dir.string(), 2100, {});
    CHECK(ev.bytes_before == 4040);
    CHECK(ev.bytes_after == 2020);
    CHECK(ev.busy == List{a});
    CHECK(ev.removed == List{b, c});
    CHECK(ev.errors.empty());
    CHECK(fs::exists(a));
    CHECK(fs::exists(a + ".stamp"));
    CHECK_FALSE(fs::exists(b));
    CHECK_FALSE(fs::exists(c));
    CHECK(fs::exists(d));

    SECTION("released, it is removable") {
        hold->release();
        CHECK_FALSE(hold->held());
        auto after = evict_to_limit(dir.string(), 1010, {});
        CHECK(after.removed == List{a});
        CHECK(after.busy.empty());
        CHECK(after.bytes_after == 1010);
        CHECK_FALSE(fs::exists(a));
        CHECK_FALSE(fs::exists(a + ".stamp"));
        CHECK(fs::exists(d));
    }
    SECTION("moved from, the new owner holds it; destroyed, it is removable") {
        {
            EntryHold moved = std::move(*hold);
            CHECK_FALSE(hold->held());
            CHECK(moved.names(a));
            const auto held = evict_to_limit(dir.string(), 1, {});
            CHECK(held.busy == List{a});
            CHECK(held.removed == List{d});
        }
        CHECK(evict_to_limit(dir.string(), 1, {}).removed == List{a});
    }
    SECTION("a file held before its rename into place is held there") {
        const std::string tmp = d + ".tmp.1.1";
        std::ofstream(tmp) << std::string(1000, 'n');
        auto new_hold = EntryHold::take(tmp);
        REQUIRE(new_hold);
        fs::rename(tmp, d);
        // The name now belongs to another file than the one `hold` locked.
        fs::rename(d, a);
        CHECK_FALSE(hold->names(a));
        CHECK(new_hold->names(a));
        hold->release();
        auto after = evict_to_limit(dir.string(), 1, {});
        CHECK(after.busy == List{a});
        CHECK(after.removed.empty());
        CHECK(fs::exists(a));
    }
    fs::remove_all(dir);
}

TEST_CASE("cache limit: EntryHold errors name the file and the reason") {
    const std::string missing =
        (fs::temp_directory_path() / ("sfunwind-no-such-" + std::to_string(::getpid()) + ".debug"))
            .string();
    auto hold = EntryHold::take(missing);
    REQUIRE_FALSE(hold);
    CHECK(hold.error().code() == sfunwind::Errc::Io);
    CHECK(hold.error().message().find(missing) != std::string::npos);
    CHECK(hold.error().message().find(std::strerror(ENOENT)) != std::string::npos);
    // A directory is not a debug file, nor something to lock for one.
    auto dir = EntryHold::take(fs::temp_directory_path().string());
    REQUIRE_FALSE(dir);
    CHECK(dir.error().message().find("not a regular file") != std::string::npos);
    const EntryHold none;
    CHECK_FALSE(none.held());
    CHECK_FALSE(none.names(missing));
}

namespace {

// Both ends of a pipe, closed when it goes.
struct Pipe {
    int fd[2] = {-1, -1};
    Pipe() {
        if (::pipe2(fd, O_CLOEXEC) != 0) fd[0] = fd[1] = -1;
    }
    Pipe(const Pipe&) = delete;
    Pipe& operator=(const Pipe&) = delete;
    ~Pipe() {
        close_end(0);
        close_end(1);
    }
    bool ok() const { return fd[0] >= 0 && fd[1] >= 0; }
    void close_end(int i) {
        if (fd[i] >= 0) ::close(fd[i]);
        fd[i] = -1;
    }
};

// A byte from `fd` within `ms` milliseconds; -1 on a timeout, the end of the
// pipe or an error.
int read_byte(int fd, int ms) {
    pollfd p{fd, POLLIN, 0};
    int ready = 0;
    do {
        ready = ::poll(&p, 1, ms);
    } while (ready < 0 && errno == EINTR);
    unsigned char b = 0;
    if (ready != 1 || ::read(fd, &b, 1) != 1) return -1;
    return b;
}

// A forked child, reaped however the test ends: killed first if a failed
// assertion leaves it running.
class Child {
  public:
    explicit Child(pid_t pid) : pid_(pid) {}
    Child(const Child&) = delete;
    Child& operator=(const Child&) = delete;
    ~Child() {
        if (pid_ <= 0) return;
        ::kill(pid_, SIGKILL);
        int status = 0;
        while (::waitpid(pid_, &status, 0) < 0 && errno == EINTR) {
        }
    }
    // Its exit status, waiting at most 10 s (then -1, and it is killed).
    int wait() {
        for (int i = 0; i < 1000; ++i) {
            int status = 0;
            const pid_t got = ::waitpid(pid_, &status, WNOHANG);
            if (got == pid_) {
                pid_ = -1;
                return WIFEXITED(status) ? WEXITSTATUS(status) : -1;
            }
            if (got < 0 && errno != EINTR) return -1;
            std::this_thread::sleep_for(std::chrono::milliseconds(10));
        }
        return -1;
    }

  private:
    pid_t pid_;
};

} // namespace

TEST_CASE("cache limit: an entry another process holds stays until it exits") {
    const fs::path dir =
        fs::temp_directory_path() / ("sfunwind-cache-fork-" + std::to_string(::getpid()));
    fs::remove_all(dir);
    const std::string a = make_entry(dir, "aa01", 1000, 400, 400); // oldest, the child's
    const std::string b = make_entry(dir, "bb02", 1000, 300, 300);
    const std::string c = make_entry(dir, "cc03", 1000, 200, 200);
    using List = std::vector<std::string>;

    Pipe to_parent;
    Pipe to_child;
    REQUIRE(to_parent.ok());
    REQUIRE(to_child.ok());
    const pid_t pid = ::fork();
    REQUIRE(pid >= 0);
    if (pid == 0) {
        // The child: takes the hold, says whether it has it, and keeps it
        // until the parent is done (or gone: the pipe's end), at most 10 s.
        // No assertions here, and _exit whatever happens.
        int code = 3;
        try {
            to_parent.close_end(0);
            to_child.close_end(1);
            const auto hold = EntryHold::take(a);
            const unsigned char said = hold ? '1' : '0';
            if (::write(to_parent.fd[1], &said, 1) == 1) {
                read_byte(to_child.fd[0], 10000);
                code = hold ? 0 : 1;
            }
        } catch (...) {
            code = 4;
        }
        ::_exit(code);
    }
    Child child(pid);
    to_parent.close_end(1);
    to_child.close_end(0);
    REQUIRE(read_byte(to_parent.fd[0], 10000) == '1');

    const auto ev = evict_to_limit(dir.string(), 2000, {});
    to_child.close_end(1); // the child's read ends: it exits
    CHECK(child.wait() == 0);
    CHECK(ev.busy == List{a});
    CHECK(ev.removed == List{b, c});
    CHECK(ev.bytes_after == 1010);
    CHECK(fs::exists(a));
    CHECK(fs::exists(a + ".stamp"));

    // Its lock ended with it.
    const auto after = evict_to_limit(dir.string(), 1, {});
    CHECK(after.removed == List{a});
    CHECK(after.busy.empty());
    CHECK_FALSE(fs::exists(a));
    fs::remove_all(dir);
}

TEST_CASE(
    "debug-file cache: the cache is listed at the first file, then when it may pass its limit") {
    // Six programs with SFrame (and build-ids of their own): the plugin's
    // cache generates their debug files the way it does for the libraries
    // of a program LLDB loads.
    const std::string bin = std::string(SFUNWIND_SOURCE_DIR) + "/tests/fixtures/bin/gas-2.40/";
    std::vector<sfunwind::elf::ModuleRows> modules;
    for (const char* name : {"recurse-O2-nofp", "recurse-O2-fp", "deep10000-O2-nofp",
                             "noreturn-O2-nofp", "realign-O2-nofp", "sighandler-O2-nofp"}) {
        modules.push_back(sfunwind::elf::open_module_rows(bin + name));
        REQUIRE(modules.back().file);
    }
    const fs::path dir =
        fs::temp_directory_path() / ("sfunwind-cache-listings-" + std::to_string(::getpid()));
    fs::remove_all(dir);

    SECTION("under the limit: one listing for six files") {
        DebugFileCache cache(dir.string(), default_cache_limit);
        cache.set_callee_saved(false);
        for (const auto& m : modules) {
            const auto entry = cache.ensure(m);
            REQUIRE(entry);
            CHECK(entry->generated_now);
            CHECK(fs::exists(entry->path));
        }
        CHECK(cache.listings() == 1);
    }

    SECTION("past the limit: listed again, and the oldest entry of another session goes") {
        // The two files' sizes, from a cache of their own.
        DebugFileCache probe((dir / "probe").string(), default_cache_limit);
        probe.set_callee_saved(false);
        std::uintmax_t sizes[2] = {};
        for (std::size_t i = 0; i < 2; ++i) {
            const auto e = probe.ensure(modules[i]);
            REQUIRE(e);
            sizes[i] = fs::file_size(e->path) + fs::file_size(e->path + ".stamp");
        }
        fs::remove_all(dir / "probe");
        // Two older entries, each larger than the second file: the first
        // file fits beside them, the second passes the limit, and removing
        // the oldest is enough.
        const auto bytes = static_cast<std::size_t>(sizes[1] + 100);
        const std::string old = make_entry(dir, "ee01", bytes, 7200, 7200);
        const std::string newer = make_entry(dir, "ee02", bytes, 3600, 3600);
        DebugFileCache cache(dir.string(), 2 * (bytes + 10) + sizes[0]);
        cache.set_callee_saved(false);
        const auto first = cache.ensure(modules[0]);
        REQUIRE(first);
        CHECK(first->evicted == 0);
        CHECK(cache.listings() == 1);
        CHECK(fs::exists(old));
        const auto second = cache.ensure(modules[1]);
        REQUIRE(second);
        CHECK(cache.listings() == 2);
        CHECK(second->evicted == 1);
        CHECK_FALSE(fs::exists(old));
        CHECK(fs::exists(newer));
        CHECK(fs::exists(first->path));
        CHECK(fs::exists(second->path));
    }

    SECTION("no limit: never listed") {
        DebugFileCache cache(dir.string(), 0);
        cache.set_callee_saved(false);
        for (const auto& m : modules)
            REQUIRE(cache.ensure(m));
        CHECK(cache.listings() == 0);
    }
    fs::remove_all(dir);
}

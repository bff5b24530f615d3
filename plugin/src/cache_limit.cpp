// SPDX-License-Identifier: MIT
#include "cache_limit.hpp"

#include <algorithm>
#include <cctype>
#include <cerrno>
#include <chrono>
#include <cstdlib>
#include <cstring>
#include <fcntl.h>
#include <filesystem>
#include <limits>
#include <string_view>
#include <sys/file.h>
#include <sys/stat.h>
#include <system_error>
#include <thread>
#include <unistd.h>

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

// The flags besides the access mode. O_NONBLOCK: something other than a
// regular file put where a debug file belongs (a FIFO) must not make
// open(2) wait; for a regular file it changes nothing.
constexpr int open_flags = O_CLOEXEC | O_NONBLOCK;

// Whether `path` names the file open as `fd`: 1 yes, 0 another file, -1
// none (or it cannot be told; errno says why).
int names_file(int fd, const std::string& path) {
    struct stat by_fd {};
    struct stat by_path {};
    if (::fstat(fd, &by_fd) != 0 || ::stat(path.c_str(), &by_path) != 0) return -1;
    return by_fd.st_dev == by_path.st_dev && by_fd.st_ino == by_path.st_ino ? 1 : 0;
}

// flock(2), again when a signal interrupted it.
int flock_retrying(int fd, int operation) {
    int rc = 0;
    do {
        rc = ::flock(fd, operation);
    } while (rc != 0 && errno == EINTR);
    return rc;
}

// How one entry's removal went.
enum class Removal { Removed, Gone, Busy, Failed };

// Removes an entry's debug file, then its stamp, unless a process holds it
// (EntryHold): the unlinks happen under an exclusive flock taken without
// waiting, so a holder's shared lock, taken before or while, excludes it.
Removal remove_entry(const CacheEntryFiles& e, std::string& why) {
    const std::string path = e.debug_file.string();
    // O_NOFOLLOW: list_entries saw a regular file; a symlink put there since
    // is not the cache's to lock.
    int fd = ::open(path.c_str(), O_RDONLY | open_flags | O_NOFOLLOW);
    if (fd < 0) {
        if (errno == ENOENT) return Removal::Gone; // another eviction took it
        why = path + ": " + std::strerror(errno);
        return Removal::Failed;
    }
    int locked = flock_retrying(fd, LOCK_EX | LOCK_NB);
    if (locked != 0 && errno == EBADF) {
        // NFS emulates flock with fcntl(2) locks, and an exclusive one needs
        // a file open for writing (flock(2) NOTES).
        const int rw = ::open(path.c_str(), O_RDWR | open_flags | O_NOFOLLOW);
        if (rw >= 0) {
            ::close(fd);
            fd = rw;
            locked = flock_retrying(fd, LOCK_EX | LOCK_NB);
        }
    }
    bool remove = false;
    Removal result = Removal::Busy;
    if (locked != 0) {
        // EWOULDBLOCK: a process holds it. Any other error means the file
        // system cannot lock (ENOLCK, EOPNOTSUPP): then nobody can hold it
        // either, and only the paths in `keep` are protected.
        remove = errno != EWOULDBLOCK;
    } else {
        // Removed, or replaced by a rename, since the open: a new file is
        // a writer's, which holds it or is about to. A rename between this
        // check and the unlink is not excluded: a lock on the old file
        // cannot stop one.
        const int same = names_file(fd, path);
        const int err = errno;
        remove = same == 1;
        if (same == -1) {
            result = err == ENOENT ? Removal::Gone : Removal::Failed;
            why = path + ": " + std::strerror(err);
        }
    }
    if (remove) {
        // The debug file first: without it the stamp means nothing, and a
        // stamp left behind is only a few bytes.
        if (::unlink(path.c_str()) == 0) {
            result = Removal::Removed;
            std::error_code ec;
            std::filesystem::remove(e.stamp, ec);
        } else if (errno == ENOENT) {
            result = Removal::Gone;
        } else {
            why = path + ": " + std::strerror(errno);
            result = Removal::Failed;
        }
    }
    ::close(fd); // ends the exclusive lock
    return result;
}

} // namespace

EntryHold::EntryHold(EntryHold&& other) noexcept : fd_(other.fd_) {
    other.fd_ = -1;
}

EntryHold& EntryHold::operator=(EntryHold&& other) noexcept {
    if (this != &other) {
        release();
        fd_ = other.fd_;
        other.fd_ = -1;
    }
    return *this;
}

EntryHold::~EntryHold() {
    release();
}

void EntryHold::release() noexcept {
    if (fd_ >= 0) ::close(fd_);
    fd_ = -1;
}

bool EntryHold::names(const std::string& path) const {
    return fd_ >= 0 && names_file(fd_, path) == 1;
}

Expected<EntryHold> EntryHold::take(const std::string& debug_file) {
    const int fd = ::open(debug_file.c_str(), O_RDONLY | open_flags);
    if (fd < 0) return Error(Errc::Io, "cannot open " + debug_file + ": " + std::strerror(errno));
    EntryHold hold(fd); // closes it on every return below
    struct stat st {};
    if (::fstat(fd, &st) != 0)
        return Error(Errc::Io, "cannot stat " + debug_file + ": " + std::strerror(errno));
    if (!S_ISREG(st.st_mode))
        return Error(Errc::Io, "cannot lock " + debug_file + ": not a regular file");
    // Without LOCK_NB the wait would have no bound; evictions hold their
    // lock only around two unlinks, so a short poll sees it end.
    const auto deadline =
        std::chrono::steady_clock::now() + std::chrono::milliseconds(hold_wait_ms);
    for (;;) {
        if (flock_retrying(fd, LOCK_SH | LOCK_NB) == 0) return hold;
        const int err = errno;
        if (err != EWOULDBLOCK)
            return Error(Errc::Io, "cannot lock " + debug_file + ": " + std::strerror(err));
        if (std::chrono::steady_clock::now() >= deadline)
            return Error(Errc::Io, "cannot lock " + debug_file +
                                       ": another process has held it exclusively for " +
                                       std::to_string(hold_wait_ms) + " ms");
        std::this_thread::sleep_for(std::chrono::milliseconds(1));
    }
}

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
        std::string why;
        switch (remove_entry(e, why)) {
        case Removal::Removed:
            out.bytes_after -= e.bytes;
            out.removed.push_back(e.debug_file.string());
            break;
        case Removal::Gone:
            out.bytes_after -= e.bytes;
            break;
        case Removal::Busy:
            out.busy.push_back(e.debug_file.string());
            break;
        case Removal::Failed:
            out.errors.push_back(why);
            break;
        }
    }
    return out;
}

} // namespace sfunwind::lldb_plugin

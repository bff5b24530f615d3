// SPDX-License-Identifier: MIT
#include "file_image.hpp"

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>
#include <utility>

namespace sfunwind::elf::detail {
namespace {

// Closes a descriptor it owns on every path out (not the image's kept one).
struct Descriptor {
    int fd;
    bool owned;
    explicit Descriptor(int f, bool own = true) : fd(f), owned(own) {}
    Descriptor(const Descriptor&) = delete;
    Descriptor& operator=(const Descriptor&) = delete;
    ~Descriptor() {
        if (owned && fd >= 0) ::close(fd);
    }
};

// Backs the whole 2 MiB pages inside [begin, begin + length) with
// transparent huge pages, where the kernel offers them (MADV_HUGEPAGE; THP
// in "madvise" or "always" mode), before a read fills that range: one page
// fault per 2 MiB instead of 512, and one TLB entry. A range that is read
// whole costs the same memory either way. Where the kernel refuses
// (THP disabled: EINVAL), the read is the same with 4 KiB pages.
void advise_huge_pages(std::uint8_t* begin, std::size_t length) {
    constexpr std::uintptr_t huge = std::uintptr_t{1} << 21;
    const auto from = reinterpret_cast<std::uintptr_t>(begin);
    const std::uintptr_t first = (from + huge - 1) & ~(huge - 1);
    const std::uintptr_t last = (from + length) & ~(huge - 1);
    if (first >= last) return;
    (void)::madvise(begin + (first - from), last - first, MADV_HUGEPAGE);
}

// pread() until `length` bytes are read or the file ends; the count read,
// or -1 with errno set.
long long read_at(int fd, std::uint8_t* out, std::size_t length, std::uint64_t offset) {
    std::size_t done = 0;
    while (done < length) {
        const ssize_t got =
            ::pread(fd, out + done, length - done, static_cast<off_t>(offset + done));
        if (got < 0 && errno == EINTR) continue;
        if (got < 0) return -1;
        if (got == 0) break;
        done += static_cast<std::size_t>(got);
    }
    return static_cast<long long>(done);
}

} // namespace

FileImage::FileImage(FileImage&& other) noexcept {
    *this = std::move(other);
}

FileImage& FileImage::operator=(FileImage&& other) noexcept {
    if (this == &other) return *this;
    release();
    close_descriptor();
    kept_fd_ = std::exchange(other.kept_fd_, -1);
    data_ = std::exchange(other.data_, nullptr);
    size_ = std::exchange(other.size_, 0);
    path_ = std::move(other.path_);
    device_ = other.device_;
    inode_ = other.inode_;
    mtime_sec_ = other.mtime_sec_;
    mtime_nsec_ = other.mtime_nsec_;
    const std::lock_guard<std::mutex> lock(other.mutex_);
    present_ = std::move(other.present_);
    chunks_ = std::exchange(other.chunks_, 0);
    resident_ = std::exchange(other.resident_, 0);
    error_ = std::move(other.error_);
    return *this;
}

FileImage::~FileImage() {
    close_descriptor();
    release();
}

void FileImage::close_descriptor() const noexcept {
    const std::lock_guard<std::mutex> lock(mutex_);
    if (kept_fd_ >= 0) ::close(kept_fd_);
    kept_fd_ = -1;
}

void FileImage::release() noexcept {
    if (data_ != nullptr) ::munmap(data_, size_);
    data_ = nullptr;
    size_ = 0;
}

bool FileImage::allocate(std::size_t size) {
    release();
    chunks_ = (size + chunk - 1) / chunk;
    present_ = std::make_unique<std::atomic<bool>[]>(chunks_); // all false
    resident_ = 0;
    if (size == 0) return true;
    // Anonymous pages cost nothing until written: only the chunks read
    // become resident.
    void* p = ::mmap(nullptr, size, PROT_READ | PROT_WRITE,
                     MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
    if (p == MAP_FAILED) return false;
    data_ = static_cast<std::uint8_t*>(p);
    size_ = size;
    return true;
}

void FileImage::assign(std::span<const std::uint8_t> bytes) {
    if (!allocate(bytes.size())) throw std::bad_alloc();
    if (!bytes.empty()) std::memcpy(data_, bytes.data(), bytes.size());
    for (std::size_t c = 0; c < chunks_; ++c)
        present_[c].store(true, std::memory_order_relaxed);
    resident_ = size_;
    path_.clear();
}

bool FileImage::open(const std::string& path, std::string& error, bool keep_descriptor) {
    close_descriptor();
    Descriptor file(::open(path.c_str(), O_RDONLY | O_CLOEXEC));
    if (file.fd < 0) {
        error = std::strerror(errno);
        return false;
    }
    struct stat info {};
    if (::fstat(file.fd, &info) != 0) {
        error = std::string("fstat: ") + std::strerror(errno);
        return false;
    }
    if (S_ISREG(info.st_mode) && info.st_size > 0) {
        if (!allocate(static_cast<std::size_t>(info.st_size))) {
            error = "cannot reserve " + std::to_string(info.st_size) + " bytes";
            return false;
        }
        path_ = path;
        device_ = info.st_dev;
        inode_ = info.st_ino;
        mtime_sec_ = info.st_mtim.tv_sec;
        mtime_nsec_ = info.st_mtim.tv_nsec;
        // Every reader starts with the first chunk (the ELF header): read
        // now, through the descriptor open here, where a later fill would
        // open the file again. A failed read leaves it to ensure().
        const std::size_t first = std::min(size_, chunk);
        if (read_fully(file.fd, data_, first, 0)) {
            present_[0].store(true, std::memory_order_relaxed);
            resident_ = first;
        } else {
            error_.clear();
        }
        if (keep_descriptor) kept_fd_ = std::exchange(file.fd, -1);
        return true;
    }
    // A size unknown in advance: read it all now.
    std::vector<std::uint8_t> all;
    std::uint8_t buf[65536];
    for (;;) {
        const ssize_t got = ::read(file.fd, buf, sizeof buf);
        if (got < 0 && errno == EINTR) continue;
        if (got < 0) {
            error = std::string("read error at offset ") + std::to_string(all.size()) + ": " +
                    std::strerror(errno);
            return false;
        }
        if (got == 0) break;
        all.insert(all.end(), buf, buf + got);
    }
    assign(all);
    return true;
}

bool FileImage::ensure(std::uint64_t offset, std::uint64_t length) const {
    if (offset >= size_ || length == 0) return true;
    const std::uint64_t end = offset + std::min<std::uint64_t>(length, size_ - offset);
    if (all_present(offset, end)) return true;
    const std::lock_guard<std::mutex> lock(mutex_);
    const std::size_t first = static_cast<std::size_t>(offset / chunk);
    const std::size_t last = static_cast<std::size_t>((end - 1) / chunk);
    std::size_t i = first;
    while (i <= last) {
        if (present_[i].load(std::memory_order_relaxed)) {
            ++i;
            continue;
        }
        std::size_t j = i;
        while (j + 1 <= last && !present_[j + 1].load(std::memory_order_relaxed))
            ++j;
        if (!fill(i, j)) return false;
        i = j + 1;
    }
    return true;
}

int FileImage::reopen() const {
    // The descriptor open() kept is the file it checked.
    if (kept_fd_ >= 0) return kept_fd_;
    Descriptor file(::open(path_.c_str(), O_RDONLY | O_CLOEXEC));
    struct stat info {};
    if (file.fd < 0 || ::fstat(file.fd, &info) != 0) {
        error_ = path_ + ": cannot reopen to read more of it: " + std::strerror(errno);
        return -1;
    }
    if (info.st_dev != device_ || info.st_ino != inode_ ||
        static_cast<std::uint64_t>(info.st_size) != size_ || info.st_mtim.tv_sec != mtime_sec_ ||
        info.st_mtim.tv_nsec != mtime_nsec_) {
        error_ = path_ + ": the file changed since it was opened (replaced, resized or written)";
        return -1;
    }
    return std::exchange(file.fd, -1);
}

bool FileImage::fill(std::size_t first_chunk, std::size_t last_chunk) const {
    const Descriptor file(reopen(), kept_fd_ < 0);
    if (file.fd < 0) return false;
    const std::uint64_t from = std::uint64_t{first_chunk} * chunk;
    const std::uint64_t to = std::min<std::uint64_t>(std::uint64_t{last_chunk + 1} * chunk, size_);
    advise_huge_pages(data_ + from, static_cast<std::size_t>(to - from));
    if (!read_fully(file.fd, data_ + from, static_cast<std::size_t>(to - from), from)) return false;
    // Published after the bytes: a reader that sees the bit sees them.
    for (std::size_t c = first_chunk; c <= last_chunk; ++c)
        present_[c].store(true, std::memory_order_release);
    resident_ += static_cast<std::size_t>(to - from);
    return true;
}

bool FileImage::all_present(std::uint64_t offset, std::uint64_t end) const {
    for (auto c = static_cast<std::size_t>(offset / chunk); c <= (end - 1) / chunk; ++c)
        if (!present_[c].load(std::memory_order_acquire)) return false;
    return true;
}

bool FileImage::has(std::uint64_t offset, std::uint64_t length) const {
    if (offset >= size_ || length == 0) return true;
    const std::uint64_t end = offset + std::min<std::uint64_t>(length, size_ - offset);
    return all_present(offset, end);
}

bool FileImage::scan(std::uint64_t offset, std::uint64_t length,
                     const std::function<void(std::span<const std::uint8_t>)>& consume) const {
    if (offset >= size_ || length == 0) return true;
    const std::uint64_t end = offset + std::min<std::uint64_t>(length, size_ - offset);
    const std::lock_guard<std::mutex> lock(mutex_);
    if (all_present(offset, end)) {
        for (std::uint64_t at = offset; at < end; at += piece)
            consume(
                {data_ + at, static_cast<std::size_t>(std::min<std::uint64_t>(piece, end - at))});
        return true;
    }
    const Descriptor file(reopen(), kept_fd_ < 0);
    if (file.fd < 0) return false;
    std::vector<std::uint8_t> buffer(
        static_cast<std::size_t>(std::min<std::uint64_t>(piece, end - offset)));
    for (std::uint64_t at = offset; at < end; at += piece) {
        const auto n = static_cast<std::size_t>(std::min<std::uint64_t>(piece, end - at));
        if (!read_fully(file.fd, buffer.data(), n, at)) return false;
        consume({buffer.data(), n});
    }
    return true;
}

bool FileImage::read_fully(int fd, std::uint8_t* out, std::size_t n, std::uint64_t at) const {
    const long long got = read_at(fd, out, n, at);
    if (got >= 0 && static_cast<std::uint64_t>(got) == n) return true;
    error_ = path_ + ": read of " + std::to_string(n) + " bytes at offset " + std::to_string(at) +
             " failed: " + (got < 0 ? std::strerror(errno) : "the file is shorter than it was");
    return false;
}

std::string FileImage::last_error() const {
    const std::lock_guard<std::mutex> lock(mutex_);
    return error_;
}

std::size_t FileImage::resident() const {
    const std::lock_guard<std::mutex> lock(mutex_);
    return resident_;
}

} // namespace sfunwind::elf::detail

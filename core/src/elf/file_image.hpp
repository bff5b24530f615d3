// SPDX-License-Identifier: MIT
// A file's bytes at their file offsets, read on demand: the whole file is
// reserved as anonymous memory (address space, no resident pages) and each
// 4 KiB chunk is read with pread() the first time a range that covers it is
// asked for. A debugger opens every module of a program but needs few of
// their bytes (the headers, .sframe, the symbols, the code of the functions
// it analyses): a 30 MB program then costs the 2 MB it reads, not 30 MB.
// A read of a large range at once (the LLDB plugin's translation reads a
// module's code whole) has the whole 2 MiB pages inside it backed by
// transparent huge pages where the kernel offers them: the same memory,
// 512 times fewer page faults (measured in the README's performance section).
//
// Why not mmap the file: a file truncated while mapped turns a read into
// SIGBUS, which would take the debugger down (see "Bad input is normal
// input"). pread() reports the change instead. Each fill reopens the file by
// path (unless open() was asked to keep its descriptor for a while), so a
// debugger with thousands of modules holds no descriptors, and checks that
// it is still the same file (device, inode, size, mtime): bytes of a rebuilt
// file are never mixed with the old ones. The first chunk (the ELF header,
// which every reader wants) is read by open() itself.
#pragma once

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>
#include <mutex>
#include <span>
#include <string>
#include <vector>

namespace sfunwind::elf::detail {

class FileImage {
  public:
    FileImage() = default;
    FileImage(const FileImage&) = delete;
    FileImage& operator=(const FileImage&) = delete;
    FileImage(FileImage&& other) noexcept;
    FileImage& operator=(FileImage&& other) noexcept;
    ~FileImage();

    // The file at `path`, its first chunk read (the ELF header, which every
    // reader wants first). Files whose size stat() cannot tell (not regular,
    // or empty by stat, as /proc files are) are read whole here. On failure
    // returns false and sets `error` ("what: why"). With `keep_descriptor`,
    // reads use the descriptor opened here until close_descriptor(), instead
    // of opening the file again each time: for a burst of reads right after
    // opening (the section headers, .sframe, the dynamic section).
    bool open(const std::string& path, std::string& error, bool keep_descriptor = false);
    // Closes the descriptor open() kept, if any; later reads reopen the file.
    void close_descriptor() const noexcept;
    // A copy of bytes already in memory (all present).
    void assign(std::span<const std::uint8_t> bytes);

    std::size_t size() const noexcept { return size_; }
    // Every byte; only those ensure()d hold the file's contents.
    std::span<const std::uint8_t> bytes() const noexcept { return {data_, size_}; }
    // Reads whatever of [offset, offset + length) (clipped to the file) is
    // not read yet. False when the file cannot be read or has changed since
    // open(); last_error() says why.
    bool ensure(std::uint64_t offset, std::uint64_t length) const;
    bool ensure_all() const { return ensure(0, size_); }
    // Whether every byte of [offset, offset + length) (clipped) is read.
    bool has(std::uint64_t offset, std::uint64_t length) const;
    // Hands the bytes of [offset, offset + length) (clipped to the file) to
    // `consume` in order, in pieces of at most `piece` bytes, without making
    // them resident: for a reader that passes over them once (a hash), so
    // that a section read only to be hashed costs no memory afterwards.
    // Bytes already read come from the image; the others from the file,
    // under the same identity check as ensure(). False when the file cannot
    // be read or has changed; last_error() says why.
    static constexpr std::size_t piece = 65536;
    bool scan(std::uint64_t offset, std::uint64_t length,
              const std::function<void(std::span<const std::uint8_t>)>& consume) const;
    std::string last_error() const;
    // Bytes read from the file so far.
    std::size_t resident() const;

  private:
    static constexpr std::size_t chunk = 4096;

    void release() noexcept;
    bool allocate(std::size_t size);
    bool fill(std::size_t first_chunk, std::size_t last_chunk) const;
    // The file at path_ opened again, if it is still the one open() saw;
    // -1 with error_ set otherwise. The caller holds mutex_.
    int reopen() const;
    // Whether the chunks of bytes [offset, end) are read (end > offset).
    bool all_present(std::uint64_t offset, std::uint64_t end) const;
    // pread() of n bytes at `at`, all of them, into `out`; else false with
    // error_ set. The caller holds mutex_.
    bool read_fully(int fd, std::uint8_t* out, std::size_t n, std::uint64_t at) const;

    std::uint8_t* data_ = nullptr;
    std::size_t size_ = 0;
    std::string path_;
    // open()'s descriptor while kept (keep_descriptor), else -1; under mutex_.
    mutable int kept_fd_ = -1;
    // The identity fills compare against.
    std::uint64_t device_ = 0, inode_ = 0;
    std::int64_t mtime_sec_ = 0, mtime_nsec_ = 0;

    mutable std::mutex mutex_;
    // Per chunk: read. Set under mutex_ after the chunk's bytes are written
    // (release), and tested without it (acquire): the analysis's threads ask
    // for code that is almost always read already, and a lock per request
    // made them wait on each other (futex calls in a module's translation).
    mutable std::unique_ptr<std::atomic<bool>[]> present_;
    std::size_t chunks_ = 0;
    mutable std::size_t resident_ = 0;
    mutable std::string error_;
};

} // namespace sfunwind::elf::detail

// SPDX-License-Identifier: MIT
#include "process_memory.hpp"

#include <cerrno>
#include <cstring>
#include <fcntl.h>
#include <limits>
#include <string>
#include <sys/ptrace.h>
#include <sys/uio.h>
#include <unistd.h>

namespace sfunwind::cli::bt {

ProcessMemory::~ProcessMemory() {
    if (mem_fd_ >= 0) ::close(mem_fd_);
}

bool ProcessMemory::read(std::uint64_t addr, std::span<std::uint8_t> out) {
    if (out.empty()) return true;
    // A range that wraps around the address space is never readable.
    if (addr > std::numeric_limits<std::uint64_t>::max() - (out.size() - 1)) return false;
    return read_vm(addr, out) || read_proc_mem(addr, out) || read_peek(addr, out);
}

bool ProcessMemory::read_vm(std::uint64_t addr, std::span<std::uint8_t> out) {
    iovec local{out.data(), out.size()};
    // The address is the traced process's, never dereferenced here.
    iovec remote{reinterpret_cast<void*>(addr), out.size()}; // NOLINT(performance-no-int-to-ptr)
    const ssize_t n = ::process_vm_readv(pid_, &local, 1, &remote, 1, 0);
    return n >= 0 && static_cast<std::size_t>(n) == out.size();
}

bool ProcessMemory::read_proc_mem(std::uint64_t addr, std::span<std::uint8_t> out) {
    if (!mem_fd_tried_) {
        mem_fd_tried_ = true;
        const std::string path = "/proc/" + std::to_string(pid_) + "/mem";
        mem_fd_ = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
    }
    if (mem_fd_ < 0 || addr > static_cast<std::uint64_t>(std::numeric_limits<off_t>::max()))
        return false;
    std::size_t done = 0;
    while (done < out.size()) {
        const ssize_t n =
            ::pread(mem_fd_, out.data() + done, out.size() - done, static_cast<off_t>(addr + done));
        if (n < 0 && errno == EINTR) continue;
        if (n <= 0) return false;
        done += static_cast<std::size_t>(n);
    }
    return true;
}

bool ProcessMemory::read_peek(std::uint64_t addr, std::span<std::uint8_t> out) {
    constexpr std::size_t word = sizeof(long);
    const std::uint64_t last = addr + (out.size() - 1); // read() ruled out wrapping
    for (std::uint64_t at = addr & ~std::uint64_t{word - 1};; at += word) {
        errno = 0;
        // NOLINTNEXTLINE(performance-no-int-to-ptr): an address in the tracee
        const long v = ::ptrace(PTRACE_PEEKDATA, tid_, reinterpret_cast<void*>(at), nullptr);
        if (errno != 0) return false;
        unsigned char bytes[word];
        std::memcpy(bytes, &v, word);
        for (std::size_t i = 0; i < word; ++i) {
            const std::uint64_t a = at + i;
            if (a >= addr && a - addr < out.size()) out[a - addr] = bytes[i];
        }
        if (last - at < word) return true;
    }
}

} // namespace sfunwind::cli::bt

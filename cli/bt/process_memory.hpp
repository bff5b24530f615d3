// SPDX-License-Identifier: MIT
// Reading a live, ptrace-stopped process's memory.
#pragma once

#include "sfunwind/unwind/step.hpp"

#include <cstdint>
#include <span>
#include <sys/types.h>

namespace sfunwind::cli::bt {

// process_vm_readv first (one system call per read); when the kernel refuses
// it (no CONFIG_CROSS_MEMORY_ATTACH, seccomp), /proc/PID/mem; then
// PTRACE_PEEKDATA a word at a time through `stopped_tid`, a thread we have
// ptrace-stopped.
class ProcessMemory final : public MemoryReader {
  public:
    ProcessMemory(pid_t pid, pid_t stopped_tid) : pid_(pid), tid_(stopped_tid) {}
    ~ProcessMemory() override;
    ProcessMemory(const ProcessMemory&) = delete;
    ProcessMemory& operator=(const ProcessMemory&) = delete;

    bool read(std::uint64_t addr, std::span<std::uint8_t> out) override;

  private:
    bool read_vm(std::uint64_t addr, std::span<std::uint8_t> out);
    bool read_proc_mem(std::uint64_t addr, std::span<std::uint8_t> out);
    bool read_peek(std::uint64_t addr, std::span<std::uint8_t> out);

    pid_t pid_;
    pid_t tid_;
    int mem_fd_ = -1;
    bool mem_fd_tried_ = false;
};

} // namespace sfunwind::cli::bt

// SPDX-License-Identifier: MIT
// A core dump's memory (its PT_LOAD segments) and the signal its threads
// stopped with (NT_PRSTATUS notes), read with libelf.
#pragma once

#include "sfunwind/error.hpp"
#include "sfunwind/unwind/step.hpp"

#include <cstdint>
#include <memory>
#include <span>
#include <string>
#include <sys/types.h>
#include <vector>

namespace sfunwind::cli::bt {

struct CoreThreadNote {
    pid_t tid = 0;
    int signal = 0; // pr_cursig
};

class CoreFile final : public MemoryReader {
  public:
    // Errors name the file.
    static Expected<std::unique_ptr<CoreFile>> open(const std::string& path);
    ~CoreFile() override;
    CoreFile(const CoreFile&) = delete;
    CoreFile& operator=(const CoreFile&) = delete;

    const std::string& path() const noexcept { return path_; }
    // Threads in note order: the kernel and GDB's gcore both write the
    // thread that took the signal first.
    const std::vector<CoreThreadNote>& threads() const noexcept { return threads_; }

    // Only bytes the core holds: a segment's memsz beyond its filesz was not
    // dumped (read-only file mappings, by the default coredump_filter) and is
    // unreadable here, not zero.
    bool read(std::uint64_t addr, std::span<std::uint8_t> out) override;

  private:
    struct Segment {
        std::uint64_t vaddr;
        std::uint64_t filesz;
        std::uint64_t offset;
    };
    CoreFile() = default;

    std::string path_;
    int fd_ = -1;
    std::vector<Segment> segments_; // sorted by vaddr
    std::vector<CoreThreadNote> threads_;
};

} // namespace sfunwind::cli::bt

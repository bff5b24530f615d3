// SPDX-License-Identifier: MIT
// Stack bytes read ahead, for bridges that pay per read request: GDB's
// Python API (about 1 us a read_memory) and its JIT reader's target_read
// (a read(2) of /proc/PID/mem each). GDB's own DWARF unwinder reads the
// stack through GDB's stack cache instead, which neither interface reaches.
#pragma once

#include "sfunwind/unwind/step.hpp"

#include <array>
#include <cstdint>
#include <span>

namespace sfunwind::gdb {

// One chunk of the stack, for the frames of one run (unwind_frame() clears
// it at a frame the previous step did not produce; ModuleTable::new_stop
// when the inferior runs or memory or registers are written). A read starts
// `lead` bytes below the address asked for, so that the callee-saved slots
// a frame keeps below its CFA come with the CFA-relative words the step
// reads, and runs on towards older frames, which lie above.
class StackChunk {
  public:
    static constexpr std::size_t capacity = 4096;
    static constexpr std::uint64_t lead = 512;

    // Bytes that hold [addr, addr + size), starting at *start: the chunk if
    // it holds them, else read again (`capacity` bytes from addr - lead; or
    // from addr - lead to addr + size, or [addr, addr + size) alone, where
    // the stack's mapping ends nearer). Empty if unreadable.
    std::span<const std::uint8_t> cover(std::uint64_t addr, std::uint32_t size,
                                        MemoryReader& target, std::uint64_t* start);
    void clear() noexcept { size_ = 0; }

  private:
    bool fill(std::uint64_t addr, std::size_t size, MemoryReader& target);

    std::array<std::uint8_t, capacity> bytes_{};
    std::uint64_t addr_ = 0;
    std::size_t size_ = 0;
};

} // namespace sfunwind::gdb

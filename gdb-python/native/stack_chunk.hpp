// SPDX-License-Identifier: MIT
// Stack bytes read ahead, for bridges that pay per read request: GDB's
// Python API (about 1 us a read_memory, and a C++ and a Python exception
// when it fails) and its JIT reader's target_read (a pread(2) of
// /proc/PID/mem each). GDB's own DWARF unwinder reads the stack through
// GDB's stack cache instead, which neither interface reaches.
#pragma once

#include "sfunwind/unwind/step.hpp"

#include <array>
#include <cstdint>
#include <span>

namespace sfunwind::gdb {

// One chunk of the stack, for the frames of one run (unwind_frame() clears
// it at a frame the previous step did not produce; ModuleTable::new_stop
// resets it when the inferior runs or memory or registers are written). A
// read starts at the block that holds the byte `lead` bytes below the
// address asked for, so that the callee-saved slots a frame keeps below its
// CFA come with the CFA-relative words the step reads, and runs on towards
// older frames, which lie above.
//
// Reads cover whole aligned blocks of `block` bytes, the smallest page size
// of every supported ABI, so that a read fails only where one of its pages
// is unreadable, never for the bytes past the stack's end in a page it
// shares with them. Where a read ahead fails (the top of the stack's mapping
// lies within it: GDB's Python API then raises an exception in C++ and in
// Python), the blocks the frame needs are read alone, and until the next
// stop no read ahead runs past them: the mappings change only while the
// inferior runs, and a bound too low costs a read, never a byte.
class StackChunk {
  public:
    static constexpr std::size_t block = 4096;
    static constexpr std::size_t capacity = 4 * block;
    static constexpr std::uint64_t lead = 512;

    // Bytes that hold [addr, addr + size), starting at *start: the chunk if
    // it holds them, else read again (up to `capacity` bytes from the block
    // of addr - lead; or that block's read to the block of the window's end,
    // or [addr, addr + size) alone). Empty if unreadable.
    std::span<const std::uint8_t> cover(std::uint64_t addr, std::uint32_t size,
                                        MemoryReader& target, std::uint64_t* start);
    void clear() noexcept { size_ = 0; }
    // The inferior ran, or its memory changed: its mappings may have too.
    void reset() noexcept {
        size_ = 0;
        limit_ = 0;
    }

  private:
    bool fill(std::uint64_t addr, std::uint64_t size, MemoryReader& target);

    std::array<std::uint8_t, capacity> bytes_{};
    std::uint64_t addr_ = 0;
    std::size_t size_ = 0;
    // The end of the blocks read where a read ahead failed at this stop: a
    // block from there to that read's end is unreadable (0: none known).
    std::uint64_t limit_ = 0;
};

} // namespace sfunwind::gdb

// SPDX-License-Identifier: MIT
// Prefetching the stack bytes that one step() reads. A debugger bridge pays
// per memory request (GDB's Python API: about 2 us a read; a JIT reader
// callback, a remote stub round trip), while step() reads at most three
// words, all at fixed offsets from the CFA (spec v3 section 2.4.2: "offset
// from CFA" data words). Planning them from the Row lets the bridge fetch one
// window per frame and answer step()'s reads from it.
#pragma once

#include "sfunwind/row.hpp"
#include "sfunwind/unwind/step.hpp"

#include <cstdint>
#include <optional>
#include <span>

namespace sfunwind {

// Stack bytes at [value of base_reg + offset, + size).
struct ReadWindow {
    std::uint16_t base_reg = 0; // DWARF register number (the CFA's base register)
    std::int64_t offset = 0;
    std::uint32_t size = 0; // 0: step() reads no memory for this row
};

// The smallest window holding every word step() reads for `row`, relative to
// the CFA's base register. With a dereferenced CFA (v3 flexible FDEs) only
// the CFA's pointer slot can be planned: the RA and FP slots depend on the
// value read there. Rules based on other registers are left out; their reads
// go to the fallback reader. So is the FP slot when it lies more than 4 GiB
// from the RA slot (only a corrupt section says so): no window holds both.
ReadWindow plan_reads(const Row& row);

// Answers reads that lie inside prefetched bytes at `address`; passes the
// others to `fallback` (null: they fail). The bytes must outlive the reader.
class WindowMemory final : public MemoryReader {
  public:
    WindowMemory(std::uint64_t address, std::span<const std::uint8_t> bytes,
                 MemoryReader* fallback) noexcept
        : address_(address), bytes_(bytes), fallback_(fallback) {}

    bool read(std::uint64_t addr, std::span<std::uint8_t> out) override;
    // Reads the window could not answer (for tests and statistics).
    std::uint32_t fallback_reads() const noexcept { return fallback_reads_; }

  private:
    std::uint64_t address_;
    std::span<const std::uint8_t> bytes_;
    MemoryReader* fallback_;
    std::uint32_t fallback_reads_ = 0;
};

} // namespace sfunwind

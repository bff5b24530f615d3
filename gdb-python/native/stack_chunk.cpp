// SPDX-License-Identifier: MIT
#include "stack_chunk.hpp"

#include <algorithm>
#include <cstddef>
#include <limits>

namespace sfunwind::gdb {
namespace {

constexpr std::uint64_t top = std::numeric_limits<std::uint64_t>::max();

bool covers(std::uint64_t chunk_addr, std::size_t chunk_size, std::uint64_t addr,
            std::uint32_t size) {
    const std::uint64_t rel = addr - chunk_addr;
    return rel <= chunk_size && size <= chunk_size - rel;
}

} // namespace

bool StackChunk::fill(std::uint64_t addr, std::uint64_t size, MemoryReader& target) {
    // Never a chunk that runs past the top of the address space: its bytes
    // would be taken for addresses from 0 on.
    if (size == 0 || size > capacity || size - 1 > top - addr) return false;
    if (!target.read(addr, std::span<std::uint8_t>(bytes_.data(), size))) return false;
    addr_ = addr;
    size_ = size;
    return true;
}

std::span<const std::uint8_t> StackChunk::cover(std::uint64_t addr, std::uint32_t size,
                                                MemoryReader& target, std::uint64_t* start) {
    if (size_ == 0 || !covers(addr_, size_, addr, size)) {
        size_ = 0;
        bool read = false;
        // The blocks from the one that holds addr - lead to the one that
        // holds the window's last byte (none where the window reaches the
        // address space's last block: it is read alone).
        if (size > 0 && addr <= top - block - size) {
            const std::uint64_t low = addr - std::min<std::uint64_t>(addr, lead);
            const std::uint64_t first = low - low % block;
            const std::uint64_t window_end = addr + size;
            const std::uint64_t needed_end = window_end + (block - window_end % block) % block;
            std::uint64_t ahead_end = first <= top - capacity ? first + capacity : needed_end;
            if (limit_ > first) ahead_end = std::min(ahead_end, limit_);
            ahead_end = std::max(ahead_end, needed_end);
            if (ahead_end - first <= capacity) {
                read = fill(first, ahead_end - first, target);
                if (!read && needed_end < ahead_end) {
                    read = fill(first, needed_end - first, target);
                    if (read) limit_ = needed_end;
                }
            }
        }
        if (!read && !fill(addr, size, target)) return {};
    }
    *start = addr_;
    return {bytes_.data(), size_};
}

} // namespace sfunwind::gdb

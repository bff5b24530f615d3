// SPDX-License-Identifier: MIT
#include "stack_chunk.hpp"

#include <cstddef>
#include <limits>

namespace sfunwind::gdb {
namespace {

bool covers(std::uint64_t chunk_addr, std::size_t chunk_size, std::uint64_t addr,
            std::uint32_t size) {
    const std::uint64_t rel = addr - chunk_addr;
    return rel <= chunk_size && size <= chunk_size - rel;
}

} // namespace

bool StackChunk::fill(std::uint64_t addr, std::size_t size, MemoryReader& target) {
    // Never a chunk that runs past the top of the address space: its bytes
    // would be taken for addresses from 0 on.
    if (size == 0 || size > capacity || size - 1 > std::numeric_limits<std::uint64_t>::max() - addr)
        return false;
    if (!target.read(addr, std::span<std::uint8_t>(bytes_.data(), size))) return false;
    addr_ = addr;
    size_ = size;
    return true;
}

std::span<const std::uint8_t> StackChunk::cover(std::uint64_t addr, std::uint32_t size,
                                                MemoryReader& target, std::uint64_t* start) {
    if (size_ == 0 || !covers(addr_, size_, addr, size)) {
        size_ = 0;
        const std::uint64_t below = addr >= lead ? lead : addr;
        const std::uint64_t low = addr - below;
        auto read = [&](std::uint64_t at, std::size_t n) {
            return fill(at, n, target) && covers(addr_, size_, addr, size);
        };
        if (!read(low, capacity) && !read(low, below + size) && !read(addr, size)) {
            size_ = 0;
            return {};
        }
    }
    *start = addr_;
    return {bytes_.data(), size_};
}

} // namespace sfunwind::gdb

// SPDX-License-Identifier: MIT
#include "stack_chunk.hpp"

#include <cstddef>

namespace sfunwind::gdb {
namespace {

bool covers(std::uint64_t chunk_addr, std::size_t chunk_size, std::uint64_t addr,
            std::uint32_t size) {
    const std::uint64_t rel = addr - chunk_addr;
    return rel <= chunk_size && size <= chunk_size - rel;
}

} // namespace

bool StackChunk::fill(std::uint64_t addr, std::size_t size, MemoryReader& target) {
    if (size == 0 || size > capacity) return false;
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
        // A window that wraps the address space is read as asked, or not.
        const bool from_low = addr + size >= addr;
        auto read = [&](std::uint64_t at, std::size_t n) {
            return fill(at, n, target) && covers(addr_, size_, addr, size);
        };
        if (!(from_low && read(low, capacity)) && !(from_low && read(low, below + size)) &&
            !read(addr, size)) {
            size_ = 0;
            return {};
        }
    }
    *start = addr_;
    return {bytes_.data(), size_};
}

} // namespace sfunwind::gdb

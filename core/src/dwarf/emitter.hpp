// SPDX-License-Identifier: MIT
// DWARF's encodings of values (DWARF 5 section 7): fixed-size fields in the
// target's byte order, LEB128, appended to a byte vector. What the
// .debug_frame writer (cfi/dwarf_writer.cpp) and the debug file's compile
// unit (elf/empty_compile_unit.cpp) write with.
#pragma once

#include "sfunwind/bytes.hpp"

#include <algorithm>
#include <array>
#include <boost/endian/conversion.hpp>
#include <cstddef>
#include <cstdint>
#include <span>
#include <vector>

namespace sfunwind::dwarf {

class Emitter {
  public:
    Emitter(std::vector<std::uint8_t>& out, ByteOrder order) : out_(out), order_(order) {}

    void u8(unsigned v) { out_.push_back(static_cast<std::uint8_t>(v)); }
    void u16(std::uint16_t v) { fixed(v, 2); }
    void u32(std::uint32_t v) { fixed(v, 4); }
    void u64(std::uint64_t v) { fixed(v, 8); }
    // Overwrites the 4-byte field at `at` (a length known once what it
    // measures is written).
    void patch_u32(std::size_t at, std::uint32_t v) {
        store(v, std::span<std::uint8_t>(out_).subspan(at, 4));
    }
    void uleb(std::uint64_t v) {
        do {
            std::uint8_t b = v & 0x7fU;
            v >>= 7;
            if (v != 0) b |= 0x80U;
            out_.push_back(b);
        } while (v != 0);
    }
    void sleb(std::int64_t v) {
        while (true) {
            const auto b = static_cast<std::uint8_t>(static_cast<std::uint64_t>(v) & 0x7fU);
            // Arithmetic shift: C++20 defines it for negative values.
            // cppcheck-suppress shiftNegativeLHS
            v >>= 7;
            const bool sign = (b & 0x40U) != 0;
            if ((v == 0 && !sign) || (v == -1 && sign)) {
                out_.push_back(b);
                return;
            }
            out_.push_back(static_cast<std::uint8_t>(b | 0x80U));
        }
    }
    void bytes(std::span<const std::uint8_t> b) { out_.insert(out_.end(), b.begin(), b.end()); }
    std::size_t size() const { return out_.size(); }

  private:
    void fixed(std::uint64_t v, unsigned n) {
        const std::size_t at = out_.size();
        out_.resize(at + n);
        store(v, std::span<std::uint8_t>(out_).subspan(at, n));
    }
    // The low to.size() bytes of v, in the target's byte order.
    void store(std::uint64_t v, std::span<std::uint8_t> to) const {
        std::array<std::uint8_t, 8> b{};
        if (order_ == ByteOrder::Little)
            boost::endian::endian_store<std::uint64_t, 8, boost::endian::order::little>(b.data(),
                                                                                        v);
        else
            boost::endian::endian_store<std::uint64_t, 8, boost::endian::order::big>(b.data(), v);
        const std::size_t first = order_ == ByteOrder::Little ? 0 : 8 - to.size();
        std::copy_n(b.begin() + static_cast<std::ptrdiff_t>(first), to.size(), to.begin());
    }

    std::vector<std::uint8_t>& out_;
    ByteOrder order_;
};

} // namespace sfunwind::dwarf

// SPDX-License-Identifier: MIT
// Bounds-checked, byte-order-aware loads from a byte range. SFrame FREs are
// unaligned on disk (spec v3 section 2.4), so every load copies bytes through
// Boost.Endian rather than casting pointers.
#pragma once

#include <boost/endian/conversion.hpp>
#include <cstddef>
#include <cstdint>
#include <span>
#include <type_traits>

namespace sfunwind {

enum class ByteOrder : std::uint8_t { Little, Big };

inline constexpr ByteOrder host_byte_order() noexcept {
    return boost::endian::order::native == boost::endian::order::little ? ByteOrder::Little
                                                                        : ByteOrder::Big;
}

// A read-only view of bytes with loads that fail instead of overrunning.
class ByteView {
  public:
    ByteView() = default;
    ByteView(std::span<const std::uint8_t> bytes, ByteOrder order) : bytes_(bytes), order_(order) {}

    std::size_t size() const noexcept { return bytes_.size(); }
    ByteOrder order() const noexcept { return order_; }
    std::span<const std::uint8_t> bytes() const noexcept { return bytes_; }

    // True when [offset, offset + length) lies inside the view; safe against
    // overflow of offset + length.
    bool contains(std::uint64_t offset, std::uint64_t length) const noexcept {
        return offset <= bytes_.size() && length <= bytes_.size() - offset;
    }

    // Loads an integer of N bytes (1, 2, 4 or 8) at offset; false when it does not fit.
    template <typename T, std::size_t N = sizeof(T)>
    bool load(std::uint64_t offset, T& out) const noexcept {
        static_assert(std::is_integral_v<T> && N <= sizeof(T));
        if (!contains(offset, N)) return false;
        const unsigned char* p = bytes_.data() + offset;
        if (order_ == ByteOrder::Little)
            out = boost::endian::endian_load<T, N, boost::endian::order::little>(p);
        else
            out = boost::endian::endian_load<T, N, boost::endian::order::big>(p);
        return true;
    }

    // Loads a little- or big-endian value of `width` bytes (1, 2 or 4),
    // sign-extending when T is signed. Used for FRE fields whose width is chosen
    // per FDE or per FRE.
    template <typename T>
    bool load_sized(std::uint64_t offset, unsigned width, T& out) const noexcept {
        switch (width) {
        case 1:
            return load<T, 1>(offset, out);
        case 2:
            return load<T, 2>(offset, out);
        case 4:
            return load<T, 4>(offset, out);
        default:
            return false;
        }
    }

  private:
    std::span<const std::uint8_t> bytes_;
    ByteOrder order_ = ByteOrder::Little;
};

} // namespace sfunwind

// SPDX-License-Identifier: MIT
// Where a frame is, and how the walk learned it. Frame 0, and a frame that a
// signal interrupted (its registers saved by the kernel), have a precise
// instruction pointer. Every other frame's PC is a return address: the
// instruction after a call, which for a call to a noreturn function may lie
// past the end of the caller (in the next function, or outside any).
// Rows and symbols of such a frame must be looked up at the call itself,
// one byte before (DWARF 5 section 6.4.4; SFrame v3 appendix A does the same
// for its callers). This type is the one place that rule lives.
#pragma once

#include <cstdint>

namespace sfunwind {

class FrameAddress {
  public:
    // Frame 0, or a frame a signal interrupted.
    static constexpr FrameAddress instruction_pointer(std::uint64_t pc) noexcept {
        return FrameAddress(pc, false);
    }
    // A caller frame reached by a call.
    static constexpr FrameAddress return_address(std::uint64_t ra) noexcept {
        return FrameAddress(ra, true);
    }
    // `precise`: the frame is the topmost one or was interrupted by a signal.
    static constexpr FrameAddress of_frame(std::uint64_t pc, bool precise) noexcept {
        return FrameAddress(pc, !precise);
    }

    // The frame's PC as its registers hold it.
    constexpr std::uint64_t address() const noexcept { return address_; }
    // The address to look the frame's row and symbol up at.
    constexpr std::uint64_t lookup_address() const noexcept {
        return is_return_address_ && address_ != 0 ? address_ - 1 : address_;
    }
    constexpr bool is_return_address() const noexcept { return is_return_address_; }

    constexpr bool operator==(const FrameAddress&) const = default;

  private:
    constexpr FrameAddress(std::uint64_t address, bool is_return_address) noexcept
        : address_(address), is_return_address_(is_return_address) {}

    std::uint64_t address_;
    bool is_return_address_;
};

} // namespace sfunwind

// SPDX-License-Identifier: MIT
// An unsorted copy of a section for the lookup benchmark: the same FDEs with
// the same FREs, written by sframe::Writer in a shuffled order with
// SFRAME_F_FDE_SORTED clear (spec v3 section 2.1.3), as clang + lld leave
// their sections. Section::parse then keeps a sorted index of the FDEs
// instead of binary-searching them in place.
#pragma once

#include "sfunwind/error.hpp"
#include "sfunwind/sframe/section.hpp"

#include <cstdint>
#include <vector>

namespace sfunwind::bench {

// The copy's bytes, at the same address as `section`. Every FRE's rules are
// passed to the Writer as the decoder read them (Section::row), so the copy
// gives the same rows; an error when any FDE or FRE cannot be decoded or
// written back.
Expected<std::vector<std::uint8_t>> shuffled_copy(const sframe::Section& section,
                                                  std::uint64_t seed);

} // namespace sfunwind::bench

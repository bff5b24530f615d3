// SPDX-License-Identifier: MIT
// PCs for the lookup benchmark, drawn at random with a fixed seed from the
// code a section's FDEs cover: every covered byte is equally likely, as for
// the PCs a sampling profiler sees in code that runs evenly.
#pragma once

#include "sfunwind/error.hpp"
#include "sfunwind/sframe/section.hpp"

#include <cstddef>
#include <cstdint>
#include <vector>

namespace sfunwind::bench {

// `count` link-time PCs inside the functions of `section`; an error when an
// FDE cannot be read or the FDEs cover no byte.
Expected<std::vector<std::uint64_t>> draw_pcs(const sframe::Section& section, std::size_t count,
                                              std::uint64_t seed);

} // namespace sfunwind::bench

// SPDX-License-Identifier: MIT
// A synthetic SFrame section the size of the biggest programs (a browser's
// or a game engine's hundreds of thousands to millions of functions), which
// no program built here reaches: the big program of bench/big_program has
// 32,000 functions in three files.
//
// The functions follow what GCC and GNU as 2.47 write for x86-64 at -O2 (an
// SFrame v3 AMD64 section, FDEs sorted, PC-relative starts): leaf functions
// with one FRE; functions that push some of rbx, rbp, r12-r15 one FRE per
// push, then lower the SP for their frame, and leave by one or more
// epilogues, each popping them again (an FRE per pop), with the body's rules
// restored after each return but the last; and rbp-framed functions (CFA on
// rbp from the `mov %rsp,%rbp` on). Sizes and counts are drawn with a fixed
// seed, so a given count always gives the same bytes, with any compiler
// and standard library: 7.3 FREs per FDE
// (SQLite's gas 2.47 section has 8.5, the big program's 12.5) and 50 bytes
// of section per function.
#pragma once

#include "sfunwind/error.hpp"

#include <cstdint>
#include <vector>

namespace sfunwind::bench {

// 4,000,000 functions: about 200 MB of section, and 5.6 GB at the peak of
// writing it (the writer's per-FRE input).
inline constexpr std::uint32_t max_synthetic_functions = 4'000'000;

struct SyntheticSection {
    std::vector<std::uint8_t> bytes;
    std::uint64_t vaddr = 0; // the section's link-time address
};

// `functions` functions (1 to max_synthetic_functions) laid out from
// 0x400000, each 16-byte aligned, the section after them.
Expected<SyntheticSection> synthetic_section(std::uint32_t functions, std::uint64_t seed);

} // namespace sfunwind::bench

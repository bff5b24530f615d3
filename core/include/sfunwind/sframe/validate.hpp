// SPDX-License-Identifier: MIT
// A strict check of a whole SFrame section: every problem, with the byte
// offset where it was found. Unwinding does not need a clean bill (a bad FDE
// only makes lookups in that function fail); tools and tests do.
#pragma once

#include "sfunwind/sframe/section.hpp"

#include <cstdint>
#include <span>
#include <string>
#include <vector>

namespace sfunwind::sframe {

struct Problem {
    enum class Severity : std::uint8_t { Error, Warning };
    Severity severity;
    std::uint64_t offset; // section offset, or no_offset
    std::string message;
};

// Checks the section in `bytes` (as Section::parse would read it) and returns
// every problem found; empty when the section is clean.
std::vector<Problem> validate(std::span<const std::uint8_t> bytes, std::uint64_t vaddr);
std::vector<Problem> validate(const Section& section);

} // namespace sfunwind::sframe

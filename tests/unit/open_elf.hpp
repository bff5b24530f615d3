// SPDX-License-Identifier: MIT
// An ELF file the test needs, or the test fails with the reason.
#pragma once

#include "catch.hpp"
#include "sfunwind/elf/elf_file.hpp"

#include <string>
#include <utility>

namespace sfunwind::test {

inline elf::ElfFile open_elf(const std::string& path) {
    auto f = elf::ElfFile::open(path);
    if (!f) FAIL(f.error().message());
    return std::move(*f);
}

} // namespace sfunwind::test

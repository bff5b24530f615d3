// SPDX-License-Identifier: MIT
// The large real-world SFrame sections of tests/fixtures/large (the SQLite
// shell built by gcc + gas 2.47 and by clang + lld 23), loaded and checked
// against what binutils reported when make.sh built them (sections.json).
#pragma once

#include "sfunwind/error.hpp"

#include <cstdint>
#include <filesystem>
#include <string>
#include <vector>

namespace sfunwind::bench {

struct LargeSection {
    std::string name;                // file name, e.g. "sqlite3-gas-2.47"
    std::vector<std::uint8_t> bytes; // the .sframe section, copied out of the ELF file
    std::uint64_t vaddr = 0;
    unsigned version = 0;       // as objdump printed it
    std::uint32_t num_fdes = 0; // as objdump printed it
    std::uint32_t num_fres = 0;
};

// Every binary that sections.json in `dir` lists, with its .sframe section
// read by sfunwind::elf::ElfFile. An error when a file is missing, or when its
// section's address, size or FDE/FRE counts disagree with sections.json.
Expected<std::vector<LargeSection>> load_large_sections(const std::filesystem::path& dir);

} // namespace sfunwind::bench

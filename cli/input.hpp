// SPDX-License-Identifier: MIT
// Opening what the CLI is pointed at: an ELF file (its .sframe section), or a
// raw section dump (--raw, with the section's address from --base).
#pragma once

#include "sfunwind/elf/elf_file.hpp"
#include "sfunwind/sframe/section.hpp"

#include <memory>
#include <optional>
#include <string>
#include <vector>

namespace sfunwind::cli {

struct InputOptions {
    bool raw = false;
    std::uint64_t base = 0;
};

struct Input {
    std::string path;
    std::unique_ptr<elf::ElfFile> elf;   // null for raw input
    std::vector<std::uint8_t> raw_bytes; // raw input only
    std::span<const std::uint8_t> bytes; // the section's bytes
    std::optional<elf::SframeLocation> where;
    std::optional<sframe::Section> section;
};

// Reads the file and locates the section; the error names the file.
Expected<std::unique_ptr<Input>> open_input(const std::string& path, const InputOptions& options);

// objdump's name for the file's format ("elf64-x86-64"), for dump headers.
std::string bfd_target_name(const elf::ElfFile& file);

// Parses "0x401000", "4198400" or "0X..." into an address.
std::optional<std::uint64_t> parse_address(const std::string& text);

} // namespace sfunwind::cli

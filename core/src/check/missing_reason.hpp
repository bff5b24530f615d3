// SPDX-License-Identifier: MIT
// Telling why a function with CFI has no SFrame FDE, from what its CFI rows
// need that the file's SFrame version or a default FDE cannot say, and from
// DWARF's record of the source language.
#pragma once

#include "sfunwind/check/check.hpp"
#include "sfunwind/sframe/format.hpp"

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

namespace sfunwind::check::detail {

// The source language of the compile unit that holds an address, from the
// file's own DWARF (.debug_info); nothing without it.
class SourceLanguages {
  public:
    explicit SourceLanguages(const elf::ElfFile& file);
    SourceLanguages(const SourceLanguages&) = delete;
    SourceLanguages& operator=(const SourceLanguages&) = delete;
    ~SourceLanguages();

    // "DWARF: compile unit NAME, DW_LANG_Mips_Assembler" when the CU that
    // holds `pc` is assembly.
    std::optional<std::string> assembly_unit(std::uint64_t pc) const;

  private:
    struct Impl;
    std::unique_ptr<Impl> impl_;
};

struct Missing {
    MissingReason reason = MissingReason::Unknown;
    std::string detail;
};

// `version`: the file's SFrame version, or nullopt when it has none.
Missing classify_missing(const std::vector<cfi::CfiRow>& rows, const Abi& abi,
                         std::optional<sframe::Version> version, const SourceLanguages& languages);

} // namespace sfunwind::check::detail

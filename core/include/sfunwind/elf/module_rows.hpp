// SPDX-License-Identifier: MIT
// A module's unwind rows, opened from its ELF file or from an image of it
// read from the target: the one place that decides which rows a module has.
// An SFrame section when the file has one; otherwise, for a PowerPC64 file,
// its traceback tables (SFrame defines no ppc64 ABI). A damaged .sframe is
// reported, never replaced by another table.
#pragma once

#include "sfunwind/elf/elf_file.hpp"
#include "sfunwind/unwind/row_source.hpp"

#include <cstdint>
#include <memory>
#include <optional>
#include <span>
#include <string>

namespace sfunwind::elf {

struct ModuleRows {
    std::shared_ptr<const ElfFile> file;   // null when the file could not be read
    std::shared_ptr<const RowSource> rows; // null when the module has no rows
    std::optional<SframeLocation> where;   // how .sframe was found (SFrame rows only)
    // Why `rows` is null: Errc::NotFound when the module has no table,
    // another code when one could not be read (a damaged .sframe, an
    // unreadable file), with its offset.
    std::optional<Error> error;

    bool damaged() const noexcept { return error && error->code() != Errc::NotFound; }
    std::string problem() const { return error ? error->message() : std::string(); }
    const sframe::Section* sframe() const noexcept { return rows ? rows->sframe() : nullptr; }
};

// Reads the file at `path` and opens its unwind rows.
ModuleRows open_module_rows(const std::string& path);
// The same for an ELF image in memory (the vdso, a module read from the
// target), named `name` in messages.
ModuleRows open_module_rows(std::span<const std::uint8_t> image, const std::string& name);
// The unwind rows of an opened file.
ModuleRows open_module_rows(std::shared_ptr<const ElfFile> file);

} // namespace sfunwind::elf

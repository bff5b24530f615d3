// SPDX-License-Identifier: MIT
// Enumerating the FDEs of a CFI section. libdw has no FDE iterator, but
// dwarf_next_cfi splits raw .eh_frame/.debug_frame into CIE and FDE entries;
// only each FDE's initial_location and address_range are then read here,
// with the CIE's pointer encoding (LSB 5.0 "Exception Frames"; DWARF 5
// section 6.4.1). The rules themselves are always libdw's.
#pragma once

#include "sfunwind/bytes.hpp"
#include "sfunwind/cfi/cfi_table.hpp"
#include "sfunwind/elf/elf_file.hpp"
#include "sfunwind/error.hpp"

#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <vector>

namespace sfunwind::cfi::detail {

// Raw CFI bytes and the link-time address of their first byte.
struct CfiBytes {
    std::span<const std::uint8_t> bytes;
    std::uint64_t vaddr = 0;
    std::string name; // ".eh_frame", ".debug_frame", ".eh_frame (via PT_GNU_EH_FRAME)"
};

// .eh_frame: the section, or, with no section headers, what .eh_frame_hdr
// (PT_GNU_EH_FRAME) points at, up to the end of its PT_LOAD segment's file
// bytes (the zero terminator ends the walk before that). Errors go to `errors`.
std::optional<CfiBytes> eh_frame_bytes(const elf::ElfFile& file, std::vector<Error>& errors);
std::optional<CfiBytes> debug_frame_bytes(const elf::ElfFile& file);

struct FdeListing {
    std::vector<FdeRange> fdes; // in section order
    std::vector<Error> errors;
};

FdeListing list_fdes(const elf::ElfFile& file, const CfiBytes& cfi, Source source);

} // namespace sfunwind::cfi::detail

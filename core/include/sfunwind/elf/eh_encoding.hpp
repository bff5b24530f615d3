// SPDX-License-Identifier: MIT
// The pointer encodings of .eh_frame, .eh_frame_hdr and the LSDA
// (DW_EH_PE_*: LSB 5.0 "DWARF Exception Header Encoding") and LEB128 (DWARF 5
// section 7.6), read bounds-checked: shared by the FDE listing (cfi/) and
// the exception call-site reader (call_sites.hpp).
#pragma once

#include "sfunwind/bytes.hpp"

#include <cstdint>
#include <optional>
#include <string>

namespace sfunwind::elf {

// LEB128 at `pos` (advanced past it), at most 10 bytes; nullopt when it runs
// past the view.
std::optional<std::uint64_t> read_leb(const ByteView& view, std::uint64_t& pos, bool is_signed);

// Reads a DW_EH_PE-encoded pointer at `pos` (advanced past it). `pcrel` is
// relative to the field's own address (vaddr of view byte 0 + pos);
// `datarel_base` serves DW_EH_PE_datarel when given. Returns nullopt and sets
// `why` for encodings sfunwind does not read, or when the field runs past
// the view.
std::optional<std::uint64_t> read_encoded(const ByteView& view, std::uint64_t& pos,
                                          std::uint8_t encoding, std::uint64_t view_vaddr,
                                          std::optional<std::uint64_t> datarel_base,
                                          std::string& why);

} // namespace sfunwind::elf

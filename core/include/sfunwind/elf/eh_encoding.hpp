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
#include <string_view>

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

// What a CIE's augmentation says of its FDEs (LSB 5.0 "The Common
// Information Entry Format"): 'z' says augmentation data of known length
// follows, which the other letters index into in order; 'R' gives the FDE
// pointer encoding, 'L' the LSDA pointer's, 'P' a personality pointer
// (skipped), 'S', 'B' and 'G' no data.
struct CieAugmentation {
    std::uint8_t fde_encoding = 0;             // DW_EH_PE_absptr unless 'R'
    bool fde_encoding_read = false;            // 'R' was read
    std::optional<std::uint8_t> lsda_encoding; // 'L'
    bool fde_data = false;                     // 'z': each FDE has augmentation data
    // Why the letters from the first unread one on cannot be known: an
    // augmentation without 'z', data too short, or a letter of unknown
    // size. Empty when all were read.
    std::string unreadable;
};

// `augmentation` is the CIE's string, `data` its augmentation data (the
// bytes after the 'z' length).
CieAugmentation read_cie_augmentation(std::string_view augmentation, const ByteView& data);

} // namespace sfunwind::elf

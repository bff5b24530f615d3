// SPDX-License-Identifier: MIT
#include "sfunwind/elf/eh_encoding.hpp"

#include "sfunwind/error.hpp"

#include <dwarf.h>

namespace sfunwind::elf {
namespace {

template <typename T>
std::optional<std::uint64_t> read_fixed(const ByteView& view, std::uint64_t& pos) {
    T v{};
    if (!view.load(pos, v)) return std::nullopt;
    pos += sizeof(T);
    // Signed types sign-extend here, which pcrel arithmetic relies on.
    return static_cast<std::uint64_t>(v);
}

} // namespace

// LEB128 (DWARF 5 section 7.6), at most 10 bytes for 64 bits.
std::optional<std::uint64_t> read_leb(const ByteView& view, std::uint64_t& pos, bool is_signed) {
    std::uint64_t result = 0;
    unsigned shift = 0;
    for (unsigned i = 0; i < 10; ++i) {
        std::uint8_t byte = 0;
        if (!view.load(pos, byte)) return std::nullopt;
        ++pos;
        if (shift < 64) result |= std::uint64_t{byte & 0x7fU} << shift;
        shift += 7;
        if ((byte & 0x80U) == 0) {
            if (is_signed && shift < 64 && (byte & 0x40U) != 0)
                result |= ~std::uint64_t{0} << shift;
            return result;
        }
    }
    return std::nullopt;
}

std::optional<std::uint64_t> read_encoded(const ByteView& view, std::uint64_t& pos,
                                          std::uint8_t encoding, std::uint64_t view_vaddr,
                                          std::optional<std::uint64_t> datarel_base,
                                          std::string& why) {
    if (encoding == DW_EH_PE_omit) {
        why = "omitted pointer (DW_EH_PE_omit)";
        return std::nullopt;
    }
    const std::uint64_t field_vaddr = view_vaddr + pos;
    std::optional<std::uint64_t> value;
    switch (encoding & 0x0fU) {
    case DW_EH_PE_absptr:
        value = read_fixed<std::uint64_t>(view, pos);
        break; // 64-bit ELF only
    case DW_EH_PE_uleb128:
        value = read_leb(view, pos, false);
        break;
    case DW_EH_PE_udata2:
        value = read_fixed<std::uint16_t>(view, pos);
        break;
    case DW_EH_PE_udata4:
        value = read_fixed<std::uint32_t>(view, pos);
        break;
    case DW_EH_PE_udata8:
        value = read_fixed<std::uint64_t>(view, pos);
        break;
    case DW_EH_PE_sleb128:
        value = read_leb(view, pos, true);
        break;
    case DW_EH_PE_sdata2:
        value = read_fixed<std::int16_t>(view, pos);
        break;
    case DW_EH_PE_sdata4:
        value = read_fixed<std::int32_t>(view, pos);
        break;
    case DW_EH_PE_sdata8:
        value = read_fixed<std::int64_t>(view, pos);
        break;
    default:
        why = "unknown pointer format " + to_hex(encoding & 0x0fU);
        return std::nullopt;
    }
    if (!value) {
        why = "pointer runs past the end of its entry";
        return std::nullopt;
    }
    switch (encoding & 0x70U) {
    case DW_EH_PE_absptr:
        return value;
    case DW_EH_PE_pcrel:
        return *value + field_vaddr;
    case DW_EH_PE_datarel:
        if (datarel_base) return *value + *datarel_base;
        break;
    default:
        break;
    }
    why = "pointer application " + to_hex(encoding & 0x70U) + " is not read by sfunwind";
    return std::nullopt;
}

CieAugmentation read_cie_augmentation(std::string_view augmentation, const ByteView& data) {
    CieAugmentation a;
    if (augmentation.empty()) return a;
    if (augmentation[0] != 'z') {
        a.unreadable = "augmentation \"" + std::string(augmentation) + "\" without 'z'";
        return a;
    }
    a.fde_data = true;
    std::uint64_t pos = 0;
    for (const char c : augmentation.substr(1)) {
        std::uint8_t encoding = 0;
        switch (c) {
        case 'R':
            if (!data.load(pos++, a.fde_encoding)) {
                a.unreadable = "augmentation data too short for 'R'";
                return a;
            }
            a.fde_encoding_read = true;
            break;
        case 'L':
            if (!data.load(pos++, encoding)) {
                a.unreadable = "augmentation data too short for 'L'";
                return a;
            }
            a.lsda_encoding = encoding;
            break;
        case 'P': {
            if (!data.load(pos++, encoding)) {
                a.unreadable = "augmentation data too short for 'P'";
                return a;
            }
            // DW_EH_PE_aligned pads to the address size from the section's
            // start, which the data alone does not give: the letters after
            // it cannot be found.
            if ((encoding & 0x70U) == DW_EH_PE_aligned) {
                a.unreadable = "personality pointer: aligned (DW_EH_PE_aligned) is not read";
                return a;
            }
            std::string why;
            // The personality pointer is only skipped: its format gives its size.
            if (!read_encoded(data, pos, static_cast<std::uint8_t>(encoding & 0x0fU), 0,
                              std::nullopt, why)) {
                a.unreadable = "personality pointer: " + why;
                return a;
            }
            break;
        }
        case 'S': // signal frame
        case 'B': // AArch64 BTI
        case 'G': // AArch64 MTE
            break;
        default:
            // A letter we do not know has data of unknown size: the letters
            // after it cannot be found.
            a.unreadable = std::string("unknown augmentation letter '") + c + "' in \"" +
                           std::string(augmentation) + "\"";
            return a;
        }
    }
    return a;
}

} // namespace sfunwind::elf

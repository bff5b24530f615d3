// SPDX-License-Identifier: MIT
#include "empty_compile_unit.hpp"

#include "../dwarf/emitter.hpp"

#include <dwarf.h>

namespace sfunwind::elf {
namespace {

constexpr std::uint16_t dwarf_version = 4;
constexpr std::uint8_t address_size = 8; // the debug files are ELFCLASS64
constexpr unsigned abbrev_code = 1;

} // namespace

EmptyCompileUnit empty_compile_unit(std::string_view producer, ByteOrder order) {
    EmptyCompileUnit cu;

    // .debug_abbrev (DWARF 4 section 7.5.3): one abbreviation, no children.
    dwarf::Emitter abbrev(cu.debug_abbrev, order);
    abbrev.uleb(abbrev_code);
    abbrev.uleb(DW_TAG_compile_unit);
    abbrev.u8(DW_CHILDREN_no);
    abbrev.uleb(DW_AT_producer);
    abbrev.uleb(DW_FORM_string);
    abbrev.uleb(DW_AT_stmt_list);
    abbrev.uleb(DW_FORM_sec_offset);
    abbrev.uleb(0); // the attribute list's end
    abbrev.uleb(0);
    abbrev.uleb(0); // the table's end

    // .debug_info (section 7.5.1.1): the unit header, then the DIE.
    dwarf::Emitter info(cu.debug_info, order);
    info.u32(0); // unit_length, patched below
    info.u16(dwarf_version);
    info.u32(0); // debug_abbrev_offset
    info.u8(address_size);
    info.uleb(abbrev_code);
    // DW_FORM_string: inline and NUL-terminated, so a NUL in the producer
    // would end it early; the generator's text has none.
    for (const char c : producer)
        if (c != '\0') info.u8(static_cast<unsigned char>(c));
    info.u8(0);
    info.u32(0); // DW_AT_stmt_list: the line table at offset 0
    info.patch_u32(0, static_cast<std::uint32_t>(info.size() - 4));

    // .debug_line (section 6.2.4): a version 4 header with no include
    // directories and no files, and no line number program.
    dwarf::Emitter line(cu.debug_line, order);
    line.u32(0); // unit_length, patched below
    line.u16(dwarf_version);
    const std::size_t header_length_at = line.size();
    line.u32(0); // header_length, patched below
    const std::size_t header_start = line.size();
    line.u8(1);     // minimum_instruction_length
    line.u8(1);     // maximum_operations_per_instruction
    line.u8(1);     // default_is_stmt
    line.u8(0xfbU); // line_base: -5
    line.u8(14);    // line_range
    line.u8(13);    // opcode_base: the 12 standard opcodes of DWARF 4
    // standard_opcode_lengths: the operands of opcodes 1 to 12 (section 6.2.5.2)
    for (const unsigned n : {0U, 1U, 1U, 1U, 1U, 0U, 0U, 0U, 1U, 0U, 0U, 1U})
        line.u8(n);
    line.u8(0); // include_directories: none
    line.u8(0); // file_names: none
    line.patch_u32(header_length_at, static_cast<std::uint32_t>(line.size() - header_start));
    line.patch_u32(0, static_cast<std::uint32_t>(line.size() - 4));
    return cu;
}

} // namespace sfunwind::elf

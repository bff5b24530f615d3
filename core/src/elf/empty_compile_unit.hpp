// SPDX-License-Identifier: MIT
// A DWARF compile unit that describes no code, for a separate debug file
// that has no DWARF of its own: what makes LLDB read the file's symbol table
// once instead of twice.
//
// Why (LLDB 19 and 23): LLDB picks a module's symbol file by asking each
// SymbolFile plugin for its abilities and keeps the best, stopping at the
// first that has all of them (lldb/source/Symbol/SymbolFile.cpp,
// SymbolFile::FindPlugin). Without DWARF, the last plugin asked,
// SymbolFileSymtab, measures its abilities by parsing the debug file's
// symbol table in its own object file (Plugins/SymbolFile/Symtab/
// SymbolFileSymtab.cpp, CalculateAbilities), and the module parses the same
// table again for its symbols: twice the time and the memory of a module's
// symbols. A compile unit with a line table gives SymbolFileDWARF every
// ability (SymbolFileDWARF::CalculateAbilities: a non-empty .debug_info,
// .debug_abbrev and .debug_line), so the search stops there. The unit has
// no address range and no line rows: it matches no PC, and LLDB finds the
// module's functions, as before, through its symbols and .debug_frame.
// Measured in the README's performance section ("LLDB's debug files").
#pragma once

#include "sfunwind/bytes.hpp"

#include <cstdint>
#include <string_view>
#include <vector>

namespace sfunwind::elf {

// The bytes of the three sections, in `order`: a DWARF 4 unit (32-bit
// format, DWARF 4 sections 7.5 and 6.2.4) whose one DIE is a
// DW_TAG_compile_unit with DW_AT_producer `producer` (what wrote the file)
// and DW_AT_stmt_list pointing at a line table with no files and no rows.
struct EmptyCompileUnit {
    std::vector<std::uint8_t> debug_abbrev;
    std::vector<std::uint8_t> debug_info;
    std::vector<std::uint8_t> debug_line;
};

EmptyCompileUnit empty_compile_unit(std::string_view producer, ByteOrder order);

} // namespace sfunwind::elf

// SPDX-License-Identifier: MIT
// Writing a separate debug file for a program (written with libelf), in the
// shape `objcopy --only-keep-debug` gives one, from a base file (the program
// itself, or its existing separate debug file, so that its DWARF stays):
// every section header of the base with its name, address, size and flags,
// and its program headers; the bytes of its notes (the build-id) and of its
// non-allocated sections (.debug_*, .comment); no bytes for its allocated
// sections (SHT_NOBITS: code and data are read from the program). Added: a
// .debug_frame section (or the base's replaced), a .symtab that names
// every function a debugger must unwind through, a .sfunwind section
// naming the generator, and, when the base has no DWARF (and the symbols
// are many enough: DebugFileContents::compile_unit_min_symbols), a compile
// unit that describes no code (elf/empty_compile_unit.hpp: with it LLDB reads
// the symbols once, not twice). The file costs its .debug_frame, its symbols and
// the base's DWARF, not the program's size.
//
// Why this is enough for LLDB (19 and 23, lldb/source/Plugins/SymbolVendor/
// ELF/SymbolVendorELF.cpp and ObjectFile/ELF/ObjectFileELF.cpp): the symbol
// vendor marks the file eTypeDebugInfo, whose sections do not become the
// module's section list; it moves only its debug sections (DWARF,
// .debug_frame, .symtab) into the module's list, so code bytes and load
// addresses stay the program's (measured with `image dump sections`; not so
// on LLDB 19 for a program that carries its own .debug_info, whose section
// list becomes the debug file's, without load addresses: the plugin gives
// LLDB 19 no file for such a program). ObjectFileELF::ParseSymbols maps each
// symbol of the debug file onto the module's section of the same name,
// which is why every section header is kept. Why the extra symbols: LLDB
// consults .debug_frame only for a PC inside a symbol, and the debug file's
// .symtab replaces the program's, whose .dynsym LLDB then no longer reads,
// so the new .symtab holds the program's .symtab entries, its defined
// .dynsym entries, and one function symbol per added function.
//
// The build-id note keeps its bytes, so the file is found by build-id
// (.build-id/xx/yyyy.debug) and matches the program's UUID.
#pragma once

#include "sfunwind/elf/elf_file.hpp"
#include "sfunwind/error.hpp"

#include <cstdint>
#include <span>
#include <string>
#include <vector>

namespace sfunwind::elf {

struct DebugFileContents {
    std::span<const std::uint8_t> debug_frame; // in the program's byte order
    // Functions to name (link-time start and size), for example one per FDE.
    // One that starts where a function symbol of the program already starts is
    // left out; the others become local STT_FUNC symbols.
    std::vector<Symbol> functions;
    // More files whose .symtab and defined .dynsym entries are merged in (the
    // program, when the base is its separate debug file, whose .dynsym has no
    // contents). Their symbols' section indices are remapped by address to
    // the base's sections.
    std::vector<const ElfFile*> symbol_sources;
    // What wrote the file, as text in its own section (generator_section,
    // replacing one the base has): a reader tells the files of a generator
    // from the other debug files of a module by it, whatever their version.
    std::string generator;
    // Where the base has no DWARF, the empty compile unit is added only when
    // the new .symtab has at least this many entries (the null one
    // included): the unit spares LLDB a second parse of the symbols, but
    // costs it a fixed amount per module (the LLDB plugin's threshold says
    // how much).
    std::size_t compile_unit_min_symbols = 0;
};

// The name of that section: not allocated, so no debugger loads it.
inline constexpr const char* generator_section = ".sfunwind";

struct DebugFileReport {
    std::size_t symbols = 0; // entries of the new .symtab, the null entry included
    std::size_t added_functions = 0;
    std::size_t copied_dynamic = 0;  // .dynsym entries copied in
    bool compile_unit_added = false; // no DWARF in the base, symbols enough: the unit was added
    std::uint64_t file_size = 0;
};

// Writes the debug file to `path` (created or truncated): `base` in the shape
// above with the contents added. ELFCLASS64 only. Errors name the base and
// the output path.
Expected<DebugFileReport> write_debug_file(const ElfFile& base, const DebugFileContents& contents,
                                           const std::string& path);

} // namespace sfunwind::elf

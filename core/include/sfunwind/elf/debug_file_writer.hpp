// SPDX-License-Identifier: MIT
// Writing a separate debug file for a program (written with libelf): a copy of
// a base file (the program itself, or its existing separate debug file, so
// that its DWARF stays), every section and segment at its original file
// offset, with a .debug_frame section added (or replaced) and a .symtab that
// names every function a debugger must unwind through.
//
// Why a whole copy and not an --only-keep-debug style file: LLDB 19 replaces a
// non-stripped program's section list with the debug file's, and breakpoints by
// name and variables then break unless the debug file has the program's
// sections too. Why the extra symbols: LLDB consults .debug_frame only for a
// PC inside a symbol, and a debug file's .symtab hides the program's .dynsym,
// so the new .symtab holds the program's .symtab entries, its defined .dynsym
// entries, and one function symbol per added function.
//
// The build-id note is copied with the rest, so the file is found by build-id
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
};

struct DebugFileReport {
    std::size_t symbols = 0; // entries of the new .symtab, the null entry included
    std::size_t added_functions = 0;
    std::size_t copied_dynamic = 0; // .dynsym entries copied in
    std::uint64_t file_size = 0;
};

// Writes the debug file to `path` (created or truncated): a copy of `base`
// with the contents added. ELFCLASS64 only. Errors name the base and the
// output path.
Expected<DebugFileReport> write_debug_file(const ElfFile& base, const DebugFileContents& contents,
                                           const std::string& path);

} // namespace sfunwind::elf

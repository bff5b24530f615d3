// SPDX-License-Identifier: MIT
// The shared libraries a program will load at start-up (DT_NEEDED, found
// through DT_RUNPATH/DT_RPATH with $ORIGIN and the system directories, the
// way ld.so looks for them), so that their debug files exist before LLDB
// first looks for their symbols, which it does the moment the dynamic loader
// adds them. Libraries opened with dlopen are not known in advance.
#pragma once

#include "sfunwind/elf/elf_file.hpp"

#include <memory>
#include <string>
#include <vector>

namespace sfunwind::lldb_plugin {

struct NeededLibrary {
    std::string path;
    // The file as the walk opened it to read its dynamic section (no
    // descriptor kept), for a caller that reads more of it; null when it is
    // not an ELF file that could be read.
    std::shared_ptr<const elf::ElfFile> file;
};

// The libraries `program` (at `path`) needs, transitively (a bounded
// number), each once. Names that cannot be found are left out.
std::vector<NeededLibrary> needed_libraries(const elf::ElfFile& program, const std::string& path);

} // namespace sfunwind::lldb_plugin

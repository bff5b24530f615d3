// SPDX-License-Identifier: MIT
// The files an ELF core file names: its NT_FILE note (Linux
// fs/binfmt_elf.c fill_files_note, the layout GDB and LLDB read too), one
// entry per file-backed mapping of the dumped process: the program and every
// shared library it had loaded. Those are the modules LLDB will load with the
// core, known before it loads them.
#pragma once

#include "sfunwind/error.hpp"

#include <string>
#include <vector>

namespace sfunwind::lldb_plugin {

// Whether `path` is an ELF core file (ET_CORE); false for anything unreadable.
bool is_core_file(const std::string& path);

// The distinct file names of the core's NT_FILE notes, in note order.
// Errors name the core: unreadable, not a core, a malformed note.
Expected<std::vector<std::string>> core_file_names(const std::string& path);

} // namespace sfunwind::lldb_plugin

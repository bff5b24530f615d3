// SPDX-License-Identifier: MIT
// A few facts about an ELF file read without reading all of it: libelf's
// on-demand reader (ELF_C_READ) reads the headers, then only the sections
// asked for. The plugin asks these of every file LLDB's process maps (its
// own 100 MB liblldb among them) and of every debug file LLDB uses. Reads
// that fail (a file cut short, not ELF) give "no", never SIGBUS: nothing is
// mapped.
#pragma once

#include "sfunwind/error.hpp"

#include <cstdint>
#include <libelf.h>
#include <optional>
#include <string>
#include <vector>

namespace sfunwind::lldb_plugin {

// A file opened with libelf's on-demand reader; closed on destruction.
struct ElfHandle {
    int fd = -1;
    ::Elf* elf = nullptr;
    ElfHandle() = default;
    ElfHandle(const ElfHandle&) = delete;
    ElfHandle& operator=(const ElfHandle&) = delete;
    ~ElfHandle();
};

// Opens `path` into `h` (ELF_C_READ); false if it cannot be read or is not ELF.
bool open_elf(const std::string& path, ElfHandle& h);

// The NT_GNU_BUILD_ID of an ELF file as lowercase hex. Errors name the file:
// unreadable, not ELF, no build-id note.
Expected<std::string> read_build_id(const std::string& path);

// Whether the file has SFrame: a section named .sframe or of type
// SHT_GNU_SFRAME, or a PT_GNU_SFRAME segment (elf_file.hpp finds the same).
bool has_sframe(const std::string& path);

// The bytes of the file's first section of that name, if it has one.
std::optional<std::vector<std::uint8_t>> read_section(const std::string& path,
                                                      const std::string& name);

} // namespace sfunwind::lldb_plugin

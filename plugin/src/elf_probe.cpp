// SPDX-License-Identifier: MIT
#include "elf_probe.hpp"

#include "debug_file_cache.hpp"
#include "sfunwind/elf/elf_file.hpp"

#include <cstdio>
#include <cstring>
#include <fcntl.h>
#include <gelf.h>
#include <unistd.h>

namespace sfunwind::lldb_plugin {

ElfHandle::~ElfHandle() {
    if (elf != nullptr) elf_end(elf);
    if (fd >= 0) ::close(fd);
}

bool open_elf(const std::string& path, ElfHandle& h) {
    if (elf_version(EV_CURRENT) == EV_NONE) return false;
    h.fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
    if (h.fd < 0) return false;
    h.elf = elf_begin(h.fd, ELF_C_READ, nullptr);
    return h.elf != nullptr && elf_kind(h.elf) == ELF_K_ELF;
}

namespace {

// The section of that name (or, with `type` non-zero, of that type).
Elf_Scn* find_section(::Elf* elf, const char* name, std::uint32_t type) {
    std::size_t shstrndx = 0;
    if (elf_getshdrstrndx(elf, &shstrndx) != 0) return nullptr;
    for (Elf_Scn* scn = elf_nextscn(elf, nullptr); scn != nullptr; scn = elf_nextscn(elf, scn)) {
        GElf_Shdr shdr;
        if (gelf_getshdr(scn, &shdr) == nullptr) continue;
        if (type != 0 && shdr.sh_type == type) return scn;
        const char* n = elf_strptr(elf, shstrndx, shdr.sh_name);
        if (name != nullptr && n != nullptr && std::strcmp(n, name) == 0) return scn;
    }
    return nullptr;
}

} // namespace

Expected<std::string> read_build_id(const std::string& path) {
    auto id = elf::read_build_id(path);
    if (!id) return std::move(id).error();
    return build_id_hex(*id);
}

bool has_sframe(const std::string& path) {
    ElfHandle h;
    if (!open_elf(path, h)) return false;
    // A separate debug file (the plugin's own among them) names the
    // program's .sframe and PT_GNU_SFRAME without their bytes (SHT_NOBITS,
    // p_filesz 0): that is not SFrame.
    if (Elf_Scn* scn = find_section(h.elf, ".sframe", elf::sht_gnu_sframe)) {
        GElf_Shdr shdr;
        if (gelf_getshdr(scn, &shdr) != nullptr && shdr.sh_type != SHT_NOBITS) return true;
    }
    std::size_t phnum = 0;
    if (elf_getphdrnum(h.elf, &phnum) != 0) return false;
    for (std::size_t i = 0; i < phnum; ++i) {
        GElf_Phdr phdr;
        if (gelf_getphdr(h.elf, static_cast<int>(i), &phdr) != nullptr &&
            phdr.p_type == elf::pt_gnu_sframe && phdr.p_filesz != 0)
            return true;
    }
    return false;
}

std::optional<std::vector<std::uint8_t>> read_section(const std::string& path,
                                                      const std::string& name) {
    ElfHandle h;
    if (!open_elf(path, h)) return std::nullopt;
    Elf_Scn* scn = find_section(h.elf, name.c_str(), 0);
    if (scn == nullptr) return std::nullopt;
    Elf_Data* data = elf_rawdata(scn, nullptr);
    if (data == nullptr || (data->d_buf == nullptr && data->d_size != 0)) return std::nullopt;
    const auto* p = static_cast<const std::uint8_t*>(data->d_buf);
    return std::vector<std::uint8_t>(p, p + data->d_size);
}

} // namespace sfunwind::lldb_plugin

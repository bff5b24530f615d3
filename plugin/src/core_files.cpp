// SPDX-License-Identifier: MIT
#include "core_files.hpp"

#include "elf_probe.hpp"
#include "sfunwind/bytes.hpp"

#include <cstring>
#include <gelf.h>
#include <set>

namespace sfunwind::lldb_plugin {
namespace {

// ELF_C_READ: a core is read in parts (headers, then the note segments), and
// a file cut short fails a read instead of raising SIGBUS in LLDB.
bool open_core(const std::string& path, ElfHandle& h, GElf_Ehdr& ehdr) {
    return open_elf(path, h) && gelf_getehdr(h.elf, &ehdr) != nullptr && ehdr.e_type == ET_CORE;
}

// One NT_FILE descriptor: count and page size, `count` (start, end, offset)
// triples of the core's word size, then `count` NUL-terminated names.
Status read_nt_file(const ByteView& desc, std::uint64_t word, const std::string& core,
                    std::set<std::string>& seen, std::vector<std::string>& out) {
    std::uint64_t count = 0;
    const bool have_count =
        word == 8 ? desc.load<std::uint64_t, 8>(0, count) : desc.load<std::uint64_t, 4>(0, count);
    if (!have_count)
        return Error(Errc::Truncated, core + ": NT_FILE note too short for its count", 0);
    // Each entry takes three words and at least one byte of name.
    const std::uint64_t table = 2 * word;
    if (count > (desc.size() - std::min<std::uint64_t>(desc.size(), table)) / (3 * word + 1))
        return Error(Errc::Malformed,
                     core + ": NT_FILE count " + std::to_string(count) + " exceeds the note", 0);
    std::uint64_t at = table + count * 3 * word;
    const auto bytes = desc.bytes();
    for (std::uint64_t i = 0; i < count; ++i) {
        if (at >= bytes.size())
            return Error(Errc::Truncated,
                         core + ": NT_FILE names end after " + std::to_string(i) + " of " +
                             std::to_string(count),
                         at);
        const void* nul = std::memchr(bytes.data() + at, 0, bytes.size() - at);
        if (nul == nullptr)
            return Error(Errc::Malformed, core + ": NT_FILE name without its NUL", at);
        const auto end =
            static_cast<std::uint64_t>(static_cast<const std::uint8_t*>(nul) - bytes.data());
        std::string name(reinterpret_cast<const char*>(bytes.data() + at), end - at);
        if (!name.empty() && seen.insert(name).second) out.push_back(std::move(name));
        at = end + 1;
    }
    return ok();
}

} // namespace

bool is_core_file(const std::string& path) {
    ElfHandle h;
    GElf_Ehdr ehdr;
    return open_core(path, h, ehdr);
}

Expected<std::vector<std::string>> core_file_names(const std::string& path) {
    ElfHandle h;
    GElf_Ehdr ehdr;
    if (!open_core(path, h, ehdr))
        return Error(Errc::BadMagic, path + " is not a readable ELF core file");
    const char* ident = elf_getident(h.elf, nullptr);
    const ByteOrder order =
        ident != nullptr && ident[EI_DATA] == ELFDATA2MSB ? ByteOrder::Big : ByteOrder::Little;
    const std::uint64_t word = gelf_getclass(h.elf) == ELFCLASS64 ? 8 : 4;
    std::size_t phnum = 0;
    if (elf_getphdrnum(h.elf, &phnum) != 0)
        return Error(Errc::Malformed, path + ": no program headers");
    std::vector<std::string> out;
    std::set<std::string> seen;
    for (std::size_t i = 0; i < phnum; ++i) {
        GElf_Phdr phdr;
        if (gelf_getphdr(h.elf, static_cast<int>(i), &phdr) == nullptr || phdr.p_type != PT_NOTE)
            continue;
        Elf_Data* data =
            elf_getdata_rawchunk(h.elf, static_cast<int64_t>(phdr.p_offset), phdr.p_filesz,
                                 phdr.p_align == 8 ? ELF_T_NHDR8 : ELF_T_NHDR);
        if (data == nullptr) continue; // past the end of a truncated core
        std::size_t offset = 0;
        GElf_Nhdr nhdr;
        std::size_t name_at = 0;
        std::size_t desc_at = 0;
        // gelf_getnote returns 0 at the end or on a malformed note and
        // otherwise strictly advances, so this loop ends.
        while ((offset = gelf_getnote(data, offset, &nhdr, &name_at, &desc_at)) != 0) {
            if (nhdr.n_type != NT_FILE || nhdr.n_namesz != 5) continue;
            const auto* base = static_cast<const std::uint8_t*>(data->d_buf);
            if (std::memcmp(base + name_at, "CORE", 5) != 0) continue;
            if (desc_at > data->d_size || nhdr.n_descsz > data->d_size - desc_at) continue;
            const ByteView desc(std::span<const std::uint8_t>(base + desc_at, nhdr.n_descsz),
                                order);
            if (Status s = read_nt_file(desc, word, path, seen, out); !s) return s.error();
        }
    }
    return out;
}

} // namespace sfunwind::lldb_plugin

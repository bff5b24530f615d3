// SPDX-License-Identifier: MIT
// For the check and convert tests: an ELF image whose .sframe section is
// replaced by other bytes, appended at the end of the file the way
// `objcopy --add-section` leaves a section no segment loads. Only the
// section header changes (offset, size, address), so CFI, symbols and code
// stay those of the original file.
#pragma once

#include "sfunwind/elf/elf_file.hpp"

#include <cstdint>
#include <elf.h>
#include <optional>
#include <vector>

namespace sfunwind::test {

// An integer of `width` bytes at `at`, in the file's byte order.
inline std::uint64_t elf_get(const std::vector<std::uint8_t>& b, std::size_t at, unsigned width,
                             bool big) {
    std::uint64_t v = 0;
    for (unsigned i = 0; i < width; ++i) {
        const unsigned shift = 8 * (big ? width - 1 - i : i);
        v |= std::uint64_t{b[at + i]} << shift;
    }
    return v;
}

inline void elf_put(std::vector<std::uint8_t>& b, std::size_t at, unsigned width, bool big,
                    std::uint64_t v) {
    for (unsigned i = 0; i < width; ++i) {
        const unsigned shift = 8 * (big ? width - 1 - i : i);
        b[at + i] = static_cast<std::uint8_t>((v >> shift) & 0xffU);
    }
}

// nullopt when the file is not a 64-bit ELF with a .sframe section header.
inline std::optional<std::vector<std::uint8_t>>
with_sframe(const elf::ElfFile& file, const std::vector<std::uint8_t>& section,
            std::uint64_t vaddr) {
    const elf::SectionInfo* s = file.section(".sframe");
    const auto image = file.image();
    if (s == nullptr || image.size() < sizeof(Elf64_Ehdr) || image[EI_CLASS] != ELFCLASS64)
        return std::nullopt;
    const bool big = image[EI_DATA] == ELFDATA2MSB;
    std::vector<std::uint8_t> out(image.begin(), image.end());
    while (out.size() % 8 != 0)
        out.push_back(0);
    const std::uint64_t at = out.size();
    out.insert(out.end(), section.begin(), section.end());

    // Elf64_Ehdr: e_shoff at 0x28, e_shentsize at 0x3a; Elf64_Shdr: sh_addr
    // at 0x10, sh_offset at 0x18, sh_size at 0x20 (gABI "ELF Header", "Sections").
    const std::uint64_t shoff = elf_get(out, 0x28, 8, big);
    const std::uint64_t shentsize = elf_get(out, 0x3a, 2, big);
    const std::uint64_t shdr = shoff + std::uint64_t{s->index} * shentsize;
    if (shentsize != sizeof(Elf64_Shdr) || shdr + shentsize > out.size()) return std::nullopt;
    elf_put(out, shdr + 0x10, 8, big, vaddr);
    elf_put(out, shdr + 0x18, 8, big, at);
    elf_put(out, shdr + 0x20, 8, big, section.size());
    return out;
}

} // namespace sfunwind::test

// SPDX-License-Identifier: MIT
// ELF location. The input is an ELF file. ElfFile::from_bytes() reads it;
// then every query the unwinder and the CLI make: the ABI, segments,
// sections, build ID, symbols, and the SFrame section by name, by type
// (SHT_GNU_SFRAME) and by the PT_GNU_SFRAME segment. A copy of the input with
// its section headers cut off (e_shoff, e_shnum, e_shstrndx zeroed, as
// `strip --strip-section-headers` leaves a file) takes the segment path for
// any input that has section headers.
//
// Properties: every span ElfFile hands out lies inside its image; a located
// SFrame section parses the same through sframe() as through
// sframe_bytes() + Section::parse().
#include "sfunwind/elf/elf_file.hpp"
#include "sfunwind/sframe/section.hpp"
#include "sfunwind/sframe/validate.hpp"
#include "support.hpp"

#include <cstddef>
#include <cstdint>
#include <span>
#include <vector>

using namespace sfunwind;
using fuzz::require;

namespace {

bool inside(std::span<const std::uint8_t> part, std::span<const std::uint8_t> whole) {
    if (part.empty()) return true;
    const auto* b = whole.data();
    const auto* p = part.data();
    return p >= b && p <= b + whole.size() &&
           part.size() <= static_cast<std::size_t>(b + whole.size() - p);
}

void exercise(std::span<const std::uint8_t> bytes) {
    auto file = elf::ElfFile::from_bytes(bytes, "fuzz");
    if (!file) return;
    const elf::ElfFile& f = *file;
    const auto image = f.image();
    require(image.size() == bytes.size(), "from_bytes() keeps every byte");
    (void)f.abi();
    (void)f.link_base();
    (void)f.build_id();
    for (const auto& s : f.sections()) {
        if (s.in_file)
            require(s.offset <= image.size() && s.size <= image.size() - s.offset,
                    "in_file sections fit");
    }
    for (const char* name : {".eh_frame", ".eh_frame_hdr", ".debug_frame", ".text", ".opd"})
        if (auto b = f.section_bytes(name))
            require(inside(*b, image), "section_bytes() inside the image", name);

    const auto& symbols = f.function_symbols();
    for (std::size_t i = 0; i < symbols.size() && i < 64; ++i) {
        const auto* hit = f.symbol_for(symbols[i].value);
        require(hit != nullptr, "symbol_for() finds a symbol's own start", symbols[i].name);
        (void)f.symbol_for(symbols[i].value + symbols[i].size);
    }

    auto where = f.find_sframe();
    if (!where) return;
    auto span = f.sframe_bytes(*where);
    if (!span) return;
    require(inside(*span, image), "sframe_bytes() inside the image");
    require(span->size() <= where->size, "sframe_bytes() no larger than the located size");
    auto direct = sframe::Section::parse(*span, where->vaddr);
    auto section = f.sframe();
    require(direct.has_value() == section.has_value(),
            "sframe() agrees with sframe_bytes() + parse()");
    if (!section) return;
    require(section->view().bytes().data() == span->data(), "sframe() parses the located bytes");
    (void)sframe::validate(*section);
    // A few lookups, as an unwinder's first frames would make.
    for (std::uint32_t i = 0; i < section->fde_count() && i < 16; ++i)
        if (auto fde = section->fde(i)) (void)section->lookup(fde->start);
}

} // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
    const std::span<const std::uint8_t> bytes(data, size);
    exercise(bytes);

    // The same file without section headers: the PT_GNU_SFRAME path. ELF64
    // header offsets (gABI): e_shoff 0x28 (8 bytes), e_shnum 0x3c and
    // e_shstrndx 0x3e (2 bytes each); zero is zero in either byte order.
    constexpr std::size_t ehdr_size = 64;
    if (size >= ehdr_size) {
        std::vector<std::uint8_t> stripped(bytes.begin(), bytes.end());
        bool had = false;
        for (const std::size_t at :
             {0x28U, 0x29U, 0x2aU, 0x2bU, 0x2cU, 0x2dU, 0x2eU, 0x2fU, 0x3cU, 0x3dU, 0x3eU, 0x3fU}) {
            had = had || stripped[at] != 0;
            stripped[at] = 0;
        }
        if (had) exercise(stripped);
    }
    return 0;
}

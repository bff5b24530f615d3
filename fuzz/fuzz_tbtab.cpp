// SPDX-License-Identifier: MIT
// The ppc64 traceback-table scanner on arbitrary code bytes. The input is
//
//   0x00 u8   flags: bit 0 big-endian (else little-endian), bit 1 no section
//             headers (code from the PF_X segment, no symbols)
//   0x01 u8   number of function symbols (value % 9)
//   0x02      that many (u32 offset into the code, u32 size), little-endian
//   then      the code, mapped at code_vaddr
//
// The target wraps the code in a minimal EM_PPC64 ELF file (.text, .symtab,
// .strtab; or just a PT_LOAD) and runs what `sfunwind tbtab` and the
// unwinder run: decode_table() at every zero word, TracebackIndex's linear
// scan and symbol walk, and lookups (with the frame analysis behind them) at
// function starts, table ends and return addresses.
//
// Properties: a decoded table lies inside the code and its function starts
// inside the code, before the table; a row covers the PC it was looked up
// for.
#include "sfunwind/elf/elf_file.hpp"
#include "sfunwind/ppc64/index.hpp"
#include "sfunwind/ppc64/traceback.hpp"
#include "support.hpp"

#include <array>
#include <cstddef>
#include <cstdint>
#include <span>
#include <string>
#include <vector>

using namespace sfunwind;
using fuzz::require;

namespace {

constexpr std::uint64_t code_vaddr = 0x10000000;
constexpr unsigned max_symbols = 8;
constexpr std::size_t max_zero_words = 256;
constexpr std::size_t max_lookups = 48;

struct Sym {
    std::uint32_t offset;
    std::uint32_t size;
};

// Just enough of an ELF64 writer for the fuzz image, in either byte order
// (gABI: ELF header, program header, section header and symbol layouts).
class Image {
  public:
    explicit Image(bool big) : big_(big) {}
    std::vector<std::uint8_t> bytes;

    std::size_t here() const { return bytes.size(); }
    void pad(std::size_t align) {
        while (bytes.size() % align != 0)
            bytes.push_back(0);
    }
    void put(std::uint64_t v, unsigned width) {
        for (unsigned i = 0; i < width; ++i) {
            const unsigned shift = big_ ? 8 * (width - 1 - i) : 8 * i;
            bytes.push_back(static_cast<std::uint8_t>((v >> shift) & 0xffU));
        }
    }
    void patch(std::size_t at, std::uint64_t v, unsigned width) {
        for (unsigned i = 0; i < width; ++i) {
            const unsigned shift = big_ ? 8 * (width - 1 - i) : 8 * i;
            bytes[at + i] = static_cast<std::uint8_t>((v >> shift) & 0xffU);
        }
    }
    void append(std::span<const std::uint8_t> b) { bytes.insert(bytes.end(), b.begin(), b.end()); }

  private:
    bool big_;
};

std::vector<std::uint8_t> make_elf(std::span<const std::uint8_t> code, const std::vector<Sym>& syms,
                                   bool big, bool section_headers) {
    Image m(big);
    // ELF header.
    const std::array<std::uint8_t, 8> ident = {0x7f,
                                               'E',
                                               'L',
                                               'F',
                                               2 /*ELFCLASS64*/,
                                               static_cast<std::uint8_t>(big ? 2 : 1),
                                               1 /*EV_CURRENT*/,
                                               0};
    m.append(ident);
    m.bytes.resize(16, 0);
    m.put(2, 2);          // e_type ET_EXEC
    m.put(21, 2);         // e_machine EM_PPC64
    m.put(1, 4);          // e_version
    m.put(code_vaddr, 8); // e_entry
    m.put(64, 8);         // e_phoff
    const std::size_t shoff_at = m.here();
    m.put(0, 8);           // e_shoff, patched below
    m.put(big ? 1 : 2, 4); // e_flags: the ELFv1/ELFv2 ABI level
    m.put(64, 2);          // e_ehsize
    m.put(56, 2);          // e_phentsize
    m.put(1, 2);           // e_phnum
    m.put(64, 2);          // e_shentsize
    const std::size_t shnum_at = m.here();
    m.put(0, 2); // e_shnum, patched below
    m.put(0, 2); // e_shstrndx, patched below

    // PT_LOAD, R+X, for the code.
    const std::size_t text_off = 0x80;
    m.put(1, 4);
    m.put(5, 4);
    m.put(text_off, 8);
    m.put(code_vaddr, 8);
    m.put(code_vaddr, 8);
    m.put(code.size(), 8);
    m.put(code.size(), 8);
    m.put(0x10000, 8);
    m.pad(text_off);
    m.append(code);
    if (!section_headers) return m.bytes;

    m.pad(8);
    const std::size_t symtab_off = m.here();
    std::string strtab(1, '\0');
    m.bytes.resize(m.here() + 24, 0); // the null symbol
    for (std::size_t i = 0; i < syms.size(); ++i) {
        const auto name = static_cast<std::uint32_t>(strtab.size());
        strtab += "f" + std::to_string(i) + '\0';
        m.put(name, 4);
        m.bytes.push_back(0x12); // STB_GLOBAL, STT_FUNC
        m.bytes.push_back(0);
        m.put(1, 2); // st_shndx: .text
        m.put(code_vaddr + syms[i].offset, 8);
        m.put(syms[i].size, 8);
    }
    const std::size_t symtab_size = m.here() - symtab_off;
    const std::size_t strtab_off = m.here();
    m.append(std::span(reinterpret_cast<const std::uint8_t*>(strtab.data()), strtab.size()));
    const std::string shstrtab = std::string("\0.text\0.symtab\0.strtab\0.shstrtab\0", 33);
    const std::size_t shstrtab_off = m.here();
    m.append(std::span(reinterpret_cast<const std::uint8_t*>(shstrtab.data()), shstrtab.size()));
    m.pad(8);
    const std::size_t shoff = m.here();
    auto section = [&](std::uint32_t name, std::uint32_t type, std::uint64_t flags,
                       std::uint64_t addr, std::uint64_t off, std::uint64_t size,
                       std::uint32_t link, std::uint32_t info, std::uint64_t align,
                       std::uint64_t entsize) {
        m.put(name, 4);
        m.put(type, 4);
        m.put(flags, 8);
        m.put(addr, 8);
        m.put(off, 8);
        m.put(size, 8);
        m.put(link, 4);
        m.put(info, 4);
        m.put(align, 8);
        m.put(entsize, 8);
    };
    section(0, 0, 0, 0, 0, 0, 0, 0, 0, 0);
    section(1, 1 /*PROGBITS*/, 6 /*ALLOC|EXECINSTR*/, code_vaddr, text_off, code.size(), 0, 0, 4,
            0);
    section(7, 2 /*SYMTAB*/, 0, 0, symtab_off, symtab_size, 3, 1, 8, 24);
    section(15, 3 /*STRTAB*/, 0, 0, strtab_off, strtab.size(), 0, 0, 1, 0);
    section(23, 3, 0, 0, shstrtab_off, shstrtab.size(), 0, 0, 1, 0);
    m.patch(shoff_at, shoff, 8);
    m.patch(shnum_at, 5, 2);
    m.patch(shnum_at + 2, 4, 2);
    return m.bytes;
}

void check_table(const ppc64::TracebackTable& t, std::size_t code_size) {
    require(t.address >= code_vaddr && t.address % 4 == 0, "a table is word-aligned code");
    require(t.size >= ppc64::optional_offset, "a table has its mandatory fields");
    require(t.address - code_vaddr + t.size <= code_size, "a table lies inside the code");
    if (auto start = t.function_start())
        require(*start >= code_vaddr && *start < t.address,
                "tb_offset puts the start inside the code, before the table");
}

void check_row(const ppc64::TracebackIndex& index, std::uint64_t pc) {
    auto row = index.lookup(pc);
    if (!row) return;
    const std::uint64_t at = pc & ~std::uint64_t{3};
    require(row->pc_begin <= at && at < row->pc_end, "the row covers the PC",
            to_hex(pc) + " not in [" + to_hex(row->pc_begin) + ", " + to_hex(row->pc_end) + ")");
    require(row->cfa.reg == 1, "the CFA is based on r1");
}

} // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
    if (size < 2) return 0;
    const std::span<const std::uint8_t> input(data, size);
    const bool big = (input[0] & 1U) != 0;
    const bool section_headers = (input[0] & 2U) == 0;
    const unsigned nsyms = input[1] % (max_symbols + 1);
    if (size < 2 + 8 * std::size_t{nsyms}) return 0;
    std::vector<Sym> syms;
    const ByteView table(input.subspan(2, 8 * std::size_t{nsyms}), ByteOrder::Little);
    for (unsigned i = 0; i < nsyms; ++i) {
        Sym s{};
        (void)table.load(std::uint64_t{8} * i, s.offset);
        (void)table.load(std::uint64_t{8} * i + 4, s.size);
        syms.push_back(s);
    }
    const auto code = input.subspan(2 + 8 * std::size_t{nsyms});
    const ByteOrder order = big ? ByteOrder::Big : ByteOrder::Little;
    const ByteView view(code, order);

    // The decoder alone, at every zero word (and once misaligned).
    std::size_t zeros = 0;
    for (std::uint64_t off = 0; off + 4 <= code.size() && zeros < max_zero_words; off += 4) {
        std::uint32_t w = 1;
        (void)view.load(off, w);
        if (w != 0) continue;
        ++zeros;
        if (auto t = ppc64::decode_table(view, code_vaddr, off)) check_table(*t, code.size());
    }
    (void)ppc64::decode_table(view, code_vaddr + 2, 0);

    // The index over an ELF image of the code.
    const auto image = make_elf(code, syms, big, section_headers);
    auto file = elf::ElfFile::from_bytes(image, "fuzz-ppc64");
    require(file.has_value(), "the synthesized ELF file reads back",
            file ? "" : file.error().message());
    auto index = ppc64::TracebackIndex::build(*file);
    if (!index) return 0;

    std::vector<std::uint64_t> pcs;
    for (const auto& s : syms) {
        pcs.push_back(code_vaddr + s.offset);
        pcs.push_back(code_vaddr + s.offset + s.size / 2);
    }
    const ppc64::Listing scan = index->by_scan();
    for (const auto& found : scan.tables) {
        check_table(found.table, code.size());
        pcs.push_back(found.table.address - 4);
        pcs.push_back(found.table.address - 1); // a return address minus one
        if (found.function_start) pcs.push_back(*found.function_start);
    }
    for (const auto& found : index->by_symbols().tables)
        check_table(found.table, code.size());
    for (std::size_t i = 0; i < pcs.size() && i < max_lookups; ++i)
        check_row(*index, pcs[i]);
    for (std::size_t i = 0; i < scan.tables.size() && i < 8; ++i)
        if (auto rows = index->rows(scan.tables[i], ppc64::TracebackIndex::Split::State)) {
            for (std::size_t k = 1; k < rows->size(); ++k)
                require((*rows)[k - 1].row.pc_end == (*rows)[k].row.pc_begin,
                        "rows() are contiguous");
        }
    return 0;
}

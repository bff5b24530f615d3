// SPDX-License-Identifier: MIT
// The file is laid out by hand (ELF_F_LAYOUT): the ELF header, the program
// headers, the sections whose bytes are kept (in their original order, each
// at an offset congruent to its original one modulo max(16, sh_addralign), so
// that notes packed together in the base stay packed together and a segment
// over them can be moved as one), then the new contents (.debug_frame,
// .sfunwind, the empty compile unit's sections when the base has no DWARF,
// .symtab, .strtab, .shstrtab) and the section header table.
#include "sfunwind/elf/debug_file_writer.hpp"

#include "empty_compile_unit.hpp"

#include <algorithm>
#include <array>
#include <boost/endian/conversion.hpp>
#include <cerrno>
#include <cstring>
#include <fcntl.h>
#include <gelf.h>
#include <libelf.h>
#include <limits>
#include <map>
#include <optional>
#include <set>
#include <string_view>
#include <unistd.h>
#include <utility>

namespace sfunwind::elf {
namespace {

constexpr std::uint64_t sym_size = 24; // sizeof(Elf64_Sym)

std::uint64_t align_up(std::uint64_t v, std::uint64_t a) {
    return a <= 1 ? v : (v + a - 1) / a * a;
}

// An Elf64_Sym in host terms, written out in the file's byte order.
struct SymbolEntry {
    std::string name;
    unsigned char info = 0;
    unsigned char other = 0;
    std::uint16_t shndx = 0;
    std::uint64_t value = 0;
    std::uint64_t size = 0;
};

class StringTable {
  public:
    StringTable() { bytes_.push_back(0); }
    // A table to extend: `initial` (the base's .shstrtab), which starts with
    // the empty name's NUL unless it is empty.
    explicit StringTable(std::span<const std::uint8_t> initial)
        : bytes_(initial.empty() ? std::vector<std::uint8_t>(1, 0)
                                 : std::vector<std::uint8_t>(initial.begin(), initial.end())) {}
    std::uint32_t add(const std::string& s) {
        if (s.empty()) return 0;
        if (auto it = index_.find(s); it != index_.end()) return it->second;
        const auto at = static_cast<std::uint32_t>(bytes_.size());
        bytes_.insert(bytes_.end(), s.begin(), s.end());
        bytes_.push_back(0);
        index_.emplace(s, at);
        return at;
    }
    const std::vector<std::uint8_t>& bytes() const { return bytes_; }

  private:
    std::vector<std::uint8_t> bytes_;
    std::map<std::string, std::uint32_t> index_;
};

void store(std::vector<std::uint8_t>& out, std::uint64_t v, unsigned n, bool little) {
    std::array<std::uint8_t, 8> b{};
    if (little)
        boost::endian::endian_store<std::uint64_t, 8, boost::endian::order::little>(b.data(), v);
    else
        boost::endian::endian_store<std::uint64_t, 8, boost::endian::order::big>(b.data(), v);
    const std::size_t first = little ? 0 : 8 - n;
    out.insert(out.end(), b.begin() + static_cast<std::ptrdiff_t>(first),
               b.begin() + static_cast<std::ptrdiff_t>(first + n));
}

std::vector<std::uint8_t> encode_symbols(const std::vector<SymbolEntry>& syms, StringTable& strtab,
                                         bool little) {
    std::vector<std::uint8_t> out;
    out.reserve(syms.size() * sym_size);
    for (const auto& s : syms) {
        store(out, strtab.add(s.name), 4, little);
        out.push_back(s.info);
        out.push_back(s.other);
        store(out, s.shndx, 2, little);
        store(out, s.value, 8, little);
        store(out, s.size, 8, little);
    }
    return out;
}

struct SourceSection {
    GElf_Shdr shdr{};
    std::string name;
    std::span<const std::uint8_t> raw; // empty for SHT_NOBITS
};

// The symbols of symbol table section `index` of `file`, names resolved.
// The table's bytes and its string table's are read first: libelf reads
// them from the image (ElfFile::libelf_headers()). No symbols when the table
// cannot be read; no names when its string table is not in the file.
std::vector<SymbolEntry> read_symbols(const ElfFile& file, std::size_t index) {
    std::vector<SymbolEntry> out;
    const auto& sections = file.sections();
    if (index >= sections.size() || !file.section_bytes(sections[index])) return out;
    const std::uint32_t link = sections[index].link;
    if (link < sections.size() && sections[link].in_file && !file.section_bytes(sections[link]))
        return out;
    ::Elf* elf = file.libelf_headers();
    Elf_Scn* scn = elf_getscn(elf, index);
    GElf_Shdr shdr;
    if (scn == nullptr || gelf_getshdr(scn, &shdr) == nullptr) return out;
    Elf_Data* data = elf_getdata(scn, nullptr);
    if (data == nullptr || shdr.sh_entsize == 0) return out;
    const std::size_t n = shdr.sh_size / shdr.sh_entsize;
    for (std::size_t i = 1; i < n; ++i) {
        GElf_Sym sym;
        if (gelf_getsym(data, static_cast<int>(i), &sym) == nullptr) break;
        SymbolEntry e;
        const char* name = elf_strptr(elf, shdr.sh_link, sym.st_name);
        e.name = name != nullptr ? name : "";
        e.info = sym.st_info;
        e.other = sym.st_other;
        e.shndx = sym.st_shndx;
        e.value = sym.st_value;
        e.size = sym.st_size;
        out.push_back(std::move(e));
    }
    return out;
}

class FileCloser {
  public:
    explicit FileCloser(int fd) : fd_(fd) {}
    FileCloser(const FileCloser&) = delete;
    FileCloser& operator=(const FileCloser&) = delete;
    ~FileCloser() {
        if (fd_ >= 0) ::close(fd_);
    }
    int release() { return std::exchange(fd_, -1); }

  private:
    int fd_;
};

// Errors name the base and the output path.
struct Failure {
    std::string who;
    Error operator()(Errc code, const std::string& what) const {
        return Error(code, who + ": " + what);
    }
    Error libelf(const char* what) const {
        return (*this)(Errc::Io, std::string(what) + ": " + elf_errmsg(-1));
    }
};

// The base file as read: its headers, its sections by index (0 is the null
// section) and the end of the bytes its headers and sections use.
struct Source {
    const ElfFile* file = nullptr;
    ::Elf* elf = nullptr; // file->libelf_headers()
    GElf_Ehdr ehdr{};
    bool little = true;
    std::size_t shstrndx = 0;
    std::size_t phnum = 0;
    std::vector<SourceSection> sections;
    std::optional<std::size_t> symtab, dynsym;
};

// The first section named `name`, if any.
std::optional<std::size_t> find_named(const Source& src, std::string_view name) {
    for (std::size_t i = 1; i < src.sections.size(); ++i)
        if (src.sections[i].name == name) return i;
    return std::nullopt;
}

// Whether the base has DWARF of its own (a user's debug file): its sections
// are kept, and no empty compile unit is added beside them.
bool has_dwarf(const Source& src) {
    constexpr std::array<std::string_view, 6> names = {".debug_info",    ".debug_abbrev",
                                                       ".debug_line",    ".zdebug_info",
                                                       ".zdebug_abbrev", ".zdebug_line"};
    return std::any_of(names.begin(), names.end(),
                       [&](std::string_view name) { return find_named(src, name).has_value(); });
}

Status read_headers(const ElfFile& base, Source& s, const Failure& fail) {
    // Headers only: the module's code and data are not read (they become
    // SHT_NOBITS); read_sections() reads the sections kept.
    s.file = &base;
    s.elf = base.libelf_headers();
    if (s.elf == nullptr) return fail(Errc::Malformed, "no ELF image");
    if (gelf_getehdr(s.elf, &s.ehdr) == nullptr) return fail.libelf("cannot read the ELF header");
    if (gelf_getclass(s.elf) != ELFCLASS64)
        return fail(Errc::Unsupported, "only 64-bit ELF files are supported");
    s.little = s.ehdr.e_ident[EI_DATA] == ELFDATA2LSB;
    if (elf_getshdrstrndx(s.elf, &s.shstrndx) != 0) return fail.libelf("no section name table");
    if (elf_getphdrnum(s.elf, &s.phnum) != 0)
        return fail.libelf("cannot count the program headers");
    return ok();
}

Status read_sections(Source& src, const Failure& fail) {
    src.sections.resize(1);
    for (Elf_Scn* scn = elf_nextscn(src.elf, nullptr); scn != nullptr;
         scn = elf_nextscn(src.elf, scn)) {
        SourceSection s;
        if (gelf_getshdr(scn, &s.shdr) == nullptr)
            return fail.libelf("cannot read a section header");
        const char* name = elf_strptr(src.elf, src.shstrndx, s.shdr.sh_name);
        s.name = name != nullptr ? name : "";
        const std::size_t index = elf_ndxscn(scn);
        if (index != src.sections.size() || index >= src.file->sections().size())
            return fail(Errc::Malformed, "section indices are not consecutive");
        if (s.shdr.sh_type != SHT_NOBITS && s.shdr.sh_size > 0 &&
            !src.file->sections()[index].in_file)
            return fail(Errc::Truncated, "section " + s.name + " runs past the end of the file");
        if (s.shdr.sh_type == SHT_SYMTAB && !src.symtab) src.symtab = index;
        if (s.shdr.sh_type == SHT_DYNSYM && !src.dynsym) src.dynsym = index;
        src.sections.push_back(std::move(s));
    }
    if (src.shstrndx == 0 || src.shstrndx >= src.sections.size())
        return fail(Errc::Malformed, "no section name table");
    if (src.sections.size() + 8 >= SHN_LORESERVE)
        return fail(Errc::Unsupported, "too many sections for a plain section header table");
    return ok();
}

bool is_function(const SymbolEntry& e) {
    const unsigned type = GELF_ST_TYPE(e.info);
    return type == STT_FUNC || type == STT_GNU_IFUNC;
}

// The base section that holds a link-time address (allocated sections; code
// first), for symbols and functions that come from elsewhere; 0 if none.
std::uint16_t section_of(const std::vector<SourceSection>& sections, std::uint64_t addr) {
    std::uint16_t found = 0;
    for (std::size_t i = 1; i < sections.size() && i < SHN_LORESERVE; ++i) {
        const GElf_Shdr& h = sections[i].shdr;
        if ((h.sh_flags & SHF_ALLOC) == 0 || addr < h.sh_addr || addr >= h.sh_addr + h.sh_size)
            continue;
        found = static_cast<std::uint16_t>(i);
        if ((h.sh_flags & SHF_EXECINSTR) != 0) break;
    }
    return found;
}

// The new symbol table as it is gathered: the program's own entries, then
// what LLDB would otherwise not see. ELF wants the locals first (sh_info =
// first global), so they are kept apart until encoded.
class SymbolCollector {
  public:
    SymbolCollector(const Source& src, DebugFileReport& report) : src_(src), report_(report) {}

    void add_own(std::vector<SymbolEntry> entries) {
        for (auto& e : entries) {
            if (is_function(e) && e.shndx != SHN_UNDEF) function_starts_.insert(e.value);
            present_.emplace(e.name, e.value);
            (GELF_ST_BIND(e.info) == STB_LOCAL ? locals_ : globals_).push_back(std::move(e));
        }
    }

    // Defined symbols not yet present; `remap` moves their section indices to
    // the base's sections by address (they come from another file).
    void merge(std::vector<SymbolEntry> entries, bool remap, bool dynamic) {
        for (auto& e : entries) {
            if (e.shndx == SHN_UNDEF || e.name.empty() || present_.count({e.name, e.value}) != 0)
                continue;
            const unsigned type = GELF_ST_TYPE(e.info);
            if (type == STT_SECTION || type == STT_FILE) continue;
            if (remap && e.shndx < SHN_LORESERVE) {
                e.shndx = section_of(src_.sections, e.value);
                if (e.shndx == 0) continue;
            }
            if (is_function(e)) function_starts_.insert(e.value);
            present_.emplace(e.name, e.value);
            if (dynamic) ++report_.copied_dynamic;
            (GELF_ST_BIND(e.info) == STB_LOCAL ? locals_ : globals_).push_back(std::move(e));
        }
    }

    void merge_sources(const std::vector<const ElfFile*>& sources) {
        for (const ElfFile* other : sources) {
            if (other == nullptr || other == src_.file) continue;
            const auto& sections = other->sections();
            for (std::size_t i = 1; i < sections.size(); ++i) {
                const std::uint32_t type = sections[i].type;
                if (type == SHT_SYMTAB || type == SHT_DYNSYM)
                    merge(read_symbols(*other, i), true, type == SHT_DYNSYM);
            }
        }
    }

    void add_functions(const std::vector<Symbol>& functions) {
        for (const Symbol& f : functions) {
            if (function_starts_.count(f.value) != 0) continue;
            // The section that holds the function, so that the symbol is a
            // code symbol rather than an absolute one.
            const std::uint16_t shndx = section_of(src_.sections, f.value);
            if (shndx == 0) continue;
            SymbolEntry e;
            e.name = f.name;
            e.info = static_cast<unsigned char>(GELF_ST_INFO(STB_LOCAL, STT_FUNC));
            e.shndx = shndx;
            e.value = f.value;
            e.size = f.size;
            function_starts_.insert(f.value);
            locals_.push_back(std::move(e));
            ++report_.added_functions;
        }
    }

    // The null entry, the locals, then the globals; returns the index of the
    // first global.
    std::size_t take_all(std::vector<SymbolEntry>& all) {
        all.assign(1, SymbolEntry{});
        const std::size_t first_global = 1 + locals_.size();
        all.insert(all.end(), std::make_move_iterator(locals_.begin()),
                   std::make_move_iterator(locals_.end()));
        all.insert(all.end(), std::make_move_iterator(globals_.begin()),
                   std::make_move_iterator(globals_.end()));
        return first_global;
    }

  private:
    const Source& src_;
    DebugFileReport& report_;
    std::vector<SymbolEntry> locals_, globals_;
    std::set<std::uint64_t> function_starts_;
    std::set<std::pair<std::string, std::uint64_t>> present_;
};

// The encoded .symtab and its .strtab.
struct NewSymbols {
    StringTable strtab;
    std::vector<std::uint8_t> bytes;
    std::size_t first_global = 1;
};

NewSymbols build_symbols(const Source& src, const DebugFileContents& contents,
                         DebugFileReport& report) {
    SymbolCollector collector(src, report);
    if (src.symtab) collector.add_own(read_symbols(*src.file, *src.symtab));
    if (src.dynsym) collector.merge(read_symbols(*src.file, *src.dynsym), false, true);
    collector.merge_sources(contents.symbol_sources);
    collector.add_functions(contents.functions);
    std::vector<SymbolEntry> all;
    NewSymbols out;
    out.first_global = collector.take_all(all);
    out.bytes = encode_symbols(all, out.strtab, src.little);
    report.symbols = all.size();
    return out;
}

// Where the new contents go: their section indices (the program's own,
// replaced in place so that sh_link references stay valid, or appended),
// their names in .shstrtab and their file offsets.
// A run of the base's bytes the new file keeps: where it was and where it is.
struct MovedRange {
    std::uint64_t from = 0, to = 0, size = 0;
};

// A section the debug file adds with its bytes (not loaded), or with which it
// replaces the base's section of the same name.
struct AddedSection {
    std::string name;
    std::span<const std::uint8_t> bytes;
    std::uint64_t align = 1;
    // Filled by plan_layout(): its index (the base's section of that name,
    // else a new one), its name in .shstrtab and its file offset.
    std::size_t index = 0;
    std::uint32_t name_offset = 0;
    std::uint64_t offset = 0;
};

struct Layout {
    std::size_t symtab_index = 0, strtab_index = 0, total = 0;
    std::uint32_t symtab_name = 0, strtab_name = 0;
    std::vector<AddedSection> added;
    StringTable shstrtab;
    std::uint64_t phoff = 0;
    std::uint64_t symtab_off = 0, strtab_off = 0, shstrtab_off = 0, shoff = 0;
    // Per base section (0 unused): its offset in the new file, and whether
    // it keeps its bytes (else it becomes SHT_NOBITS).
    std::vector<std::uint64_t> offsets;
    std::vector<bool> kept;
    std::vector<MovedRange> moved;   // the headers and the kept sections
    std::vector<MovedRange> dropped; // base bytes not in the new file (`to` unused)
};

// Whether the debug file keeps the bytes of a base section. A debugger reads
// a module's code and data from the module, and from a separate debug file
// only its non-allocated sections (DWARF, .symtab, .comment) and its notes
// (the build-id that matches it to the module): the allocated sections are
// SHT_NOBITS, as `objcopy --only-keep-debug` makes them (binutils objcopy.c,
// setup_section: SEC_HAS_CONTENTS cleared for SEC_ALLOC sections but
// SHT_NOTE), keeping their names, addresses and sizes, which LLDB uses to
// map the debug file's symbols onto the module's sections by name
// (ObjectFileELF::ParseSymbols). Relocations against an allocated section
// (--emit-relocs) go with it.
bool keeps_bytes(const std::vector<SourceSection>& sections, const GElf_Shdr& h) {
    if (h.sh_type == SHT_NOBITS) return false;
    if ((h.sh_flags & SHF_ALLOC) != 0) return h.sh_type == SHT_NOTE;
    if ((h.sh_type == SHT_REL || h.sh_type == SHT_RELA) && h.sh_info != 0 &&
        h.sh_info < sections.size())
        return (sections[h.sh_info].shdr.sh_flags & SHF_ALLOC) == 0;
    return true;
}

// The bytes of the sections the debug file keeps, and of the section name
// table, read now: the module's code and data never are.
Status read_kept_bytes(Source& src, const Failure& fail) {
    const auto& info = src.file->sections();
    for (std::size_t i = 1; i < src.sections.size(); ++i) {
        SourceSection& s = src.sections[i];
        if (s.shdr.sh_type == SHT_NOBITS || s.shdr.sh_size == 0) continue;
        if (i != src.shstrndx && !keeps_bytes(src.sections, s.shdr)) continue;
        const auto bytes = src.file->section_bytes(info[i]);
        if (!bytes || bytes->size() != s.shdr.sh_size)
            return fail(Errc::Io, "cannot read section " + s.name);
        s.raw = *bytes;
    }
    return ok();
}

// The added section at index i, if any.
const AddedSection* added_at(const Layout& l, std::size_t i) {
    for (const AddedSection& a : l.added)
        if (a.index == i) return &a;
    return nullptr;
}

// Whether base section i is replaced by new contents (the symbols, an added
// section, the section name table).
bool replaced(const Source& src, const Layout& l, std::size_t i) {
    return i == l.symtab_index || i == l.strtab_index || i == src.shstrndx ||
           added_at(l, i) != nullptr;
}

void assign_indices(const Source& src, Layout& l) {
    std::size_t next_index = src.sections.size();
    l.symtab_index = src.symtab ? *src.symtab : next_index++;
    const GElf_Shdr* own = src.symtab ? &src.sections[*src.symtab].shdr : nullptr;
    l.strtab_index = own != nullptr && own->sh_link != 0 && own->sh_link != src.shstrndx
                         ? own->sh_link
                         : next_index++;
    for (AddedSection& a : l.added) {
        const auto same_name = find_named(src, a.name);
        a.index = same_name && *same_name != l.symtab_index && *same_name != l.strtab_index
                      ? *same_name
                      : next_index++;
    }
    l.total = next_index;
}

// The headers, then the base sections in the order of their offsets: the
// kept ones at an offset congruent to their original one (modulo
// max(16, sh_addralign): aligned as before, and sections packed together
// before stay packed the same way), the others given the offset they would
// have, with no bytes. Returns the end of the bytes placed.
std::uint64_t place_base_sections(const Source& src, Layout& l) {
    const std::uint64_t phsize = std::uint64_t{src.phnum} * src.ehdr.e_phentsize;
    l.moved.push_back({0, 0, src.ehdr.e_ehsize});
    l.phoff = src.phnum != 0 ? align_up(src.ehdr.e_ehsize, 8) : 0;
    if (src.phnum != 0) l.moved.push_back({src.ehdr.e_phoff, l.phoff, phsize});
    std::uint64_t tail = std::max<std::uint64_t>(src.ehdr.e_ehsize, l.phoff + phsize);

    const std::size_t n = src.sections.size();
    l.offsets.assign(n, 0);
    l.kept.assign(n, false);
    std::vector<std::size_t> order;
    for (std::size_t i = 1; i < n; ++i)
        if (!replaced(src, l, i)) order.push_back(i);
    std::stable_sort(order.begin(), order.end(), [&](std::size_t a, std::size_t b) {
        return src.sections[a].shdr.sh_offset < src.sections[b].shdr.sh_offset;
    });
    for (const std::size_t i : order) {
        const GElf_Shdr& h = src.sections[i].shdr;
        const bool has_bytes = h.sh_type != SHT_NOBITS && h.sh_size != 0;
        if (!has_bytes || !keeps_bytes(src.sections, h)) {
            l.offsets[i] = tail;
            if (has_bytes) l.dropped.push_back({h.sh_offset, 0, h.sh_size});
            continue;
        }
        const std::uint64_t m = std::max<std::uint64_t>(16, h.sh_addralign);
        const std::uint64_t at = tail + (h.sh_offset % m + m - tail % m) % m;
        l.offsets[i] = at;
        l.kept[i] = true;
        l.moved.push_back({h.sh_offset, at, h.sh_size});
        tail = at + h.sh_size;
    }
    return tail;
}

Layout plan_layout(const Source& src, std::vector<AddedSection> added, const NewSymbols& symbols) {
    Layout l;
    l.added = std::move(added);
    assign_indices(src, l);
    const auto& shstr = src.sections[src.shstrndx].raw;
    l.shstrtab = StringTable(shstr);
    auto name_offset = [&](std::size_t index, const char* name) -> std::uint32_t {
        return index < src.sections.size()
                   ? static_cast<std::uint32_t>(src.sections[index].shdr.sh_name)
                   : l.shstrtab.add(name);
    };
    l.symtab_name = name_offset(l.symtab_index, ".symtab");
    l.strtab_name = name_offset(l.strtab_index, ".strtab");
    for (AddedSection& a : l.added)
        a.name_offset = name_offset(a.index, a.name.c_str());

    std::uint64_t tail = place_base_sections(src, l);
    for (AddedSection& a : l.added) {
        a.offset = align_up(tail, std::max<std::uint64_t>(a.align, 1));
        tail = a.offset + a.bytes.size();
    }
    l.symtab_off = align_up(tail, 8);
    tail = l.symtab_off;
    tail += symbols.bytes.size();
    l.strtab_off = tail;
    tail += symbols.strtab.bytes().size();
    l.shstrtab_off = tail;
    tail = align_up(tail + l.shstrtab.bytes().size(), 8);
    l.shoff = tail;
    return l;
}

// A header for one of the new sections, not loaded (no flags, no address).
GElf_Shdr new_section_header(std::uint32_t name, std::uint32_t type, std::uint64_t offset,
                             std::uint64_t size, std::uint64_t align) {
    GElf_Shdr h{};
    h.sh_name = name;
    h.sh_type = type;
    h.sh_offset = offset;
    h.sh_size = size;
    h.sh_addralign = align;
    return h;
}

// The header and contents of section `i` of the new file.
std::pair<GElf_Shdr, std::span<const std::uint8_t>>
output_section(std::size_t i, const Source& src, const NewSymbols& symbols, const Layout& l) {
    GElf_Shdr h{};
    std::span<const std::uint8_t> bytes;
    if (i < src.sections.size() && !replaced(src, l, i)) {
        h = src.sections[i].shdr;
        h.sh_offset = l.offsets[i];
        if (l.kept[i]) {
            bytes = src.sections[i].raw;
        } else if (h.sh_size != 0) {
            h.sh_type = SHT_NOBITS;
        }
    }
    if (i == l.symtab_index) {
        h = new_section_header(l.symtab_name, SHT_SYMTAB, l.symtab_off, symbols.bytes.size(), 8);
        h.sh_link = static_cast<std::uint32_t>(l.strtab_index);
        h.sh_info = static_cast<std::uint32_t>(symbols.first_global);
        h.sh_entsize = sym_size;
        bytes = symbols.bytes;
    } else if (i == l.strtab_index) {
        h = new_section_header(l.strtab_name, SHT_STRTAB, l.strtab_off,
                               symbols.strtab.bytes().size(), 1);
        bytes = symbols.strtab.bytes();
    } else if (const AddedSection* a = added_at(l, i)) {
        h = new_section_header(a->name_offset, SHT_PROGBITS, a->offset, a->bytes.size(), a->align);
        bytes = a->bytes;
    } else if (i == src.shstrndx) {
        h = src.sections[i].shdr;
        h.sh_offset = l.shstrtab_off;
        h.sh_size = l.shstrtab.bytes().size();
        bytes = l.shstrtab.bytes();
    }
    return {h, bytes};
}

Status add_section(::Elf* dst, const GElf_Shdr& shdr, std::span<const std::uint8_t> bytes,
                   const Failure& fail) {
    Elf_Scn* scn = elf_newscn(dst);
    if (scn == nullptr) return fail.libelf("elf_newscn");
    Elf_Data* data = elf_newdata(scn);
    if (data == nullptr) return fail.libelf("elf_newdata");
    // Raw bytes, already in the file's byte order: no translation.
    data->d_type = ELF_T_BYTE;
    data->d_buf = shdr.sh_type == SHT_NOBITS ? nullptr : const_cast<std::uint8_t*>(bytes.data());
    data->d_size = shdr.sh_type == SHT_NOBITS ? shdr.sh_size : bytes.size();
    data->d_off = 0;
    data->d_align = 1;
    data->d_version = EV_CURRENT;
    GElf_Shdr copy = shdr;
    if (gelf_update_shdr(scn, &copy) == 0) return fail.libelf("gelf_update_shdr");
    return ok();
}

// Where the bytes a segment covered are in the new file: its new offset when
// they are all there, moved by one distance (the program headers, a run of
// notes), else nothing.
std::optional<std::uint64_t> moved_segment(const Layout& l, std::uint64_t offset,
                                           std::uint64_t size) {
    const auto overlaps = [&](const MovedRange& r) {
        return r.from < offset + size && offset < r.from + r.size;
    };
    if (std::any_of(l.dropped.begin(), l.dropped.end(), overlaps)) return std::nullopt;
    std::optional<std::uint64_t> delta; // to - from, modulo 2^64
    std::uint64_t covered = 0;
    for (const MovedRange& r : l.moved) {
        if (!overlaps(r)) continue;
        if (delta && *delta != r.to - r.from) return std::nullopt;
        delta = r.to - r.from;
        covered += std::min(offset + size, r.from + r.size) - std::max(offset, r.from);
    }
    if (!delta || covered == 0) return std::nullopt;
    return offset + *delta;
}

// How many bytes of the segment at [offset, offset + size) are in the new
// file at the same offsets, from its start on: the ELF header and the
// program headers at the start of the first PT_LOAD (place_base_sections
// leaves both where they were when the program headers follow the ELF
// header, as linkers put them).
std::uint64_t unmoved_prefix(const Layout& l, std::uint64_t offset, std::uint64_t size) {
    const std::uint64_t limit = size > std::numeric_limits<std::uint64_t>::max() - offset
                                    ? std::numeric_limits<std::uint64_t>::max()
                                    : offset + size;
    std::uint64_t end = offset;
    // Each pass takes the range `end` lies in, if any; `end` only grows, and
    // past a range's end that range cannot match again.
    for (bool grew = true; grew && end < limit;) {
        grew = false;
        for (const MovedRange& r : l.moved) {
            if (r.from != r.to || r.size > std::numeric_limits<std::uint64_t>::max() - r.from)
                continue;
            if (r.from <= end && end < r.from + r.size) {
                end = r.from + r.size;
                grew = true;
            }
        }
    }
    return std::min(end, limit) - offset;
}

// The program headers as `objcopy --only-keep-debug` keeps them: every
// segment's addresses, sizes in memory, flags and alignment as they were, so
// the file still describes the module's memory image; a segment whose bytes
// the file keeps (PT_PHDR, PT_NOTE) points at them, the others keep their
// offset and only the bytes still there from their start (p_filesz 0 when
// none: gABI, "Program Header"). That keeps the program header table inside
// the first PT_LOAD, as in the module: binutils refuses to read a file whose
// PT_PHDR no PT_LOAD covers ("PHDR segment not covered by LOAD segment").
Status copy_program_headers(const Source& src, const Layout& l, ::Elf* dst, const Failure& fail) {
    if (src.phnum == 0) return ok();
    if (gelf_newphdr(dst, src.phnum) == nullptr) return fail.libelf("gelf_newphdr");
    for (std::size_t i = 0; i < src.phnum; ++i) {
        GElf_Phdr ph;
        if (gelf_getphdr(src.elf, static_cast<int>(i), &ph) == nullptr)
            return fail.libelf("reading a program header");
        if (ph.p_filesz != 0) {
            if (const auto at = moved_segment(l, ph.p_offset, ph.p_filesz))
                ph.p_offset = *at;
            else
                ph.p_filesz = unmoved_prefix(l, ph.p_offset, ph.p_filesz);
        }
        if (gelf_update_phdr(dst, static_cast<int>(i), &ph) == 0)
            return fail.libelf("writing a program header");
    }
    return ok();
}

// Writes the image to `fd` with libelf, laid out by hand (ELF_F_LAYOUT).
Status write_image(int fd, const Source& src, const NewSymbols& symbols, const Layout& l,
                   const Failure& fail) {
    ::Elf* dst = elf_begin(fd, ELF_C_WRITE, nullptr);
    if (dst == nullptr) return fail.libelf("elf_begin");
    struct ElfEnd {
        ::Elf* e;
        ~ElfEnd() {
            if (e != nullptr) elf_end(e);
        }
    } end_dst{dst};

    if (gelf_newehdr(dst, ELFCLASS64) == nullptr) return fail.libelf("gelf_newehdr");
    elf_flagelf(dst, ELF_C_SET, ELF_F_LAYOUT);
    if (auto st = copy_program_headers(src, l, dst, fail); !st) return st;
    for (std::size_t i = 1; i < l.total; ++i) {
        const auto [h, bytes] = output_section(i, src, symbols, l);
        if (auto st = add_section(dst, h, bytes, fail); !st) return st;
    }

    GElf_Ehdr out = src.ehdr;
    out.e_phoff = l.phoff;
    out.e_shoff = l.shoff;
    out.e_shnum = 0; // libelf counts the sections
    if (gelf_update_ehdr(dst, &out) == 0) return fail.libelf("gelf_update_ehdr");
    if (elf_update(dst, ELF_C_WRITE) < 0) return fail.libelf("elf_update");
    elf_end(std::exchange(end_dst.e, nullptr));
    return ok();
}

} // namespace

Expected<DebugFileReport> write_debug_file(const ElfFile& base, const DebugFileContents& contents,
                                           const std::string& path) {
    const Failure fail{base.name() + " -> " + path};
    Source src;
    if (auto st = read_headers(base, src, fail); !st) return std::move(st).error();
    if (auto st = read_sections(src, fail); !st) return std::move(st).error();
    if (auto st = read_kept_bytes(src, fail); !st) return std::move(st).error();

    DebugFileReport report;
    const NewSymbols symbols = build_symbols(src, contents, report);
    std::vector<AddedSection> added;
    added.push_back({".debug_frame", contents.debug_frame, 8});
    added.push_back({generator_section,
                     {reinterpret_cast<const std::uint8_t*>(contents.generator.data()),
                      contents.generator.size()},
                     1});
    EmptyCompileUnit unit;
    if (!has_dwarf(src) && report.symbols >= contents.compile_unit_min_symbols) {
        unit =
            empty_compile_unit(contents.generator, src.little ? ByteOrder::Little : ByteOrder::Big);
        added.push_back({".debug_abbrev", unit.debug_abbrev, 1});
        added.push_back({".debug_info", unit.debug_info, 1});
        added.push_back({".debug_line", unit.debug_line, 1});
        report.compile_unit_added = true;
    }
    const Layout layout = plan_layout(src, std::move(added), symbols);

    const int fd = ::open(path.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
    if (fd < 0)
        return fail(Errc::Io, std::string("cannot create the file: ") + std::strerror(errno));
    FileCloser closer(fd);
    if (auto st = write_image(fd, src, symbols, layout, fail); !st) return std::move(st).error();
    report.file_size = layout.shoff + layout.total * sizeof(Elf64_Shdr);
    if (::close(closer.release()) != 0)
        return fail(Errc::Io, std::string("close: ") + std::strerror(errno));
    return report;
}

} // namespace sfunwind::elf

// SPDX-License-Identifier: MIT
// The copy is laid out by hand (ELF_F_LAYOUT): every section of the program
// keeps its offset, so the program headers stay true, and the new contents
// (.debug_frame, .symtab, .strtab, .shstrtab) go after the last byte the
// program used, followed by the section header table.
#include "sfunwind/elf/debug_file_writer.hpp"

#include <algorithm>
#include <array>
#include <boost/endian/conversion.hpp>
#include <cerrno>
#include <cstring>
#include <fcntl.h>
#include <gelf.h>
#include <libelf.h>
#include <map>
#include <optional>
#include <set>
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
    explicit StringTable(std::vector<std::uint8_t> initial) : bytes_(std::move(initial)) {
        if (bytes_.empty()) bytes_.push_back(0);
    }
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

// The symbols of one symbol table section, names resolved.
std::vector<SymbolEntry> read_symbols(::Elf* elf, Elf_Scn* scn, const GElf_Shdr& shdr) {
    std::vector<SymbolEntry> out;
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

} // namespace

Expected<DebugFileReport> write_debug_file(const ElfFile& base, const DebugFileContents& contents,
                                           const std::string& path) {
    const std::string who = base.name() + " -> " + path;
    auto fail = [&](Errc code, const std::string& what) { return Error(code, who + ": " + what); };
    auto libelf_fail = [&](const char* what) {
        return fail(Errc::Io, std::string(what) + ": " + elf_errmsg(-1));
    };

    ::Elf* src = base.libelf_handle();
    if (src == nullptr) return fail(Errc::Malformed, "no ELF image");
    GElf_Ehdr ehdr;
    if (gelf_getehdr(src, &ehdr) == nullptr) return libelf_fail("cannot read the ELF header");
    if (gelf_getclass(src) != ELFCLASS64)
        return fail(Errc::Unsupported, "only 64-bit ELF files are supported");
    const bool little = ehdr.e_ident[EI_DATA] == ELFDATA2LSB;
    std::size_t shstrndx = 0;
    if (elf_getshdrstrndx(src, &shstrndx) != 0) return libelf_fail("no section name table");
    std::size_t phnum = 0;
    if (elf_getphdrnum(src, &phnum) != 0) return libelf_fail("cannot count the program headers");

    // The program's sections, by index (0 is the null section).
    std::vector<SourceSection> sections(1);
    std::optional<std::size_t> symtab, dynsym, debug_frame;
    std::uint64_t end_of_used = ehdr.e_phoff + phnum * ehdr.e_phentsize;
    end_of_used = std::max<std::uint64_t>(end_of_used, ehdr.e_ehsize);
    for (Elf_Scn* scn = elf_nextscn(src, nullptr); scn != nullptr; scn = elf_nextscn(src, scn)) {
        SourceSection s;
        if (gelf_getshdr(scn, &s.shdr) == nullptr)
            return libelf_fail("cannot read a section header");
        const char* name = elf_strptr(src, shstrndx, s.shdr.sh_name);
        s.name = name != nullptr ? name : "";
        if (s.shdr.sh_type != SHT_NOBITS && s.shdr.sh_size > 0) {
            Elf_Data* raw = elf_rawdata(scn, nullptr);
            if (raw == nullptr || raw->d_size != s.shdr.sh_size)
                return fail(Errc::Truncated,
                            "section " + s.name + " runs past the end of the file");
            s.raw = {static_cast<const std::uint8_t*>(raw->d_buf), raw->d_size};
            end_of_used = std::max(end_of_used, s.shdr.sh_offset + s.shdr.sh_size);
        }
        const std::size_t index = elf_ndxscn(scn);
        if (index != sections.size())
            return fail(Errc::Malformed, "section indices are not consecutive");
        if (s.shdr.sh_type == SHT_SYMTAB && !symtab) symtab = index;
        if (s.shdr.sh_type == SHT_DYNSYM && !dynsym) dynsym = index;
        if (s.name == ".debug_frame" && !debug_frame) debug_frame = index;
        sections.push_back(std::move(s));
    }
    if (shstrndx == 0 || shstrndx >= sections.size())
        return fail(Errc::Malformed, "no section name table");
    if (sections.size() + 3 >= SHN_LORESERVE)
        return fail(Errc::Unsupported, "too many sections for a plain section header table");

    // The new symbol table: the program's own entries, then what LLDB would
    // otherwise not see. ELF wants the locals first (sh_info = first global).
    std::vector<SymbolEntry> locals, globals;
    std::set<std::uint64_t> function_starts;
    std::set<std::pair<std::string, std::uint64_t>> present;
    auto is_function = [](const SymbolEntry& e) {
        const unsigned type = GELF_ST_TYPE(e.info);
        return type == STT_FUNC || type == STT_GNU_IFUNC;
    };
    if (symtab) {
        for (auto& e : read_symbols(src, elf_getscn(src, *symtab), sections[*symtab].shdr)) {
            if (is_function(e) && e.shndx != SHN_UNDEF) function_starts.insert(e.value);
            present.emplace(e.name, e.value);
            (GELF_ST_BIND(e.info) == STB_LOCAL ? locals : globals).push_back(std::move(e));
        }
    }
    DebugFileReport report;
    // The base section that holds a link-time address (allocated sections;
    // code first), for symbols and functions that come from elsewhere.
    auto section_of = [&](std::uint64_t addr) -> std::uint16_t {
        std::uint16_t found = 0;
        for (std::size_t i = 1; i < sections.size() && i < SHN_LORESERVE; ++i) {
            const GElf_Shdr& h = sections[i].shdr;
            if ((h.sh_flags & SHF_ALLOC) == 0 || addr < h.sh_addr || addr >= h.sh_addr + h.sh_size)
                continue;
            found = static_cast<std::uint16_t>(i);
            if ((h.sh_flags & SHF_EXECINSTR) != 0) break;
        }
        return found;
    };
    auto merge = [&](std::vector<SymbolEntry> entries, bool remap, bool dynamic) {
        for (auto& e : entries) {
            if (e.shndx == SHN_UNDEF || e.name.empty() || present.count({e.name, e.value}) != 0)
                continue;
            const unsigned type = GELF_ST_TYPE(e.info);
            if (type == STT_SECTION || type == STT_FILE) continue;
            if (remap && e.shndx < SHN_LORESERVE) {
                e.shndx = section_of(e.value);
                if (e.shndx == 0) continue;
            }
            if (is_function(e)) function_starts.insert(e.value);
            present.emplace(e.name, e.value);
            if (dynamic) ++report.copied_dynamic;
            (GELF_ST_BIND(e.info) == STB_LOCAL ? locals : globals).push_back(std::move(e));
        }
    };
    if (dynsym)
        merge(read_symbols(src, elf_getscn(src, *dynsym), sections[*dynsym].shdr), false, true);
    for (const ElfFile* other : contents.symbol_sources) {
        ::Elf* oe = other != nullptr ? other->libelf_handle() : nullptr;
        if (oe == nullptr || oe == src) continue;
        for (Elf_Scn* scn = elf_nextscn(oe, nullptr); scn != nullptr; scn = elf_nextscn(oe, scn)) {
            GElf_Shdr h;
            if (gelf_getshdr(scn, &h) == nullptr ||
                (h.sh_type != SHT_SYMTAB && h.sh_type != SHT_DYNSYM))
                continue;
            merge(read_symbols(oe, scn, h), true, h.sh_type == SHT_DYNSYM);
        }
    }
    for (const Symbol& f : contents.functions) {
        if (function_starts.count(f.value) != 0) continue;
        // The section that holds the function, so that the symbol is a code
        // symbol rather than an absolute one.
        const std::uint16_t shndx = section_of(f.value);
        if (shndx == 0) continue;
        SymbolEntry e;
        e.name = f.name;
        e.info = static_cast<unsigned char>(GELF_ST_INFO(STB_LOCAL, STT_FUNC));
        e.shndx = shndx;
        e.value = f.value;
        e.size = f.size;
        function_starts.insert(f.value);
        locals.push_back(std::move(e));
        ++report.added_functions;
    }
    std::vector<SymbolEntry> all(1); // the null entry
    const std::size_t first_global = 1 + locals.size();
    all.insert(all.end(), std::make_move_iterator(locals.begin()),
               std::make_move_iterator(locals.end()));
    all.insert(all.end(), std::make_move_iterator(globals.begin()),
               std::make_move_iterator(globals.end()));
    StringTable strtab;
    const std::vector<std::uint8_t> symtab_bytes = encode_symbols(all, strtab, little);
    report.symbols = all.size();

    // Section indices of the new contents: the program's own, replaced in
    // place (sh_link references stay valid), or appended.
    std::size_t next_index = sections.size();
    const std::size_t symtab_index = symtab ? *symtab : next_index++;
    const std::size_t strtab_index =
        symtab && sections[*symtab].shdr.sh_link != 0 && sections[*symtab].shdr.sh_link != shstrndx
            ? sections[*symtab].shdr.sh_link
            : next_index++;
    const std::size_t frame_index = debug_frame ? *debug_frame : next_index++;
    const std::size_t total = next_index;

    std::vector<std::uint8_t> shstr_initial(sections[shstrndx].raw.begin(),
                                            sections[shstrndx].raw.end());
    StringTable shstrtab(std::move(shstr_initial));
    auto name_offset = [&](std::size_t index, const char* name) -> std::uint32_t {
        return index < sections.size() ? static_cast<std::uint32_t>(sections[index].shdr.sh_name)
                                       : shstrtab.add(name);
    };
    const std::uint32_t symtab_name = name_offset(symtab_index, ".symtab");
    const std::uint32_t strtab_name = name_offset(strtab_index, ".strtab");
    const std::uint32_t frame_name = name_offset(frame_index, ".debug_frame");

    // Where the new contents go.
    std::uint64_t tail = align_up(end_of_used, 8);
    const std::uint64_t frame_off = tail;
    tail = align_up(tail + contents.debug_frame.size(), 8);
    const std::uint64_t symtab_off = tail;
    tail += symtab_bytes.size();
    const std::uint64_t strtab_off = tail;
    tail += strtab.bytes().size();
    const std::uint64_t shstrtab_off = tail;
    tail = align_up(tail + shstrtab.bytes().size(), 8);
    const std::uint64_t shoff = tail;

    const int fd = ::open(path.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
    if (fd < 0)
        return fail(Errc::Io, std::string("cannot create the file: ") + std::strerror(errno));
    FileCloser closer(fd);
    ::Elf* dst = elf_begin(fd, ELF_C_WRITE, nullptr);
    if (dst == nullptr) return libelf_fail("elf_begin");
    struct ElfEnd {
        ::Elf* e;
        ~ElfEnd() {
            if (e != nullptr) elf_end(e);
        }
    } end_dst{dst};

    if (gelf_newehdr(dst, ELFCLASS64) == nullptr) return libelf_fail("gelf_newehdr");
    elf_flagelf(dst, ELF_C_SET, ELF_F_LAYOUT);
    if (phnum > 0) {
        if (gelf_newphdr(dst, phnum) == nullptr) return libelf_fail("gelf_newphdr");
        for (std::size_t i = 0; i < phnum; ++i) {
            GElf_Phdr ph;
            if (gelf_getphdr(src, static_cast<int>(i), &ph) == nullptr ||
                gelf_update_phdr(dst, static_cast<int>(i), &ph) == 0)
                return libelf_fail("copying a program header");
        }
    }

    auto add_section = [&](const GElf_Shdr& shdr, std::span<const std::uint8_t> bytes) -> Status {
        Elf_Scn* scn = elf_newscn(dst);
        if (scn == nullptr) return libelf_fail("elf_newscn");
        Elf_Data* data = elf_newdata(scn);
        if (data == nullptr) return libelf_fail("elf_newdata");
        // Raw bytes, already in the file's byte order: no translation.
        data->d_type = ELF_T_BYTE;
        data->d_buf =
            shdr.sh_type == SHT_NOBITS ? nullptr : const_cast<std::uint8_t*>(bytes.data());
        data->d_size = shdr.sh_type == SHT_NOBITS ? shdr.sh_size : bytes.size();
        data->d_off = 0;
        data->d_align = 1;
        data->d_version = EV_CURRENT;
        GElf_Shdr copy = shdr;
        if (gelf_update_shdr(scn, &copy) == 0) return libelf_fail("gelf_update_shdr");
        return ok();
    };

    for (std::size_t i = 1; i < total; ++i) {
        GElf_Shdr h{};
        std::span<const std::uint8_t> bytes;
        if (i < sections.size()) {
            h = sections[i].shdr;
            bytes = sections[i].raw;
        }
        if (i == symtab_index) {
            h.sh_name = symtab_name;
            h.sh_type = SHT_SYMTAB;
            h.sh_flags = 0;
            h.sh_addr = 0;
            h.sh_offset = symtab_off;
            h.sh_size = symtab_bytes.size();
            h.sh_link = static_cast<std::uint32_t>(strtab_index);
            h.sh_info = static_cast<std::uint32_t>(first_global);
            h.sh_addralign = 8;
            h.sh_entsize = sym_size;
            bytes = symtab_bytes;
        } else if (i == strtab_index) {
            h.sh_name = strtab_name;
            h.sh_type = SHT_STRTAB;
            h.sh_flags = 0;
            h.sh_addr = 0;
            h.sh_offset = strtab_off;
            h.sh_size = strtab.bytes().size();
            h.sh_link = 0;
            h.sh_info = 0;
            h.sh_addralign = 1;
            h.sh_entsize = 0;
            bytes = strtab.bytes();
        } else if (i == frame_index) {
            h.sh_name = frame_name;
            h.sh_type = SHT_PROGBITS;
            h.sh_flags = 0;
            h.sh_addr = 0;
            h.sh_offset = frame_off;
            h.sh_size = contents.debug_frame.size();
            h.sh_link = 0;
            h.sh_info = 0;
            h.sh_addralign = 8;
            h.sh_entsize = 0;
            bytes = contents.debug_frame;
        } else if (i == shstrndx) {
            h.sh_offset = shstrtab_off;
            h.sh_size = shstrtab.bytes().size();
            bytes = shstrtab.bytes();
        }
        if (auto st = add_section(h, bytes); !st) return std::move(st).error();
    }

    GElf_Ehdr out = ehdr;
    out.e_shoff = shoff;
    out.e_shnum = 0; // libelf counts the sections
    if (gelf_update_ehdr(dst, &out) == 0) return libelf_fail("gelf_update_ehdr");
    if (elf_update(dst, ELF_C_WRITE) < 0) return libelf_fail("elf_update");
    elf_end(std::exchange(end_dst.e, nullptr));
    report.file_size = shoff + total * sizeof(Elf64_Shdr);
    if (::close(closer.release()) != 0)
        return fail(Errc::Io, std::string("close: ") + std::strerror(errno));
    return report;
}

} // namespace sfunwind::elf

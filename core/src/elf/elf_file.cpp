// SPDX-License-Identifier: MIT
// ElfFile: libelf over the file's image (file_image.hpp: read on demand, so
// every range is ensure()d before libelf or this file looks at it). libelf
// checks the header tables against the image size too, but every offset and
// size taken from the file is checked here as well before it is used to index
// the image.
#include "sfunwind/elf/elf_file.hpp"

#include "file_image.hpp"
#include "sfunwind/bytes.hpp"

#include <algorithm>
#include <cerrno>
#include <cstddef>
#include <cstdio>
#include <cstring>
#include <elf.h>
#include <fcntl.h>
#include <gelf.h>
#include <libelf.h>
#include <limits>
#include <list>
#include <mutex>
#include <string_view>
#include <sys/stat.h>
#include <tuple>
#include <unistd.h>
#include <unordered_set>

namespace sfunwind::elf {
namespace {

// True when [offset, offset + size) lies inside a file of file_size bytes;
// safe against overflow.
bool fits(std::uint64_t offset, std::uint64_t size, std::uint64_t file_size) {
    return offset <= file_size && size <= file_size - offset;
}

// libelf keeps a per-process version handshake; it must precede elf_memory.
bool libelf_ready() {
    static const bool ready = elf_version(EV_CURRENT) != EV_NONE;
    return ready;
}

constexpr std::uint64_t small_page = 4096;

// The last address a function symbol covers: a symbol of size 0 covers its
// own first byte (a label on code, as addr2line treats it); one whose size
// runs past the top of the address space ends there.
std::uint64_t last_address(const Symbol& s) {
    const std::uint64_t extent = std::max<std::uint64_t>(s.size, 1) - 1;
    return s.value > ~std::uint64_t{0} - extent ? ~std::uint64_t{0} : s.value + extent;
}

// The NT_GNU_BUILD_ID note (owner "GNU", type 3: gABI "Note Sections", the
// LSB) in a block of notes, if any.
std::optional<std::vector<std::uint8_t>> build_id_note(Elf_Data* data) {
    if (data == nullptr) return std::nullopt;
    std::size_t offset = 0;
    GElf_Nhdr nhdr;
    std::size_t name_at = 0;
    std::size_t desc_at = 0;
    // gelf_getnote returns 0 at the end or on a malformed note, and
    // otherwise strictly advances, so this loop ends.
    while ((offset = gelf_getnote(data, offset, &nhdr, &name_at, &desc_at)) != 0) {
        if (nhdr.n_type != NT_GNU_BUILD_ID || nhdr.n_namesz != 4 || nhdr.n_descsz == 0) continue;
        const auto* base = static_cast<const std::uint8_t*>(data->d_buf);
        if (name_at > data->d_size || data->d_size - name_at < 4) continue;
        if (std::memcmp(base + name_at, "GNU", 4) != 0) continue;
        if (desc_at > data->d_size || nhdr.n_descsz > data->d_size - desc_at) continue;
        return std::vector<std::uint8_t>(base + desc_at, base + desc_at + nhdr.n_descsz);
    }
    return std::nullopt;
}

} // namespace

// A section of the file's image read on demand (sframe::SectionFetcher):
// the image reads a 4 KiB chunk the first time a fetch covers it.
class ImageSectionFetcher final : public sframe::SectionFetcher {
  public:
    ImageSectionFetcher(const detail::FileImage& image, std::uint64_t file_offset)
        : image_(image), file_offset_(file_offset) {}
    std::uint64_t file_offset() const noexcept { return file_offset_; }
    bool fetch(std::uint64_t offset, std::uint64_t length) const noexcept override {
        try {
            return image_.ensure(file_offset_ + offset, length);
        } catch (...) { // its lock or its message: no memory
            return false;
        }
    }
    std::string problem() const override { return image_.last_error(); }

  private:
    const detail::FileImage& image_;
    std::uint64_t file_offset_;
};

// A libelf descriptor, ended when it goes out of scope.
class ElfHandle {
  public:
    explicit ElfHandle(::Elf* elf) noexcept : elf_(elf) {}
    ElfHandle(const ElfHandle&) = delete;
    ElfHandle& operator=(const ElfHandle&) = delete;
    ~ElfHandle() {
        if (elf_ != nullptr) elf_end(elf_);
    }
    ::Elf* get() const noexcept { return elf_; }

  private:
    ::Elf* elf_;
};

struct ElfFile::Impl {
    std::string name;
    detail::FileImage image;
    // Guards `fetchers` and `copies`, which sframe() adds to.
    mutable std::mutex on_demand_mutex;
    // The fetchers of the Sections sframe() made, one per section offset
    // (a list: they stay where they are while the Sections point to them,
    // and an empty one allocates nothing, unlike a deque).
    mutable std::list<ImageSectionFetcher> fetchers;

    // Small sections' bytes copied out of the file (sframe()), one per
    // section offset, kept as long as the file.
    mutable std::list<std::pair<std::uint64_t, std::vector<std::uint8_t>>> copies;
    // The copy of [file_offset, + size) copy_at() made, if it made one.
    std::optional<std::span<const std::uint8_t>> copy_if_made(std::uint64_t file_offset,
                                                              std::uint64_t size) const {
        const std::lock_guard lock(on_demand_mutex);
        for (const auto& [at, bytes] : copies)
            if (at == file_offset && bytes.size() == size) return std::span(bytes);
        return std::nullopt;
    }
    // A copy of [file_offset, + size) read from the file, or empty.
    std::span<const std::uint8_t> copy_at(std::uint64_t file_offset, std::uint64_t size) const {
        const std::lock_guard lock(on_demand_mutex);
        for (const auto& [at, bytes] : copies)
            if (at == file_offset && bytes.size() == size) return bytes;
        std::vector<std::uint8_t> bytes;
        bytes.reserve(static_cast<std::size_t>(size));
        if (!image.scan(file_offset, size,
                        [&](std::span<const std::uint8_t> piece) {
                            bytes.insert(bytes.end(), piece.begin(), piece.end());
                        }) ||
            bytes.size() != size)
            return {};
        return copies.emplace_back(file_offset, std::move(bytes)).second;
    }

    const ImageSectionFetcher& fetcher_at(std::uint64_t file_offset) const {
        const std::lock_guard lock(on_demand_mutex);
        for (const auto& f : fetchers)
            if (f.file_offset() == file_offset) return f;
        return fetchers.emplace_back(image, file_offset);
    }
    // libelf's descriptor of the image for libelf_handle() and
    // libelf_headers(), made at the first call. The reads here (the headers,
    // the notes, the dynamic section, the symbols) each use a descriptor of
    // their own, ended after: one kept from open() cost every module about
    // 5 KB of libelf's section descriptors (300 small libraries: 1.6 MB of a
    // debugger's memory) that most modules never use again.
    mutable std::mutex elf_mutex;
    mutable ::Elf* kept = nullptr;
    ::Elf* kept_elf() const {
        const std::lock_guard lock(elf_mutex);
        if (kept == nullptr) kept = new_elf();
        return kept;
    }
    // libelf reads from the image but does not write to it (ELF_C_READ).
    ::Elf* new_elf() const {
        return elf_memory(const_cast<char*>(reinterpret_cast<const char*>(image.bytes().data())),
                          image.size());
    }
    ByteOrder order = ByteOrder::Little;
    std::uint16_t machine = 0;
    std::uint16_t type = 0;
    std::uint64_t entry = 0;
    std::vector<ProgramHeader> phdrs;
    std::vector<LoadSegment> loads;
    std::uint64_t link_base = 0;
    std::vector<SectionInfo> sections;

    // Symbols are read on first use: most callers (the unwinder) never need
    // them, and .symtab can be large.
    mutable std::once_flag call_sites_once;
    mutable std::unique_ptr<ExceptionCallSites> call_sites;
    mutable std::once_flag symbols_once;
    mutable std::vector<Symbol> symbols;
    // The highest address symbols[0..i] cover (inclusive, so that a symbol
    // ending at the top of the address space needs no value past it).
    mutable std::vector<std::uint64_t> max_last;

    Impl() = default;
    Impl(const Impl&) = delete;
    Impl& operator=(const Impl&) = delete;
    ~Impl() {
        if (kept != nullptr) elf_end(kept);
    }

    Error error(Errc code, const std::string& what, std::uint64_t where = no_offset) const {
        return Error(code, name + ": " + what, where);
    }

    // The image's bytes where `where` says the section is, clipped to the
    // file, not read yet (sframe_bytes() reads them, sframe() on demand).
    Expected<std::span<const std::uint8_t>> located(const SframeLocation& where) const {
        const std::uint64_t size = image.size();
        if (where.file_offset > size)
            return error(Errc::Truncated,
                         where.name + " at offset " + to_hex(where.file_offset) +
                             " starts past the end of the file (" + std::to_string(size) +
                             " bytes)",
                         where.file_offset);
        return image.bytes().subspan(where.file_offset,
                                     std::min(where.size, size - where.file_offset));
    }
    Error libelf_error(const std::string& what, std::uint64_t where = no_offset) const {
        return error(Errc::Malformed, what + ": " + elf_errmsg(-1), where);
    }

    std::span<const std::uint8_t> bytes() const noexcept { return image.bytes(); }
    // The image's bytes [offset, offset + size) (clipped to the file) are
    // read, or an Io error naming the file and the range.
    Status ensure(std::uint64_t offset, std::uint64_t size, const char* what) const;
    // Reads the ELF header, both header tables and the section-name table,
    // everything read_headers() gives libelf to look at.
    Status ensure_headers() const;
    Status read_headers();
    void read_symbols() const;
    void read_symbol_table(const SectionInfo& table) const;
};

Status ElfFile::Impl::ensure(std::uint64_t offset, std::uint64_t size, const char* what) const {
    if (image.ensure(offset, size)) return ok();
    return error(Errc::Io,
                 std::string("cannot read ") + what + " (" + std::to_string(size) +
                     " bytes at offset " + to_hex(offset) + "): " + image.last_error(),
                 offset);
}

Status ElfFile::Impl::ensure_headers() const {
    const ByteView ehdr(bytes(), order);
    std::uint64_t phoff = 0, shoff = 0;
    std::uint16_t phnum = 0, shnum = 0;
    // Elf64_Ehdr field offsets (gABI "ELF Header"); a field past a short
    // file stays 0 and read_headers() reports the truncation.
    ehdr.load(offsetof(Elf64_Ehdr, e_phoff), phoff);
    ehdr.load(offsetof(Elf64_Ehdr, e_shoff), shoff);
    ehdr.load(offsetof(Elf64_Ehdr, e_phnum), phnum);
    ehdr.load(offsetof(Elf64_Ehdr, e_shnum), shnum);
    // Section 0 holds the real counts past PN_XNUM / SHN_LORESERVE (gABI
    // "Sections", extended numbering).
    if (shoff != 0)
        if (auto st = ensure(shoff, sizeof(Elf64_Shdr), "section header 0"); !st) return st;
    const ByteView shdr0(
        bytes().size() > shoff ? bytes().subspan(shoff) : std::span<const std::uint8_t>{}, order);
    std::uint64_t section_count = shnum;
    std::uint32_t program_count = phnum;
    if (shoff != 0 && shnum == 0) shdr0.load(offsetof(Elf64_Shdr, sh_size), section_count);
    if (phnum == PN_XNUM) shdr0.load(offsetof(Elf64_Shdr, sh_info), program_count);
    if (auto st =
            ensure(phoff, std::uint64_t{program_count} * sizeof(Elf64_Phdr), "the program headers");
        !st)
        return st;
    // ensure() clips to the file, so a hostile count costs at most the file.
    if (shoff != 0 && section_count <= ~std::uint64_t{0} / sizeof(Elf64_Shdr))
        if (auto st = ensure(shoff, section_count * sizeof(Elf64_Shdr), "the section headers"); !st)
            return st;
    return ok();
}

Status ElfFile::Impl::read_headers() {
    if (auto st = ensure(0, sizeof(Elf64_Ehdr), "the ELF header"); !st) return st;
    const std::uint64_t size = image.size();
    const std::span<const std::uint8_t> view = bytes();
    // The identification bytes decide everything else (gABI "ELF
    // Identification"); check them before libelf interprets the rest.
    if (size < EI_NIDENT)
        return error(Errc::Truncated,
                     "file is " + std::to_string(size) + " bytes, too short for an ELF header", 0);
    if (std::memcmp(view.data(), ELFMAG, SELFMAG) != 0)
        return error(Errc::BadMagic, "not an ELF file", 0);
    if (view[EI_CLASS] == ELFCLASS32)
        return error(
            Errc::Unsupported,
            "32-bit ELF (ELFCLASS32) is not supported; SFrame is defined for 64-bit ABIs only",
            EI_CLASS);
    if (view[EI_CLASS] != ELFCLASS64)
        return error(Errc::Malformed, "bad ELF class " + std::to_string(view[EI_CLASS]), EI_CLASS);
    if (view[EI_DATA] == ELFDATA2LSB)
        order = ByteOrder::Little;
    else if (view[EI_DATA] == ELFDATA2MSB)
        order = ByteOrder::Big;
    else
        return error(Errc::Malformed, "bad ELF data encoding " + std::to_string(view[EI_DATA]),
                     EI_DATA);
    if (size < sizeof(Elf64_Ehdr))
        return error(
            Errc::Truncated,
            "file is " + std::to_string(size) + " bytes, too short for the 64-byte ELF header", 0);

    if (auto st = ensure_headers(); !st) return st;
    if (!libelf_ready()) return error(Errc::Unsupported, std::string("libelf: ") + elf_errmsg(-1));
    const ElfHandle handle(new_elf());
    ::Elf* elf = handle.get();
    if (elf == nullptr || elf_kind(elf) != ELF_K_ELF)
        return libelf_error("libelf cannot read the ELF header", 0);

    GElf_Ehdr ehdr;
    if (gelf_getehdr(elf, &ehdr) == nullptr) return libelf_error("bad ELF header", 0);
    machine = ehdr.e_machine;
    type = ehdr.e_type;
    entry = ehdr.e_entry;

    // Program headers (gABI "Program Header"). libelf clamps the counts to
    // what fits in the image; a cut file must fail instead, so the header's
    // own counts are checked. Only the extended-numbering escapes (PN_XNUM,
    // or e_shnum 0 with a table) keep their real counts in section 0, where
    // libelf reads them.
    std::size_t phnum = ehdr.e_phnum;
    if (ehdr.e_phnum == PN_XNUM && elf_getphdrnum(elf, &phnum) != 0)
        return libelf_error("bad extended program header count", offsetof(Elf64_Ehdr, e_phnum));
    if (phnum > 0) {
        if (ehdr.e_phentsize != sizeof(Elf64_Phdr))
            return error(Errc::Malformed,
                         "program header entry size " + std::to_string(ehdr.e_phentsize) +
                             ", expected " + std::to_string(sizeof(Elf64_Phdr)),
                         offsetof(Elf64_Ehdr, e_phentsize));
        if (!fits(ehdr.e_phoff, std::uint64_t{phnum} * sizeof(Elf64_Phdr), size))
            return error(Errc::Truncated,
                         std::to_string(phnum) + " program headers at offset " +
                             to_hex(ehdr.e_phoff) + " run past the end of the file (" +
                             std::to_string(size) + " bytes)",
                         ehdr.e_phoff);
    }
    // Exactly as many as the file has (checked above to lie in the file):
    // a module is kept for the session, and doubling leaves a third unused.
    phdrs.reserve(phnum);
    for (std::size_t i = 0; i < phnum; ++i) {
        GElf_Phdr ph;
        const std::uint64_t at = ehdr.e_phoff + i * sizeof(Elf64_Phdr);
        if (gelf_getphdr(elf, static_cast<int>(i), &ph) == nullptr)
            return libelf_error("cannot read program header " + std::to_string(i), at);
        phdrs.push_back(
            {ph.p_type, ph.p_flags, ph.p_offset, ph.p_vaddr, ph.p_filesz, ph.p_memsz, ph.p_align});
        if (ph.p_type == PT_LOAD)
            loads.push_back({ph.p_vaddr, ph.p_memsz, ph.p_offset, ph.p_filesz, ph.p_flags});
    }
    if (!loads.empty()) {
        std::uint64_t lowest = loads.front().vaddr;
        for (const auto& l : loads)
            lowest = std::min(lowest, l.vaddr);
        link_base = lowest & ~(small_page - 1);
    }

    // Section headers are optional in an executable or shared object
    // (gABI "Sections"); a file without them still has its segments.
    std::size_t shnum = ehdr.e_shnum;
    if (shnum == 0 && ehdr.e_shoff != 0) {
        if (!fits(ehdr.e_shoff, sizeof(Elf64_Shdr), size))
            return error(Errc::Truncated,
                         "section header 0 at offset " + to_hex(ehdr.e_shoff) +
                             " runs past the end of the file (" + std::to_string(size) + " bytes)",
                         ehdr.e_shoff);
        if (elf_getshdrnum(elf, &shnum) != 0)
            return libelf_error("bad extended section header count", offsetof(Elf64_Ehdr, e_shnum));
    }
    if (shnum == 0) return ok();
    if (ehdr.e_shentsize != sizeof(Elf64_Shdr))
        return error(Errc::Malformed,
                     "section header entry size " + std::to_string(ehdr.e_shentsize) +
                         ", expected " + std::to_string(sizeof(Elf64_Shdr)),
                     offsetof(Elf64_Ehdr, e_shentsize));
    if (!fits(ehdr.e_shoff, std::uint64_t{shnum} * sizeof(Elf64_Shdr), size))
        return error(Errc::Truncated,
                     std::to_string(shnum) + " section headers at offset " + to_hex(ehdr.e_shoff) +
                         " run past the end of the file (" + std::to_string(size) + " bytes)",
                     ehdr.e_shoff);
    std::size_t shstrndx = 0;
    bool have_names =
        elf_getshdrstrndx(elf, &shstrndx) == 0 && shstrndx != SHN_UNDEF && shstrndx < shnum;
    if (have_names) {
        GElf_Shdr names;
        if (gelf_getshdr(elf_getscn(elf, shstrndx), &names) == nullptr)
            have_names = false;
        else if (names.sh_type != SHT_NOBITS)
            if (auto st = ensure(names.sh_offset, names.sh_size, "the section name table"); !st)
                return st;
    }
    sections.reserve(shnum);
    for (std::size_t i = 0; i < shnum; ++i) {
        Elf_Scn* scn = elf_getscn(elf, i);
        GElf_Shdr sh;
        const std::uint64_t at = ehdr.e_shoff + i * sizeof(Elf64_Shdr);
        if (scn == nullptr || gelf_getshdr(scn, &sh) == nullptr)
            return libelf_error("cannot read section header " + std::to_string(i), at);
        // elf_strptr checks the string lies inside a NUL-terminated string table.
        const char* n = have_names ? elf_strptr(elf, shstrndx, sh.sh_name) : nullptr;
        SectionInfo s{n != nullptr ? n : "",
                      static_cast<std::uint32_t>(i),
                      sh.sh_type,
                      sh.sh_flags,
                      sh.sh_addr,
                      sh.sh_offset,
                      sh.sh_size,
                      sh.sh_link,
                      false};
        s.in_file = sh.sh_type != SHT_NOBITS && fits(sh.sh_offset, sh.sh_size, size);
        sections.push_back(std::move(s));
    }
    return ok();
}

void ElfFile::Impl::read_symbol_table(const SectionInfo& table) const {
    if (!table.in_file || table.link >= sections.size()) return;
    // A table that cannot be read gives no symbols, as a missing one.
    const SectionInfo& strings = sections[table.link];
    if (!image.ensure(table.offset, table.size) ||
        (strings.in_file && !image.ensure(strings.offset, strings.size)))
        return;
    const ElfHandle handle(new_elf());
    ::Elf* elf = handle.get();
    Elf_Scn* scn = elf == nullptr ? nullptr : elf_getscn(elf, table.index);
    if (scn == nullptr) return;
    // elf_getdata converts the entries to host order (in its own buffer when
    // the file's order differs, so image() keeps the file's bytes).
    Elf_Data* data = elf_getdata(scn, nullptr);
    if (data == nullptr || data->d_size < sizeof(Elf64_Sym)) return;
    const std::size_t count = data->d_size / sizeof(Elf64_Sym);
    for (std::size_t i = 1; i < count; ++i) { // entry 0 is the reserved null symbol
        GElf_Sym sym;
        if (gelf_getsym(data, static_cast<int>(i), &sym) == nullptr) break;
        const unsigned kind = GELF_ST_TYPE(sym.st_info);
        if ((kind != STT_FUNC && kind != STT_GNU_IFUNC) || sym.st_shndx == SHN_UNDEF) continue;
        const char* n = elf_strptr(elf, table.link, sym.st_name);
        if (n == nullptr || *n == '\0') continue;
        symbols.push_back({n, sym.st_value, sym.st_size});
    }
}

void ElfFile::Impl::read_symbols() const {
    for (const auto& s : sections)
        if (s.type == SHT_SYMTAB || s.type == SHT_DYNSYM) read_symbol_table(s);
    // .dynsym repeats the exported part of .symtab.
    auto key = [](const Symbol& s) { return std::tie(s.value, s.name); };
    std::sort(symbols.begin(), symbols.end(), [&](const Symbol& a, const Symbol& b) {
        return std::tie(a.value, a.name, b.size) <
               std::tie(b.value, b.name, a.size); // larger size first
    });
    symbols.erase(std::unique(symbols.begin(), symbols.end(),
                              [&](const Symbol& a, const Symbol& b) { return key(a) == key(b); }),
                  symbols.end());
    max_last.reserve(symbols.size());
    std::uint64_t m = 0;
    for (const auto& s : symbols) {
        m = std::max(m, last_address(s));
        max_last.push_back(m);
    }
}

ElfFile::ElfFile(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}
ElfFile::ElfFile(ElfFile&&) noexcept = default;
ElfFile& ElfFile::operator=(ElfFile&&) noexcept = default;
ElfFile::~ElfFile() = default;

Expected<ElfFile> ElfFile::open(const std::string& path, bool keep_descriptor) {
    auto impl = std::make_unique<Impl>();
    impl->name = path;
    // Kept through the headers' reads at least: the section headers are
    // usually at the file's end, a chunk open() does not read.
    if (std::string why; !impl->image.open(path, why, true))
        return Error(Errc::Io, path + ": " + why);
    if (auto st = impl->read_headers(); !st) return std::move(st).error();
    if (!keep_descriptor) impl->image.close_descriptor();
    return ElfFile(std::move(impl));
}

void ElfFile::close_descriptor() const noexcept {
    if (impl_) impl_->image.close_descriptor();
}

Expected<ElfFile> ElfFile::from_bytes(std::span<const std::uint8_t> bytes, std::string name) {
    auto impl = std::make_unique<Impl>();
    impl->name = std::move(name);
    impl->image.assign(bytes);
    if (auto st = impl->read_headers(); !st) return std::move(st).error();
    return ElfFile(std::move(impl));
}

const std::string& ElfFile::name() const noexcept {
    return impl_->name;
}
std::span<const std::uint8_t> ElfFile::image() const {
    if (!impl_->image.ensure_all()) return {};
    return impl_->bytes();
}
std::size_t ElfFile::bytes_read() const noexcept {
    return impl_->image.resident();
}
ByteOrder ElfFile::byte_order() const noexcept {
    return impl_->order;
}
::Elf* ElfFile::libelf_handle() const {
    // libdw may read any part of the file through it.
    if (!impl_->image.ensure_all()) return nullptr;
    return impl_->kept_elf();
}
::Elf* ElfFile::libelf_headers() const noexcept {
    return impl_->kept_elf();
}
std::uint16_t ElfFile::machine() const noexcept {
    return impl_->machine;
}
bool ElfFile::is_pie_or_shared() const noexcept {
    return impl_->type == ET_DYN;
}
std::uint64_t ElfFile::entry() const noexcept {
    return impl_->entry;
}
std::optional<Symbol> ElfFile::entry_function() const {
    const bool interp = std::any_of(impl_->phdrs.begin(), impl_->phdrs.end(),
                                    [](const ProgramHeader& p) { return p.type == PT_INTERP; });
    const bool program =
        impl_->type == ET_EXEC || (impl_->type == ET_DYN && impl_->entry != 0 &&
                                   (interp || (dynamic_info().flags_1 & DF_1_PIE) != 0));
    if (!program) return std::nullopt;
    const std::uint64_t entry = impl_->entry;
    const auto& syms = function_symbols();
    auto it = std::lower_bound(syms.begin(), syms.end(), entry,
                               [](const Symbol& s, std::uint64_t a) { return s.value < a; });
    const auto first = it;
    for (; it != syms.end() && it->value == entry; ++it)
        if (it->size != 0) return *it;
    if (first == it) return std::nullopt;
    // A symbol without a size (s390x glibc's start.S gives _start none): the
    // function runs to the next function symbol or the end of its code
    // section, whichever is first. Such a symbol is found in a .symtab, which
    // names the program's other functions too; the DWARF writer also stops
    // it at the next SFrame FDE (cfi::DebugFrameOptions::entry_function).
    const auto code =
        std::find_if(impl_->sections.begin(), impl_->sections.end(), [&](const SectionInfo& s) {
            return (s.flags & SHF_EXECINSTR) != 0 && s.vaddr <= entry && entry - s.vaddr < s.size;
        });
    if (code == impl_->sections.end()) return std::nullopt;
    std::uint64_t end = code->vaddr + code->size;
    if (it != syms.end()) end = std::min(end, it->value);
    Symbol fn = *first;
    fn.size = end - entry;
    return fn;
}
const std::vector<LoadSegment>& ElfFile::load_segments() const noexcept {
    return impl_->loads;
}
const std::vector<ProgramHeader>& ElfFile::program_headers() const noexcept {
    return impl_->phdrs;
}
const std::vector<SectionInfo>& ElfFile::sections() const noexcept {
    return impl_->sections;
}
std::uint64_t ElfFile::link_base() const noexcept {
    return impl_->link_base;
}

std::optional<Abi> ElfFile::abi() const {
    const ByteOrder order = impl_->order;
    switch (impl_->machine) {
    case EM_X86_64:
        if (order == ByteOrder::Little) return abi_amd64();
        break;
    case EM_AARCH64:
        return abi_aarch64(order);
    case EM_S390:
        // EM_S390 with ELFCLASS64 is s390x, which is big-endian only.
        if (order == ByteOrder::Big) return abi_s390x();
        break;
    case EM_PPC64:
        return abi_ppc64(order);
    default:
        break;
    }
    return std::nullopt;
}

const SectionInfo* ElfFile::section(const std::string& name) const {
    for (const auto& s : impl_->sections)
        if (s.name == name) return &s;
    return nullptr;
}

bool ElfFile::has_section(const std::string& name) const {
    return section(name) != nullptr;
}

std::optional<std::span<const std::uint8_t>> ElfFile::section_bytes(const std::string& name) const {
    const SectionInfo* s = section(name);
    if (s == nullptr) return std::nullopt;
    return section_bytes(*s);
}

std::optional<std::span<const std::uint8_t>> ElfFile::section_bytes(const SectionInfo& s) const {
    if (!s.in_file || !impl_->image.ensure(s.offset, s.size)) return std::nullopt;
    return impl_->bytes().subspan(s.offset, s.size);
}

std::optional<std::vector<std::uint8_t>> ElfFile::build_id() const {
    // Notes are found through SHT_NOTE sections or, without section headers,
    // PT_NOTE segments.
    const std::uint64_t size = impl_->image.size();
    const ElfHandle handle(impl_->new_elf());
    ::Elf* elf = handle.get();
    if (elf == nullptr) return std::nullopt;
    for (const auto& sec : impl_->sections) {
        if (sec.type != SHT_NOTE || !sec.in_file || !impl_->image.ensure(sec.offset, sec.size))
            continue;
        if (auto id = build_id_note(elf_getdata(elf_getscn(elf, sec.index), nullptr))) return id;
    }
    if (!impl_->sections.empty()) return std::nullopt;
    for (const auto& ph : impl_->phdrs) {
        if (ph.type != PT_NOTE || !fits(ph.offset, ph.filesz, size) ||
            !impl_->image.ensure(ph.offset, ph.filesz))
            continue;
        const Elf_Type t = ph.align == 8 ? ELF_T_NHDR8 : ELF_T_NHDR;
        if (auto id = build_id_note(
                elf_getdata_rawchunk(elf, static_cast<std::int64_t>(ph.offset), ph.filesz, t)))
            return id;
    }
    return std::nullopt;
}

DynamicInfo ElfFile::dynamic_info() const {
    // A hostile dynamic section can name one long string in every entry:
    // names are kept once each, up to max_needed of them, and a name longer
    // than a path can be (PATH_MAX) is no library anyone can load.
    constexpr std::size_t max_needed = 4096;
    constexpr std::size_t max_name = 4096;
    DynamicInfo d;
    std::unordered_set<std::string_view> seen;
    for (const auto& sec : impl_->sections) {
        if (sec.type != SHT_DYNAMIC || !sec.in_file || sec.size == 0 ||
            !impl_->image.ensure(sec.offset, sec.size))
            continue;
        const auto strtab = std::find_if(impl_->sections.begin(), impl_->sections.end(),
                                         [&](const SectionInfo& t) { return t.index == sec.link; });
        if (strtab == impl_->sections.end() || strtab->type != SHT_STRTAB || !strtab->in_file ||
            !impl_->image.ensure(strtab->offset, strtab->size))
            continue;
        const ElfHandle handle(impl_->new_elf());
        ::Elf* elf = handle.get();
        Elf_Scn* scn = elf == nullptr ? nullptr : elf_getscn(elf, sec.index);
        Elf_Data* data = scn == nullptr ? nullptr : elf_getdata(scn, nullptr);
        const std::size_t entry = gelf_fsize(elf, ELF_T_DYN, 1, EV_CURRENT);
        if (data == nullptr || entry == 0) continue;
        const std::size_t n = data->d_size / entry;
        d.read = true;
        for (std::size_t i = 0;
             i < n && i <= static_cast<std::size_t>(std::numeric_limits<int>::max()); ++i) {
            GElf_Dyn dyn;
            if (gelf_getdyn(data, static_cast<int>(i), &dyn) == nullptr || dyn.d_tag == DT_NULL)
                break;
            if (dyn.d_tag == DT_FLAGS_1) d.flags_1 = dyn.d_un.d_val;
            if (dyn.d_tag == DT_TEXTREL || (dyn.d_tag == DT_FLAGS && (dyn.d_un.d_val & DF_TEXTREL)))
                d.text_relocations = true;
            if (dyn.d_tag != DT_NEEDED && dyn.d_tag != DT_RUNPATH && dyn.d_tag != DT_RPATH)
                continue;
            const char* text = elf_strptr(elf, sec.link, dyn.d_un.d_val);
            if (text == nullptr) continue;
            // elf_strptr() checked that a NUL ends the string in the table.
            const std::string_view name(text, ::strnlen(text, max_name + 1));
            if (name.size() > max_name) continue;
            if (dyn.d_tag == DT_NEEDED && d.needed.size() < max_needed && seen.insert(name).second)
                d.needed.emplace_back(name);
            if (dyn.d_tag == DT_RUNPATH) d.runpath = text;
            if (dyn.d_tag == DT_RPATH) d.rpath = text;
        }
        break;
    }
    return d;
}

Expected<std::vector<std::uint8_t>> read_build_id(const std::string& path) {
    if (!libelf_ready()) return Error(Errc::Unsupported, "libelf: " + std::string(elf_errmsg(-1)));
    const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
    if (fd < 0) return Error(Errc::Io, path + ": " + std::strerror(errno));
    // Mapped, not read: a probe of a large library costs its note pages only.
    ::Elf* e = elf_begin(fd, ELF_C_READ_MMAP, nullptr);
    std::optional<std::vector<std::uint8_t>> id;
    bool is_elf = e != nullptr && elf_kind(e) == ELF_K_ELF;
    if (is_elf) {
        bool have_sections = false;
        for (Elf_Scn* scn = elf_nextscn(e, nullptr); scn != nullptr && !id;
             scn = elf_nextscn(e, scn)) {
            have_sections = true;
            GElf_Shdr shdr;
            if (gelf_getshdr(scn, &shdr) != nullptr && shdr.sh_type == SHT_NOTE)
                id = build_id_note(elf_getdata(scn, nullptr));
        }
        std::size_t phnum = 0;
        if (!have_sections && elf_getphdrnum(e, &phnum) == 0)
            for (std::size_t i = 0; i < phnum && !id; ++i) {
                GElf_Phdr ph;
                if (gelf_getphdr(e, static_cast<int>(i), &ph) == nullptr || ph.p_type != PT_NOTE)
                    continue;
                const Elf_Type t = ph.p_align == 8 ? ELF_T_NHDR8 : ELF_T_NHDR;
                id = build_id_note(elf_getdata_rawchunk(e, static_cast<std::int64_t>(ph.p_offset),
                                                        ph.p_filesz, t));
            }
    }
    if (e != nullptr) elf_end(e);
    ::close(fd);
    if (!is_elf) return Error(Errc::BadMagic, path + " is not a readable ELF file");
    if (!id) return Error(Errc::NotFound, path + " has no GNU build-id note");
    return std::move(*id);
}

Expected<SframeLocation> ElfFile::find_sframe() const {
    const Impl& m = *impl_;
    const std::uint64_t size = m.image.size();
    auto located = [&](const SectionInfo& s, SframeLocation::How how) -> Expected<SframeLocation> {
        if (!s.in_file)
            return m.error(Errc::Truncated,
                           "section " + s.name + " (" + std::to_string(s.size) +
                               " bytes at offset " + to_hex(s.offset) +
                               ") runs past the end of the file (" + std::to_string(size) +
                               " bytes)",
                           s.offset);
        return SframeLocation{how, s.vaddr, s.offset, s.size, s.name};
    };
    // By name first: binutils before 2.45 gave .sframe the type SHT_PROGBITS.
    for (const auto& s : m.sections)
        if (s.name == ".sframe" && (s.type == SHT_PROGBITS || s.type == sht_gnu_sframe))
            return located(s, SframeLocation::How::SectionName);
    for (const auto& s : m.sections)
        if (s.type == sht_gnu_sframe) return located(s, SframeLocation::How::SectionType);

    // The segment may be larger than the section it was made from (ld 2.40
    // pads it), so the size comes from the SFrame header: header, auxiliary
    // header, then the FDE and FRE sub-sections (spec v3 section 2.2).
    for (const auto& p : m.phdrs) {
        if (p.type != pt_gnu_sframe) continue;
        if (!fits(p.offset, p.filesz, size))
            return m.error(Errc::Truncated,
                           "PT_GNU_SFRAME segment (" + std::to_string(p.filesz) +
                               " bytes at offset " + to_hex(p.offset) +
                               ") runs past the end of the file (" + std::to_string(size) +
                               " bytes)",
                           p.offset);
        if (auto st = m.ensure(p.offset, p.filesz, "the PT_GNU_SFRAME segment"); !st)
            return std::move(st).error();
        const auto bytes = m.bytes().subspan(p.offset, p.filesz);
        auto section = sframe::Section::parse(bytes, p.vaddr);
        if (!section)
            return m.error(section.error().code(),
                           // The segment's offset is added to the section's
                           // below, so the section's own text goes without it.
                           "PT_GNU_SFRAME segment at file offset " + to_hex(p.offset) + ": " +
                               section.error().what(),
                           section.error().where() == no_offset
                               ? p.offset
                               : p.offset + section.error().where());
        return SframeLocation{SframeLocation::How::Segment, p.vaddr, p.offset, section->used_size(),
                              "PT_GNU_SFRAME"};
    }
    return m.error(Errc::NotFound,
                   m.sections.empty()
                       ? "no section headers and no PT_GNU_SFRAME program header"
                       : "no .sframe section (by name or type SHT_GNU_SFRAME) and no PT_GNU_SFRAME "
                         "program header");
}

Expected<std::span<const std::uint8_t>> ElfFile::sframe_bytes(const SframeLocation& where) const {
    auto bytes = impl_->located(where);
    if (!bytes) return bytes;
    if (auto st = impl_->ensure(where.file_offset, bytes->size(), where.name.c_str()); !st)
        return std::move(st).error();
    return bytes;
}

Status
ElfFile::scan_sframe(const SframeLocation& where,
                     const std::function<void(std::span<const std::uint8_t>)>& consume) const {
    auto bytes = impl_->located(where);
    if (!bytes) return std::move(bytes).error();
    // A small section sframe() copied is not read again.
    if (const auto copy = impl_->copy_if_made(where.file_offset, bytes->size())) {
        consume(*copy);
        return ok();
    }
    if (impl_->image.scan(where.file_offset, bytes->size(), consume)) return ok();
    return impl_->error(Errc::Io,
                        "cannot read " + where.name + " (" + std::to_string(bytes->size()) +
                            " bytes at offset " + to_hex(where.file_offset) +
                            "): " + impl_->image.last_error(),
                        where.file_offset);
}

Expected<sframe::Section> ElfFile::sframe() const {
    auto where = find_sframe();
    if (!where) return std::move(where).error();
    // Read on demand: the header and the FDE records now, an FDE's FREs
    // when it is looked up (a debugger keeps the bytes of the functions it
    // unwinds, not of the whole section); sframe_bytes() reads it whole.
    auto bytes = impl_->located(*where);
    if (!bytes) return std::move(bytes).error();
    // A small section whose page nothing has read yet is copied instead:
    // the page would cost 4 KiB of memory for its few bytes (a small
    // library's section is often under 256 bytes, and a program may load
    // hundreds of them).
    constexpr std::uint64_t copied_below = 1024;
    std::span<const std::uint8_t> copy;
    if (!bytes->empty() && bytes->size() < copied_below &&
        !impl_->image.has(where->file_offset, bytes->size()))
        copy = impl_->copy_at(where->file_offset, bytes->size());
    auto section = !copy.empty() ? sframe::Section::parse(copy, where->vaddr)
                                 : sframe::Section::parse(*bytes, where->vaddr,
                                                          &impl_->fetcher_at(where->file_offset));
    if (!section)
        // The offset stays relative to the section, as the SFrame tools print it.
        return impl_->error(section.error().code(),
                            where->name + " (file offset " + to_hex(where->file_offset) +
                                "): " + section.error().what(),
                            section.error().where());
    return section;
}

std::optional<std::span<const std::uint8_t>> ElfFile::loaded_bytes(std::uint64_t vaddr,
                                                                   std::uint64_t size) const {
    return segment_bytes(vaddr, size, false);
}

std::optional<std::span<const std::uint8_t>> ElfFile::read_only_bytes(std::uint64_t vaddr,
                                                                      std::uint64_t size) const {
    return segment_bytes(vaddr, size, true);
}

std::optional<std::span<const std::uint8_t>>
ElfFile::segment_bytes(std::uint64_t vaddr, std::uint64_t size, bool read_only) const {
    const auto image = impl_->bytes();
    for (const auto& seg : load_segments()) {
        if (read_only && (seg.flags & PF_W) != 0) continue;
        if (vaddr < seg.vaddr || vaddr - seg.vaddr > seg.filesz) continue;
        const std::uint64_t in_segment = vaddr - seg.vaddr;
        if (size > seg.filesz - in_segment) continue;
        if (!fits(seg.offset, seg.filesz, image.size())) continue;
        if (!impl_->image.ensure(seg.offset + in_segment, size)) return std::nullopt;
        return image.subspan(seg.offset + in_segment, size);
    }
    return std::nullopt;
}

const std::vector<Symbol>& ElfFile::function_symbols() const {
    std::call_once(impl_->symbols_once, [this] { impl_->read_symbols(); });
    return impl_->symbols;
}

const ExceptionCallSites& ElfFile::exception_call_sites() const {
    std::call_once(impl_->call_sites_once, [this] {
        impl_->call_sites = std::make_unique<ExceptionCallSites>(ExceptionCallSites::read(*this));
    });
    return *impl_->call_sites;
}

const Symbol* ElfFile::symbol_for(std::uint64_t addr) const {
    const auto& syms = function_symbols();
    const auto& max_last = impl_->max_last;
    auto it = std::upper_bound(syms.begin(), syms.end(), addr,
                               [](std::uint64_t a, const Symbol& s) { return a < s.value; });
    // Walk back over the symbols starting at or below addr while one of them
    // (or an earlier one) could still reach it.
    for (auto i = static_cast<std::size_t>(it - syms.begin()); i > 0 && max_last[i - 1] >= addr;
         --i) {
        const Symbol& s = syms[i - 1];
        if (addr <= last_address(s)) return &s;
    }
    return nullptr;
}

} // namespace sfunwind::elf

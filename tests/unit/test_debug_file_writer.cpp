// SPDX-License-Identifier: MIT
// elf::write_debug_file: a separate debug file, shaped as objcopy
// --only-keep-debug makes one: every section of the program with its name,
// address and size, the allocated ones SHT_NOBITS but the notes, the program
// headers with no bytes but those of the notes; plus .debug_frame, and a
// symbol for every function it is given that has none yet (a local STT_FUNC
// in the section holding it), next to the program's .symtab and .dynsym;
// and, when the program has no DWARF, a compile unit that covers no code
// (read back through libdw).
#include "catch.hpp"
#include "open_elf.hpp"
#include "sfunwind/cfi/dwarf_writer.hpp"
#include "sfunwind/elf/debug_file_writer.hpp"
#include "sfunwind/elf/elf_file.hpp"
#include "support.hpp"

#include <algorithm>
#include <dwarf.h>
#include <elfutils/libdw.h>
#include <fcntl.h>
#include <filesystem>
#include <fstream>
#include <gelf.h>
#include <unistd.h>
#include <utility>

using namespace sfunwind;

namespace {

std::string temp_path(const std::string& name) {
    return (std::filesystem::temp_directory_path() /
            ("sfunwind-dbgfile-" + std::to_string(::getpid()) + "-" + name))
        .string();
}

} // namespace

namespace {

// A file removed when the test ends, not before: an ElfFile reads its file
// as it is asked.
struct RemovedAtEnd {
    explicit RemovedAtEnd(std::string p) : path(std::move(p)) {}
    RemovedAtEnd(const RemovedAtEnd&) = delete;
    RemovedAtEnd& operator=(const RemovedAtEnd&) = delete;
    ~RemovedAtEnd() { std::remove(path.c_str()); }
    std::string path;
};

// The program's SFrame rows written as .debug_frame.
std::vector<std::uint8_t> debug_frame_of(const elf::ElfFile& program) {
    auto section = program.sframe();
    REQUIRE(section);
    auto frame = cfi::write_debug_frame(*section);
    REQUIRE(frame);
    return std::move(frame->bytes);
}

std::vector<char> file_bytes(const std::string& path, std::uint64_t offset, std::uint64_t size) {
    std::ifstream in(path, std::ios::binary);
    in.seekg(static_cast<std::streamoff>(offset));
    std::vector<char> out(size);
    in.read(out.data(), static_cast<std::streamsize>(size));
    out.resize(static_cast<std::size_t>(in.gcount()));
    return out;
}

} // namespace

TEST_CASE("write_debug_file: a separate debug file with .debug_frame and the missing symbols") {
    const auto fixture =
        (test::source_dir() / "tests/fixtures/bin/gas-2.40/plt-O2-nofp-noeh/plt").string();
    const elf::ElfFile program = test::open_elf(fixture);
    const std::vector<std::uint8_t> frame = debug_frame_of(program);
    elf::DebugFileContents contents;
    contents.debug_frame = frame;
    // One function the program names already (main), one it does not.
    const elf::Symbol* main_sym = nullptr;
    for (const auto& s : program.function_symbols())
        if (s.name == "main") main_sym = &s;
    REQUIRE(main_sym != nullptr);
    contents.functions.push_back({"already_named", main_sym->value, main_sym->size});
    contents.functions.push_back({"__sframe_fde_plt0", 0x1020, 16});
    contents.generator = "sfunwind test, version 1";
    const std::string out = temp_path("plt.debug");
    auto report = elf::write_debug_file(program, contents, out);
    if (!report) FAIL(report.error().message());
    CHECK(report->added_functions == 1);

    const RemovedAtEnd remove_out{out};
    const elf::ElfFile copy = test::open_elf(out);
    CHECK(copy.build_id() == program.build_id());
    // The code and data are not in the file: it is the size of what it adds.
    const auto program_size = std::filesystem::file_size(fixture);
    const auto copy_size = std::filesystem::file_size(out);
    CHECK(report->file_size == copy_size);
    CHECK(program_size == 16320);
    CHECK(copy_size < program_size / 2);
    // Every section of the program is there with its name, address, size and
    // flags; the allocated ones have no bytes but the notes, which are equal.
    std::size_t nobits = 0;
    std::size_t notes = 0;
    for (const auto& s : program.sections()) {
        if (s.name == ".symtab" || s.name == ".strtab" || s.name == ".shstrtab") continue;
        INFO(s.name);
        const auto* c = copy.section(s.name);
        REQUIRE(c != nullptr);
        CHECK(c->index == s.index);
        CHECK(c->vaddr == s.vaddr);
        CHECK(c->size == s.size);
        CHECK(c->flags == s.flags);
        if ((s.flags & SHF_ALLOC) == 0) continue;
        if (s.type == SHT_NOTE) {
            CHECK(c->type == SHT_NOTE);
            const auto a = program.section_bytes(s.name);
            const auto b = copy.section_bytes(s.name);
            REQUIRE(a);
            REQUIRE(b);
            CHECK(std::equal(a->begin(), a->end(), b->begin(), b->end()));
            ++notes;
        } else {
            CHECK(c->type == SHT_NOBITS);
            CHECK_FALSE(c->in_file);
            ++nobits;
        }
    }
    // The generator section, not allocated, holds the text it was given.
    const auto* generator = copy.section(elf::generator_section);
    REQUIRE(generator != nullptr);
    CHECK(generator->type == SHT_PROGBITS);
    CHECK(generator->flags == 0);
    const auto generator_bytes = copy.section_bytes(elf::generator_section);
    REQUIRE(generator_bytes);
    CHECK(std::string(generator_bytes->begin(), generator_bytes->end()) == contents.generator);
    CHECK(notes == 3);   // .note.gnu.property, .note.gnu.build-id, .note.ABI-tag
    CHECK(nobits == 23); // .interp ... .bss, .text and .sframe among them
    REQUIRE(copy.section(".text") != nullptr);
    CHECK(copy.section(".text")->type == SHT_NOBITS);
    // The program headers describe the same memory image; only the notes'
    // segments, the program header table and the first PT_LOAD's start keep
    // bytes, and they point at the same bytes as in the program.
    const auto& ph = program.program_headers();
    const auto& cph = copy.program_headers();
    REQUIRE(cph.size() == ph.size());
    std::size_t with_bytes = 0;
    std::size_t phdr = ph.size();
    for (std::size_t i = 0; i < ph.size(); ++i)
        if (ph[i].type == PT_PHDR) phdr = i;
    REQUIRE(phdr < ph.size());
    for (std::size_t i = 0; i < ph.size(); ++i) {
        INFO("program header " << i);
        CHECK(cph[i].type == ph[i].type);
        CHECK(cph[i].vaddr == ph[i].vaddr);
        CHECK(cph[i].memsz == ph[i].memsz);
        CHECK(cph[i].flags == ph[i].flags);
        if (cph[i].filesz == 0) {
            CHECK(ph[i].type != PT_NOTE);
            continue;
        }
        ++with_bytes;
        if (ph[i].type == PT_LOAD) {
            // The ELF header and the program header table, at their offsets
            // and addresses in the program: binutils (objcopy, strip) wants
            // PT_PHDR inside a PT_LOAD.
            CHECK(cph[i].offset == ph[i].offset);
            CHECK(cph[i].filesz < ph[i].filesz);
            CHECK(cph[i].offset <= cph[phdr].offset);
            CHECK(cph[phdr].offset + cph[phdr].filesz <= cph[i].offset + cph[i].filesz);
            CHECK(cph[phdr].vaddr - cph[i].vaddr == cph[phdr].offset - cph[i].offset);
            // The ELF header: the same identification, type and machine.
            CHECK(file_bytes(out, 0, 24) == file_bytes(fixture, 0, 24));
            continue;
        }
        CHECK(cph[i].filesz == ph[i].filesz);
        CHECK((ph[i].type == PT_NOTE || ph[i].type == PT_PHDR || ph[i].type == PT_GNU_PROPERTY));
        if (ph[i].type == PT_PHDR) continue; // the table itself: compared above
        CHECK(file_bytes(out, cph[i].offset, cph[i].filesz) ==
              file_bytes(fixture, ph[i].offset, ph[i].filesz));
    }
    CHECK(with_bytes == 5); // PT_PHDR, the first PT_LOAD, two PT_NOTE, PT_GNU_PROPERTY
    std::remove(out.c_str());
    const auto df = copy.section_bytes(".debug_frame");
    REQUIRE(df);
    CHECK(std::equal(df->begin(), df->end(), frame.begin(), frame.end()));
    // The new symbol is there and covers the PLT's first entry; main stays
    // named once; the program's symbols and .dynsym survive.
    const elf::Symbol* plt0 = copy.symbol_for(0x1024);
    REQUIRE(plt0 != nullptr);
    CHECK(plt0->name == "__sframe_fde_plt0");
    CHECK(plt0->size == 16);
    std::size_t mains = 0;
    std::size_t renamed = 0;
    for (const auto& s : copy.function_symbols()) {
        mains += s.name == "main" ? 1U : 0U;
        renamed += s.name == "already_named" ? 1U : 0U;
    }
    CHECK(mains == 1);
    CHECK(renamed == 0);
    CHECK(copy.function_symbols().size() == program.function_symbols().size() + 1);
}

TEST_CASE("write_debug_file: the module's code and data are not read") {
    const auto fixture = (test::source_dir() / "tests/fixtures/large/sqlite3-gas-2.47").string();
    const elf::ElfFile program = test::open_elf(fixture);
    const std::vector<std::uint8_t> frame = debug_frame_of(program);
    elf::DebugFileContents contents;
    contents.debug_frame = frame;
    const std::string out = temp_path("sqlite3.debug");
    auto report = elf::write_debug_file(program, contents, out);
    std::remove(out.c_str());
    if (!report) FAIL(report.error().message());
    // Its headers, .sframe, symbols and notes were read; .text (1.7 MB of
    // the 2.4 MB file), which the debug file has as SHT_NOBITS, was not.
    const elf::SectionInfo* text = program.section(".text");
    REQUIRE(text != nullptr);
    const auto size = std::filesystem::file_size(fixture);
    INFO("read " << program.bytes_read() << " of " << size << " bytes, .text " << text->size);
    CHECK(program.bytes_read() + text->size <= size);
}

namespace {

// What libdw finds in a file's .debug_info: each unit's version and
// producer, whether it covers any address, and its line table's size.
struct UnitSeen {
    int version = 0;
    std::string producer;
    bool has_addresses = false;
    std::size_t lines = 0;
    std::size_t files = 0;
};

std::vector<UnitSeen> units_of(const std::string& path) {
    std::vector<UnitSeen> out;
    const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
    REQUIRE(fd >= 0);
    Dwarf* dw = dwarf_begin(fd, DWARF_C_READ);
    if (dw == nullptr) {
        ::close(fd);
        FAIL(std::string("dwarf_begin: ") + dwarf_errmsg(-1));
    }
    Dwarf_Off off = 0;
    Dwarf_Off next = 0;
    std::size_t header_size = 0;
    Dwarf_Half version = 0;
    while (dwarf_next_unit(dw, off, &next, &header_size, &version, nullptr, nullptr, nullptr,
                           nullptr, nullptr) == 0) {
        Dwarf_Die die;
        if (dwarf_offdie(dw, off + header_size, &die) == nullptr) break;
        UnitSeen u;
        u.version = version;
        Dwarf_Attribute attr;
        if (const char* p = dwarf_formstring(dwarf_attr(&die, DW_AT_producer, &attr)))
            u.producer = p;
        u.has_addresses =
            dwarf_hasattr(&die, DW_AT_low_pc) != 0 || dwarf_hasattr(&die, DW_AT_ranges) != 0;
        Dwarf_Lines* lines = nullptr;
        std::size_t n = 0;
        if (dwarf_getsrclines(&die, &lines, &n) == 0) u.lines = n;
        Dwarf_Files* files = nullptr;
        if (dwarf_getsrcfiles(&die, &files, &n) == 0) u.files = n;
        out.push_back(u);
        off = next;
    }
    dwarf_end(dw);
    ::close(fd);
    return out;
}

// The debug file of a fixture: its SFrame rows as .debug_frame.
std::string write_fixture_debug_file(const std::string& rel, const std::string& out,
                                     elf::DebugFileReport& report,
                                     std::size_t compile_unit_min_symbols = 0) {
    auto fixture = (test::source_dir() / "tests/fixtures/bin" / rel).string();
    const elf::ElfFile program = test::open_elf(fixture);
    const std::vector<std::uint8_t> frame = debug_frame_of(program);
    elf::DebugFileContents contents;
    contents.debug_frame = frame;
    contents.generator = "sfunwind test, version 2";
    contents.compile_unit_min_symbols = compile_unit_min_symbols;
    auto written = elf::write_debug_file(program, contents, out);
    if (!written) FAIL(written.error().message());
    report = *written;
    return fixture;
}

} // namespace

TEST_CASE("write_debug_file: a program without DWARF gets one compile unit that covers no code") {
    // x86-64 and s390x: the unit's fields are in the file's byte order.
    for (const char* rel :
         {"gas-2.40/plt-O2-nofp-noeh/plt", "gas-2.47-s390x/recurse-O2-nofp-static"}) {
        INFO(rel);
        const std::string out = temp_path("cu.debug");
        elf::DebugFileReport report;
        write_fixture_debug_file(rel, out, report);
        const RemovedAtEnd remove_out{out};
        CHECK(report.compile_unit_added);
        const auto units = units_of(out);
        REQUIRE(units.size() == 1);
        CHECK(units[0].version == 4);
        CHECK(units[0].producer == "sfunwind test, version 2");
        CHECK_FALSE(units[0].has_addresses);
        CHECK(units[0].lines == 0);
        CHECK(units[0].files <= 1); // libdw counts the unit's own (unnamed) file
        // Its sections are not loaded, and .debug_frame is still there.
        const elf::ElfFile copy = test::open_elf(out);
        for (const char* name : {".debug_abbrev", ".debug_info", ".debug_line", ".debug_frame"}) {
            INFO(name);
            const auto* s = copy.section(name);
            REQUIRE(s != nullptr);
            CHECK(s->type == SHT_PROGBITS);
            CHECK(s->flags == 0);
        }
    }
}

TEST_CASE("write_debug_file: the compile unit only where the symbols reach the minimum") {
    const char* rel = "gas-2.40/plt-O2-nofp-noeh/plt";
    const std::string out = temp_path("min.debug");
    const RemovedAtEnd remove_out{out};
    elf::DebugFileReport report;
    write_fixture_debug_file(rel, out, report);
    const std::size_t symbols = report.symbols;
    REQUIRE(symbols > 1);
    // One symbol short of the minimum: no unit, and no DWARF section at all.
    write_fixture_debug_file(rel, out, report, symbols + 1);
    CHECK(report.symbols == symbols);
    CHECK_FALSE(report.compile_unit_added);
    {
        const elf::ElfFile copy = test::open_elf(out);
        for (const char* name : {".debug_abbrev", ".debug_info", ".debug_line"}) {
            INFO(name);
            CHECK(copy.section(name) == nullptr);
        }
        CHECK(copy.section(".debug_frame") != nullptr);
    }
    // At the minimum: the unit.
    write_fixture_debug_file(rel, out, report, symbols);
    CHECK(report.compile_unit_added);
    CHECK(units_of(out).size() == 1);
}

TEST_CASE("write_debug_file: a program's own DWARF is kept, with no compile unit added") {
    const std::string out = temp_path("g.debug");
    elf::DebugFileReport report;
    const std::string fixture = write_fixture_debug_file("gas-2.40/recurse-O2-nofp-g", out, report);
    const RemovedAtEnd remove_out{out};
    CHECK_FALSE(report.compile_unit_added);
    const auto own = units_of(fixture);
    const auto copy = units_of(out);
    REQUIRE(!own.empty());
    REQUIRE(copy.size() == own.size());
    for (std::size_t i = 0; i < own.size(); ++i) {
        CHECK(copy[i].producer == own[i].producer);
        CHECK(copy[i].lines == own[i].lines);
        CHECK(copy[i].has_addresses);
    }
    const elf::ElfFile program = test::open_elf(fixture);
    const elf::ElfFile written = test::open_elf(out);
    const auto a = program.section_bytes(".debug_info");
    const auto b = written.section_bytes(".debug_info");
    REQUIRE(a);
    REQUIRE(b);
    CHECK(std::equal(a->begin(), a->end(), b->begin(), b->end()));
}

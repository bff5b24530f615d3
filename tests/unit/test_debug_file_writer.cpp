// SPDX-License-Identifier: MIT
// elf::write_debug_file: the copy keeps every section of the program where it
// was, adds .debug_frame, and names every function it is given that has no
// symbol yet (a local STT_FUNC in the section holding it), next to the
// program's own .symtab and .dynsym entries.
#include "catch.hpp"
#include "open_elf.hpp"
#include "sfunwind/cfi/dwarf_writer.hpp"
#include "sfunwind/elf/debug_file_writer.hpp"
#include "sfunwind/elf/elf_file.hpp"
#include "support.hpp"

#include <algorithm>
#include <gelf.h>
#include <unistd.h>

using namespace sfunwind;

namespace {

std::string temp_path(const std::string& name) {
    return (std::filesystem::temp_directory_path() /
            ("sfunwind-dbgfile-" + std::to_string(::getpid()) + "-" + name))
        .string();
}

} // namespace

TEST_CASE("write_debug_file: a copy with .debug_frame and the missing function symbols") {
    const auto fixture =
        (test::source_dir() / "tests/fixtures/bin/gas-2.40/plt-O2-nofp-noeh/plt").string();
    const elf::ElfFile program = test::open_elf(fixture);
    auto section = program.sframe();
    REQUIRE(section);
    auto frame = cfi::write_debug_frame(*section);
    REQUIRE(frame);
    elf::DebugFileContents contents;
    contents.debug_frame = frame->bytes;
    // One function the program names already (main), one it does not.
    const elf::Symbol* main_sym = nullptr;
    for (const auto& s : program.function_symbols())
        if (s.name == "main") main_sym = &s;
    REQUIRE(main_sym != nullptr);
    contents.functions.push_back({"already_named", main_sym->value, main_sym->size});
    contents.functions.push_back({"__sframe_fde_plt0", 0x1020, 16});
    const std::string out = temp_path("plt.debug");
    auto report = elf::write_debug_file(program, contents, out);
    if (!report) FAIL(report.error().message());
    CHECK(report->added_functions == 1);

    // Removed at the end, not now: an ElfFile reads its file as it is asked.
    const struct RemoveAtEnd {
        std::string path;
        ~RemoveAtEnd() { std::remove(path.c_str()); }
    } remove_out{out};
    const elf::ElfFile copy = test::open_elf(out);
    CHECK(copy.build_id() == program.build_id());
    CHECK(copy.program_headers().size() == program.program_headers().size());
    // Every allocated section is where it was, with the same bytes.
    std::size_t compared = 0;
    for (const auto& s : program.sections()) {
        if ((s.flags & SHF_ALLOC) == 0 || !s.in_file || s.size == 0) continue;
        const auto* c = copy.section(s.name);
        REQUIRE(c != nullptr);
        CHECK(c->offset == s.offset);
        CHECK(c->vaddr == s.vaddr);
        const auto a = program.section_bytes(s.name);
        const auto b = copy.section_bytes(s.name);
        REQUIRE(a);
        REQUIRE(b);
        CHECK(std::equal(a->begin(), a->end(), b->begin(), b->end()));
        ++compared;
    }
    CHECK(compared > 15);
    const auto df = copy.section_bytes(".debug_frame");
    REQUIRE(df);
    CHECK(std::equal(df->begin(), df->end(), frame->bytes.begin(), frame->bytes.end()));
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

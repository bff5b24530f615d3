// SPDX-License-Identifier: MIT
// Regression cases from the fuzz targets (fuzz/, issue 7). Each defect a
// target found, with what the fixed core does instead. Where the fuzzer's own
// input fits a unit test it is kept as it was saved, in data/fuzz/; the
// others are rebuilt from the fixtures with the one property that failed.
#include "catch.hpp"
#include "sfunwind/callee_saved/function_rules.hpp"
#include "sfunwind/cfi/cfi_table.hpp"
#include "sfunwind/convert/from_cfi.hpp"
#include "sfunwind/elf/elf_file.hpp"
#include "sfunwind/ppc64/index.hpp"
#include "sfunwind/sframe/section.hpp"
#include "sfunwind/sframe/validate.hpp"
#include "sfunwind/unwind/window.hpp"
#include "support.hpp"

#include <algorithm>
#include <cstdint>
#include <limits>
#include <string>
#include <vector>

using namespace sfunwind;

namespace {

// The address fuzz_section and fuzz_lookup give every section they parse.
constexpr std::uint64_t fuzz_vaddr = 0x4010e8;

std::vector<std::uint8_t> fuzz_input(const std::string& name) {
    const auto path = test::source_dir() / "tests/unit/data/fuzz" / name;
    auto bytes = test::read_bytes(path);
    if (bytes.empty()) FAIL("missing fuzz input " << path.string());
    return bytes;
}

elf::ElfFile open_fixture(const std::string& rel) {
    auto f = elf::ElfFile::open((test::source_dir() / "tests/fixtures" / rel).string());
    if (!f) FAIL(f.error().message());
    return std::move(*f);
}

bool contains(const std::string& text, const std::string& part) {
    return text.find(part) != std::string::npos;
}

} // namespace

// fuzz_section, UBSan: rules.hpp multiplied an s390x CFA data word by 8 in
// 32-bit arithmetic (SFRAME_V2_S390X_CFA_OFFSET_DECODE), signed overflow for
// a 4-byte word beyond +-2^28. The input is a v3 s390x section whose FREs
// were mutated to 4-byte data words.
TEST_CASE("fuzz regression: an s390x CFA word that overflows once scaled is a malformed FRE",
          "[fuzz]") {
    const auto bytes = fuzz_input("section-s390x-cfa-overflow.bin");
    auto s = sframe::Section::parse(bytes, fuzz_vaddr);
    REQUIRE(s);
    REQUIRE(s->abi().arch == Arch::S390x);

    std::size_t overflowing = 0;
    for (std::uint32_t i = 0; i < s->fde_count(); ++i) {
        auto fde = s->fde(i);
        if (!fde) continue;
        std::uint64_t at = fde->fres_begin;
        for (std::uint32_t k = 0; k < fde->num_fres; ++k) {
            auto fre = s->fre_at(*fde, at);
            if (!fre) break;
            at += fre->size;
            if (fre->word_count == 0) continue;
            const std::int64_t wide = std::int64_t{fre->words[0]} * 8 + 160;
            auto row = s->row(*fde, *fre, k, fde->size);
            if (wide >= std::numeric_limits<std::int32_t>::min() &&
                wide <= std::numeric_limits<std::int32_t>::max())
                continue;
            ++overflowing;
            REQUIRE_FALSE(row);
            CHECK(row.error().code() == Errc::Malformed);
            CHECK(row.error().where() == fre->offset);
            CHECK(contains(row.error().what(), "beyond a 32-bit offset"));
        }
    }
    CHECK(overflowing > 0);
    const auto problems = sframe::validate(*s);
    CHECK(std::any_of(problems.begin(), problems.end(), [](const sframe::Problem& p) {
        return contains(p.message, "beyond a 32-bit offset");
    }));
}

// fuzz_lookup, property "the row covers the PC": FDE 0 starts at
// 0xffffffffffffffd8 (16 bytes) and its second FRE claims start 0x803. The
// row of the first FRE ended at fde.start + 0x803, which wrapped around to
// 0x7db, below the PC. A row now ends at the function's end at the latest.
TEST_CASE(
    "fuzz regression: a row ends inside its function, however far the next FRE claims to start",
    "[fuzz]") {
    const auto bytes = fuzz_input("lookup-row-wraps.bin");
    auto s = sframe::Section::parse(bytes, fuzz_vaddr);
    REQUIRE(s);
    auto fde = s->fde(0);
    REQUIRE(fde);
    REQUIRE(fde->start == 0xffffffffffffffd8ULL);
    REQUIRE(fde->size == 16);

    auto row = s->lookup(fde->start);
    REQUIRE(row);
    CHECK(row->fre_index == 0);
    CHECK(row->pc_begin == fde->start);
    CHECK(row->pc_end == fde->start + 16); // not 0x7db
    CHECK(row->outermost);

    // Every PC of the function: covered by its row, which stays inside.
    for (std::uint64_t pc = fde->start; pc < fde->end(); ++pc) {
        auto r = s->lookup(pc);
        REQUIRE(r);
        CHECK(r->pc_begin <= pc);
        CHECK(pc < r->pc_end);
        CHECK(r->pc_end <= fde->end());
    }
}

// fuzz_tbtab, property "the row covers the PC": with no section headers (so
// no symbols) and a table without tb_offset, the function start is unknown;
// a lookup at the table's own zero word gave the row [zero word, zero word),
// which covers nothing. The crashing input was such a file; the ppc64
// fixtures with their section headers cut off have hundreds of such tables.
TEST_CASE("fuzz regression: the traceback table's zero word has no row", "[fuzz]") {
    auto full = open_fixture("ppc64/bin/ppc64le/tbtab-O2-part-static");
    std::vector<std::uint8_t> image(full.image().begin(), full.image().end());
    // e_shoff, e_shnum, e_shstrndx (ELF64 header offsets 0x28, 0x3c, 0x3e).
    std::fill(image.begin() + 0x28, image.begin() + 0x30, std::uint8_t{0});
    std::fill(image.begin() + 0x3c, image.begin() + 0x40, std::uint8_t{0});
    auto file = elf::ElfFile::from_bytes(image, "tbtab-O2-part-static without section headers");
    REQUIRE(file);
    REQUIRE(file->sections().empty());
    auto index = ppc64::TracebackIndex::build(*file);
    REQUIRE(index);

    std::size_t without_start = 0;
    for (const auto& found : index->by_scan().tables) {
        if (found.function_start) continue;
        ++without_start;
        auto at_table = index->lookup(found.table.address);
        REQUIRE_FALSE(at_table);
        CHECK(at_table.error().code() == Errc::NotFound);
        CHECK(contains(at_table.error().what(), "zero word"));
        // The word before it is code, with a row that covers it.
        auto before = index->lookup(found.table.address - 4);
        if (before) {
            CHECK(before->pc_begin <= found.table.address - 4);
            CHECK(before->pc_end == found.table.address);
        }
    }
    CHECK(without_start > 100);
}

// fuzz_convert timed out in the x86-64 PLT probe, which steps libdwfl over
// every byte of the PLT FDE's range. That input's cost was libdw's (see
// fuzz/fuzz_convert.cpp), but it showed that the range was never bounded: a
// .plt FDE whose address_range claims 256 MiB was probed byte by byte past
// the PLT, one libdwfl unwind per byte, until libdwfl failed (here at the end
// of the mapped code; a file whose segments map more goes on for that
// long). The FDE must now lie inside the PLT section it starts in.
TEST_CASE("fuzz regression: the PLT probe stays inside the PLT section", "[fuzz]") {
    auto plain = open_fixture("bin/gas-2.40/plt-O2-nofp/plt");
    const elf::SectionInfo* plt = plain.section(".plt");
    const elf::SectionInfo* eh = plain.section(".eh_frame");
    REQUIRE(plt != nullptr);
    REQUIRE(eh != nullptr);
    auto converted = convert::from_cfi(plain);
    REQUIRE(converted);
    REQUIRE(converted->pc_mask == 1); // the probe path is the one under test

    auto table = cfi::CfiTable::open(plain, cfi::Source::EhFrame);
    REQUIRE(table);
    const auto& fdes = table->fdes();
    auto it = std::find_if(fdes.begin(), fdes.end(),
                           [&](const cfi::FdeRange& f) { return f.begin == plt->vaddr; });
    REQUIRE(it != fdes.end());
    REQUIRE(it->end - it->begin == plt->size);

    // The FDE's address_range: length, CIE pointer, then initial_location
    // and address_range as 4-byte fields (the CIE's "zR" encoding 0x1b,
    // DW_EH_PE_pcrel | DW_EH_PE_sdata4; the range is not PC-relative).
    std::vector<std::uint8_t> image(plain.image().begin(), plain.image().end());
    const std::uint64_t field = eh->offset + it->offset + 12;
    const std::uint32_t old_range =
        std::uint32_t{image[field]} | std::uint32_t{image[field + 1]} << 8U |
        std::uint32_t{image[field + 2]} << 16U | std::uint32_t{image[field + 3]} << 24U;
    REQUIRE(old_range == plt->size);
    const std::uint32_t huge = 0x10000000U + static_cast<std::uint32_t>(plt->size);
    for (unsigned i = 0; i < 4; ++i)
        image[field + i] = static_cast<std::uint8_t>(huge >> (8U * i));
    auto damaged = elf::ElfFile::from_bytes(image, "plt with a 256 MiB .plt FDE");
    REQUIRE(damaged);

    auto r = convert::from_cfi(*damaged);
    REQUIRE(r);
    CHECK(r->pc_mask == 0);
    auto skipped = std::find_if(r->skipped.begin(), r->skipped.end(),
                                [&](const convert::Skipped& s) { return s.begin == plt->vaddr; });
    REQUIRE(skipped != r->skipped.end());
    CHECK(skipped->end == plt->vaddr + huge);
    CHECK(contains(skipped->reason, "is not inside .plt"));
}

// fuzz_step's window property: plan_reads() put the span between the RA and
// FP slots into ReadWindow's 32-bit size unchecked, so slots 4 GiB apart
// (4-byte data words of opposite extremes) gave a 7-byte window that held
// neither. The RA's slot is now planned alone and the FP's read falls back.
TEST_CASE("fuzz regression: slots too far apart for one window plan the RA's alone", "[fuzz]") {
    constexpr std::int32_t lowest = std::numeric_limits<std::int32_t>::min();
    constexpr std::int32_t highest = std::numeric_limits<std::int32_t>::max();
    Row r;
    r.cfa = CfaRule{31, 16, false};
    r.ra = RegRule::at_cfa(lowest);
    r.fp = RegRule::at_cfa(highest);
    const ReadWindow w = plan_reads(r);
    CHECK(w.base_reg == 31);
    CHECK(w.offset == std::int64_t{16} + lowest);
    CHECK(w.size == 8);

    // The widest span that fits is still planned whole.
    r.fp = RegRule::at_cfa(highest - 8);
    const ReadWindow both = plan_reads(r);
    CHECK(both.offset == std::int64_t{16} + lowest);
    CHECK(both.size == std::numeric_limits<std::uint32_t>::max());
}

// fuzz_elf, "symbol_for() finds a symbol's own start": a mutated .symtab
// held a function symbol at 0xffffffffffffffff (size 2^64-1). Its end,
// value + size, wrapped; the running maximum saturated at 2^64-1, and the
// search asked for a maximum *above* the address, so the symbol was never
// found. The search now keeps the last address covered, inclusive.
TEST_CASE("fuzz regression: a symbol at the top of the address space is found", "[fuzz]") {
    const auto bytes = fuzz_input("elf-symbol-at-top.bin");
    auto f = elf::ElfFile::from_bytes(bytes, "fuzz");
    REQUIRE(f);
    const auto& symbols = f->function_symbols();
    REQUIRE(!symbols.empty());
    const auto top = std::find_if(symbols.begin(), symbols.end(), [](const elf::Symbol& s) {
        return s.value == std::numeric_limits<std::uint64_t>::max();
    });
    REQUIRE(top != symbols.end());
    const elf::Symbol* hit = f->symbol_for(top->value);
    REQUIRE(hit != nullptr);
    CHECK(hit->value == top->value);
    for (const auto& s : symbols) {
        INFO(s.name << " at " << s.value);
        const elf::Symbol* own = f->symbol_for(s.value);
        REQUIRE(own != nullptr);
        // The symbol found starts at this address (several may share one).
        CHECK(own->value == s.value);
    }
}

// fuzz_callee_saved, UBSan: the branch targets a switch's indirect jump is
// met into were listed only when the first pass had reached such a jump,
// and code first reached from the body's state (a seed) held one: the
// list was read empty. The input is the fuzzer's (its format:
// fuzz/fuzz_callee_saved.cpp); the analysis must finish, under the
// sanitizers too.
TEST_CASE("fuzz regression: an indirect jump first reached from a seed", "[fuzz]") {
    const auto data = fuzz_input("callee-saved-late-indirect-jump.bin");
    REQUIRE(data.size() > 1);
    const std::size_t count = data[0] % 17;
    const Abi* abis[] = {&abi_amd64(), &abi_aarch64(ByteOrder::Little),
                         &abi_aarch64(ByteOrder::Big), &abi_s390x()};
    const Abi& abi = *abis[(data[0] / 17) % 4];
    constexpr std::uint64_t code_vaddr = 0x401000;
    std::vector<std::pair<std::uint64_t, std::int32_t>> rows;
    std::size_t at = 1;
    for (std::size_t i = 0; i < count && at + 3 <= data.size(); ++i, at += 3)
        rows.emplace_back(code_vaddr + static_cast<std::uint64_t>(data[at] | (data[at + 1] << 8)),
                          static_cast<std::int8_t>(data[at + 2]) * 8);
    std::sort(rows.begin(), rows.end());
    const std::span<const std::uint8_t> code(data.data() + std::min(at, data.size()),
                                             data.size() - std::min(at, data.size()));
    const callee_saved::RowAt row_at = [&](std::uint64_t pc) -> std::optional<Row> {
        const std::pair<std::uint64_t, std::int32_t>* hit = nullptr;
        for (const auto& r : rows)
            if (r.first <= pc) hit = &r;
        if (hit == nullptr || pc >= code_vaddr + code.size()) return std::nullopt;
        Row row;
        row.pc_begin = hit->first;
        row.pc_end = pc + 1;
        row.cfa = CfaRule{abi.sp_reg, hit->second, false};
        if (abi.fixed_ra_offset != 0) row.ra = RegRule::at_cfa(abi.fixed_ra_offset);
        return row;
    };
    const auto f = callee_saved::FunctionRules::analyse(abi, code_vaddr, code, row_at);
    if (!f) CHECK(f.error().code() == Errc::Unsupported);
    if (f) CHECK(f->stats().unreached > 0);
}

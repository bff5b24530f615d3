// SPDX-License-Identifier: MIT
// Section::lookup takes shortcuts (a page index over the FDE starts, the FDE
// read without messages, FREs skipped by start and info byte, the chosen
// FRE's words read straight into the rules). Here it is held to a plain
// reference built from the public one-at-a-time API (fde(), fre_at(),
// row()): for every PC tried, in every shared test vector, every fixture
// program and the large SQLite sections, both give the same row or both
// fail with the same error code. The same holds for the vectors with every
// bit of their FDE and FRE bytes flipped, where the shortcuts' own checks
// must give up exactly where the full decoder does.
#include "catch.hpp"
#include "sfunwind/elf/elf_file.hpp"
#include "sfunwind/sframe/section.hpp"
#include "sfunwind/sframe/validate.hpp"
#include "shuffled_copy.hpp"
#include "support.hpp"
#include "synthetic_section.hpp"
#include "vectors.hpp"

#include <algorithm>
#include <iterator>
#include <optional>
#include <random>
#include <sstream>

using namespace sfunwind;
using namespace sfunwind::sframe;
namespace fs = std::filesystem;

namespace {

// Every FDE's (start, index), the start read from its start field (spec v2
// erratum 1: relative to the field itself when the section says so), sorted
// by start and then by index.
std::vector<std::pair<std::uint64_t, std::uint32_t>> fde_starts(const Section& s) {
    const unsigned stride = s.version() == Version::V3   ? 16U
                            : s.version() == Version::V2 ? 20U
                                                         : 17U;
    std::vector<std::pair<std::uint64_t, std::uint32_t>> out;
    for (std::uint32_t i = 0; i < s.fde_count(); ++i) {
        const auto at = s.fde_subsection() + std::uint64_t{i} * stride;
        std::int64_t field = 0;
        std::int32_t narrow = 0;
        const bool read =
            s.version() == Version::V3 ? s.view().load(at, field) : s.view().load(at, narrow);
        if (!read) return {}; // parse() checked that every record fits
        if (s.version() != Version::V3) field = narrow;
        out.emplace_back((s.header().pcrel() ? s.vaddr() + at : s.vaddr()) +
                             static_cast<std::uint64_t>(field),
                         i);
    }
    std::sort(out.begin(), out.end());
    return out;
}

// The row for pc, the slow way: the last FDE (in start order, section order
// breaking ties) whose start is <= pc, read whole; its FREs read one by one
// up to the first whose start is past the PC's offset (that one is read as
// far as its start and info byte: its data words do not matter).
Expected<Row> reference(const Section& s,
                        const std::vector<std::pair<std::uint64_t, std::uint32_t>>& starts,
                        std::uint64_t pc) {
    const auto after =
        std::upper_bound(starts.begin(), starts.end(), std::pair{pc, ~std::uint32_t{0}});
    const std::optional<std::uint32_t> best =
        after == starts.begin() ? std::nullopt
                                : std::optional<std::uint32_t>(std::prev(after)->second);
    if (!best) return Error(Errc::NotFound, "no FDE");
    // A row ends where the next FDE in start order begins, if an overlapping
    // one begins inside it (Row: every PC of its range gets it).
    const std::uint64_t next_fde = after == starts.end() ? ~std::uint64_t{0} : after->first;
    auto fde = s.fde(*best);
    if (!fde) return std::move(fde).error();
    if (pc >= fde->end()) return Error(Errc::NotFound, "past the FDE");
    std::uint64_t offset = pc - fde->start;
    std::uint64_t block = 0;
    const bool mask = fde->pc_type == PcType::Mask;
    if (mask && fde->num_fres > 0) {
        if (fde->rep_size == 0) return Error(Errc::Unsupported, "no repeat size");
        block = offset - offset % fde->rep_size;
        offset %= fde->rep_size;
    }
    if (fde->num_fres == 0) {
        if (s.version() == Version::V3 && fde->fde_type == FdeType::Default) {
            Row row;
            row.func_start = fde->start;
            row.func_size = fde->size;
            row.fde_index = fde->index;
            row.pc_begin = fde->start;
            row.pc_end = std::min(fde->end(), next_fde);
            row.signal_frame = fde->signal;
            row.ra = RegRule::undefined();
            row.outermost = true;
            return row;
        }
        return Error(Errc::NotFound, "no FREs");
    }
    std::optional<Fre> chosen;
    std::uint32_t chosen_index = 0;
    const std::uint64_t limit = mask ? fde->rep_size : fde->size;
    std::uint64_t next = limit;
    std::uint64_t at = fde->fres_begin;
    const unsigned width = 1U << static_cast<unsigned>(fde->fre_type);
    for (std::uint32_t k = 0; k < fde->num_fres; ++k) {
        std::uint32_t start = 0;
        std::uint8_t info = 0;
        const bool head = at + width + 1 <= s.fre_subsection() + s.header().fre_len &&
                          s.view().load_sized(at, width, start) &&
                          s.view().load(at + width, info) && ((info >> 5U) & 3U) != 3U;
        if (head && start > offset) {
            next = std::min<std::uint64_t>(start, limit);
            break;
        }
        auto fre = s.fre_at(*fde, at);
        if (!fre) return std::move(fre).error();
        if (fre->start > offset) {
            next = std::min<std::uint64_t>(fre->start, limit);
            break;
        }
        chosen = *fre;
        chosen_index = k;
        at += fre->size;
    }
    if (!chosen) return Error(Errc::NotFound, "no FRE");
    auto row = s.row(*fde, *chosen, chosen_index, next);
    if (!row) return row;
    row->pc_begin += block;
    row->pc_end = std::min(fde->start + std::min<std::uint64_t>(block + next, fde->size), next_fde);
    return row;
}

// PCs worth trying: around every FDE and FRE boundary (at each boundary
// only, when not `dense`), and random ones across the covered range and a
// little beyond.
std::vector<std::uint64_t> probe_pcs(const Section& s, std::size_t random_count,
                                     bool dense = true) {
    std::vector<std::uint64_t> pcs{0, s.vaddr(), ~std::uint64_t{0}};
    std::uint64_t lo = ~std::uint64_t{0};
    std::uint64_t hi = 0;
    for (std::uint32_t i = 0; i < s.fde_count(); ++i) {
        auto f = s.fde(i);
        if (!f) continue;
        lo = std::min(lo, f->start);
        hi = std::max(hi, f->end());
        pcs.insert(pcs.end(), {f->start, f->end() - 1, f->end(), f->start + f->size / 2});
        if (dense) pcs.insert(pcs.end(), {f->start - 1, f->start + 1, f->end() + 1});
        auto fres = s.fres(*f);
        if (!fres) continue;
        for (const auto& fre : *fres) {
            pcs.push_back(f->start + fre.start);
            if (dense) pcs.insert(pcs.end(), {f->start + fre.start - 1, f->start + fre.start + 1});
        }
    }
    if (lo < hi) {
        std::mt19937_64 rng(7);
        std::uniform_int_distribution<std::uint64_t> any(lo - std::min<std::uint64_t>(lo, 64),
                                                         hi + 64);
        for (std::size_t n = 0; n < random_count; ++n)
            pcs.push_back(any(rng));
    }
    return pcs;
}

// Returns how many PCs disagreed; the first few are reported.
std::size_t disagreements(const Section& s, const std::vector<std::uint64_t>& pcs,
                          const std::string& label) {
    const auto starts = fde_starts(s);
    REQUIRE(starts.size() == s.fde_count());
    std::size_t bad = 0;
    for (const std::uint64_t pc : pcs) {
        auto got = s.lookup(pc);
        auto want = reference(s, starts, pc);
        bool same = got.has_value() == want.has_value() &&
                    (got ? *got == *want : got.error().code() == want.error().code());
        // The row holds from the PC to the end of its range (Row;
        // callee_saved::RowAt asks once per row): its last PC gets it too.
        if (same && got && pc < got->pc_end) {
            auto last = s.lookup(got->pc_end - 1);
            same = last && *last == *got;
        }
        if (same) continue;
        if (++bad <= 3) {
            std::ostringstream what;
            what << label << ": PC 0x" << std::hex << pc << ": lookup "
                 << (got ? describe(*got, s.abi()) : got.error().message()) << ", reference "
                 << (want ? describe(*want, s.abi()) : want.error().message());
            FAIL_CHECK(what.str());
        }
    }
    return bad;
}

} // namespace

TEST_CASE("lookup agrees with the one-at-a-time reference on every test vector",
          "[lookup][vectors]") {
    const auto vectors = test::load_vectors();
    REQUIRE(vectors.size() > 10);
    std::size_t pcs_tried = 0;
    for (const auto& v : vectors) {
        auto s = Section::parse(v.bytes, v.base);
        if (!s) continue;
        const auto pcs = probe_pcs(*s, 200);
        pcs_tried += pcs.size();
        CHECK(disagreements(*s, pcs, v.name) == 0);
    }
    CHECK(pcs_tried > 1000);
}

TEST_CASE("lookup agrees with the reference on every fixture and the large sections",
          "[lookup][fixtures]") {
    std::vector<fs::path> files;
    std::istringstream manifest(
        test::read_text(test::source_dir() / "tests/fixtures/manifest.tsv"));
    for (std::string line; std::getline(manifest, line);)
        if (!line.empty() && line[0] != '#')
            files.push_back(test::source_dir() / "tests/fixtures" /
                            line.substr(0, line.find('\t')));
    for (const char* large : {"sqlite3-gas-2.47", "sqlite3-clang-23"})
        files.push_back(test::source_dir() / "tests/fixtures/large" / large);
    REQUIRE(files.size() > 50);
    std::size_t sections = 0;
    std::size_t paged = 0;
    for (const auto& path : files) {
        auto file = elf::ElfFile::open(path.string());
        REQUIRE(file.has_value());
        auto s = file->sframe();
        if (!s) continue;
        ++sections;
        // The large sections have thousands of FDEs: the page index is in
        // use, in place (gas) and over the FDE order index (clang, unsorted).
        if (s->fde_count() >= 64) {
            ++paged;
            CHECK(s->extra_memory() > 0);
        }
        CHECK(disagreements(*s, probe_pcs(*s, 2000), path.filename().string()) == 0);
    }
    CHECK(sections > 50);
    CHECK(paged >= 2);
}

TEST_CASE("an unsorted v3 section gives the rows of the sorted one", "[lookup]") {
    // SQLite's v3 section (gas 2.47) written again with its FDEs in random
    // order (bench/shuffled_copy.cpp): searched through the FDE order
    // index, by the quick path as well as the general one.
    auto file =
        elf::ElfFile::open((test::source_dir() / "tests/fixtures/large/sqlite3-gas-2.47").string());
    REQUIRE(file.has_value());
    auto sorted = file->sframe();
    REQUIRE(sorted);
    REQUIRE(sorted->version() == Version::V3);
    auto bytes = bench::shuffled_copy(*sorted, 20261126);
    REQUIRE(bytes);
    auto shuffled = Section::parse(*bytes, sorted->vaddr());
    REQUIRE(shuffled);
    REQUIRE_FALSE(shuffled->searches_in_place());
    const auto pcs = probe_pcs(*sorted, 4000);
    CHECK(disagreements(*shuffled, pcs, "shuffled sqlite3-gas-2.47") == 0);
    std::size_t differ = 0;
    for (const std::uint64_t pc : pcs) {
        auto want = sorted->lookup(pc);
        auto got = shuffled->lookup(pc);
        REQUIRE(want.has_value() == got.has_value());
        if (!want) continue;
        got->fde_index = want->fde_index; // the FDE's position is what changed
        if (!(*want == *got)) ++differ;
    }
    CHECK(differ == 0);
}

TEST_CASE("lookup agrees with the reference when any FDE or FRE bit is flipped",
          "[lookup][malformed]") {
    std::size_t mutants = 0;
    for (const auto& v : test::load_vectors()) {
        auto clean = Section::parse(v.bytes, v.base);
        if (!clean) continue;
        const auto pcs = probe_pcs(*clean, 0, /*dense=*/false);
        // The FDE and FRE sub-sections: what the lookup shortcuts read.
        const std::size_t from = std::min<std::size_t>(clean->fde_subsection(), v.bytes.size());
        for (std::size_t byte = from; byte < v.bytes.size(); ++byte) {
            for (unsigned bit = 0; bit < 8; ++bit) {
                auto bytes = v.bytes;
                bytes[byte] = static_cast<std::uint8_t>(bytes[byte] ^ (1U << bit));
                auto s = Section::parse(bytes, v.base);
                if (!s) continue;
                ++mutants;
                const std::string label =
                    v.name + " byte " + std::to_string(byte) + " bit " + std::to_string(bit);
                if (disagreements(*s, pcs, label) != 0) return; // one report per run is enough
            }
        }
    }
    CHECK(mutants > 1000);
}

TEST_CASE("a synthetic section of a big program's size agrees with the reference", "[lookup]") {
    // bench/synthetic_section.cpp: the section the benchmarks time at the
    // size of the biggest programs, here at 40,000 functions (pages of the
    // page index with many FDEs). It must be a valid section, the same for
    // the same seed, and looked up as the one-at-a-time API reads it.
    auto made = bench::synthetic_section(40000, 7);
    REQUIRE(made);
    auto again = bench::synthetic_section(40000, 7);
    REQUIRE(again);
    CHECK(made->bytes == again->bytes);
    // Made from the engine's raw output alone: these bytes with any compiler
    // and standard library (the benchmarks make it on the host and in the
    // sid chroot). Pinned, as a change of the generator changes the figures.
    CHECK(made->bytes.size() == 2021331); // g++ 12 (host) and gcc 16 (sid) alike
    CHECK(bench::synthetic_section(0, 7).has_value() == false);
    CHECK(bench::synthetic_section(bench::max_synthetic_functions + 1, 7).has_value() == false);
    auto s = Section::parse(made->bytes, made->vaddr);
    REQUIRE(s);
    CHECK(s->version() == Version::V3);
    CHECK(s->header().sorted());
    CHECK(s->fde_count() == 40000);
    CHECK(s->header().num_fres == 289939);
    CHECK(validate(*s).empty());
    // About 7 FREs per function, like compiled code (header comment).
    const double fres_per_fde =
        static_cast<double>(s->header().num_fres) / static_cast<double>(s->fde_count());
    CHECK(fres_per_fde > 6.0);
    CHECK(fres_per_fde < 9.0);
    const auto pcs = probe_pcs(*s, 20000);
    CHECK(disagreements(*s, pcs, "synthetic:40000") == 0);
    // Every row is one a compiler writes for x86-64: the RA at CFA - 8, the
    // CFA on rsp at least 8 above it or on rbp 16 above it, and rbp either
    // not saved or saved at CFA - 16, which the CFA must then be above.
    std::size_t odd = 0;
    std::size_t rows = 0;
    std::size_t fp_saved = 0;
    for (const std::uint64_t pc : pcs) {
        auto row = s->lookup(pc); // none between functions (alignment) and outside
        if (!row) continue;
        ++rows;
        const bool ra = row->ra.kind == RegRule::Kind::AtCfa && row->ra.offset == -8;
        const bool cfa = (row->cfa.reg == 7 && row->cfa.offset >= 8) ||
                         (row->cfa.reg == 6 && row->cfa.offset == 16);
        const bool fp_at = row->fp.kind == RegRule::Kind::AtCfa;
        const bool fp = fp_at ? row->fp.offset == -16 && row->cfa.offset >= 16
                              : row->fp.kind == RegRule::Kind::SameValue && row->cfa.reg == 7;
        fp_saved += fp_at ? 1U : 0U;
        if (!ra || !cfa || !fp) ++odd;
    }
    CHECK(fp_saved > rows / 10);
    CHECK(rows > pcs.size() / 2);
    CHECK(odd == 0);
}

// SPDX-License-Identifier: MIT
// A Section read on demand (SectionFetcher, what ElfFile::sframe() gives)
// must give the rows, FDEs and FREs of the same section read whole, at every
// PC tried, while reading only what its lookups need; and a fetch that fails
// is an error, never a row made of bytes that were not read.
#include "catch.hpp"
#include "sfunwind/elf/elf_file.hpp"
#include "sfunwind/sframe/section.hpp"
#include "support.hpp"

#include <sstream>

using namespace sfunwind;
using namespace sfunwind::sframe;
namespace fs = std::filesystem;

namespace {

// The section's bytes copied into a buffer as they are fetched. The rest of
// the buffer holds 0xa5, so a read the Section did not fetch first gives
// other fields than the section's (a start, an FRE count, data words) and
// shows as a different row or an error below.
class CopyingFetcher final : public SectionFetcher {
  public:
    explicit CopyingFetcher(std::span<const std::uint8_t> source)
        : source_(source.begin(), source.end()), buffer_(source.size(), 0xa5),
          fetched_(source.size(), false) {}
    std::span<const std::uint8_t> bytes() const noexcept { return buffer_; }
    std::size_t fetched_bytes() const noexcept { return count_; }
    bool out_of_range() const noexcept { return out_of_range_; }
    void refuse() noexcept { refuse_ = true; }

    bool fetch(std::uint64_t offset, std::uint64_t length) const noexcept override {
        if (refuse_) return false;
        if (offset > source_.size() || length > source_.size() - offset) {
            out_of_range_ = true;
            return false;
        }
        for (std::uint64_t i = offset; i < offset + length; ++i) {
            if (fetched_[i]) continue;
            fetched_[i] = true;
            buffer_[i] = source_[i];
            ++count_;
        }
        return true;
    }
    std::string problem() const override { return "the test refused the read"; }

  private:
    std::vector<std::uint8_t> source_;
    mutable std::vector<std::uint8_t> buffer_;
    mutable std::vector<bool> fetched_;
    mutable std::size_t count_ = 0;
    mutable bool out_of_range_ = false;
    bool refuse_ = false;
};

// PCs to try in `s`: each FDE's start, each FRE's start, the byte before
// and after it, the function's last byte and the one past its end.
std::vector<std::uint64_t> probe_pcs(const Section& s) {
    std::vector<std::uint64_t> pcs;
    for (std::uint32_t i = 0; i < s.fde_count(); ++i) {
        auto fde = s.fde(i);
        if (!fde) continue;
        pcs.push_back(fde->start);
        pcs.push_back(fde->start + fde->size - 1);
        pcs.push_back(fde->start + fde->size);
        auto fres = s.fres(*fde);
        if (!fres) continue;
        for (const auto& fre : *fres)
            for (const std::uint64_t d : {std::uint64_t{0}, std::uint64_t{1}, std::uint64_t{2}})
                pcs.push_back(fde->start + fre.start + d - 1);
    }
    return pcs;
}

struct Files {
    std::vector<fs::path> paths;
};

Files fixture_files() {
    Files out;
    std::istringstream manifest(
        test::read_text(test::source_dir() / "tests/fixtures/manifest.tsv"));
    for (std::string line; std::getline(manifest, line);)
        if (!line.empty() && line[0] != '#')
            out.paths.push_back(test::source_dir() / "tests/fixtures" /
                                line.substr(0, line.find('\t')));
    for (const char* large : {"sqlite3-gas-2.47", "sqlite3-clang-23"})
        out.paths.push_back(test::source_dir() / "tests/fixtures/large" / large);
    return out;
}

// SQLite's v3 section (gas 2.47) read whole, and the file that holds it.
struct WholeSection {
    elf::ElfFile file;
    std::span<const std::uint8_t> bytes;
    std::uint64_t vaddr = 0;
};

WholeSection sqlite_section() {
    auto file =
        elf::ElfFile::open((test::source_dir() / "tests/fixtures/large/sqlite3-gas-2.47").string());
    REQUIRE(file.has_value());
    auto where = file->find_sframe();
    REQUIRE(where);
    auto bytes = file->sframe_bytes(*where);
    REQUIRE(bytes);
    // The bytes are in the file's image, which moves with the ElfFile.
    return WholeSection{std::move(*file), *bytes, where->vaddr};
}

} // namespace

TEST_CASE("a section read on demand gives the rows, FDEs and FREs of the whole one",
          "[section][fetch]") {
    const Files files = fixture_files();
    REQUIRE(files.paths.size() > 50);
    std::size_t sections = 0;
    std::size_t pcs_tried = 0;
    for (const auto& path : files.paths) {
        auto file = elf::ElfFile::open(path.string());
        REQUIRE(file.has_value());
        auto where = file->find_sframe();
        if (!where) continue;
        auto bytes = file->sframe_bytes(*where);
        REQUIRE(bytes);
        auto whole = Section::parse(*bytes, where->vaddr);
        if (!whole) continue;
        ++sections;
        const std::string name = path.filename().string();
        CopyingFetcher fetcher(*bytes);
        auto lazy = Section::parse(fetcher.bytes(), where->vaddr, &fetcher);
        REQUIRE(lazy);
        // Lookups first, on a section nothing else has fetched from.
        std::size_t differ = 0;
        const auto pcs = probe_pcs(*whole);
        pcs_tried += pcs.size();
        for (const std::uint64_t pc : pcs) {
            auto want = whole->lookup(pc);
            auto got = lazy->lookup(pc);
            const bool same = want.has_value() == got.has_value() &&
                              (want ? *want == *got : want.error().code() == got.error().code());
            if (!same && ++differ <= 3)
                FAIL_CHECK(name << " at " << to_hex(pc) << ": "
                                << (want ? "a row" : want.error().message()) << " whole, "
                                << (got ? "a row" : got.error().message()) << " on demand");
        }
        CHECK(differ == 0);
        // Then every FDE and FRE through the one-at-a-time API.
        for (std::uint32_t i = 0; i < whole->fde_count(); ++i) {
            auto a = whole->fde(i);
            auto b = lazy->fde(i);
            REQUIRE(a.has_value() == b.has_value());
            if (!a) continue;
            CHECK(a->num_fres == b->num_fres);
            CHECK(a->fres_begin == b->fres_begin);
            auto fa = whole->fres(*a);
            auto fb = lazy->fres(*b);
            REQUIRE(fa.has_value() == fb.has_value());
            if (!fa) continue;
            for (std::size_t k = 0; k < fa->size(); ++k)
                CHECK(((*fa)[k].start == (*fb)[k].start && (*fa)[k].words == (*fb)[k].words));
        }
        CHECK_FALSE(fetcher.out_of_range());
        // view() fetches the rest: then the bytes are the section's.
        CHECK(std::equal(lazy->view().bytes().begin(), lazy->view().bytes().end(), bytes->begin(),
                         bytes->end()));
    }
    CHECK(sections > 50);
    CHECK(pcs_tried > 100000);
}

TEST_CASE("a few lookups read a few of the FRE bytes", "[section][fetch]") {
    const WholeSection sqlite = sqlite_section();
    CopyingFetcher fetcher(sqlite.bytes);
    auto lazy = Section::parse(fetcher.bytes(), sqlite.vaddr, &fetcher);
    REQUIRE(lazy);
    // parse(): the header and the FDE records, nothing of the FRE sub-section.
    CHECK(fetcher.fetched_bytes() <= lazy->fre_subsection());
    const std::size_t after_parse = fetcher.fetched_bytes();
    // A backtrace's worth of functions: 50 FDEs spread over the section.
    const std::uint32_t n = lazy->fde_count();
    REQUIRE(n > 1000);
    for (std::uint32_t k = 0; k < 50; ++k) {
        auto fde = lazy->fde(k * (n / 50));
        REQUIRE(fde);
        CHECK(lazy->lookup(fde->start + fde->size / 2));
    }
    const std::size_t fre_bytes = lazy->used_size() - lazy->fre_subsection();
    const std::size_t read = fetcher.fetched_bytes() - after_parse;
    INFO(read << " of " << fre_bytes << " FRE bytes read");
    CHECK(read > 0);
    CHECK(read * 5 < fre_bytes); // 256-byte pieces: about 13 KB of 125 KB
}

TEST_CASE("a failed fetch is an error, never a row", "[section][fetch]") {
    const WholeSection sqlite = sqlite_section();
    auto whole = Section::parse(sqlite.bytes, sqlite.vaddr);
    REQUIRE(whole);
    CopyingFetcher fetcher(sqlite.bytes);
    auto lazy = Section::parse(fetcher.bytes(), sqlite.vaddr, &fetcher);
    REQUIRE(lazy);
    auto first = whole->fde(0);
    auto last = whole->fde(whole->fde_count() - 1);
    REQUIRE(first);
    REQUIRE(last);
    const std::uint64_t fetched_pc = first->start;
    REQUIRE(lazy->lookup(fetched_pc));
    fetcher.refuse();
    // The FDE fetched before still gives its row; another one an I/O error
    // that says which FDE and why, from lookup() and from fde() alike.
    auto again = lazy->lookup(fetched_pc);
    REQUIRE(again);
    CHECK(*again == *whole->lookup(fetched_pc));
    auto refused = lazy->lookup(last->start);
    REQUIRE_FALSE(refused);
    CHECK(refused.error().code() == Errc::Io);
    const std::string message = refused.error().message();
    CHECK(message.find("cannot read the FREs of FDE " + std::to_string(last->index)) !=
          std::string::npos);
    CHECK(message.find("the test refused the read") != std::string::npos);
    auto fde = lazy->fde(last->index);
    REQUIRE_FALSE(fde);
    CHECK(fde.error().code() == Errc::Io);
    // view(): without the FRE sub-section, whose bytes were never read.
    CHECK(lazy->view().size() == lazy->fre_subsection());
    // A fetcher that refuses from the start: parse() says so.
    CopyingFetcher none(sqlite.bytes);
    none.refuse();
    auto unread = Section::parse(none.bytes(), sqlite.vaddr, &none);
    REQUIRE_FALSE(unread);
    CHECK(unread.error().code() == Errc::Io);
}

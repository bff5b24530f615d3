// SPDX-License-Identifier: MIT
// CfiTable on the small programs of tests/unit/data. Expected rows are those
// readelf --debug-dump=frames prints for the same files.
#include "catch.hpp"
#include "sfunwind/cfi/cfi_table.hpp"
#include "sfunwind/cfi/row_comparison.hpp"
#include "sfunwind/elf/elf_file.hpp"
#include "sfunwind/sframe/section.hpp"
#include "support.hpp"

#include <random>
#include <utility>

using namespace sfunwind;
using Kind = RegRule::Kind;

namespace {

std::filesystem::path data(const std::string& name) {
    return test::source_dir() / "tests/unit/data" / name;
}

elf::ElfFile open_elf(const std::string& name) {
    auto f = elf::ElfFile::open(data(name).string());
    if (!f) FAIL(f.error().message());
    return std::move(*f);
}

cfi::CfiTable open_cfi(const elf::ElfFile& f,
                       cfi::Source which = cfi::Source::EhFrameThenDebugFrame) {
    auto t = cfi::CfiTable::open(f, which);
    if (!t) FAIL(t.error().message());
    return std::move(*t);
}

cfi::CfiRow row_at(const cfi::CfiTable& t, std::uint64_t pc) {
    auto r = t.at(pc);
    if (!r) FAIL(r.error().message());
    return std::move(*r);
}

struct Range {
    std::uint64_t begin;
    std::uint64_t end;
    bool operator==(const Range&) const = default;
};

std::vector<Range> ranges(const cfi::CfiTable& t) {
    std::vector<Range> out;
    for (const auto& f : t.fdes())
        out.push_back({f.begin, f.end});
    return out;
}

// The FDEs of x86_64-pie's .eh_frame (readelf), sorted: PLT, .plt.got, main,
// _start, cfa_exprs, impl, leaf, with_frame, realign, recurse, resolve_pick.
const std::vector<Range> pie_fdes = {
    {0x1020, 0x1040}, {0x1040, 0x1048}, {0x1050, 0x1067}, {0x1070, 0x1092},
    {0x1160, 0x116a}, {0x1170, 0x1174}, {0x1180, 0x1185}, {0x1190, 0x11c0},
    {0x11c0, 0x11fb}, {0x1200, 0x1222}, {0x1230, 0x1238},
};

bool is_rule(const RegRule& r, Kind kind, std::int32_t offset = 0, std::uint16_t reg = 0) {
    return r.kind == kind && r.offset == offset && r.reg == reg;
}

// Every SFrame row must agree with the CFI at its start PC, except where the
// CFI has no Row form (the PLT's CFA expression) or SFrame uses a PC mask.
void check_sframe_agrees(const std::string& name, std::size_t expected_rows) {
    const auto f = open_elf(name);
    const auto table = open_cfi(f);
    auto section = f.sframe();
    REQUIRE(section.has_value());
    std::size_t compared = 0;
    for (std::uint32_t i = 0; i < section->fde_count(); ++i) {
        auto fde = section->fde(i);
        REQUIRE(fde.has_value());
        if (fde->pc_type == sframe::PcType::Mask) continue;
        auto fres = section->fres(*fde);
        REQUIRE(fres.has_value());
        for (std::size_t k = 0; k < fres->size(); ++k) {
            const auto& fre = (*fres)[k];
            const std::uint64_t next = k + 1 < fres->size() ? (*fres)[k + 1].start : fde->size;
            auto row = section->row(*fde, fre, static_cast<std::uint32_t>(k), next);
            REQUIRE(row.has_value());
            const auto c = row_at(table, row->pc_begin);
            INFO(name << " at " << std::hex << row->pc_begin << ": SFrame "
                      << describe(*row, table.abi()) << ", CFI " << describe(c.rules, table.abi()));
            const auto diffs = cfi::compare(c, *row, table.abi());
            for (const auto& d : diffs)
                INFO(d.message);
            CHECK(diffs.empty());
            ++compared;
        }
    }
    CHECK(compared == expected_rows);
}

} // namespace

TEST_CASE("CfiTable enumerates every FDE of .eh_frame", "[cfi]") {
    const auto f = open_elf("x86_64-pie");
    const auto t = open_cfi(f);
    CHECK(t.source() == cfi::Source::EhFrame);
    CHECK(t.abi().arch == Arch::X86_64);
    CHECK(ranges(t) == pie_fdes);
    CHECK(t.fde_errors().empty());
    // Offsets in .eh_frame, as readelf prints them: _start's FDE is first.
    CHECK(t.fdes()[3].offset == 0x18);
    for (const auto& fde : t.fdes()) {
        INFO("FDE at " << std::hex << fde.begin);
        CHECK(fde.source == cfi::Source::EhFrame);
        // libdw agrees with the enumeration on where each FDE starts.
        const auto first = row_at(t, fde.begin);
        CHECK(first.begin == fde.begin);
        CHECK(first.fde_begin == fde.begin);
        CHECK(first.fde_end == fde.end);
        // The rows tile the FDE.
        auto rows = t.rows(fde);
        REQUIRE(rows.has_value());
        REQUIRE_FALSE(rows->empty());
        CHECK(rows->front().begin == fde.begin);
        CHECK(rows->back().end == fde.end);
        for (std::size_t i = 1; i < rows->size(); ++i) {
            CHECK((*rows)[i].begin == (*rows)[i - 1].end);
            CHECK((*rows)[i].rules.fre_index == i);
        }
    }
}

TEST_CASE("CfiTable rows of known functions", "[cfi]") {
    const auto f = open_elf("x86_64-pie");
    const auto t = open_cfi(f);

    SECTION("a leaf: CFA = rsp+8, RA at CFA-8 from its first instruction to its end") {
        const auto r = row_at(t, 0x1180);
        CHECK(r.begin == 0x1180);
        CHECK(r.end == 0x1185);
        CHECK(r.ra_column == 16);
        CHECK(r.representable());
        CHECK(r.rules.cfa.reg == 7);
        CHECK(r.rules.cfa.offset == 8);
        CHECK_FALSE(r.rules.cfa.deref);
        CHECK(is_rule(r.rules.ra, Kind::AtCfa, -8));
        CHECK(is_rule(r.rules.fp, Kind::SameValue));
        CHECK_FALSE(r.rules.outermost);
        CHECK_FALSE(r.rules.topmost_only);
        CHECK(r.rules.func_start == 0x1180);
        CHECK(r.rules.func_size == 5);
        CHECK(r.rules.fde_index == 6);
    }
    SECTION("a frame-pointer prologue") {
        auto rows = t.rows(t.fdes()[7]); // with_frame [0x1190, 0x11c0)
        REQUIRE(rows.has_value());
        REQUIRE(rows->size() == 4);
        const auto& r = *rows;
        CHECK(r[0].end == 0x1191);
        CHECK(r[0].rules.cfa.offset == 8);
        CHECK(r[1].begin == 0x1191);
        CHECK(r[1].rules.cfa.reg == 7);
        CHECK(r[1].rules.cfa.offset == 16);
        CHECK(is_rule(r[1].rules.fp, Kind::AtCfa, -16));
        CHECK(r[2].begin == 0x1198);
        CHECK(r[2].rules.cfa.reg == 6); // rbp
        CHECK(r[2].rules.cfa.offset == 16);
        CHECK(r[3].begin == 0x11bf);
        CHECK(r[3].rules.cfa.reg == 7);
        CHECK(r[3].rules.cfa.offset == 8);
        for (const auto& row : r)
            CHECK(is_rule(row.rules.ra, Kind::AtCfa, -8));
    }
    SECTION("_start: the RA is undefined, the outermost frame") {
        const auto r = row_at(t, 0x1080);
        CHECK(r.rules.ra.kind == Kind::Undefined);
        CHECK(r.ra_state.representable);
        CHECK(r.rules.outermost);
    }
    SECTION("the PLT: a CFA expression with no Row form") {
        const auto push = row_at(t, 0x1020);
        CHECK(push.rules.cfa.offset == 16);
        const auto r = row_at(t, 0x1030);
        CHECK_FALSE(r.cfa_state.representable);
        CHECK(r.cfa_state.reason.find("DW_OP_breg16 0; DW_OP_lit15; DW_OP_and") !=
              std::string::npos);
        CHECK(r.ra_state.representable);
        CHECK_FALSE(r.representable());
    }
    SECTION("expressions: deref CFA, val_expression, reducible and irreducible RA rules") {
        auto rows = t.rows(t.fdes()[4]); // cfa_exprs [0x1160, 0x116a)
        REQUIRE(rows.has_value());
        REQUIRE(rows->size() == 7);
        const auto& r = *rows;
        // DW_OP_breg6 -8; DW_OP_deref
        CHECK(r[2].begin == 0x1164);
        CHECK(r[2].cfa_state.representable);
        CHECK(r[2].rules.cfa.reg == 6);
        CHECK(r[2].rules.cfa.offset == -8);
        CHECK(r[2].rules.cfa.deref);
        CHECK(is_rule(r[2].rules.fp, Kind::AtCfa, -16));
        // DW_CFA_val_expression rbp: DW_OP_breg7 0 (rbp = rsp)
        CHECK(is_rule(r[3].rules.fp, Kind::ValReg, 0, 7));
        // DW_CFA_expression rip: DW_OP_breg7 8; DW_OP_lit0; DW_OP_plus = [rsp+8]
        CHECK(r[4].ra_state.representable);
        CHECK(is_rule(r[4].rules.ra, Kind::AtReg, 8, 7));
        // DW_CFA_expression rip: DW_OP_breg7 0; DW_OP_breg6 0; DW_OP_plus
        CHECK(r[5].begin == 0x1167);
        CHECK_FALSE(r[5].ra_state.representable);
        CHECK(r[5].ra_state.reason.find("DW_OP_breg7 0; DW_OP_breg6 0; DW_OP_plus") !=
              std::string::npos);
        CHECK_FALSE(r[5].rules.outermost);
        CHECK(r[6].rules.cfa.offset == 8);
        CHECK(is_rule(r[6].rules.fp, Kind::SameValue));
    }
    SECTION("PCs no FDE covers") {
        for (std::uint64_t pc : {std::uint64_t{0}, std::uint64_t{0x1000}, std::uint64_t{0x1048},
                                 std::uint64_t{0x1238}, std::uint64_t{0x7fffffffffff}}) {
            auto r = t.at(pc);
            REQUIRE_FALSE(r.has_value());
            CHECK(r.error().code() == Errc::NotFound);
            CHECK(r.error().where() == pc);
            CHECK(r.error().message().find("x86_64-pie") != std::string::npos);
        }
    }
}

TEST_CASE("CFI agrees with the SFrame gas wrote for the same programs", "[cfi]") {
    // Row counts: the FREs of every non-PC-mask FDE (readelf --sframe).
    SECTION("x86-64") {
        check_sframe_agrees("x86_64-pie", 19);
    }
    SECTION("AArch64") {
        check_sframe_agrees("aarch64-pie", 15);
    }
    SECTION("AArch64 big-endian") {
        check_sframe_agrees("aarch64be-static", 15);
    }
}

TEST_CASE("AArch64 CFI: the RA is in x30 until the prologue saves it", "[cfi]") {
    const auto f = open_elf("aarch64be-static");
    const auto t = open_cfi(f);
    CHECK(t.abi().name == "aarch64_be");
    CHECK(t.fdes().size() == 7);
    auto rows = t.rows(t.fdes()[3]); // with_frame [0x400230, 0x400274)
    REQUIRE(rows.has_value());
    REQUIRE(rows->size() == 3);
    const auto& r = *rows;
    CHECK(r[0].ra_column == 30);
    CHECK(r[0].rules.cfa.reg == 31);
    CHECK(r[0].rules.cfa.offset == 0);
    CHECK(is_rule(r[0].rules.ra, Kind::SameValue));
    CHECK(r[1].begin == 0x400234);
    CHECK(r[1].rules.cfa.offset == 48);
    CHECK(is_rule(r[1].rules.ra, Kind::AtCfa, -40));
    CHECK(is_rule(r[1].rules.fp, Kind::AtCfa, -48));
    CHECK(r[2].end == 0x400274);
}

TEST_CASE("CFI sources: .eh_frame, .debug_frame, or both", "[cfi]") {
    const auto f = open_elf("x86_64-debugframe");
    const std::uint64_t leaf = 0x401170;  // in .debug_frame only
    const std::uint64_t start = 0x401060; // _start: in .eh_frame only

    const auto eh = open_cfi(f, cfi::Source::EhFrame);
    CHECK(eh.source() == cfi::Source::EhFrame);
    CHECK(eh.fdes().size() == 3);
    auto miss = eh.at(leaf);
    REQUIRE_FALSE(miss.has_value());
    CHECK(miss.error().code() == Errc::NotFound);

    const auto debug = open_cfi(f, cfi::Source::DebugFrame);
    CHECK(debug.source() == cfi::Source::DebugFrame);
    CHECK(debug.fdes().size() == 8);
    const auto r = row_at(debug, leaf);
    CHECK(r.source == cfi::Source::DebugFrame);
    CHECK(r.fde_begin == leaf);
    CHECK(r.fde_end == 0x401175);
    CHECK(r.rules.cfa.offset == 8);
    CHECK(is_rule(r.rules.ra, Kind::AtCfa, -8));

    const auto both = open_cfi(f);
    CHECK(both.source() == cfi::Source::EhFrameThenDebugFrame);
    CHECK(both.fdes().size() == 11);
    CHECK(row_at(both, leaf).source == cfi::Source::DebugFrame);
    CHECK(row_at(both, start).source == cfi::Source::EhFrame);
    CHECK(std::is_sorted(
        both.fdes().begin(), both.fdes().end(),
        [](const cfi::FdeRange& a, const cfi::FdeRange& b) { return a.begin < b.begin; }));
    for (const auto& fde : both.fdes()) {
        auto rows = both.rows(fde);
        REQUIRE(rows.has_value());
        CHECK(rows->back().end == fde.end);
    }

    auto none = cfi::CfiTable::open(open_elf("x86_64-pie"), cfi::Source::DebugFrame);
    REQUIRE_FALSE(none.has_value());
    CHECK(none.error().code() == Errc::NotFound);
}

TEST_CASE("CFI without section headers, through PT_GNU_EH_FRAME", "[cfi]") {
    const auto f = open_elf("x86_64-noshdr");
    const auto t = open_cfi(f);
    CHECK(ranges(t) == pie_fdes);
    CHECK(t.fde_errors().empty());
    CHECK(row_at(t, 0x1198).rules.cfa.reg == 6);
}

TEST_CASE("CfiTable: an unreadable CIE is reported, its FDEs left out", "[cfi]") {
    auto bytes = test::read_bytes(data("x86_64-pie"));
    const auto orig = open_elf("x86_64-pie");
    const auto* eh = orig.section(".eh_frame");
    REQUIRE(eh != nullptr);
    // The first CIE's augmentation "zR" (at .eh_frame + 9) becomes "zQ": the
    // FDE encoding can no longer be found.
    REQUIRE(bytes.at(eh->offset + 9) == 'z');
    REQUIRE(bytes.at(eh->offset + 10) == 'R');
    bytes.at(eh->offset + 10) = 'Q';
    auto f = elf::ElfFile::from_bytes(bytes, "bad-cie");
    REQUIRE(f.has_value());
    auto t = cfi::CfiTable::open(*f);
    REQUIRE(t.has_value());
    REQUIRE(t->fde_errors().size() == 1);
    const auto& e = t->fde_errors().front();
    CHECK(e.where() == 0x18); // _start's FDE
    CHECK(e.message().find("bad-cie") != std::string::npos);
    CHECK(e.message().find("'Q'") != std::string::npos);
    CHECK(t->fdes().size() == pie_fdes.size() - 1);
}

TEST_CASE("compare(): what equal means", "[cfi]") {
    const Abi& abi = abi_amd64();
    cfi::CfiRow c;
    c.rules.cfa = {7, 16, false};
    c.rules.ra = RegRule::at_cfa(-8);
    c.rules.fp = RegRule::at_cfa(-16);
    Row s;
    s.cfa = {7, 16, false};
    s.ra = RegRule::at_cfa(-8, RegRule::Source::Header); // SFrame's fixed RA offset
    s.fp = RegRule::at_cfa(-16);
    CHECK(cfi::compare(c, s, abi).empty());

    SECTION("FP not saved: SFrame u is CFI same value") {
        c.rules.fp = RegRule::same_value(RegRule::Source::Fre);
        s.fp = RegRule::same_value(RegRule::Source::Absent);
        CHECK(cfi::compare(c, s, abi).empty());
        c.rules.fp = RegRule::undefined();
        const auto d = cfi::compare(c, s, abi);
        REQUIRE(d.size() == 1);
        CHECK(d[0].part == cfi::Difference::Part::Fp);
        CHECK_FALSE(d[0].unrepresentable);
    }
    SECTION("a different CFA") {
        s.cfa = {6, 16, false};
        const auto d = cfi::compare(c, s, abi);
        REQUIRE(d.size() == 1);
        CHECK(d[0].part == cfi::Difference::Part::Cfa);
        CHECK(d[0].message == "CFA: CFI rsp+16, SFrame rbp+16");
        s.cfa = {7, 16, true};
        CHECK(cfi::compare(c, s, abi).size() == 1);
    }
    SECTION("unrepresentable CFI rules are flagged as such") {
        c.cfa_state = {false, "CFA is a DWARF expression: DW_OP_and"};
        const auto d = cfi::compare(c, s, abi);
        REQUIRE(d.size() == 1);
        CHECK(d[0].unrepresentable);
        CHECK(d[0].message.find("DW_OP_and") != std::string::npos);
    }
    SECTION("outermost on both sides: the CFA does not matter") {
        c.rules.ra = RegRule::undefined();
        s.ra = RegRule::undefined();
        s.cfa = {};
        CHECK(cfi::compare(c, s, abi).empty());
    }
    SECTION("register rules compare register and offset") {
        c.rules.ra = {Kind::ValReg, 14, 0, RegRule::Source::Fre};
        s.ra = {Kind::ValReg, 14, 0, RegRule::Source::Fre};
        CHECK(cfi::compare(c, s, abi).empty());
        s.ra.reg = 15;
        CHECK(cfi::compare(c, s, abi).size() == 1);
    }
}

TEST_CASE("CfiTable and ElfFile move; the table keeps working", "[cfi]") {
    auto f = open_elf("x86_64-pie");
    auto t = open_cfi(f);
    elf::ElfFile moved_file(std::move(f));
    cfi::CfiTable moved(std::move(t));
    cfi::CfiTable other = open_cfi(moved_file);
    other = std::move(moved);
    CHECK(row_at(other, 0x1191).rules.cfa.offset == 16);
    CHECK(other.fdes().size() == pie_fdes.size());
}

TEST_CASE("CfiTable survives damaged .eh_frame and .eh_frame_hdr", "[cfi][robustness]") {
    const auto full = test::read_bytes(data("x86_64-pie"));
    const auto orig = open_elf("x86_64-pie");
    std::mt19937 rng(777);
    int opened = 0;
    for (const char* name : {".eh_frame", ".eh_frame_hdr"}) {
        const auto* s = orig.section(name);
        REQUIRE(s != nullptr);
        for (int round = 0; round < 300; ++round) {
            auto copy = full;
            for (int k = 0; k < 2; ++k)
                copy[s->offset + rng() % s->size] = static_cast<std::uint8_t>(rng());
            auto f = elf::ElfFile::from_bytes(copy, "damaged");
            REQUIRE(f.has_value());
            auto t = cfi::CfiTable::open(*f);
            if (!t) continue;
            ++opened;
            for (const auto& e : t->fde_errors())
                CHECK(e.message().find("damaged") != std::string::npos);
            for (const auto& fde : t->fdes()) {
                auto rows = t->rows(fde);
                if (!rows) {
                    CHECK(rows.error().message().find("damaged") != std::string::npos);
                    continue;
                }
                for (const auto& r : *rows)
                    CHECK(r.begin < r.end);
            }
            (void)t->at(0x1180);
        }
    }
    CHECK(opened > 300);
}

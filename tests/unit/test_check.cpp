// SPDX-License-Identifier: MIT
// The check engine (sfunwind/check/check.hpp) on the committed fixtures of
// every writer, and on sections made to disagree with their CFI on purpose.
#include "../../core/src/check/cfi_probe.hpp"
#include "../../core/src/check/known_issues.hpp"
#include "../../core/src/check/missing_reason.hpp"
#include "../check/elf_splice.hpp"
#include "catch.hpp"
#include "sfunwind/check/check.hpp"
#include "sfunwind/elf/elf_file.hpp"
#include "sfunwind/sframe/section.hpp"
#include "sfunwind/sframe/writer.hpp"
#include "support.hpp"

#include <algorithm>
#include <map>
#include <sstream>

using namespace sfunwind;
using check::Coverage;
using check::MissingReason;
using check::Verdict;

namespace {

std::filesystem::path fixture(const std::string& rel) {
    return test::source_dir() / "tests/fixtures" / rel;
}

elf::ElfFile open_fixture(const std::string& rel) {
    auto f = elf::ElfFile::open(fixture(rel).string());
    if (!f) FAIL(f.error().message());
    return std::move(*f);
}

check::Report run_check(const elf::ElfFile& f) {
    auto r = check::check(f);
    if (!r) FAIL(r.error().message());
    return std::move(*r);
}

const check::Function* function_at(const check::Report& r, std::uint64_t begin) {
    for (const auto& fn : r.functions)
        if (fn.begin == begin) return &fn;
    return nullptr;
}

const check::Function* function_named(const check::Report& r, const std::string& name) {
    for (const auto& fn : r.functions)
        if (fn.name == name) return &fn;
    return nullptr;
}

struct Entry {
    std::string path;
    std::string writer;
};

std::vector<Entry> manifest() {
    std::vector<Entry> out;
    std::istringstream in(test::read_text(fixture("manifest.tsv")));
    for (std::string line; std::getline(in, line);) {
        if (line.empty() || line[0] == '#') continue;
        std::istringstream cols(line);
        Entry e;
        std::getline(cols, e.path, '\t');
        std::getline(cols, e.writer, '\t');
        out.push_back(e);
    }
    return out;
}

// A section's FDEs as writer input, so a test can change one rule and write it back.
std::vector<sframe::FdeSpec> specs_of(const sframe::Section& s) {
    std::vector<sframe::FdeSpec> out;
    for (std::uint32_t i = 0; i < s.fde_count(); ++i) {
        auto fde = s.fde(i);
        REQUIRE(fde.has_value());
        auto fres = s.fres(*fde);
        REQUIRE(fres.has_value());
        sframe::FdeSpec spec;
        spec.start = fde->start;
        spec.size = fde->size;
        spec.pc_type = fde->pc_type;
        spec.rep_size = fde->rep_size;
        spec.fde_type = fde->fde_type;
        spec.signal = fde->signal;
        for (std::size_t k = 0; k < fres->size(); ++k) {
            const std::uint64_t next = k + 1 < fres->size() ? (*fres)[k + 1].start : fde->size;
            auto row = s.row(*fde, (*fres)[k], static_cast<std::uint32_t>(k), next);
            REQUIRE(row.has_value());
            sframe::FreSpec f;
            f.start = (*fres)[k].start;
            f.cfa = row->cfa;
            f.ra = row->ra;
            f.fp = row->fp;
            spec.fres.push_back(f);
        }
        out.push_back(spec);
    }
    return out;
}

// The fixture's image with its .sframe replaced by a v3 section of `fdes`,
// placed where the original was (PC-relative starts against that address).
elf::ElfFile respliced(const elf::ElfFile& f, const std::vector<sframe::FdeSpec>& fdes,
                       bool unchecked = false) {
    const auto* s = f.section(".sframe");
    REQUIRE(s != nullptr);
    sframe::WriterOptions o;
    o.section_vaddr = s->vaddr;
    o.quirks.unchecked = unchecked;
    sframe::Writer w(o);
    for (const auto& d : fdes)
        w.add(d);
    auto bytes = w.write();
    if (!bytes) FAIL(bytes.error().message());
    auto image = test::with_sframe(f, *bytes, s->vaddr);
    REQUIRE(image.has_value());
    auto out = elf::ElfFile::from_bytes(*image, f.name() + " (respliced)");
    REQUIRE(out.has_value());
    return std::move(*out);
}

} // namespace

TEST_CASE(
    "check: GNU ld 2.47 .plt.got row is the one named mismatch; the .plt agrees when evaluated",
    "[check]") {
    const auto f = open_fixture("bin/gas-2.47/plt-O2-nofp/plt");
    const auto r = run_check(f);
    CHECK(r.sframe.rfind("SFrame v3", 0) == 0);
    CHECK(r.cfi == ".eh_frame");

    // Ordinary functions: every breakpoint agrees.
    const auto& both = r.total(Coverage::Both);
    CHECK(both.functions == 5);
    CHECK(both.functions_agreeing == 5);
    CHECK(both.breakpoints == 19);
    CHECK(both.agreeing == both.breakpoints);

    // .plt: one CFI FDE (an expression after PLT0), two SFrame FDEs.
    const auto* plt = function_at(r, 0x1020);
    REQUIRE(plt != nullptr);
    CHECK(plt->coverage == Coverage::Plt);
    CHECK(plt->section == ".plt");
    CHECK(plt->sframe_fdes == std::vector<std::uint32_t>{0, 1});
    CHECK(plt->cfi_fdes.size() == 1);
    CHECK(plt->agrees());
    // Per entry the CFA changes at +0 (sp+8) and +11 (sp+16): four entries
    // after PLT0, two evaluated breakpoints each.
    CHECK(plt->evaluated == 8);

    const auto* got = function_at(r, 0x1070);
    REQUIRE(got != nullptr);
    CHECK(got->coverage == Coverage::Plt);
    CHECK(got->section == ".plt.got");
    REQUIRE(got->findings.size() == 1);
    const auto& m = got->findings.front();
    CHECK(m.verdict == Verdict::Mismatch);
    CHECK(m.pc == 0x1070);
    CHECK(m.end == 0x1078);
    CHECK(m.differences == std::vector<std::string>{"CFA: CFI rsp+8, SFrame rsp+16"});
    CHECK(m.known.find("GNU ld .plt.got") != std::string::npos);
    CHECK(r.disagreements() == 1);

    // _start (crt1.o, not assembled with --gsframe) has CFI only.
    const auto* start = function_named(r, "_start");
    REQUIRE(start != nullptr);
    CHECK(start->coverage == Coverage::CfiOnly);
    CHECK(start->reason == MissingReason::Outermost);
    CHECK(r.unreachable.empty());
    CHECK(r.problems.empty());
}

TEST_CASE(
    "check: SFrame v1 (gas 2.40): DRAP function skipped by gas, PLT mask repeats every 16 bytes",
    "[check]") {
    const auto f = open_fixture("bin/gas-2.40/realign-O2-nofp");
    const auto r = run_check(f);
    const auto* drap = function_named(r, "uses_drap");
    REQUIRE(drap != nullptr);
    CHECK(drap->coverage == Coverage::CfiOnly);
    CHECK(drap->reason == MissingReason::Drap);
    CHECK(drap->detail.find("CFA=r10+0") != std::string::npos);
    CHECK(drap->detail.find("SFrame v1 cannot") != std::string::npos);

    // ld 2.40 wrote no SFrame FDE for .plt.got.
    const auto* got = function_named(r, ".plt.got");
    REQUIRE(got != nullptr);
    CHECK(got->coverage == Coverage::CfiOnly);
    CHECK(got->reason == MissingReason::Plt);

    // .plt [0x1020, 0x1070): PLT0's two rows, then v1's PC-mask FDE read
    // per 16-byte entry (layout_v1.cpp): +0 and +11 of each of the four
    // entries. Each agrees with ld's CFI expression for the PLT, evaluated
    // by libdwfl at that PC.
    const auto* plt = function_named(r, ".plt");
    REQUIRE(plt != nullptr);
    CHECK(plt->coverage == Coverage::Plt);
    CHECK(plt->findings.empty());
    CHECK(plt->breakpoints == 2 + 4 * 2);
    CHECK(plt->agreeing == plt->breakpoints);
    CHECK(r.total(Coverage::Plt).agreeing == r.total(Coverage::Plt).breakpoints);
    CHECK(r.total(Coverage::Both).agreeing == r.total(Coverage::Both).breakpoints);
}

TEST_CASE("check: gas 2.47's flexible FDE for the DRAP function agrees with its CFI", "[check]") {
    const auto f = open_fixture("bin/gas-2.47/realign-O2-nofp");
    const auto r = run_check(f);
    const auto* drap = function_named(r, "uses_drap");
    REQUIRE(drap != nullptr);
    CHECK(drap->coverage == Coverage::Both);
    CHECK(drap->agrees());
    CHECK(drap->breakpoints >= 6); // r10+0, (fp-8), back to r10, sp: each a breakpoint
    CHECK(drap->agreeing == drap->breakpoints);
}

TEST_CASE("check: a file without CFI has only SFrame-only functions", "[check]") {
    const auto f = open_fixture("bin/gas-2.47/recurse-O2-nofp-noeh");
    const auto r = run_check(f);
    CHECK(r.cfi.empty());
    CHECK(r.total(Coverage::Both).functions == 0);
    CHECK(r.total(Coverage::Plt).functions == 0);
    CHECK(r.total(Coverage::SframeOnly).functions == 10);
    CHECK(r.disagreements() == 0);
    for (const auto& fn : r.functions)
        CHECK(fn.detail.find("the file has no CFI") != std::string::npos);
}

TEST_CASE("check: every fixture of every writer agrees wherever both cover it, or the difference "
          "is named",
          "[check][fixtures]") {
    std::map<std::string, std::uint64_t> compared;
    for (const auto& e : manifest()) {
        INFO(e.path);
        const auto f = open_fixture(e.path);
        const auto r = run_check(f);
        CHECK(r.problems.empty());
        CHECK(r.unreachable.empty());
        const auto& both = r.total(Coverage::Both);
        CHECK(both.agreeing == both.breakpoints);
        compared[e.writer] += both.breakpoints;
        for (const auto& fn : r.functions)
            for (const auto& m : fn.findings) {
                INFO(fn.name << " at " << m.pc << ": "
                             << (m.differences.empty() ? m.sframe : m.differences[0]));
                CHECK(fn.coverage == Coverage::Plt);
                CHECK(!m.known.empty());
            }
    }
    // Every writer was compared somewhere.
    for (const char* w : {"gas-2.40", "gas-2.44", "gas-2.47", "clang-23", "gas-2.40-aarch64",
                          "gas-2.47-aarch64", "gas-2.47-s390x"}) {
        INFO(w);
        CHECK(compared[w] > 90);
    }
}

TEST_CASE("check: a wrong CFA offset, a missing FDE, an extra FDE and a dead FRE are each found",
          "[check]") {
    const auto f = open_fixture("bin/gas-2.47/recurse-O2-nofp");
    auto section = f.sframe();
    REQUIRE(section.has_value());
    auto fdes = specs_of(*section);
    const auto* main_sym = f.symbol_for(0x10a0);
    REQUIRE(main_sym != nullptr);

    // recurse(): FRE 1 says CFA=rsp+16; make it rsp+24.
    const auto* recurse_sym = [&]() -> const elf::Symbol* {
        for (const auto& s : f.function_symbols())
            if (s.name == "recurse") return &s;
        return nullptr;
    }();
    REQUIRE(recurse_sym != nullptr);
    auto rec = std::find_if(fdes.begin(), fdes.end(),
                            [&](const auto& d) { return d.start == recurse_sym->value; });
    REQUIRE(rec != fdes.end());
    REQUIRE(rec->fres.size() >= 2);
    const std::int32_t right = rec->fres[1].cfa.offset;
    rec->fres[1].cfa.offset = right + 8;
    const std::uint64_t wrong_pc = rec->start + rec->fres[1].start;

    // level_1 loses its FDE.
    const elf::Symbol* level_1 = nullptr;
    for (const auto& s : f.function_symbols())
        if (s.name == "level_1") level_1 = &s;
    REQUIRE(level_1 != nullptr);
    fdes.erase(std::remove_if(fdes.begin(), fdes.end(),
                              [&](const auto& d) { return d.start == level_1->value; }),
               fdes.end());

    // _init (no CFI) gains one; fixture_leaf gets an FRE past its end.
    const auto* init = f.section(".init");
    REQUIRE(init != nullptr);
    sframe::FdeSpec extra;
    extra.start = init->vaddr;
    extra.size = 4;
    extra.fres.push_back({0, CfaRule{7, 8, false}, RegRule::at_cfa(-8, RegRule::Source::Header),
                          RegRule::same_value(), false, std::nullopt});
    fdes.push_back(extra);
    auto leaf = std::find_if(fdes.begin(), fdes.end(), [&](const auto& d) {
        const auto* s = f.symbol_for(d.start);
        return s != nullptr && s->name == "fixture_leaf";
    });
    REQUIRE(leaf != fdes.end());
    auto dead = leaf->fres.back();
    dead.start = leaf->size + 4;
    leaf->fres.push_back(dead);

    const auto g = respliced(f, fdes, true);
    const auto r = run_check(g);

    const auto* fn = function_at(r, recurse_sym->value);
    REQUIRE(fn != nullptr);
    REQUIRE(fn->findings.size() == 1);
    CHECK(fn->findings[0].verdict == Verdict::Mismatch);
    CHECK(fn->findings[0].pc == wrong_pc);
    CHECK(fn->findings[0].differences ==
          std::vector<std::string>{"CFA: CFI rsp+" + std::to_string(right) + ", SFrame rsp+" +
                                   std::to_string(right + 8)});
    CHECK(fn->findings[0].known.empty());

    const auto* lost = function_at(r, level_1->value);
    REQUIRE(lost != nullptr);
    CHECK(lost->coverage == Coverage::CfiOnly);
    CHECK(lost->reason == MissingReason::Unknown);

    const auto* added = function_at(r, init->vaddr);
    REQUIRE(added != nullptr);
    CHECK(added->coverage == Coverage::SframeOnly);
    CHECK(added->detail == "no CFI FDE covers it");

    REQUIRE(r.unreachable.size() == 1);
    CHECK(r.unreachable[0].table == check::UnreachableRow::Table::Sframe);
    CHECK(r.unreachable[0].pc_begin == leaf->start + leaf->size + 4);
    CHECK(r.unreachable[0].why.find("past the end of its function") != std::string::npos);

    // The wrong row, and the .plt.got stub of the original, still named.
    CHECK(r.disagreements() == 2);
    const auto* got = function_named(r, ".plt.got");
    REQUIRE(got != nullptr);
    CHECK(got->findings.size() == 1);
}

TEST_CASE("SFrame v1 PC-mask FDEs (ld 2.40 .plt): every PLT entry's rows match the CFI",
          "[check]") {
    // GNU ld 2.40 writes v1, which has no repeat block size; the decoder
    // takes AMD64's 16-byte PLT entry (layout_v1.cpp). At every byte of
    // every entry, lookup()'s row must give what libdwfl finds from ld's
    // .eh_frame (a CFA expression of the PC) on the probe's model.
    const Abi& abi = abi_amd64();
    std::size_t files = 0;
    std::size_t later_entries = 0;
    for (const Entry& e : manifest()) {
        if (e.writer != "gas-2.40" || e.path.find("-noeh") != std::string::npos ||
            e.path.find("static") != std::string::npos)
            continue;
        INFO(e.path);
        const auto f = open_fixture(e.path);
        auto section = f.sframe();
        REQUIRE(section.has_value());
        REQUIRE(section->version() == sframe::Version::V1);
        auto probe = check::detail::CfiProbe::open(f, abi);
        REQUIRE(probe.has_value());
        std::size_t masks = 0;
        for (std::uint32_t i = 0; i < section->fde_count(); ++i) {
            auto fde = section->fde(i);
            REQUIRE(fde.has_value());
            if (fde->pc_type != sframe::PcType::Mask) continue;
            ++masks;
            CHECK(fde->rep_size == 16);
            CHECK(fde->rep_size_implied);
            REQUIRE(fde->size % 16 == 0);
            REQUIRE(fde->size >= 32); // at least one entry after the first
            auto fres = section->fres(*fde);
            REQUIRE(fres.has_value());
            REQUIRE(fres->size() == 2); // +0 (CFA=rsp+8), +11 after the push (rsp+16)
            for (std::uint64_t pc = fde->start; pc < fde->end(); ++pc) {
                INFO("pc " << std::hex << pc);
                const std::uint64_t off = (pc - fde->start) % 16;
                auto row = section->lookup(pc);
                REQUIRE(row.has_value());
                CHECK(row->pc_mask);
                CHECK(row->fde_index == i);
                CHECK(row->fre_index == (off < 11 ? 0U : 1U));
                CHECK(row->pc_begin == pc - off + (off < 11 ? 0 : 11));
                CHECK(row->pc_end == pc - off + (off < 11 ? 11 : 16));
                CHECK(row->cfa.offset == (off < 11 ? 8 : 16));
                auto cfi = probe->step(pc);
                REQUIRE(cfi.has_value());
                auto mine = check::detail::evaluate_row(*row, abi, pc);
                REQUIRE(mine.has_value());
                CHECK(mine->cfa == cfi->cfa);
                CHECK(mine->ra == cfi->ra);
                CHECK(mine->fp == cfi->fp);
                if (pc - fde->start >= 16) ++later_entries;
            }
        }
        CHECK(masks == 1);
        ++files;
    }
    CHECK(files >= 16);
    CHECK(later_entries > 16 * files);
}

TEST_CASE("check: the libdwfl probe evaluates the PLT's CFA expression per PC", "[check]") {
    const auto f = open_fixture("bin/gas-2.47/plt-O2-nofp/plt");
    const Abi& abi = abi_amd64();
    auto probe = check::detail::CfiProbe::open(f, abi);
    REQUIRE(probe.has_value());
    const auto sp = check::detail::register_value(abi.sp_reg);
    for (std::uint64_t entry = 0x1030; entry < 0x1070; entry += 16) {
        for (std::uint64_t off : {0U, 6U, 10U, 11U, 15U}) {
            INFO("pc " << entry + off);
            auto v = probe->step(entry + off);
            REQUIRE(v.has_value());
            CHECK(v->cfa == sp + (off < 11 ? 8 : 16));
            auto rules = check::detail::rules_from_values(*v, abi);
            REQUIRE(rules.has_value());
            CHECK(rules->ra.kind == RegRule::Kind::AtCfa);
            CHECK(rules->ra.offset == -8);
            CHECK(rules->fp.kind == RegRule::Kind::SameValue);
        }
    }
    // A plain row, for comparison: PLT0's second row is rsp+24.
    auto v = probe->step(0x1026);
    REQUIRE(v.has_value());
    CHECK(v->cfa == sp + 24);
    // Rules survive the trip through the model.
    Row row;
    row.cfa = CfaRule{abi.fp_reg, 16, false};
    row.ra = RegRule::at_cfa(-8);
    row.fp = RegRule::at_cfa(-16);
    auto back = check::detail::evaluate_row(row, abi, 0x1234);
    REQUIRE(back.has_value());
    auto again = check::detail::rules_from_values(*back, abi);
    REQUIRE(again.has_value());
    CHECK(again->cfa == row.cfa);
    CHECK(again->fp.offset == -16);
}

TEST_CASE("check: why a function has CFI and no SFrame", "[check]") {
    const auto f = open_fixture("bin/gas-2.47/recurse-O2-nofp");
    check::detail::SourceLanguages none(f);
    const Abi& abi = abi_amd64();
    auto row = [](CfaRule cfa, RegRule ra, RegRule fp) {
        cfi::CfiRow r;
        r.begin = 0x1000;
        r.end = 0x1010;
        r.rules.cfa = cfa;
        r.rules.ra = ra;
        r.rules.fp = fp;
        return r;
    };
    const auto plain = row({7, 8, false}, RegRule::at_cfa(-8), RegRule::same_value());
    auto reason = [&](std::vector<cfi::CfiRow> rows, sframe::Version v = sframe::Version::V2) {
        return check::detail::classify_missing(rows, abi, v, none).reason;
    };
    CHECK(reason({plain}) == MissingReason::Unknown);
    CHECK(check::detail::classify_missing({plain}, abi, std::nullopt, none).reason ==
          MissingReason::NoSection);
    CHECK(reason({plain, row({10, 0, false}, RegRule::at_cfa(-8), RegRule::same_value())}) ==
          MissingReason::Drap);
    CHECK(reason({plain, row({6, -8, true}, RegRule::at_cfa(-8), RegRule::same_value())}) ==
          MissingReason::Drap);
    CHECK(reason({plain, row({7, 16, false}, RegRule::at_cfa(-16), RegRule::same_value())}) ==
          MissingReason::RaRule);
    CHECK(reason({plain, row({7, 16, false}, RegRule::at_cfa(-8),
                             RegRule{RegRule::Kind::ValReg, 3, 0, RegRule::Source::Fre})}) ==
          MissingReason::FpRule);
    CHECK(reason({row({7, 8, false}, RegRule::undefined(), RegRule::same_value())}) ==
          MissingReason::Outermost);
    auto expr = plain;
    expr.cfa_state = {false, "CFA is a DWARF expression: DW_OP_breg7 8; DW_OP_deref; DW_OP_deref"};
    const auto m = check::detail::classify_missing({plain, expr}, abi, sframe::Version::V3, none);
    CHECK(m.reason == MissingReason::CfiExpression);
    CHECK(m.detail.find("DW_OP_deref; DW_OP_deref") != std::string::npos);
    auto signal = plain;
    signal.rules.signal_frame = true;
    CHECK(reason({signal}) == MissingReason::SignalFrame);
}

TEST_CASE("check: large SQLite builds agree everywhere but GNU ld's .plt.got", "[check][large]") {
    for (const char* name : {"large/sqlite3-gas-2.47", "large/sqlite3-clang-23"}) {
        INFO(name);
        const auto f = open_fixture(name);
        std::size_t calls = 0;
        std::size_t last_total = 0;
        check::Options o;
        o.progress = [&](std::size_t done, std::size_t total) {
            ++calls;
            CHECK(done <= total);
            last_total = total;
        };
        auto r = check::check(f, o);
        REQUIRE(r.has_value());
        CHECK(calls == last_total);
        CHECK(calls == r->functions.size());
        const auto& both = r->total(Coverage::Both);
        CHECK(both.functions > 2500);
        CHECK(both.breakpoints > 25000);
        CHECK(both.agreeing == both.breakpoints);
        const bool gas = std::string(name).find("gas") != std::string::npos;
        CHECK(r->disagreements() == (gas ? 3U : 0U));      // three 8-byte .plt.got stubs
        CHECK(r->total(Coverage::CfiOnly).functions == 2); // _start and atexit
    }
}

TEST_CASE("check: known writer issues are recognised by their exact shape only", "[check]") {
    const Abi& abi = abi_amd64();
    // zstd 1.5.7 built by GNU as 2.47 (tests/check/large_codebase.sh): in
    // UTIL_createFileNamesTable_fromFileName.cold, `.cfi_restore %rbp`
    // at 0x68c1 left SFrame's FP at CFA-48, the rule of the FDE's first row.
    cfi::CfiRow first;
    first.rules.cfa = CfaRule{7, 224, false};
    first.rules.ra = RegRule::at_cfa(-8);
    first.rules.fp = RegRule::at_cfa(-48);
    cfi::CfiRow restored = first;
    restored.rules.fp = RegRule::same_value(RegRule::Source::Fre);
    Row sframe_row;
    sframe_row.cfa = first.rules.cfa;
    sframe_row.ra = RegRule::at_cfa(-8, RegRule::Source::Header);
    sframe_row.fp = RegRule::at_cfa(-48);
    const std::string text = ".text";
    const std::string got = ".plt.got";
    const check::detail::KnownIssueContext ctx{abi, text, &first};
    CHECK(check::detail::known_issue(ctx, sframe_row, restored)
              .find("GNU as .cfi_restore of the FP") == 0);
    // Another offset than the first row's is not that issue.
    sframe_row.fp.offset = -40;
    CHECK(check::detail::known_issue(ctx, sframe_row, restored).empty());

    // GNU ld's .plt.got row: only in .plt.got, only sp+16 against sp+8.
    Row mask;
    mask.pc_mask = true;
    mask.cfa = CfaRule{7, 16, false};
    mask.ra = RegRule::at_cfa(-8, RegRule::Source::Header);
    cfi::CfiRow stub;
    stub.rules.cfa = CfaRule{7, 8, false};
    stub.rules.ra = RegRule::at_cfa(-8);
    CHECK(check::detail::known_issue({abi, got}, mask, stub).find("GNU ld .plt.got") == 0);
    CHECK(check::detail::known_issue({abi, text}, mask, stub).empty());
    // In .plt the same rows are a real mismatch: SFrame v1's PC-mask FDEs
    // repeat every 16 bytes as v2's do, so no version excuses them.
    const std::string plt = ".plt";
    CHECK(check::detail::known_issue({abi, plt}, mask, stub).empty());
    stub.rules.cfa.offset = 24;
    CHECK(check::detail::known_issue({abi, got}, mask, stub).empty());
}

// SPDX-License-Identifier: MIT
// DWARF CFI to SFrame v3 (sfunwind/convert/from_cfi.hpp): row for row
// against what GNU as 2.47 wrote for the same code, and checked by the
// check engine once put into the file.
#include "../check/elf_splice.hpp"
#include "catch.hpp"
#include "sfunwind/check/check.hpp"
#include "sfunwind/convert/from_cfi.hpp"
#include "sfunwind/elf/elf_file.hpp"
#include "sfunwind/sframe/section.hpp"
#include "sfunwind/sframe/validate.hpp"
#include "support.hpp"

#include <algorithm>
#include <map>
#include <set>
#include <sstream>

using namespace sfunwind;

namespace {

std::filesystem::path fixture(const std::string& rel) {
    return test::source_dir() / "tests/fixtures" / rel;
}

elf::ElfFile open_file(const std::filesystem::path& p) {
    auto f = elf::ElfFile::open(p.string());
    if (!f) FAIL(f.error().message());
    return std::move(*f);
}

convert::Result run_convert(const elf::ElfFile& f, const convert::Options& o = {}) {
    auto r = convert::from_cfi(f, o);
    if (!r) FAIL(r.error().message());
    return std::move(*r);
}

// One decoded FRE, in the terms that matter to an unwinder.
struct FreRow {
    std::uint32_t start;
    CfaRule cfa;
    RegRule ra;
    RegRule fp;
    bool mangled_ra;
    bool outermost;

    bool same_rules(const FreRow& o, bool with_mangling = true) const {
        auto same = [](const RegRule& a, const RegRule& b) {
            return a.kind == b.kind && a.reg == b.reg && a.offset == b.offset;
        };
        if (outermost || o.outermost) return outermost == o.outermost;
        return cfa == o.cfa && same(ra, o.ra) && same(fp, o.fp) &&
               (!with_mangling || mangled_ra == o.mangled_ra);
    }
};

struct FdeRows {
    std::uint32_t size;
    sframe::PcType pc_type;
    std::uint8_t rep_size;
    sframe::FdeType fde_type;
    std::vector<FreRow> fres;
};

std::map<std::uint64_t, FdeRows> decode(const sframe::Section& s) {
    std::map<std::uint64_t, FdeRows> out;
    for (std::uint32_t i = 0; i < s.fde_count(); ++i) {
        auto fde = s.fde(i);
        REQUIRE(fde.has_value());
        auto fres = s.fres(*fde);
        REQUIRE(fres.has_value());
        FdeRows d{fde->size, fde->pc_type, fde->rep_size, fde->fde_type, {}};
        for (std::size_t k = 0; k < fres->size(); ++k) {
            const std::uint64_t next = k + 1 < fres->size() ? (*fres)[k + 1].start : fde->size;
            auto row = s.row(*fde, (*fres)[k], static_cast<std::uint32_t>(k), next);
            REQUIRE(row.has_value());
            d.fres.push_back({(*fres)[k].start, row->cfa, row->ra, row->fp, row->mangled_ra,
                              row->ra.kind == RegRule::Kind::Undefined});
        }
        out[fde->start] = d;
    }
    return out;
}

// FREs that repeat the rules of the one before add nothing for an unwinder.
std::vector<FreRow> without_repeats(const std::vector<FreRow>& fres, bool with_mangling,
                                    std::size_t* dropped) {
    std::vector<FreRow> out;
    for (const auto& f : fres) {
        if (!out.empty() && out.back().same_rules(f, with_mangling)) {
            ++*dropped;
            continue;
        }
        out.push_back(f);
    }
    return out;
}

bool same_fres(const std::vector<FreRow>& a, const std::vector<FreRow>& b, bool with_mangling) {
    if (a.size() != b.size()) return false;
    for (std::size_t i = 0; i < a.size(); ++i)
        if (a[i].start != b[i].start || !a[i].same_rules(b[i], with_mangling)) return false;
    return true;
}

std::vector<std::string> gas_2_47_fixtures() {
    std::vector<std::string> out;
    std::istringstream in(test::read_text(fixture("manifest.tsv")));
    for (std::string line; std::getline(in, line);) {
        if (line.empty() || line[0] == '#') continue;
        std::istringstream cols(line);
        std::string path;
        std::string writer;
        std::getline(cols, path, '\t');
        std::getline(cols, writer, '\t');
        if (writer.rfind("gas-2.47", 0) == 0 && path.find("-noeh") == std::string::npos)
            out.push_back(path);
    }
    return out;
}

} // namespace

TEST_CASE("convert: the output equals GNU as 2.47's section row for row, differences explained",
          "[convert][fixtures]") {
    std::size_t files = 0;
    std::size_t compared_fdes = 0;
    std::size_t gas_repeats = 0;
    std::size_t pac_fdes = 0;
    std::size_t plt_got = 0;
    for (const auto& path : gas_2_47_fixtures()) {
        INFO(path);
        const auto f = open_file(fixture(path));
        auto gas = f.sframe();
        REQUIRE(gas.has_value());
        const auto result = run_convert(f);
        CHECK(result.skipped.empty());
        auto mine = sframe::Section::parse(result.section, 0);
        REQUIRE(mine.has_value());
        // Warnings are allowed: glibc's AArch64 assembly saves x30 without
        // x29, an FRE of two data words the validator remarks on.
        const auto problems = sframe::validate(*mine);
        CHECK(std::none_of(problems.begin(), problems.end(), [](const sframe::Problem& p) {
            return p.severity == sframe::Problem::Severity::Error;
        }));
        const auto g = decode(*gas);
        const auto c = decode(*mine);
        const bool pac = path.find("-pac") != std::string::npos;

        for (const auto& [start, gd] : g) {
            INFO("FDE at " << start);
            auto it = c.find(start);
            REQUIRE(it != c.end());
            const FdeRows& cd = it->second;
            const auto* section = [&]() -> const elf::SectionInfo* {
                for (const auto& s : f.sections())
                    if (start >= s.vaddr && start < s.vaddr + s.size && s.vaddr != 0) return &s;
                return nullptr;
            }();
            if (section != nullptr && section->name == ".plt.got") {
                // GNU ld's PC-mask row says CFA=sp+16; the CFI, and so the
                // conversion, say sp+8 (the check tests name this ld issue).
                ++plt_got;
                CHECK(gd.pc_type == sframe::PcType::Mask);
                REQUIRE(gd.fres.size() == 1);
                CHECK(gd.fres[0].cfa.offset == 16);
                CHECK(cd.pc_type == sframe::PcType::Inc);
                REQUIRE(cd.fres.size() == 1);
                CHECK(cd.fres[0].cfa.offset == 8);
                continue;
            }
            ++compared_fdes;
            CHECK(cd.size == gd.size);
            CHECK(cd.pc_type == gd.pc_type);
            CHECK(cd.rep_size == gd.rep_size);
            CHECK(cd.fde_type == gd.fde_type);
            // GNU as writes an FRE for some .cfi_restore of a register SFrame
            // does not track, repeating the rules before it; the conversion
            // merges rows with the same rules.
            std::size_t dropped = 0;
            const auto gas_rows = without_repeats(gd.fres, !pac, &dropped);
            gas_repeats += dropped;
            // libdw does not expose DW_CFA_AARCH64_negate_ra_state: the
            // conversion has no mangled-RA bits, and no FREs where only the
            // signing state changes.
            if (pac && std::any_of(gd.fres.begin(), gd.fres.end(),
                                   [](const FreRow& r) { return r.mangled_ra; }))
                ++pac_fdes;
            std::size_t none = 0;
            CHECK(same_fres(gas_rows, without_repeats(cd.fres, !pac, &none), !pac));
            CHECK(none == 0);
        }
        // Functions GNU as wrote no SFrame for (crt1.o's _start, static
        // glibc) are converted: exactly those check calls CFI-only, apart
        // from the ones only one table covers in part.
        auto report = check::check(f);
        REQUIRE(report.has_value());
        std::set<std::uint64_t> cfi_only;
        for (const auto& fn : report->functions)
            if (fn.coverage == check::Coverage::CfiOnly) cfi_only.insert(fn.begin);
        std::set<std::uint64_t> extra;
        for (const auto& [start, cd] : c)
            if (!g.count(start)) extra.insert(start);
        CHECK(extra == cfi_only);
        ++files;
    }
    CHECK(files == 27); // every gas-2.47* fixture but the -noeh copies
    CHECK(compared_fdes > 150);
    CHECK(gas_repeats > 10);
    CHECK(pac_fdes == 6);
    CHECK(plt_got == 16);
}

TEST_CASE("convert: GNU as's repeated FRE in recurse() is the only row it has more", "[convert]") {
    const auto f = open_file(fixture("bin/gas-2.47/recurse-O2-nofp"));
    auto gas = f.sframe();
    REQUIRE(gas.has_value());
    const auto c = decode(*sframe::Section::parse(run_convert(f).section, 0));
    const auto g = decode(*gas);
    const auto& gr = g.at(0x1090).fres;
    const auto& cr = c.at(0x1090).fres;
    REQUIRE(gr.size() == cr.size() + 1);
    // gas's last FRE, at the final `.cfi_restore r14` (0x114d), repeats the one before.
    CHECK(gr.back().start == 0xbd);
    CHECK(gr.back().same_rules(gr[gr.size() - 2]));
}

TEST_CASE("convert: the x86-64 PLT becomes PLT0 plus a PC-mask FDE, as GNU ld writes it",
          "[convert]") {
    const auto f = open_file(fixture("bin/gas-2.47/plt-O2-nofp/plt"));
    const auto r = run_convert(f);
    CHECK(r.pc_mask == 1);
    auto s = sframe::Section::parse(r.section, 0);
    REQUIRE(s.has_value());
    const auto c = decode(*s);
    const auto& plt0 = c.at(0x1020);
    CHECK(plt0.pc_type == sframe::PcType::Inc);
    CHECK(plt0.size == 16);
    REQUIRE(plt0.fres.size() == 2);
    CHECK(plt0.fres[1].start == 6);
    CHECK(plt0.fres[1].cfa.offset == 24);
    const auto& entries = c.at(0x1030);
    CHECK(entries.pc_type == sframe::PcType::Mask);
    CHECK(entries.rep_size == 16);
    CHECK(entries.size == 64);
    REQUIRE(entries.fres.size() == 2);
    CHECK(entries.fres[0].start == 0);
    CHECK(entries.fres[0].cfa == CfaRule{7, 8, false});
    CHECK(entries.fres[1].start == 11);
    CHECK(entries.fres[1].cfa == CfaRule{7, 16, false});

    convert::Options o;
    o.plt = false;
    const auto without = run_convert(f, o);
    REQUIRE(without.skipped.size() == 1);
    CHECK(without.skipped[0].begin == 0x1020);
    CHECK(without.skipped[0].reason.find("DWARF expression") != std::string::npos);
}

TEST_CASE("convert: a DRAP function GNU as 2.40 skipped becomes a flexible FDE", "[convert]") {
    const auto f = open_file(fixture("bin/gas-2.40/realign-O2-nofp"));
    const elf::Symbol* drap = nullptr;
    for (const auto& s : f.function_symbols())
        if (s.name == "uses_drap") drap = &s;
    REQUIRE(drap != nullptr);
    const auto r = run_convert(f);
    CHECK(r.flexible == 1);
    auto s = sframe::Section::parse(r.section, 0);
    REQUIRE(s.has_value());
    const auto c = decode(*s);
    const auto& d = c.at(drap->value);
    CHECK(d.fde_type == sframe::FdeType::Flex);
    // CFA = r10 after `lea 8(%rsp),%r10`, then *(rbp-8) once rbp is set up.
    REQUIRE(d.fres.size() >= 3);
    CHECK(d.fres[1].cfa == CfaRule{10, 0, false});
    CHECK(std::any_of(d.fres.begin(), d.fres.end(), [](const FreRow& x) {
        return x.cfa == CfaRule{6, -8, true};
    }));
}

TEST_CASE("convert: added like objcopy --add-section, the section agrees with the CFI everywhere",
          "[convert]") {
    for (const char* path :
         {"bin/gas-2.47/plt-O2-nofp/plt", "bin/gas-2.40/realign-O2-nofp",
          "bin/clang-23/cxx_exceptions-O2-nofp", "bin/gas-2.47-aarch64/recurse-O2-fp-static",
          "bin/gas-2.47-s390x/sighandler-O2-nofp-static"}) {
        INFO(path);
        const auto f = open_file(fixture(path));
        // Address 0, as objcopy --add-section leaves it: PC-relative starts
        // are computed against the section's own (file) address.
        const auto r = run_convert(f);
        auto image = test::with_sframe(f, r.section, 0);
        REQUIRE(image.has_value());
        auto g = elf::ElfFile::from_bytes(*image, path);
        REQUIRE(g.has_value());
        auto where = g->find_sframe();
        REQUIRE(where.has_value());
        CHECK(where->vaddr == 0);
        auto report = check::check(*g);
        REQUIRE(report.has_value());
        CHECK(report->sframe.rfind("SFrame v3, sorted, PC-relative starts", 0) == 0);
        CHECK(report->disagreements() == 0);
        CHECK(report->total(check::Coverage::CfiOnly).functions == 0);
        CHECK(report->total(check::Coverage::SframeOnly).functions == 0);
        CHECK(report->unreachable.empty());
        CHECK(report->total(check::Coverage::Both).breakpoints >= 20);
    }
}

TEST_CASE("convert: starts are stored for the address the section will have", "[convert]") {
    const auto f = open_file(fixture("bin/gas-2.47/recurse-O2-nofp"));
    for (bool pcrel : {true, false}) {
        INFO("pcrel " << pcrel);
        convert::Options o;
        o.section_vaddr = 0x5000;
        o.pcrel = pcrel;
        const auto r = run_convert(f, o);
        auto at = sframe::Section::parse(r.section, 0x5000);
        REQUIRE(at.has_value());
        CHECK(at->header().pcrel() == pcrel);
        auto first = at->fde(0);
        REQUIRE(first.has_value());
        CHECK(first->start == r.fdes.front().start);
        // Read as if it sat elsewhere, every start is off by the difference.
        auto elsewhere = sframe::Section::parse(r.section, 0x6000);
        REQUIRE(elsewhere.has_value());
        CHECK(elsewhere->fde(0)->start == r.fdes.front().start + 0x1000);
    }
}

TEST_CASE("convert: a function whose CFI SFrame cannot hold is left out, with the reason",
          "[convert]") {
    const auto f = open_file(test::source_dir() / "tests/unit/data/x86_64-pie");
    const auto r = run_convert(f);
    const auto it = std::find_if(r.skipped.begin(), r.skipped.end(),
                                 [](const convert::Skipped& s) { return s.name == "cfa_exprs"; });
    REQUIRE(it != r.skipped.end());
    CHECK(it->reason.find("DWARF expression") != std::string::npos);
    CHECK(std::none_of(r.fdes.begin(), r.fdes.end(),
                       [&](const sframe::FdeSpec& d) { return d.start == it->begin; }));
}

TEST_CASE("convert: no SFrame ABI for ppc64, no CFI at all", "[convert]") {
    auto noeh = elf::ElfFile::open(fixture("bin/gas-2.47/recurse-O2-nofp-noeh").string());
    REQUIRE(noeh.has_value());
    auto r = convert::from_cfi(*noeh);
    REQUIRE(!r.has_value());
    CHECK(r.error().code() == Errc::NotFound);
    CHECK(!sframe::abi_arch_of(abi_ppc64(ByteOrder::Big)).has_value());
    CHECK(*sframe::abi_arch_of(abi_s390x()) == sframe::AbiArch::S390xBig);
    CHECK(sframe::abi_of(sframe::AbiArch::AArch64Big) == &abi_aarch64(ByteOrder::Big));
}

// SPDX-License-Identifier: MIT
// write_debug_frame with the callee-saved rules of each function
// (DebugFrameOptions::callee_saved, from callee_saved::debug_frame_rules):
// read back with libdw (CfiTable), every instruction of every function has
// exactly the rules FunctionRules::at() gives, and the SFrame rows' CFA, RA
// and FP rules are unchanged by the extra rows.
#include "catch.hpp"
#include "open_elf.hpp"
#include "sfunwind/callee_saved/debug_frame_rules.hpp"
#include "sfunwind/cfi/cfi_table.hpp"
#include "sfunwind/cfi/dwarf_writer.hpp"
#include "sfunwind/elf/debug_file_writer.hpp"
#include "sfunwind/elf/elf_file.hpp"
#include "support.hpp"

#include <filesystem>
#include <sstream>
#include <unistd.h>

using namespace sfunwind;

namespace {

// The debug file of `program` with `frame` as its .debug_frame, removed at
// the end of the test.
class DebugFile {
  public:
    DebugFile(const elf::ElfFile& program, const std::vector<std::uint8_t>& frame,
              const std::string& name)
        : path_((std::filesystem::temp_directory_path() /
                 ("sfunwind-dwarf-cs-" + std::to_string(::getpid()) + "-" + name))
                    .string()) {
        elf::DebugFileContents contents;
        contents.debug_frame = frame;
        auto written = elf::write_debug_file(program, contents, path_);
        if (!written) FAIL(written.error().message());
    }
    DebugFile(const DebugFile&) = delete;
    DebugFile& operator=(const DebugFile&) = delete;
    ~DebugFile() { std::remove(path_.c_str()); }
    const std::string& path() const { return path_; }

  private:
    std::string path_;
};

callee_saved::RowAt rows_of(const sframe::Section& section) {
    return callee_saved::rows_from(&section);
}

cfi::DebugFrameOptions with_analysis(const elf::ElfFile& program, const sframe::Section& section) {
    cfi::DebugFrameOptions options;
    options.callee_saved = callee_saved::debug_frame_rules(
        section.abi(),
        [&program](std::uint64_t vaddr, std::uint64_t size) {
            return program.loaded_bytes(vaddr, size);
        },
        rows_of(section));
    return options;
}

std::vector<std::string> amd64_fixtures() {
    std::vector<std::string> out;
    std::istringstream manifest(
        test::read_text(test::source_dir() / "tests/fixtures/manifest.tsv"));
    for (std::string line; std::getline(manifest, line);) {
        if (line.empty() || line[0] == '#') continue;
        std::vector<std::string> fields;
        std::istringstream in(line);
        for (std::string f; std::getline(in, f, '\t');)
            fields.push_back(f);
        if (fields.size() > 3 && fields[3] == "x86-64") out.push_back(fields[0]);
    }
    return out;
}

bool same_kind_and_offset(const RegRule& a, const RegRule& b) {
    if (a.kind != b.kind) return false;
    return a.kind != RegRule::Kind::AtCfa || a.offset == b.offset;
}

struct Counts {
    std::size_t functions = 0;
    std::size_t pcs = 0;
    std::size_t saved = 0; // AtCfa rules read back
    std::size_t same = 0;  // SameValue rules read back
    std::size_t undefined = 0;
};

void check_file(const std::string& rel, Counts& counts) {
    const elf::ElfFile program =
        test::open_elf((test::source_dir() / "tests/fixtures" / rel).string());
    auto section = program.sframe();
    if (!section) return; // no SFrame (a shared library of lld)
    // What the LLDB plugin writes (module_debug_frame_rules), read back as
    // the analysis GDB's and the CLI's ModuleRules make gives it: the same
    // facts (module_facts).
    cfi::DebugFrameOptions options;
    options.callee_saved = callee_saved::module_debug_frame_rules(program, *section);
    auto frame = cfi::write_debug_frame(*section, options);
    REQUIRE(frame);
    const callee_saved::CodeAt code_at = [&program](std::uint64_t vaddr, std::uint64_t size) {
        return program.loaded_bytes(vaddr, size);
    };
    const callee_saved::CodeFacts facts =
        callee_saved::module_facts(program, section->abi(), code_at, rows_of(*section));
    const DebugFile debug(program, frame->bytes, std::to_string(counts.functions));
    const elf::ElfFile copy = test::open_elf(debug.path());
    auto table = cfi::CfiTable::open(copy, cfi::Source::DebugFrame);
    REQUIRE(table);
    const auto regs = untracked_callee_saved(section->abi());
    for (const auto& fn : frame->functions) {
        if (fn.pc_mask) continue;
        auto code = program.loaded_bytes(fn.start, fn.size);
        if (!code) continue;
        auto rules = callee_saved::FunctionRules::analyse(section->abi(), fn.start, *code,
                                                          rows_of(*section), {}, facts);
        if (!rules) continue;
        ++counts.functions;
        std::vector<RegRule> expected(regs.size());
        for (const std::uint64_t pc : rules->instruction_starts()) {
            if (pc >= fn.start + fn.size) break;
            INFO(rel << " pc " << to_hex(pc));
            rules->at(pc, expected);
            auto row = table->at(pc);
            REQUIRE(row);
            auto sframe_row = section->lookup(pc);
            REQUIRE(sframe_row);
            CHECK(row->rules.cfa == sframe_row->cfa);
            CHECK(same_kind_and_offset(row->rules.ra, sframe_row->ra));
            CHECK(same_kind_and_offset(row->rules.fp, sframe_row->fp));
            REQUIRE(row->callee_saved.size() == regs.size());
            for (std::size_t i = 0; i < regs.size(); ++i) {
                const auto& got = row->callee_saved[i];
                INFO("register " << regs[i]);
                CHECK(got.reg == regs[i]);
                CHECK(got.state.representable);
                CHECK(same_kind_and_offset(got.rule, expected[i]));
                counts.saved += got.rule.kind == RegRule::Kind::AtCfa ? 1U : 0U;
                counts.same += got.rule.kind == RegRule::Kind::SameValue ? 1U : 0U;
                counts.undefined += got.rule.kind == RegRule::Kind::Undefined ? 1U : 0U;
            }
            ++counts.pcs;
        }
    }
}

// A one-function SFrame section's debug frame, with the callback's rules.
std::vector<std::uint8_t> plt_frame(const cfi::CalleeSavedRules& rules) {
    const elf::ElfFile program = test::open_elf(
        (test::source_dir() / "tests/fixtures/bin/gas-2.47/plt-O2-nofp-noeh/plt").string());
    auto section = program.sframe();
    REQUIRE(section);
    cfi::DebugFrameOptions options;
    options.callee_saved = rules;
    auto frame = cfi::write_debug_frame(*section, options);
    REQUIRE(frame);
    return frame->bytes;
}

} // namespace

TEST_CASE("write_debug_frame: callee-saved rules read back as FunctionRules gives them",
          "[callee_saved][fixtures]") {
    Counts counts;
    std::size_t files = 0;
    for (const auto& rel : amd64_fixtures()) {
        check_file(rel, counts);
        ++files;
    }
    CHECK(files > 40);
    CHECK(counts.functions > 300);
    CHECK(counts.saved > 1000);
    CHECK(counts.same > 1000);
    WARN(counts.pcs << " PCs of " << counts.functions << " functions: " << counts.saved
                    << " rules at CFA+N, " << counts.same << " same value, " << counts.undefined
                    << " undefined");
}

TEST_CASE("write_debug_frame: no callee-saved rules writes what no callback writes") {
    const auto plain = plt_frame({});
    CHECK(plt_frame([](std::uint64_t, std::uint64_t) {
              return std::vector<cfi::CalleeSavedChange>{};
          }) == plain);
    // Changes the writer cannot place are a caller's mistake: ignored whole.
    const std::size_t n = untracked_callee_saved(abi_amd64()).size();
    CHECK(plt_frame([n](std::uint64_t start, std::uint64_t size) {
              return std::vector<cfi::CalleeSavedChange>{
                  {start + size, std::vector<RegRule>(n, RegRule::same_value())}};
          }) == plain);
    CHECK(plt_frame([](std::uint64_t start, std::uint64_t) {
              return std::vector<cfi::CalleeSavedChange>{
                  {start, std::vector<RegRule>(1, RegRule::same_value())}};
          }) == plain);
    // Longer than any ABI's list: its length alone is kept, and refused.
    CHECK(plt_frame([](std::uint64_t start, std::uint64_t) {
              return std::vector<cfi::CalleeSavedChange>{
                  {start, std::vector<RegRule>(max_untracked_callee_saved + 1,
                                               RegRule::same_value())}};
          }) == plain);
    CHECK(plt_frame([n](std::uint64_t start, std::uint64_t) {
              return std::vector<cfi::CalleeSavedChange>{
                  {start + 1, std::vector<RegRule>(n, RegRule::same_value())},
                  {start + 1, std::vector<RegRule>(n, RegRule::same_value())}};
          }) == plain);
}

TEST_CASE("write_debug_frame: callee-saved slots that are not a multiple of 8") {
    // DW_CFA_offset factors by the CIE's data alignment (-8); a slot at
    // CFA-12 is written as an expression (DWARF 5 section 6.4.2.3,
    // DW_CFA_expression: DW_OP_consts -12; DW_OP_plus) that reads back as
    // CFA-12.
    const elf::ElfFile program = test::open_elf(
        (test::source_dir() / "tests/fixtures/bin/gas-2.47/plt-O2-nofp-noeh/plt").string());
    auto section = program.sframe();
    REQUIRE(section);
    const auto regs = untracked_callee_saved(section->abi());
    std::uint64_t first = 0;
    cfi::DebugFrameOptions options;
    options.callee_saved = [&](std::uint64_t start, std::uint64_t) {
        if (first == 0) first = start;
        if (start != first) return std::vector<cfi::CalleeSavedChange>{};
        std::vector<RegRule> a(regs.size(), RegRule::same_value());
        a[0] = RegRule::at_cfa(-12);
        a[1] = RegRule::at_cfa(-24);
        a[2] = RegRule::at_cfa(-1024);
        std::vector<RegRule> b(regs.size(), RegRule::undefined());
        b[4] = RegRule::at_cfa(-16);
        return std::vector<cfi::CalleeSavedChange>{{start, a}, {start + 1, b}};
    };
    auto frame = cfi::write_debug_frame(*section, options);
    REQUIRE(frame);
    REQUIRE(first != 0);
    const DebugFile debug(program, frame->bytes, "misaligned");
    const elf::ElfFile copy = test::open_elf(debug.path());
    auto table = cfi::CfiTable::open(copy, cfi::Source::DebugFrame);
    REQUIRE(table);
    auto at0 = table->at(first);
    REQUIRE(at0);
    REQUIRE(at0->callee_saved.size() == regs.size());
    CHECK(at0->callee_saved[0].rule.kind == RegRule::Kind::AtCfa);
    CHECK(at0->callee_saved[0].rule.offset == -12);
    CHECK(at0->callee_saved[1].rule.offset == -24);
    CHECK(at0->callee_saved[2].rule.offset == -1024);
    CHECK(at0->callee_saved[3].rule.kind == RegRule::Kind::SameValue);
    auto at1 = table->at(first + 1);
    REQUIRE(at1);
    CHECK(at1->callee_saved[0].rule.kind == RegRule::Kind::Undefined);
    CHECK(at1->callee_saved[4].rule.kind == RegRule::Kind::AtCfa);
    CHECK(at1->callee_saved[4].rule.offset == -16);
    // Every FDE is still written, the others as without the rules.
    const auto plain = cfi::write_debug_frame(*section);
    REQUIRE(plain);
    REQUIRE(frame->functions.size() == plain->functions.size());
    for (std::size_t i = 0; i < frame->functions.size(); ++i) {
        const bool changed = frame->functions[i].start == first;
        CHECK(frame->functions[i].callee_saved_changes == (changed ? 2U : 0U));
        if (!changed) CHECK(frame->functions[i].rows == plain->functions[i].rows);
    }
}

TEST_CASE("write_debug_frame: the analysis run ahead on threads writes the same bytes") {
    // SQLite (gas 2.47): 2,935 FDEs, many times the window the threads run ahead in.
    const elf::ElfFile program =
        test::open_elf((test::source_dir() / "tests/fixtures/large/sqlite3-gas-2.47").string());
    auto section = program.sframe();
    REQUIRE(section);
    const auto one = cfi::write_debug_frame(*section, with_analysis(program, *section));
    REQUIRE(one);
    std::vector<callee_saved::FunctionRange> functions;
    std::size_t changes = 0;
    for (const auto& fn : one->functions) {
        if (!fn.pc_mask) functions.push_back({fn.start, fn.size});
        changes += fn.callee_saved_changes;
    }
    REQUIRE(changes > 1000);
    REQUIRE(functions.size() > 2000);
    const auto code = [&program](std::uint64_t vaddr, std::uint64_t size) {
        return program.loaded_bytes(vaddr, size);
    };
    for (const unsigned threads : {1U, 3U}) { // 2: `ahead` below
        INFO("threads " << threads);
        cfi::DebugFrameOptions options;
        options.callee_saved = callee_saved::debug_frame_rules(
            section->abi(), code, rows_of(*section), functions, threads);
        const auto many = cfi::write_debug_frame(*section, options);
        REQUIRE(many);
        CHECK(many->bytes == one->bytes);
    }
    // Asked out of the listed order, again, and for a function not listed:
    // each answer is still the function's own.
    auto ahead =
        callee_saved::debug_frame_rules(section->abi(), code, rows_of(*section), functions, 2);
    auto alone = callee_saved::debug_frame_rules(section->abi(), code, rows_of(*section));
    for (const std::size_t i :
         {std::size_t{1500}, std::size_t{3}, std::size_t{1501}, std::size_t{0}, std::size_t{3}}) {
        const auto& f = functions[i];
        CHECK(ahead(f.start, f.size).size() == alone(f.start, f.size).size());
    }
    const auto& last = functions.back();
    CHECK(ahead(last.start, last.size / 2).size() == alone(last.start, last.size / 2).size());
}

// SPDX-License-Identifier: MIT
// PowerPC64 traceback tables: the decoder on hand-made tables (every field,
// both byte orders, every bounds and consistency check), and the index, the
// frame analysis and the rows on the fixtures of tests/fixtures/ppc64 (GCC 12
// cross compilers, -mtraceback=part and =full, static glibc), checked against
// their symbol tables and their DWARF CFI.
#include "../../core/src/ppc64/instruction.hpp"
#include "catch.hpp"
#include "fake_memory.hpp"
#include "sfunwind/cfi/cfi_table.hpp"
#include "sfunwind/elf/elf_file.hpp"
#include "sfunwind/ppc64/cfi_check.hpp"
#include "sfunwind/ppc64/index.hpp"
#include "sfunwind/unwind/backtrace.hpp"
#include "sfunwind/unwind/step.hpp"
#include "support.hpp"

#include <algorithm>
#include <array>
#include <cstdio>
#include <map>
#include <random>
#include <set>
#include <string>
#include <string_view>
#include <vector>

using namespace sfunwind;
using namespace sfunwind::ppc64;

namespace {

// ---------------------------------------------------------------- hand-made tables

// Builds a table the way GCC emits it: zero word, the mandatory bytes in
// ABI order, then target-endian optional fields.
struct TableBytes {
    ByteOrder order;
    std::vector<std::uint8_t> bytes;

    void put(std::uint64_t v, unsigned n) {
        for (unsigned i = 0; i < n; ++i) {
            const unsigned shift = order == ByteOrder::Little ? 8 * i : 8 * (n - 1 - i);
            bytes.push_back(static_cast<std::uint8_t>((v >> shift) & 0xffU));
        }
    }
    void raw(std::initializer_list<std::uint8_t> b) { bytes.insert(bytes.end(), b); }
    ByteView view() const { return ByteView(bytes, order); }
};

// `code` bytes of (non-zero) instructions, then a table with every field.
TableBytes full_table(ByteOrder order, std::uint32_t code) {
    TableBytes t{order, {}};
    for (std::uint32_t i = 0; i < code / 4; ++i)
        t.put(0x60000000, 4); // nop
    t.put(0, 4);
    // version 0, lang 9 (C++); has_tboff|has_ctl|fp_present = 0x20|0x08|0x02;
    // int_handl|name_present|uses_alloca|saves_cr|saves_lr = 0x80|0x40|0x20|0x02|0x01;
    // stores_bc + fp_saved 3; gpr_saved 5; fixedparms 2; floatparms 1, parmsonstk.
    t.raw({0, 9, 0x2a, 0xe3, 0x83, 0x05, 2, 0x03});
    t.put(0x60000000, 4); // parminfo: i, d, i (0 11 0 ...)
    t.put(code, 4);       // tb_offset
    t.put(0xfffffffe, 4); // hand_mask -2
    t.put(2, 4);          // ctl_info
    t.put(0x10, 4);       // ctl_info_disp
    t.put(0xfffffff0, 4);
    t.put(7, 2); // name_len
    for (char c : std::string("fn::foo"))
        t.bytes.push_back(static_cast<std::uint8_t>(c));
    t.raw({30}); // alloca_reg
    return t;
}

} // namespace

TEST_CASE("ppc64: a table with every optional field decodes in both byte orders", "[ppc64]") {
    for (ByteOrder order : {ByteOrder::Big, ByteOrder::Little}) {
        const TableBytes t = full_table(order, 0x40);
        auto d = decode_table(t.view(), 0x10000000, 0x40);
        REQUIRE(d);
        CHECK(d->address == 0x10000040);
        CHECK(d->version == 0);
        CHECK(d->lang == 9);
        CHECK(language_name(d->lang) == "C++");
        CHECK((!d->globalink && !d->is_eprol && d->has_tboff && !d->int_proc && d->has_ctl &&
               !d->tocless && d->fp_present && !d->log_abort));
        CHECK((d->int_handl && d->name_present && d->uses_alloca && d->cl_dis_inv == 0 &&
               d->saves_cr && d->saves_lr));
        CHECK(
            (d->stores_bc && !d->fixup && d->fp_saved == 3 && d->spare3 == 0 && d->gpr_saved == 5));
        CHECK((d->fixedparms == 2 && d->floatparms == 1 && d->parmsonstk));
        CHECK(d->parminfo == 0x60000000U);
        CHECK(d->tb_offset == 0x40U);
        CHECK(d->function_start() == 0x10000000U);
        CHECK(d->hand_mask == -2);
        CHECK(d->ctl_info == 2U);
        CHECK(d->ctl_info_disp == std::vector<std::int32_t>{0x10, -16});
        CHECK(d->name == "fn::foo");
        CHECK(d->alloca_reg == 30);
        CHECK_FALSE(d->mandatory_reversed);
        CHECK(d->size == t.bytes.size() - 0x40);
        CHECK_FALSE(d->frameless());
    }
}

TEST_CASE("ppc64: every truncation of a table is an error with its address", "[ppc64]") {
    const TableBytes t = full_table(ByteOrder::Big, 8);
    for (std::size_t n = 8; n < t.bytes.size(); ++n) {
        const std::span<const std::uint8_t> cut(t.bytes.data(), n);
        auto d = decode_table(ByteView(cut, ByteOrder::Big), 0x2000, 8);
        REQUIRE_FALSE(d);
        CHECK(d.error().code() == Errc::Truncated);
        CHECK(d.error().where() >= 0x2008);
        CHECK(d.error().what().find("traceback table") != std::string::npos);
    }
    CHECK(decode_table(t.view(), 0x2000, 8));
}

TEST_CASE("ppc64: inconsistent tables are rejected and say why", "[ppc64]") {
    struct Case {
        std::size_t at; // offset from the zero word
        std::uint8_t value;
        const char* says;
    };
    const std::vector<Case> cases = {
        {0, 1, "zero word"},
        {4, 1, "version"},
        {5, 0x20, "lang"},
        {6, 0x2b, "log_abort"},
        {7, 0xe7, "cl_dis_inv"},
        {9, 0x45, "spare3"},
        {8, 0x93, "fp_saved"},
        {9, 0x13, "gpr_saved"},
        {19, 0x41, "tb_offset"}, // 0x40 -> 0x41, not a multiple of 4 (big-endian low byte)
        {41, 'f' | 0x80, "name byte"},
        {45, 32, "alloca_reg"},
    };
    for (const auto& c : cases) {
        TableBytes t = full_table(ByteOrder::Big, 0x40);
        t.bytes.at(0x40 + c.at) = c.value;
        auto d = decode_table(t.view(), 0x10000000, 0x40);
        INFO(c.says);
        REQUIRE_FALSE(d);
        CHECK(d.error().code() == Errc::Malformed);
        CHECK(d.error().where() == 0x10000040);
        CHECK(d.error().what().find(c.says) != std::string::npos);
    }
    // tb_offset 0, and one that reaches before the code.
    for (std::uint32_t bad : {0U, 0x44U}) {
        TableBytes t = full_table(ByteOrder::Big, 0x40);
        for (unsigned i = 0; i < 4; ++i)
            t.bytes.at(0x40 + 16 + i) = static_cast<std::uint8_t>(bad >> (8 * (3 - i)));
        auto d = decode_table(t.view(), 0x10000000, 0x40);
        REQUIRE_FALSE(d);
        CHECK(d.error().what().find("tb_offset") != std::string::npos);
    }
    // Limits: name_len and ctl_info.
    {
        DecodeLimits small;
        small.max_name_len = 6;
        auto d = decode_table(full_table(ByteOrder::Little, 0x40).view(), 0, 0x40, small);
        REQUIRE_FALSE(d);
        CHECK(d.error().what().find("name_len 7") != std::string::npos);
        small = {};
        small.max_ctl_info = 1;
        d = decode_table(full_table(ByteOrder::Little, 0x40).view(), 0, 0x40, small);
        REQUIRE_FALSE(d);
        CHECK(d.error().what().find("ctl_info 2") != std::string::npos);
    }
}

TEST_CASE("ppc64: glibc's byte-reversed mandatory doubleword on little-endian", "[ppc64]") {
    // glibc's TRACEBACK macro: `.quad` 0x000c244000000000 (Assembly, has_tboff,
    // tocless, name_present), then tb_offset, name_len and the name.
    TableBytes t{ByteOrder::Little, {}};
    t.put(0x7c0802a6, 4); // mflr r0
    t.put(0, 4);
    t.put(0x000c244000000000ULL, 8);
    t.put(4, 4);
    t.put(3, 2);
    t.raw({'f', 'o', 'o'});
    auto d = decode_table(t.view(), 0x1000, 4);
    REQUIRE(d);
    CHECK(d->mandatory_reversed);
    CHECK(d->lang == static_cast<std::uint8_t>(Language::Assembly));
    CHECK((d->has_tboff && d->tocless && d->name_present && !d->stores_bc && !d->fixup));
    CHECK(d->tb_offset == 4U);
    CHECK(d->name == "foo");
    // The same bytes on a big-endian target are not a table: fixup would be
    // set and gpr_saved 36.
    TableBytes be = t;
    be.order = ByteOrder::Big;
    CHECK_FALSE(decode_table(be.view(), 0x1000, 4));
}

TEST_CASE("ppc64: random bytes never crash the decoder or the frame analysis", "[ppc64]") {
    std::mt19937 rng(12345);
    std::uniform_int_distribution<int> byte(0, 255);
    std::size_t decoded = 0;
    for (int round = 0; round < 3000; ++round) {
        std::vector<std::uint8_t> b(static_cast<std::size_t>(8 + round % 120));
        for (auto& x : b)
            x = static_cast<std::uint8_t>(round % 3 == 0 ? byte(rng) & 0x0f : byte(rng));
        for (std::size_t i = 4; i < 8; ++i)
            b[i] = 0;
        const ByteOrder order = round % 2 ? ByteOrder::Big : ByteOrder::Little;
        auto d = decode_table(ByteView(b, order), 0x100000, 4);
        if (!d) continue;
        ++decoded;
        CHECK(d->size <= b.size() - 4);
        // Treat the bytes before the table as a function: the analysis must
        // end on any instruction words.
        auto a = FrameAnalysis::run(ByteView(b, order), 0x100000, 0x100000, *d);
        REQUIRE(a);
        CHECK(a->instructions() == 1);
    }
    CHECK(decoded > 0);
}

// ---------------------------------------------------------------- frame analysis

namespace {

// Power ISA encodings of the instructions the synthetic functions use.
constexpr std::uint32_t d_form(unsigned op, unsigned rt, unsigned ra, std::int32_t d) {
    return (op << 26) | (rt << 21) | (ra << 16) | (static_cast<std::uint32_t>(d) & 0xffffU);
}
constexpr std::uint32_t x_form(unsigned rs, unsigned ra, unsigned rb, unsigned xo) {
    return (31U << 26) | (rs << 21) | (ra << 16) | (rb << 11) | (xo << 1);
}
constexpr std::uint32_t mflr(unsigned r) {
    return 0x7c0802a6U | (r << 21);
}
constexpr std::uint32_t mtlr(unsigned r) {
    return 0x7c0803a6U | (r << 21);
}
constexpr std::uint32_t std_(unsigned rs, std::int32_t d, unsigned ra = 1) {
    return d_form(62, rs, ra, d) & ~3U;
}
constexpr std::uint32_t stdu(std::int32_t d) {
    return (d_form(62, 1, 1, d) & ~3U) | 1U;
}
constexpr std::uint32_t ld(unsigned rt, std::int32_t d, unsigned ra = 1) {
    return d_form(58, rt, ra, d) & ~3U;
}
constexpr std::uint32_t addi(unsigned rt, unsigned ra, std::int32_t d) {
    return d_form(14, rt, ra, d);
}
constexpr std::uint32_t mr(unsigned ra, unsigned rs) {
    return x_form(rs, ra, rs, 444);
}
constexpr std::uint32_t stdux(unsigned rs, unsigned ra, unsigned rb) {
    return x_form(rs, ra, rb, 181);
}
constexpr std::uint32_t b(std::int32_t disp, bool link = false) {
    return (18U << 26) | (static_cast<std::uint32_t>(disp) & 0x03fffffcU) | (link ? 1U : 0U);
}
constexpr std::uint32_t beq(std::int32_t disp) {
    return 0x41820000U | (static_cast<std::uint32_t>(disp) & 0xfffcU);
}
constexpr std::uint32_t blr = 0x4e800020U, bctr = 0x4e800420U, nop = 0x60000000U;

struct Synthetic {
    TableBytes bytes;
    TracebackTable table;
};

// Instructions at 0x1000, then a GCC-style table with the given mandatory bytes.
Synthetic synthetic(ByteOrder order, const std::vector<std::uint32_t>& code,
                    std::array<std::uint8_t, 8> mandatory,
                    std::optional<std::uint8_t> alloca_reg = std::nullopt) {
    Synthetic s{{order, {}}, {}};
    for (auto w : code)
        s.bytes.put(w, 4);
    s.bytes.put(0, 4);
    for (auto m : mandatory)
        s.bytes.bytes.push_back(m);
    if (alloca_reg) s.bytes.raw({*alloca_reg});
    auto t = decode_table(s.bytes.view(), 0x1000, code.size() * 4);
    REQUIRE(t);
    s.table = *t;
    return s;
}

Row rules_at(const FrameAnalysis& a, const TracebackTable& t, std::uint64_t pc) {
    Row r;
    apply_rules(a.state_at(pc), t, r);
    return r;
}

} // namespace

TEST_CASE("ppc64: frame analysis through prologue, alloca and epilogue", "[ppc64][analysis]") {
    const std::vector<std::uint32_t> code = {
        mflr(0),         // 0x1000
        std_(31, -8),    // 0x1004
        std_(0, 16),     // 0x1008
        stdu(-64),       // 0x100c
        mr(31, 1),       // 0x1010  frame pointer
        ld(10, 0),       // 0x1014
        stdux(10, 1, 9), // 0x1018  alloca
        b(0x100, true),  // 0x101c  bl (outside)
        addi(1, 31, 64), // 0x1020  pop through the frame pointer
        ld(0, 16),       // 0x1024
        mtlr(0),         // 0x1028
        ld(31, -8),      // 0x102c
        blr,             // 0x1030
    };
    // stores_bc, saves_lr, uses_alloca + name_present off; gpr_saved 1; alloca_reg 31.
    for (ByteOrder order : {ByteOrder::Big, ByteOrder::Little}) {
        const Synthetic s = synthetic(order, code, {0, 0, 0, 0x21, 0x80, 1, 0, 0}, 31);
        auto a = FrameAnalysis::run(s.bytes.view(), 0x1000, 0x1000, s.table);
        REQUIRE(a);
        REQUIRE(a->instructions() == code.size());
        const RegRule lr_slot = RegRule::at_cfa(16), r31_slot = RegRule::at_cfa(-8),
                      same = RegRule::same_value(RegRule::Source::Fre);
        struct Expect {
            std::uint64_t pc;
            bool deref;
            RegRule ra;
            RegRule fp;
        };
        const std::vector<Expect> expect = {
            {0x1000, false, same, same},        {0x1004, false, same, same},
            {0x1008, false, same, r31_slot},    {0x100c, false, lr_slot, r31_slot},
            {0x1010, true, lr_slot, r31_slot},  {0x1018, true, lr_slot, r31_slot},
            {0x101c, true, lr_slot, r31_slot},  {0x1020, true, lr_slot, r31_slot},
            {0x1024, false, lr_slot, r31_slot}, {0x1030, false, lr_slot, r31_slot},
        };
        for (const auto& e : expect) {
            INFO(e.pc);
            const Row r = rules_at(*a, s.table, e.pc);
            CHECK(r.cfa.deref == e.deref);
            CHECK((r.cfa.reg == 1 && r.cfa.offset == 0));
            CHECK(r.ra == e.ra);
            CHECK(r.fp == e.fp);
            CHECK(r.topmost_only == (e.ra.kind == RegRule::Kind::SameValue));
            CHECK(a->origin_at(e.pc) == FrameAnalysis::Origin::Code);
        }
        CHECK(a->state_at(0x1004).ra_gprs == 1U); // mflr r0
        CHECK(a->state_at(0x1014).frame_size == 64U);
        CHECK(a->state_at(0x1014).frame_copies == 1U << 31); // mr r31,r1
        CHECK_FALSE(a->state_at(0x101c).frame_size);         // after alloca
        CHECK(a->state_at(0x101c).fixed_size == 64U);
        // A return address in the bl: LR no longer holds this frame's RA.
        CHECK(a->is_call_at(0x101c));
        CHECK_FALSE(a->state_after(0x101c).ra_in_lr);
        CHECK(a->state_at(0x1030).ra_in_lr); // mtlr r0 from the slot
    }
}

TEST_CASE("ppc64: frame analysis follows inline jump tables and skips noreturn calls",
          "[ppc64][analysis]") {
    const std::array<std::uint8_t, 8> framed = {0,    0, 0, 0x01,
                                                0x80, 0, 0, 0}; // saves_lr, stores_bc
    {
        const std::vector<std::uint32_t> code = {
            mflr(0),
            std_(0, 16),
            stdu(-32),
            bctr,
            8,
            12, // 0x1010: table of offsets from 0x1010: 0x1018, 0x101c
            b(8),
            b(4), // 0x1018, 0x101c -> 0x1020
            addi(1, 1, 32),
            ld(0, 16),
            mtlr(0),
            blr,
        };
        const Synthetic s = synthetic(ByteOrder::Big, code, framed);
        auto a = FrameAnalysis::run(s.bytes.view(), 0x1000, 0x1000, s.table);
        REQUIRE(a);
        CHECK(a->origin_at(0x1010) == FrameAnalysis::Origin::Data);
        CHECK(a->origin_at(0x1014) == FrameAnalysis::Origin::Data);
        for (std::uint64_t pc : {0x1018ULL, 0x101cULL, 0x1020ULL}) {
            CHECK(a->origin_at(pc) == FrameAnalysis::Origin::Code);
            CHECK(a->state_at(pc).allocated);
            CHECK(a->state_at(pc).frame_size == 32U);
        }
        CHECK_FALSE(a->state_at(0x1024).allocated);
    }
    {
        const std::vector<std::uint32_t> code = {
            mflr(0),
            std_(0, 16),
            stdu(-32),
            beq(12),
            b(0x1000, true), // 0x1010: bl to a function that never returns
            nop,             // 0x1014
            addi(1, 1, 32),
            ld(0, 16),
            mtlr(0),
            blr,
        };
        const Synthetic s = synthetic(ByteOrder::Little, code, framed);
        struct NoReturn final : CallTargets {
            bool never_returns(std::uint64_t target) const override { return target == 0x2010; }
        } noreturn;
        auto with = FrameAnalysis::run(s.bytes.view(), 0x1000, 0x1000, s.table, {}, &noreturn);
        auto without = FrameAnalysis::run(s.bytes.view(), 0x1000, 0x1000, s.table);
        REQUIRE(with);
        REQUIRE(without);
        CHECK(with->origin_at(0x1014) == FrameAnalysis::Origin::Padding);
        CHECK(with->state_at(0x1018).ra_in_lr); // only the beq path reaches it
        CHECK(without->origin_at(0x1014) == FrameAnalysis::Origin::Code);
        CHECK_FALSE(without->state_at(0x1018).ra_in_lr);
        CHECK(without->state_at(0x1018).ra_saved); // still found in the slot
    }
    {
        // Different stack heights meet: a conflict, and the table's body state.
        const std::vector<std::uint32_t> code = {beq(8), stdu(-32), nop, blr};
        const Synthetic s = synthetic(ByteOrder::Big, code, framed);
        auto a = FrameAnalysis::run(s.bytes.view(), 0x1000, 0x1000, s.table);
        REQUIRE(a);
        CHECK(a->origin_at(0x1008) == FrameAnalysis::Origin::Conflict);
        CHECK(a->state_at(0x1008) == body_state(s.table));
        CHECK(body_state(s.table).allocated);
    }
}

// ---------------------------------------------------------------- fixtures

namespace {

std::filesystem::path fixture(const std::string& rel) {
    return test::source_dir() / "tests/fixtures/ppc64" / rel;
}

const std::vector<std::string>& fixture_names() {
    static const std::vector<std::string> names = {
        "bin/ppc64/tbtab-O2-part-static",   "bin/ppc64/tbtab-O2-full-static",
        "bin/ppc64/tbtab-O0-full-static",   "bin/ppc64le/tbtab-O2-part-static",
        "bin/ppc64le/tbtab-O2-full-static", "bin/ppc64le/tbtab-O0-full-static",
    };
    return names;
}

// Functions that have no table: the C runtime's _init/_fini (assembly
// fragments) and crtstuff.c, which GCC builds with -finhibit-size-directive
// (that option also turns traceback tables off).
const std::set<std::string> tableless = {
    "_init",      "_fini", "deregister_tm_clones", "register_tm_clones", "__do_global_dtors_aux",
    "frame_dummy"};

const std::vector<std::string> fixture_functions = {"main",      "level_1", "with_alloca",
                                                    "with_fprs", "recurse", "leaf"};

struct Loaded {
    elf::ElfFile file;
    TracebackIndex index;
};

Loaded load(const std::string& rel) {
    auto f = elf::ElfFile::open(fixture(rel).string());
    if (!f) FAIL(f.error().message());
    auto i = TracebackIndex::build(*f);
    if (!i) FAIL(i.error().message());
    return Loaded{std::move(*f), std::move(*i)};
}

const Function& by_name(const TracebackIndex& index, std::string_view name) {
    for (const auto& f : index.functions())
        if (std::find(f.names.begin(), f.names.end(), name) != f.names.end()) return f;
    FAIL("no function " << name);
    throw std::logic_error("unreachable");
}

std::uint32_t word_at(const TracebackIndex& index, std::uint64_t pc) {
    for (const auto& r : index.code())
        if (pc >= r.vaddr && pc - r.vaddr < r.bytes.size()) {
            std::uint32_t w = 0;
            REQUIRE(r.bytes.load(pc - r.vaddr, w));
            return w;
        }
    FAIL("no code at " << pc);
    return 0;
}

bool full(const std::string& rel) {
    return rel.find("-full-") != std::string::npos;
}
bool little(const std::string& rel) {
    return rel.find("ppc64le") != std::string::npos;
}

} // namespace

TEST_CASE("ppc64 fixtures: every function's table is found and agrees with the symbol table",
          "[ppc64][fixtures]") {
    for (const auto& rel : fixture_names()) {
        INFO(rel);
        const Loaded l = load(rel);
        CHECK(l.index.abi().name == (little(rel) ? "ppc64le" : "ppc64"));
        CHECK(l.index.uses_descriptors() == !little(rel)); // ELFv1: .opd
        REQUIRE(l.index.functions().size() > 800);

        const Listing listing = l.index.by_symbols();
        std::set<std::string> missing;
        for (const auto& p : listing.problems) {
            const std::string name = p.what().substr(0, p.what().find(':'));
            missing.insert(name);
        }
        CHECK(missing == tableless);
        CHECK(listing.tables.size() + tableless.size() == l.index.functions().size());

        std::size_t named = 0, with_offset = 0;
        for (const auto& t : listing.tables) {
            REQUIRE(t.function != nullptr);
            REQUIRE(t.function_start);
            CHECK(*t.function_start == t.function->start);
            // The table sits after the code and inside the symbol's extent.
            CHECK(t.table.address > t.function->start);
            CHECK(t.table.address < t.function->start + t.function->size);
            if (t.table.name) {
                ++named;
                INFO(*t.table.name);
                CHECK(std::find(t.function->names.begin(), t.function->names.end(),
                                *t.table.name) != t.function->names.end());
            }
            if (t.table.tb_offset) {
                ++with_offset;
                // tb_offset is the code's length; the symbol's size (GCC's
                // `.size f, .-f` after the table) adds the table, padded to a word.
                CHECK(t.start_source == FoundTable::StartSource::TbOffset);
                CHECK(*t.table.tb_offset == t.table.address - t.function->start);
                CHECK(t.function->size == *t.table.tb_offset + ((t.table.size + 3U) & ~3U));
            }
        }
        // The program's six functions add names and offsets in the full builds.
        CHECK(with_offset == named);
        CHECK(with_offset == (little(rel) ? 51U : 46U) + (full(rel) ? 6U : 0U));

        // A linear scan of the code finds the same tables.
        const Listing scanned = l.index.by_scan();
        std::set<std::uint64_t> a, b;
        for (const auto& t : listing.tables)
            a.insert(t.table.address);
        for (const auto& t : scanned.tables)
            b.insert(t.table.address);
        CHECK(a == b);
    }
}

TEST_CASE("ppc64 fixtures: the program's tables have the fields its frames need",
          "[ppc64][fixtures]") {
    std::map<std::string, std::map<std::string, TracebackTable>> tables; // rel -> function -> table
    for (const auto& rel : fixture_names()) {
        const Loaded l = load(rel);
        for (const auto& name : fixture_functions) {
            auto found = l.index.find(by_name(l.index, name).start);
            REQUIRE(found);
            tables[rel][name] = found->table;
        }
    }
    for (const auto& rel : fixture_names()) {
        INFO(rel);
        for (const auto& name : fixture_functions) {
            INFO(name);
            const TracebackTable& t = tables[rel][name];
            CHECK(t.lang == 0);
            CHECK(t.has_tboff == full(rel));
            CHECK(t.name_present == full(rel));
            if (full(rel)) CHECK(t.name == name);
            // Mandatory fields do not depend on -mtraceback.
            const std::string part = rel.substr(0, rel.find("tbtab-")) + "tbtab-O2-part-static";
            if (rel.find("O2-full") != std::string::npos) {
                const TracebackTable& p = tables[part][name];
                CHECK((p.stores_bc == t.stores_bc && p.saves_lr == t.saves_lr &&
                       p.fp_saved == t.fp_saved && p.gpr_saved == t.gpr_saved &&
                       p.saves_cr == t.saves_cr));
                CHECK((p.fixedparms == 0 && p.floatparms == 0 &&
                       !p.parminfo)); // part: no parameter info
            }
        }
        const auto& t = tables[rel];
        const bool o2 = rel.find("-O2-") != std::string::npos;
        // leaf: a stackless leaf at -O2; at -O0 it has a frame but never saves LR.
        CHECK(t.at("leaf").saves_lr == false);
        CHECK(t.at("leaf").stores_bc == !o2);
        CHECK(t.at("leaf").frameless() == o2);
        CHECK(t.at("recurse").stores_bc);
        CHECK(t.at("recurse").saves_lr);
        // with_fprs keeps two doubles in f30/f31 across its call at -O2.
        CHECK(t.at("with_fprs").fp_saved == (o2 ? 2 : 0));
        CHECK(t.at("with_fprs").fp_present == o2);
        if (full(rel)) {
            CHECK(t.at("with_fprs").parminfo == 0xc0000000U); // (double, int): 11 0
            CHECK((t.at("with_fprs").fixedparms == 1 && t.at("with_fprs").floatparms == 1));
            // with_alloca uses r31 as its frame pointer (GCC sets uses_alloca
            // whenever r31 is set up as one, so every -O0 function has it).
            CHECK(t.at("with_alloca").uses_alloca);
            CHECK(t.at("with_alloca").alloca_reg == 31);
            CHECK(t.at("leaf").uses_alloca == !o2);
            CHECK(t.at("with_alloca").gpr_saved >= 1);
            CHECK(t.at("main").parmsonstk == !o2);
        }
    }
}

TEST_CASE("ppc64 fixtures: glibc's assembly tables", "[ppc64][fixtures]") {
    for (const std::string rel :
         {"bin/ppc64/tbtab-O2-part-static", "bin/ppc64le/tbtab-O2-part-static"}) {
        INFO(rel);
        const Loaded l = load(rel);
        auto found = l.index.find(by_name(l.index, "memcpy").start);
        REQUIRE(found);
        CHECK(found->table.lang == static_cast<std::uint8_t>(Language::Assembly));
        CHECK(found->table.name == "memcpy");
        CHECK(found->table.tocless);
        CHECK(found->table.mandatory_reversed == little(rel));
    }
}

// level_1's prologue and epilogue as GCC 12 wrote them, read in each file's
// byte order and decoded field by field (objdump's disassembly in comments).
TEST_CASE("ppc64 fixtures: level_1's prologue and epilogue decode field by field",
          "[ppc64][fixtures]") {
    struct Case {
        const char* rel;
        std::uint64_t start; // level_1
        std::uint64_t mflr;  // offsets from start
        std::uint64_t stdu;
        std::int32_t frame;     // stdu r1,-frame(r1)
        std::int32_t call_disp; // bl to with_alloca
    };
    // ELFv2 (ppc64le) functions open with two more instructions: the global
    // entry point sets up the TOC pointer r2 (ELFv2 ABI, "Function
    // Prologue"), here `lis r2` and `addi r2,r2`.
    const std::array<Case, 2> cases = {{
        {"bin/ppc64/tbtab-O2-full-static", 0x10000b60, 0x00, 0x14, 176, -0x150},
        {"bin/ppc64le/tbtab-O2-full-static", 0x10000e30, 0x08, 0x1c, 96, -0x138},
    }};
    for (const Case& c : cases) {
        INFO(c.rel);
        const Loaded l = load(c.rel);
        REQUIRE(by_name(l.index, "level_1").start == c.start);
        auto at = [&](std::uint64_t offset) {
            return isa::Insn{word_at(l.index, c.start + offset)};
        };

        const isa::Insn mflr = at(c.mflr); // mflr r0 (mfspr r0,8)
        CHECK(mflr.word == 0x7c0802a6U);
        CHECK((mflr.opcode() == isa::op_x && mflr.xo_x() == isa::xo_mfspr));
        CHECK(mflr.spr() == isa::spr_lr);
        CHECK(mflr.rt() == 0);
        CHECK(isa::may_write_gpr(mflr, 0));
        CHECK_FALSE(isa::may_write_gpr(mflr, 1));

        const isa::Insn save = at(c.stdu - 4); // std r0,16(r1)
        CHECK((save.opcode() == isa::op_std && save.xo_ds() == 0));
        CHECK((save.rt() == 0 && save.ra() == 1 && save.ds() == 16));
        CHECK_FALSE(isa::may_write_gpr(save, 0));
        CHECK_FALSE(isa::may_write_gpr(save, 1));

        const isa::Insn stdu = at(c.stdu); // stdu r1,-frame(r1)
        CHECK((stdu.opcode() == isa::op_std && stdu.xo_ds() == 1));
        CHECK((stdu.rt() == 1 && stdu.ra() == 1 && stdu.ds() == -c.frame));
        CHECK(isa::may_write_gpr(stdu, 1));
        CHECK_FALSE(isa::may_write_gpr(stdu, 0));

        const isa::Insn loop = at(0x60); // bdnz .-0x40 (BO 16: decrement CTR, branch if not zero)
        CHECK((loop.opcode() == isa::op_bc && loop.rt() == 16 && !loop.lk() && !loop.aa()));
        CHECK(loop.bd() == -0x40);
        CHECK_FALSE(isa::branches_always(loop.rt()));

        const isa::Insn call = at(0x70); // bl with_alloca
        CHECK((call.opcode() == isa::op_b && call.lk() && !call.aa()));
        CHECK(call.li() == c.call_disp);

        const isa::Insn pop = at(0x78); // addi r1,r1,frame
        CHECK(
            (pop.opcode() == isa::op_addi && pop.rt() == 1 && pop.ra() == 1 && pop.d() == c.frame));
        const isa::Insn reload = at(0x7c); // ld r0,16(r1)
        CHECK((reload.opcode() == isa::op_ld && reload.xo_ds() == 0));
        CHECK((reload.rt() == 0 && reload.ra() == 1 && reload.ds() == 16));
        const isa::Insn mtlr = at(0x88); // mtlr r0 (mtspr 8,r0)
        CHECK(mtlr.word == 0x7c0803a6U);
        CHECK((mtlr.xo_x() == isa::xo_mtspr && mtlr.spr() == isa::spr_lr && mtlr.rt() == 0));
        CHECK_FALSE(isa::may_write_gpr(mtlr, 0));
        const isa::Insn ret = at(0x8c); // blr (bclr 20,0)
        CHECK((ret.opcode() == isa::op_xl && ret.xo_x() == isa::xo_bclr && !ret.lk()));
        CHECK(isa::branches_always(ret.rt()));
        CHECK(word_at(l.index, c.start + 0x90) == 0); // the traceback table's zero word
    }
}

TEST_CASE("ppc64: system calls and VMX moves to a GPR write GPRs", "[ppc64][analysis]") {
    // sc (0x44000002) and scv 0 (0x44000001): r0 and r3-r12, by the Linux
    // system call ABI; r1, r2 and r13-r31 are kept.
    for (const std::uint32_t word : {0x44000002U, 0x44000001U}) {
        const isa::Insn sc{word};
        CHECK(isa::may_write_gpr(sc, 0));
        CHECK(isa::may_write_gpr(sc, 3));
        CHECK(isa::may_write_gpr(sc, 12));
        CHECK_FALSE(isa::may_write_gpr(sc, 1));
        CHECK_FALSE(isa::may_write_gpr(sc, 31));
    }
    // vctzlsbb r0,v1 (0x10013602) and vextubrx r8,r7,v0 (0x1107070d) write
    // GPR RT; vaddubm v0,v1,v2 (0x10011000) writes a vector register only.
    CHECK(isa::may_write_gpr(isa::Insn{0x10013602U}, 0));
    CHECK(isa::may_write_gpr(isa::Insn{0x1107070dU}, 8));
    CHECK_FALSE(isa::may_write_gpr(isa::Insn{0x1107070dU}, 7));
    CHECK_FALSE(isa::may_write_gpr(isa::Insn{0x10011000U}, 0));
}

TEST_CASE("ppc64 fixtures: rows at the prologue, the body and the epilogue", "[ppc64][fixtures]") {
    for (const auto& rel : fixture_names()) {
        INFO(rel);
        const Loaded l = load(rel);
        for (const auto& name : fixture_functions) {
            INFO(name);
            const Function& f = by_name(l.index, name);
            auto found = l.index.find(f.start);
            REQUIRE(found);
            // At the first instruction: nothing set up, the RA is in LR.
            auto entry = l.index.lookup(f.start);
            REQUIRE(entry);
            CHECK((entry->cfa.reg == 1 && entry->cfa.offset == 0 && !entry->cfa.deref));
            CHECK(entry->ra.kind == RegRule::Kind::SameValue);
            CHECK(entry->topmost_only);
            CHECK(entry->func_start == f.start);
            CHECK(entry->func_size == found->table.address - f.start);

            // Find the stack update and the LR store in the code itself.
            std::optional<std::uint64_t> stdu, lr_store;
            for (std::uint64_t pc = f.start; pc < found->table.address; pc += 4) {
                const std::uint32_t w = word_at(l.index, pc);
                if (!stdu && (w & 0xffff0003U) == 0xf8210001U) stdu = pc;         // stdu r1,d(r1)
                if (!lr_store && (w & 0xffff0003U) == 0xf8010000U) lr_store = pc; // std r0,d(r1)
            }
            if (found->table.frameless()) {
                CHECK_FALSE(stdu);
                for (std::uint64_t pc = f.start; pc < found->table.address; pc += 4) {
                    auto r = l.index.lookup(pc);
                    REQUIRE(r);
                    CHECK((!r->cfa.deref && r->ra.kind == RegRule::Kind::SameValue &&
                           r->topmost_only));
                }
                continue;
            }
            REQUIRE(stdu);
            auto before = l.index.lookup(*stdu);
            auto after = l.index.lookup(*stdu + 4);
            REQUIRE(before);
            REQUIRE(after);
            CHECK_FALSE(before->cfa.deref);
            CHECK((after->cfa.reg == 1 && after->cfa.offset == 0 && after->cfa.deref));
            if (found->table.saves_lr) {
                REQUIRE(lr_store);
                auto at_store = l.index.lookup(*lr_store);
                auto past_store = l.index.lookup(*lr_store + 4);
                REQUIRE(at_store);
                REQUIRE(past_store);
                CHECK(at_store->ra.kind != RegRule::Kind::AtCfa);
                CHECK(past_store->ra == RegRule::at_cfa(16));
                CHECK_FALSE(past_store->topmost_only);
            } else {
                CHECK(after->ra.kind == RegRule::Kind::SameValue);
            }
            // r31's save slot counts once `std r31` has stored it, before or
            // after the stack update (main saves it later, shrink-wrapped).
            std::optional<std::uint64_t> r31_store;
            for (std::uint64_t pc = f.start; pc < found->table.address && !r31_store; pc += 4)
                if ((word_at(l.index, pc) & 0xffff0003U) == 0xfbe10000U)
                    r31_store = pc; // std r31,d(r1)
            CHECK(r31_store.has_value() == (found->table.gpr_saved > 0));
            if (r31_store) {
                const RegRule slot = RegRule::at_cfa(gpr_save_offset(found->table.fp_saved, 31));
                CHECK(l.index.lookup(*r31_store)->fp != slot);
                CHECK(l.index.lookup(*r31_store + 4)->fp == slot);
            }
            // At each return the frame is gone.
            unsigned returns = 0;
            for (std::uint64_t pc = f.start; pc < found->table.address; pc += 4) {
                if (word_at(l.index, pc) != 0x4e800020U) continue; // blr
                ++returns;
                auto r = l.index.lookup(pc);
                REQUIRE(r);
                CHECK_FALSE(r->cfa.deref);
            }
            CHECK(returns >= 1);
        }
    }
}

TEST_CASE("ppc64 fixtures: rows agree with the DWARF CFI", "[ppc64][fixtures][cfi]") {
    for (const auto& rel : fixture_names()) {
        INFO(rel);
        const Loaded l = load(rel);
        auto cfi = cfi::CfiTable::open(l.file);
        REQUIRE(cfi);
        const Listing listing = l.index.by_symbols();
        const CfiCheckResult all = check_against_cfi(l.index, listing, *cfi);
        INFO("same " << all.same << " equivalent " << all.equivalent << " different "
                     << all.different);
        // Every function with CFI is compared (glibc's _start has none).
        std::size_t with_cfi = 0;
        for (const auto& t : listing.tables)
            with_cfi += cfi->at(*t.function_start) ? 1U : 0U;
        CHECK(with_cfi + 1 == listing.tables.size());
        CHECK(cfi->at(by_name(l.index, "_start").start).error().code() == Errc::NotFound);
        CHECK(all.functions == with_cfi);
        CHECK(all.without_cfi < 16);
        CHECK(all.instructions > 130000);
        // glibc's remaining differences are in hand-written assembly and
        // shrink-wrapped paths (see the report); they stay below 1%.
        CHECK(all.different * 100 < all.instructions);
        CHECK(all.same + all.equivalent + all.different + all.outermost +
                  all.unanalysed_different ==
              all.instructions);

        // The program's own functions: every instruction agrees.
        Listing mine;
        for (const auto& t : listing.tables)
            if (t.function != nullptr &&
                std::find(fixture_functions.begin(), fixture_functions.end(),
                          t.function->names.front()) != fixture_functions.end())
                mine.tables.push_back(t);
        REQUIRE(mine.tables.size() == fixture_functions.size());
        const CfiCheckResult own = check_against_cfi(l.index, mine, *cfi);
        for (const auto& e : own.entries)
            UNSCOPED_INFO(e.function << " " << e.pc << ": " << e.message);
        CHECK(own.different == 0);
        CHECK(own.unanalysed == 0);
        CHECK(own.instructions > 100);
        CHECK(own.same > own.equivalent);
    }
}

TEST_CASE("ppc64 fixtures: lookups outside functions and in tables fail cleanly",
          "[ppc64][fixtures]") {
    const Loaded l = load("bin/ppc64le/tbtab-O2-full-static");
    // crtstuff.c functions have no table: no rows from the next function's.
    auto r = l.index.lookup(by_name(l.index, "frame_dummy").start);
    REQUIRE_FALSE(r);
    CHECK(r.error().code() == Errc::NotFound);
    CHECK(r.error().what().find("no traceback table") != std::string::npos);
    // Not code at all.
    r = l.index.lookup(0x10);
    REQUIRE_FALSE(r);
    CHECK(r.error().code() == Errc::NotFound);
    // Inside the table of leaf: its zero words are rejected, and the next
    // zero word is past leaf's symbol.
    const Function& leaf = by_name(l.index, "leaf");
    auto t = l.index.find(leaf.start);
    REQUIRE(t);
    r = l.index.lookup(t->table.address + 8);
    REQUIRE_FALSE(r);
    CHECK(r.error().what().find("no traceback table in leaf") != std::string::npos);
    // On the zero word itself: the table is found, but the PC is not code.
    r = l.index.lookup(t->table.address);
    REQUIRE_FALSE(r);
    CHECK(r.error().what().find("not inside its function's code") != std::string::npos);
    // Between functions: the alignment padding after leaf's table belongs to
    // no symbol and leads to the next function's table.
    const std::uint64_t after = (t->table.address + t->table.size + 3) & ~std::uint64_t{3};
    const Function& next =
        *std::upper_bound(l.index.functions().begin(), l.index.functions().end(), leaf.start,
                          [](std::uint64_t v, const Function& f) { return v < f.start; });
    REQUIRE(after < next.start);
    CHECK(l.index.function_at(after) == nullptr);
    r = l.index.lookup(after);
    REQUIRE_FALSE(r);
    CHECK(r.error().what().find(
              "no traceback table between " +
              [&] {
                  char b[24];
                  std::snprintf(b, sizeof b, "0x%llx", static_cast<unsigned long long>(after));
                  return std::string(b);
              }() +
              " and the next function, " + next.names.front()) != std::string::npos);
}

TEST_CASE("ppc64: step() walks a stack with traceback-table rows", "[ppc64][fixtures][step]") {
    // A stop in leaf (frameless) called from recurse, called from with_fprs:
    // build the two frames the real prologues make and step with the rows.
    for (const std::string rel :
         {"bin/ppc64/tbtab-O2-full-static", "bin/ppc64le/tbtab-O2-full-static"}) {
        INFO(rel);
        const Loaded l = load(rel);
        const Abi& abi = l.index.abi();
        const Function& leaf = by_name(l.index, "leaf");
        const Function& recurse = by_name(l.index, "recurse");
        const Function& with_fprs = by_name(l.index, "with_fprs");
        // The call sites: the `bl` in recurse that targets leaf, and the one
        // in with_fprs that targets recurse (ELFv2 calls the local entry, +8).
        auto call_to = [&](const Function& caller, const Function& callee) {
            auto t = l.index.find(caller.start);
            REQUIRE(t);
            for (std::uint64_t pc = caller.start; pc < t->table.address; pc += 4) {
                const std::uint32_t w = word_at(l.index, pc);
                if ((w & 0xfc000003U) != 0x48000001U) continue;
                std::int64_t disp = w & 0x03fffffcU;
                if ((disp & 0x02000000) != 0) disp -= 0x04000000;
                const std::uint64_t to = pc + static_cast<std::uint64_t>(disp);
                if (to == callee.start || to == callee.start + 8) return pc;
            }
            FAIL("no call");
            return std::uint64_t{0};
        };
        const std::uint64_t call_leaf = call_to(recurse, leaf);
        const std::uint64_t call_recurse = call_to(with_fprs, recurse);
        auto frame_size = [&](const Function& f, std::uint64_t pc) {
            auto t = l.index.find(f.start);
            REQUIRE(t);
            auto rows = l.index.rows(*t, TracebackIndex::Split::State);
            REQUIRE(rows);
            for (const auto& d : *rows)
                if (pc >= d.row.pc_begin && pc < d.row.pc_end) {
                    REQUIRE(d.state.frame_size);
                    return *d.state.frame_size;
                }
            FAIL("no row");
            return 0U;
        };
        const std::uint32_t recurse_frame = frame_size(recurse, call_leaf);
        const std::uint32_t fprs_frame = frame_size(with_fprs, call_recurse);

        // Stack, top down: recurse's frame at sp0, with_fprs's above it, then
        // with_fprs's caller's SP (top). Back chains and LR save slots as the
        // ABI lays them out; r31 of with_fprs's caller is not saved there.
        const std::uint64_t top = 0x7fff0000 + 0x1000;
        const std::uint64_t fprs_sp = top - fprs_frame;
        const std::uint64_t sp0 = fprs_sp - recurse_frame;
        test::FakeMemory mem(0x7fff0000, 0x2000, abi.order);
        mem.put64(sp0, fprs_sp);                   // recurse's back chain
        mem.put64(fprs_sp + 16, call_recurse + 4); // recurse's LR, in with_fprs's frame
        mem.put64(fprs_sp, top);                   // with_fprs's back chain
        mem.put64(top + 16, 0x10000abc);           // with_fprs's LR, in its caller's frame

        FrameRegs regs;
        regs.pc = leaf.start + 16; // in leaf's body
        regs.sp = sp0;             // leaf has no frame: r1 is recurse's
        regs.fp = 0x31313131;
        regs.ra = call_leaf + 4;
        auto row = l.index.lookup(regs.pc);
        REQUIRE(row);
        auto s1 = step(*row, abi, regs, true, mem);
        REQUIRE(s1);
        CHECK(s1->caller->pc == call_leaf + 4);
        CHECK(s1->caller->sp == sp0);
        CHECK(s1->caller->fp == 0x31313131);

        // recurse, a caller frame: look up the return address minus one.
        FrameRegs r2 = *s1->caller;
        r2.ra.reset();
        row = l.index.lookup(FrameAddress::return_address(r2.pc).lookup_address());
        REQUIRE(row);
        CHECK(row->cfa.deref);
        CHECK_FALSE(row->topmost_only);
        auto s2 = step(*row, abi, r2, false, mem);
        REQUIRE(s2);
        CHECK(s2->cfa == fprs_sp);
        CHECK(s2->caller->pc == call_recurse + 4);
        CHECK(s2->caller->sp == fprs_sp);

        FrameRegs r3 = *s2->caller;
        row = l.index.lookup(FrameAddress::return_address(r3.pc).lookup_address());
        REQUIRE(row);
        auto s3 = step(*row, abi, r3, false, mem);
        REQUIRE(s3);
        CHECK(s3->caller->pc == 0x10000abc);
        CHECK(s3->caller->sp == top);

        // The same recurse frame as if it were topmost, stopped on the `bl`:
        // LR still holds its return address only until the call, and the
        // row says where it was saved before that.
        FrameRegs r4 = r2;
        r4.pc = call_leaf;
        r4.ra = 0xdead0000;
        row = l.index.lookup(r4.pc);
        REQUIRE(row);
        CHECK(row->ra == RegRule::at_cfa(16));
        auto s4 = step(*row, abi, r4, true, mem);
        REQUIRE(s4);
        CHECK(s4->caller->pc == call_recurse + 4);
    }
}

// SPDX-License-Identifier: MIT
// Bad input is normal input: every shared test vector truncated at every
// length and with every bit flipped must parse, validate, look up and dump
// without crashing, with errors whose offsets lie inside the section; and
// each crafted defect is reported with its specific Errc and offset.
#include "catch.hpp"
#include "sfunwind/sframe/dump.hpp"
#include "sfunwind/sframe/section.hpp"
#include "sfunwind/sframe/validate.hpp"
#include "sfunwind/sframe/writer.hpp"
#include "support.hpp"
#include "vectors.hpp"

#include <algorithm>
#include <nlohmann/json.hpp>
#include <span>

using namespace sfunwind;
using namespace sfunwind::sframe;
namespace fs = std::filesystem;

namespace {

using test::load_vectors;
using test::Vector;

// Collects violations instead of asserting each of the millions of checks,
// which keeps the sanitizer build fast; the first few are printed.
struct Findings {
    std::vector<std::string> list;
    void add(std::string what) {
        if (list.size() < 20) list.push_back(std::move(what));
        ++count;
    }
    std::size_t count = 0;
};

// Inside the section: a read the counts promise but the sub-section lacks is
// reported at the count that promised it.
bool inside(std::uint64_t where, std::size_t size) {
    return where == no_offset || where < size || (size == 0 && where == 0);
}

// Everything a consumer might do with a section: no crash, no hang, and
// every error located inside it.
void exercise(std::span<const std::uint8_t> bytes, std::uint64_t vaddr, const std::string& label,
              Findings& out, bool with_dump) {
    const std::size_t size = bytes.size();
    auto note = [&](const std::string& what, std::uint64_t where) {
        if (!inside(where, size))
            out.add(label + ": " + what + " at offset " + std::to_string(where) + " of a " +
                    std::to_string(size) + "-byte section");
    };
    auto s = Section::parse(bytes, vaddr);
    if (!s) {
        note("parse: " + s.error().what(), s.error().where());
        return;
    }
    for (const auto& p : validate(*s))
        note("validate: " + p.message, p.offset);
    if (with_dump && dump(*s).empty()) out.add(label + ": empty dump");
    auto probe = [&](std::uint64_t pc) {
        auto row = s->lookup(pc);
        if (!row) note("lookup: " + row.error().what(), row.error().where());
    };
    probe(0);
    probe(vaddr);
    probe(~std::uint64_t{0});
    for (std::uint32_t i = 0; i < s->fde_count(); ++i) {
        auto f = s->fde(i);
        if (!f) {
            note("fde: " + f.error().what(), f.error().where());
            continue;
        }
        probe(f->start);
        probe(f->start + f->size / 2);
        probe(f->start + f->size - 1);
    }
}

// --- crafted sections --------------------------------------------------------

void put(std::vector<std::uint8_t>& b, std::uint64_t at, std::uint64_t v, unsigned width,
         ByteOrder order = ByteOrder::Little) {
    REQUIRE(at + width <= b.size());
    for (unsigned i = 0; i < width; ++i) {
        const unsigned shift = order == ByteOrder::Little ? 8 * i : 8 * (width - 1 - i);
        b[at + i] = static_cast<std::uint8_t>((v >> shift) & 0xffU);
    }
}

FreSpec fre(std::uint32_t start, CfaRule cfa, RegRule fp = RegRule::same_value()) {
    FreSpec f;
    f.start = start;
    f.cfa = cfa;
    f.ra = RegRule::at_cfa(-8);
    f.fp = fp;
    return f;
}

FdeSpec function(std::uint64_t start, std::uint32_t size, std::vector<FreSpec> fres) {
    FdeSpec f;
    f.start = start;
    f.size = size;
    f.fres = std::move(fres);
    return f;
}

// Three AMD64 functions: A [0x401000, 0x401020), B [0x401020, 0x401030),
// C [0x401100, 0x401130).
std::vector<FdeSpec> three() {
    return {function(0x401000, 0x20,
                     {fre(0, {7, 8}), fre(1, {7, 16}, RegRule::at_cfa(-16)),
                      fre(4, {6, 16}, RegRule::at_cfa(-16))}),
            function(0x401020, 0x10, {fre(0, {7, 8})}),
            function(0x401100, 0x30, {fre(0, {7, 8}), fre(8, {7, 24})})};
}

struct Crafted {
    std::vector<std::uint8_t> bytes;
    SectionMap map;
    std::uint64_t vaddr;
};

Crafted craft(WriterOptions o, const std::vector<FdeSpec>& fdes) {
    Writer w(o);
    for (const auto& f : fdes)
        w.add(f);
    Crafted c;
    c.vaddr = o.section_vaddr;
    auto bytes = w.write(&c.map);
    if (!bytes) FAIL(bytes.error().message());
    c.bytes = std::move(*bytes);
    return c;
}

Crafted craft(Version v = Version::V3) {
    WriterOptions o;
    o.version = v;
    o.section_vaddr = 0x402000;
    return craft(o, three());
}

Error parse_error(const std::vector<std::uint8_t>& bytes, std::uint64_t vaddr = 0x402000) {
    auto s = Section::parse(bytes, vaddr);
    if (s) FAIL("the section parsed");
    return std::move(s).error();
}

Section parsed(const Crafted& c) {
    auto s = Section::parse(c.bytes, c.vaddr);
    if (!s) FAIL("parse: " << s.error().message());
    return std::move(*s);
}

// The problems validate() reports at `offset` with `words` in the message.
std::size_t problems_at(const std::vector<Problem>& ps, std::uint64_t offset,
                        const std::string& words) {
    return static_cast<std::size_t>(std::count_if(ps.begin(), ps.end(), [&](const Problem& p) {
        return p.severity == Problem::Severity::Error && p.offset == offset &&
               p.message.find(words) != std::string::npos;
    }));
}

std::string listing(const std::vector<Problem>& ps) {
    std::string s;
    for (const auto& p : ps)
        s += std::to_string(p.offset) + ": " + p.message + "\n";
    return s;
}

} // namespace

TEST_CASE("every test vector truncated at every length: no crash, errors inside the section",
          "[malformed]") {
    const auto vectors = load_vectors();
    REQUIRE(vectors.size() == 110);
    Findings findings;
    std::size_t cases = 0;
    std::size_t parsed_prefixes = 0;
    for (const auto& v : vectors) {
        for (std::size_t len = 0; len <= v.bytes.size(); ++len) {
            const std::span<const std::uint8_t> prefix(v.bytes.data(), len);
            exercise(prefix, v.base, v.name + " truncated to " + std::to_string(len), findings,
                     true);
            if (Section::parse(prefix, v.base)) ++parsed_prefixes;
            ++cases;
        }
        if (v.bytes.size() >= header_size) {
            // Cut inside the sub-sections, the header's claims no longer fit.
            auto cut = Section::parse(
                std::span<const std::uint8_t>(v.bytes.data(), v.bytes.size() - 1), v.base);
            REQUIRE_FALSE(cut.has_value());
            CHECK(cut.error().code() == Errc::Truncated);
        }
    }
    for (const auto& f : findings.list)
        FAIL_CHECK(f);
    CHECK(findings.count == 0);
    CHECK(cases > 5000);
    CHECK(parsed_prefixes >= 98); // at least each whole section
}

TEST_CASE("every test vector with each bit flipped: no crash, errors inside the section",
          "[malformed]") {
    const auto vectors = load_vectors();
    Findings findings;
    std::size_t cases = 0;
    for (const auto& v : vectors) {
        std::vector<std::uint8_t> bytes = v.bytes;
        for (std::size_t i = 0; i < bytes.size(); ++i) {
            // Every bit of the header's counts and offsets; two bits of each
            // other byte (a low and a high one, rotating), which keeps the
            // sanitizer build within its time budget.
            for (unsigned bit = 0; bit < 8; ++bit) {
                if (i >= header_size && bit != i % 8 && bit != (i + 4) % 8) continue;
                bytes[i] ^= static_cast<std::uint8_t>(1U << bit);
                exercise(bytes, v.base,
                         v.name + " byte " + std::to_string(i) + " bit " + std::to_string(bit),
                         findings, bit == i % 8);
                bytes[i] ^= static_cast<std::uint8_t>(1U << bit);
                ++cases;
            }
        }
    }
    for (const auto& f : findings.list)
        FAIL_CHECK(f);
    CHECK(findings.count == 0);
    CHECK(cases > 20000);
}

TEST_CASE("crafted headers: counts, lengths and offsets that overflow or point past the end",
          "[malformed]") {
    const Crafted base = craft();
    REQUIRE(Section::parse(base.bytes, base.vaddr).has_value());

    SECTION("num_fdes = 0xffffffff") {
        auto b = base.bytes;
        put(b, 8, 0xffffffff, 4);
        const Error e = parse_error(b);
        CHECK(e.code() == Errc::Truncated);
        CHECK(e.where() == 8);
    }
    SECTION("num_fdes whose FDE bytes overflow 32 bits") {
        auto b = base.bytes;
        put(b, 8, 0x10000001, 4); // 16 * 0x10000001 = 0x100000010
        const Error e = parse_error(b);
        CHECK(e.code() == Errc::Truncated);
        CHECK(e.where() == 8);
    }
    SECTION("num_fres = 0xffffffff parses; validate() reports the count") {
        auto b = base.bytes;
        put(b, 12, 0xffffffff, 4);
        auto s = Section::parse(b, base.vaddr);
        REQUIRE(s.has_value());
        CHECK(s->lookup(0x401004)->cfa.offset == 16);
        const auto ps = validate(*s);
        INFO(listing(ps));
        CHECK(ps.size() == 1);
        CHECK(problems_at(ps, 12, "header says 4294967295 FREs; the FDEs have 6") == 1);
    }
    SECTION("fre_len = 0xffffffff, and one byte too many") {
        auto b = base.bytes;
        put(b, 16, 0xffffffff, 4);
        Error e = parse_error(b);
        CHECK(e.code() == Errc::Truncated);
        CHECK(e.where() == 16);
        put(b, 16, b.size() - base.map.fre_subsection + 1, 4);
        e = parse_error(b);
        CHECK(e.code() == Errc::Truncated);
        CHECK(e.where() == 16);
    }
    SECTION("fdeoff past the end") {
        // Past the end: reported at sfh_fdeoff; at the very end: at the FDE
        // count, whose FDEs no longer fit.
        for (std::uint64_t off : {std::uint64_t{0xffffffff}, std::uint64_t{base.bytes.size()}}) {
            auto b = base.bytes;
            put(b, 20, off, 4);
            const Error e = parse_error(b);
            CHECK(e.code() == Errc::Truncated);
            CHECK(e.where() == (off > base.bytes.size() - 28 ? 20U : 8U));
        }
    }
    SECTION("freoff past the end") {
        // Past the end: reported at sfh_freoff; at the very end: at the FRE
        // sub-section length, which no longer fits.
        for (std::uint64_t off : {std::uint64_t{0xffffffff}, std::uint64_t{base.bytes.size()}}) {
            auto b = base.bytes;
            put(b, 24, off, 4);
            const Error e = parse_error(b);
            CHECK(e.code() == Errc::Truncated);
            CHECK(e.where() == (off > base.bytes.size() - 28 ? 24U : 16U));
        }
    }
    SECTION("auxhdr_len = 255 with no auxiliary header") {
        auto b = base.bytes;
        b[7] = 255;
        const Error e = parse_error(b);
        CHECK(e.code() == Errc::Truncated);
        CHECK(e.where() == 7);
    }
    SECTION("a real 255-byte auxiliary header is skipped") {
        WriterOptions o;
        o.section_vaddr = 0x402000;
        o.quirks.auxhdr.assign(255, 0xaa);
        const Crafted c = craft(o, three());
        const Section s = parsed(c);
        CHECK(s.header().auxhdr_len == 255);
        CHECK(s.fde_subsection() == header_size + 255);
        CHECK(s.used_size() == c.bytes.size());
        CHECK(s.lookup(0x401108)->cfa.offset == 24);
        CHECK(validate(s).empty());
    }
    SECTION("bad magic, short sections") {
        auto b = base.bytes;
        b[0] = 0xe3;
        Error e = parse_error(b);
        CHECK(e.code() == Errc::BadMagic);
        CHECK(e.where() == 0);
        e = parse_error(std::vector<std::uint8_t>(base.bytes.begin(), base.bytes.begin() + 3));
        CHECK(e.code() == Errc::Truncated);
        CHECK(e.where() == 0);
        e = parse_error(std::vector<std::uint8_t>(base.bytes.begin(), base.bytes.begin() + 27));
        CHECK(e.code() == Errc::Truncated);
        CHECK(e.where() == 0);
    }
}

TEST_CASE("crafted headers: versions, flags and ABIs the specs do not define", "[malformed]") {
    SECTION("unknown version 4") {
        auto b = craft().bytes;
        b[2] = 4;
        const Error e = parse_error(b);
        CHECK(e.code() == Errc::Unsupported);
        CHECK(e.where() == 2);
    }
    SECTION("flags undefined for the version") {
        // PCREL arrived with v2 erratum 1; FRAME_POINTER left with v3; 0x80
        // was never defined (spec v3 section 2.1.3).
        struct Case {
            Version v;
            std::uint8_t flag;
        };
        for (const Case c :
             {Case{Version::V1, flag::fde_func_start_pcrel}, Case{Version::V3, flag::frame_pointer},
              Case{Version::V2, 0x80}, Case{Version::V3, 0x08}}) {
            INFO("version " << static_cast<int>(c.v) << " flag " << static_cast<int>(c.flag));
            auto b = craft(c.v).bytes;
            b[3] |= c.flag;
            const Error e = parse_error(b);
            CHECK(e.code() == Errc::Malformed);
            CHECK(e.where() == 3);
        }
    }
    SECTION("unknown ABI, s390x in v1, and an ABI whose byte order is not the section's") {
        auto b = craft().bytes;
        b[4] = 5;
        Error e = parse_error(b);
        CHECK(e.code() == Errc::Unsupported);
        CHECK(e.where() == 4);
        b = craft(Version::V1).bytes;
        b[4] = static_cast<std::uint8_t>(AbiArch::S390xBig);
        e = parse_error(b);
        CHECK(e.code() == Errc::Unsupported);
        CHECK(e.where() == 4);
        b = craft().bytes;
        b[4] = static_cast<std::uint8_t>(AbiArch::AArch64Big);
        b[6] = 0; // no fixed RA on AArch64
        const auto ps = validate(b, 0x402000);
        INFO(listing(ps));
        CHECK(problems_at(ps, 4, "does not match") == 1);
    }
    SECTION("AMD64 without a fixed RA offset") {
        auto b = craft().bytes;
        b[6] = 0;
        const auto ps = validate(b, 0x402000);
        INFO(listing(ps));
        CHECK(problems_at(ps, 6, "without a fixed RA offset") == 1);
    }
}

TEST_CASE("unsorted FDEs with the sorted flag set: lookups use a sorted index", "[malformed]") {
    WriterOptions o;
    o.section_vaddr = 0x402000;
    o.quirks.keep_fde_order = true;
    auto fdes = three();
    std::swap(fdes[0], fdes[2]); // C, B, A
    const Crafted c = craft(o, fdes);
    const Section s = parsed(c);
    CHECK(s.header().sorted());
    CHECK_FALSE(s.searches_in_place());
    CHECK(s.extra_memory() >= 3 * sizeof(std::uint32_t));
    for (const FdeSpec& f : fdes)
        for (std::uint64_t pc : {f.start, f.start + f.size / 2, f.start + f.size - 1}) {
            INFO("pc " << std::hex << pc);
            auto row = s.lookup(pc);
            REQUIRE(row.has_value());
            CHECK(row->func_start == f.start);
        }
    CHECK(s.lookup(0x401030).error().code() == Errc::NotFound);
    CHECK(s.lookup(0x400fff).error().code() == Errc::NotFound);
    // validate() names each FDE that starts before its predecessor.
    const auto ps = validate(s);
    INFO(listing(ps));
    CHECK(ps.size() == 2);
    CHECK(problems_at(ps, c.map.fdes[1].entry_offset, "before FDE 0") == 1);
    CHECK(problems_at(ps, c.map.fdes[2].entry_offset, "before FDE 1") == 1);

    SECTION("the same order without the flag is valid") {
        o.sorted = false;
        const Crafted u = craft(o, fdes);
        const Section su = parsed(u);
        CHECK_FALSE(su.searches_in_place());
        CHECK(su.lookup(0x401024)->func_start == 0x401020);
        CHECK(validate(su).empty());
    }
}

TEST_CASE("overlapping FDEs, FREs out of order or outside their function", "[malformed]") {
    WriterOptions o;
    o.section_vaddr = 0x402000;
    o.quirks.unchecked = true;

    SECTION("overlapping FDEs") {
        auto fdes = three();
        fdes[1].start = 0x401010; // inside A
        const Crafted c = craft(o, fdes);
        const Section s = parsed(c);
        CHECK(s.searches_in_place());
        const auto ps = validate(s);
        INFO(listing(ps));
        CHECK(ps.size() == 1);
        CHECK(problems_at(ps, c.map.fdes[1].entry_offset, "overlaps FDE 0 [0x401000, 0x401020)") ==
              1);
    }
    SECTION("FREs not increasing") {
        auto fdes = three();
        fdes[2].fres = {fre(0, {7, 8}), fre(8, {7, 24}), fre(8, {7, 32}), fre(4, {7, 16})};
        const Crafted c = craft(o, fdes);
        const auto& at = c.map.fdes[2].fre_offsets;
        const auto ps = validate(parsed(c));
        INFO(listing(ps));
        CHECK(ps.size() == 2);
        CHECK(problems_at(ps, at[2],
                          "FDE 2 FRE 2: start 0x8 is not above the previous FRE's 0x8") == 1);
        CHECK(problems_at(ps, at[3],
                          "FDE 2 FRE 3: start 0x4 is not above the previous FRE's 0x8") == 1);
    }
    SECTION("an FRE starting outside its function") {
        auto fdes = three();
        fdes[1].fres.push_back(fre(0x10, {7, 16}));
        const Crafted c = craft(o, fdes);
        const auto ps = validate(parsed(c));
        INFO(listing(ps));
        CHECK(ps.size() == 1);
        CHECK(problems_at(ps, c.map.fdes[1].fre_offsets[1], "outside the function (16 bytes)") ==
              1);
    }
    SECTION("PAuth key B and a mangled RA on AMD64") {
        auto fdes = three();
        fdes[0].pauth_key = PauthKey::B;
        fdes[2].fres[1].mangled_ra = true;
        const Crafted c = craft(o, fdes);
        const auto ps = validate(parsed(c));
        INFO(listing(ps));
        CHECK(ps.size() == 2);
        CHECK(problems_at(ps, c.map.fdes[0].attr_offset, "PAuth key B on a non-AArch64 ABI") == 1);
        CHECK(problems_at(ps, c.map.fdes[2].fre_offsets[1],
                          "mangled-RA bit on a non-AArch64 ABI") == 1);
    }
    SECTION("a function range that wraps around") {
        const Crafted c = craft(o, {function(0xfffffffffffffff0ULL, 0x20, {fre(0, {7, 8})})});
        const auto ps = validate(parsed(c));
        INFO(listing(ps));
        CHECK(problems_at(ps, c.map.fdes[0].entry_offset, "wraps around") == 1);
    }
}

TEST_CASE("crafted FDEs and FREs: reserved encodings and offsets past the end", "[malformed]") {
    SECTION("data word size code 3") {
        Crafted c = craft();
        const std::uint64_t fre_at = c.map.fdes[0].fre_offsets[1];
        c.bytes[fre_at + 1] |= 0x60; // FRE info bits 5-6
        const Section s = parsed(c);
        auto row = s.lookup(0x401002);
        REQUIRE_FALSE(row.has_value());
        CHECK(row.error().code() == Errc::Malformed);
        CHECK(row.error().where() == fre_at + 1);
        const auto ps = validate(s);
        INFO(listing(ps));
        CHECK(problems_at(ps, fre_at + 1, "invalid data word size code 3") == 1);
        CHECK(dump(s).find("<corrupt FRE: ") != std::string::npos);
        CHECK(s.lookup(0x401104)->cfa.offset == 8); // other functions are unaffected
    }
    SECTION("FDE type 2 (v3)") {
        Crafted c = craft();
        const std::uint64_t attr = c.map.fdes[1].attr_offset;
        c.bytes[attr + 3] = 2; // sfda_func_info2
        const Section s = parsed(c);
        auto f = s.fde(1);
        REQUIRE_FALSE(f.has_value());
        CHECK(f.error().code() == Errc::Unsupported);
        CHECK(f.error().where() == attr);
        auto row = s.lookup(0x401024);
        REQUIRE_FALSE(row.has_value());
        CHECK(row.error().code() == Errc::Unsupported);
        CHECK(row.error().where() == attr);
        CHECK(problems_at(validate(s), attr, "unknown FDE type 2") == 1);
        CHECK(dump(s).find("func idx [1]: <corrupt FDE: ") != std::string::npos);
    }
    SECTION("FRE type 3") {
        for (Version v : {Version::V2, Version::V3}) {
            Crafted c = craft(v);
            const std::uint64_t info_at =
                v == Version::V3 ? c.map.fdes[2].attr_offset + 2 : c.map.fdes[2].entry_offset + 16;
            c.bytes[info_at] = static_cast<std::uint8_t>((c.bytes[info_at] & 0xf0U) | 3U);
            auto f = parsed(c).fde(2);
            REQUIRE_FALSE(f.has_value());
            CHECK(f.error().code() == Errc::Malformed);
            CHECK(f.error().where() == c.map.fdes[2].attr_offset);
        }
    }
    SECTION("v3 attribute record outside the FRE sub-section") {
        Crafted c = craft();
        const std::uint64_t at = c.map.fdes[0].entry_offset + 12;
        put(c.bytes, at, 0xffffffff, 4);
        const Section s = parsed(c);
        auto f = s.fde(0);
        REQUIRE_FALSE(f.has_value());
        CHECK(f.error().code() == Errc::Malformed);
        CHECK(f.error().where() == at);
        CHECK(problems_at(validate(s), at, "outside the FRE sub-section") == 1);
    }
    SECTION("v2 FRE offset past the FRE sub-section") {
        Crafted c = craft(Version::V2);
        const std::uint64_t entry = c.map.fdes[0].entry_offset;
        put(c.bytes, entry + 8, 0xfffffff0, 4);
        auto f = parsed(c).fde(0);
        REQUIRE_FALSE(f.has_value());
        CHECK(f.error().code() == Errc::Malformed);
        CHECK(f.error().where() == entry);
    }
    SECTION("v2 PC-mask FDE with repeat size 0") {
        Crafted c = craft(Version::V2);
        const std::uint64_t entry = c.map.fdes[1].entry_offset;
        c.bytes[entry + 16] |= 0x10; // PC type mask; sfde_func_rep_size stays 0
        auto f = parsed(c).fde(1);
        REQUIRE_FALSE(f.has_value());
        CHECK(f.error().code() == Errc::Malformed);
        CHECK(f.error().where() == entry);
    }
    SECTION("v1 PC-mask FDE: AMD64 implies 16-byte blocks, AArch64 none") {
        // v1 has no repeat size field (layout_v1.cpp). With the mask bit set,
        // function C [0x401100, 0x401130) reads its FREs (+0 rsp+8, +8
        // rsp+24) in each 16-byte block.
        Crafted c = craft(Version::V1);
        const std::uint64_t entry = c.map.fdes[2].entry_offset;
        c.bytes[entry + 16] |= 0x10;
        const Section s = parsed(c);
        auto f = s.fde(2);
        REQUIRE(f.has_value());
        CHECK(f->rep_size == 16);
        CHECK(f->rep_size_implied);
        auto row = s.lookup(0x401100 + 32 + 3);
        REQUIRE(row.has_value());
        CHECK(row->fre_index == 0);
        CHECK(row->pc_begin == 0x401120);
        CHECK(row->pc_end == 0x401128);
        CHECK(row->cfa.offset == 8);
        row = s.lookup(0x401100 + 16 + 9);
        REQUIRE(row.has_value());
        CHECK(row->fre_index == 1);
        CHECK(row->pc_begin == 0x401118);
        CHECK(row->pc_end == 0x401120);
        CHECK(row->cfa.offset == 24);
        CHECK(validate(s).empty());

        // AArch64 PLT entries have no one size, and no v1 writer made
        // PC-mask FDEs for them: lookups fail and say why.
        WriterOptions o;
        o.version = Version::V1;
        o.abi = AbiArch::AArch64Little;
        o.section_vaddr = 0x402000;
        Crafted a = craft(o, {function(0x401000, 0x20,
                                       {fre(0, {31, 16}), fre(4, {29, 16}, RegRule::at_cfa(-16))}),
                              function(0x401020, 0x20, {fre(0, {31, 0})})});
        const std::uint64_t arm_entry = a.map.fdes[0].entry_offset;
        a.bytes[arm_entry + 16] |= 0x10;
        const Section arm = parsed(a);
        auto af = arm.fde(0);
        REQUIRE(af.has_value());
        CHECK(af->rep_size == 0);
        CHECK_FALSE(af->rep_size_implied);
        auto none = arm.lookup(0x401004);
        REQUIRE_FALSE(none.has_value());
        CHECK(none.error().code() == Errc::Unsupported);
        CHECK(none.error().where() == arm_entry);
        CHECK(none.error().what().find("without a repeat block size") != std::string::npos);
        CHECK(arm.lookup(0x401024).has_value()); // the other function is unaffected
        const auto ps = validate(arm);
        INFO(listing(ps));
        CHECK(std::count_if(ps.begin(), ps.end(), [&](const Problem& p) {
                  return p.severity == Problem::Severity::Warning && p.offset == arm_entry &&
                         p.message.find("without a repeat block size") != std::string::npos;
              }) == 1);
        CHECK(dump(arm).find("STARTPC[m]") != std::string::npos);
    }
    SECTION("an FRE count far beyond the FREs present") {
        for (Version v : {Version::V2, Version::V3}) {
            INFO("version " << static_cast<int>(v));
            Crafted c = craft(v);
            const WrittenFde& last = c.map.fdes[2];
            if (v == Version::V3)
                put(c.bytes, last.attr_offset, 0xffff, 2);
            else
                put(c.bytes, last.entry_offset + 12, 0xffffffff, 4);
            const Section s = parsed(c);
            // Past the last real FRE the reads run off the sub-section; the
            // error points at the count that promised them.
            auto row = s.lookup(0x401100 + 0x2f);
            REQUIRE_FALSE(row.has_value());
            CHECK(row.error().code() == Errc::Truncated);
            CHECK(row.error().where() ==
                  (v == Version::V3 ? last.attr_offset : last.entry_offset + 12));
            const auto ps = validate(s);
            INFO(listing(ps));
            CHECK(problems_at(ps, 12, "header says 6 FREs") == 1);
        }
    }
    SECTION("more data words than a default FDE has rules") {
        Crafted c = craft();
        const std::uint64_t fre_at = c.map.fdes[0].fre_offsets[0]; // start, info, 1 word
        c.bytes[fre_at + 1] = static_cast<std::uint8_t>((c.bytes[fre_at + 1] & ~0x1eU) | (3U << 1));
        const Section s = parsed(c);
        auto f = s.fde(0);
        REQUIRE(f.has_value());
        auto raw = s.fre_at(*f, fre_at);
        REQUIRE(raw.has_value());
        CHECK(raw->word_count == 3);
        auto row = s.row(*f, *raw, 0, f->size);
        REQUIRE_FALSE(row.has_value());
        CHECK(row.error().code() == Errc::Malformed);
        CHECK(row.error().where() == fre_at);
        CHECK(row.error().what().find("3 data words; a default FDE uses at most 2") !=
              std::string::npos);
    }
}

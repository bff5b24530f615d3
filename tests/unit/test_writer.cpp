// SPDX-License-Identifier: MIT
// The SFrame writer: round trips through the decoder for every version x ABI
// combination the specs allow, byte-for-byte agreement with sections GNU as
// wrote (rules typed in from objdump's listing, so that writer and decoder
// cannot share a misreading), re-encoding of every shared test vector, and
// the precise errors for rules a version or ABI cannot express.
#include "catch.hpp"
#include "sfunwind/sframe/dump.hpp"
#include "sfunwind/sframe/section.hpp"
#include "sfunwind/sframe/validate.hpp"
#include "sfunwind/sframe/writer.hpp"
#include "support.hpp"
#include "vectors.hpp"

#include <algorithm>
#include <nlohmann/json.hpp>
#include <numeric>

using namespace sfunwind;
using namespace sfunwind::sframe;
namespace fs = std::filesystem;

namespace {

// --- rule shorthands -------------------------------------------------------

RegRule at_cfa(std::int32_t off) {
    return RegRule::at_cfa(off);
}
RegRule same() {
    return RegRule::same_value();
}
RegRule undefined() {
    return RegRule::undefined();
}
RegRule val_reg(std::uint16_t reg, std::int32_t off = 0) {
    return {RegRule::Kind::ValReg, reg, off, RegRule::Source::Fre};
}
RegRule at_reg(std::uint16_t reg, std::int32_t off) {
    return {RegRule::Kind::AtReg, reg, off, RegRule::Source::Fre};
}
RegRule with_source(RegRule r, RegRule::Source s) {
    r.source = s;
    return r;
}

FreSpec fre(std::uint32_t start, CfaRule cfa, RegRule ra, RegRule fp, bool mangled = false) {
    FreSpec f;
    f.start = start;
    f.cfa = cfa;
    f.ra = ra;
    f.fp = fp;
    f.mangled_ra = mangled;
    return f;
}

std::string rule_str(const RegRule& r) {
    switch (r.kind) {
    case RegRule::Kind::Undefined:
        return "undefined";
    case RegRule::Kind::SameValue:
        return "same";
    case RegRule::Kind::AtCfa:
        return "[cfa" + std::to_string(r.offset) + "]";
    case RegRule::Kind::ValCfa:
        return "cfa" + std::to_string(r.offset);
    case RegRule::Kind::AtReg:
        return "[r" + std::to_string(r.reg) + "," + std::to_string(r.offset) + "]";
    case RegRule::Kind::ValReg:
        return "r" + std::to_string(r.reg) + "," + std::to_string(r.offset);
    }
    return "?";
}

std::string cfa_str(const CfaRule& c) {
    return std::string(c.deref ? "*" : "") + "r" + std::to_string(c.reg) + "," +
           std::to_string(c.offset);
}

// Every field of a Row, rule sources included. (Row::operator== cannot be
// used: CfaRule has no operator==, so the defaulted one is deleted.)
std::string row_str(const Row& r) {
    auto src = [](const RegRule& x) {
        return "/" + std::to_string(static_cast<unsigned>(x.source));
    };
    return std::to_string(r.pc_begin) + "-" + std::to_string(r.pc_end) + " f" +
           std::to_string(r.func_start) + "+" + std::to_string(r.func_size) + " #" +
           std::to_string(r.fde_index) + "." + std::to_string(r.fre_index) +
           " cfa=" + cfa_str(r.cfa) + " ra=" + rule_str(r.ra) + src(r.ra) +
           " fp=" + rule_str(r.fp) + src(r.fp) + " flags=" + std::to_string(r.signal_frame) +
           std::to_string(r.mangled_ra) + std::to_string(r.pauth_key_b) +
           std::to_string(r.outermost) + std::to_string(r.pc_mask) + std::to_string(r.topmost_only);
}

const Abi& abi_named(AbiArch a) {
    return *sframe::abi_of(a);
}

// --- the version x ABI matrix ------------------------------------------------

struct Combo {
    Version version;
    AbiArch abi;
    bool pcrel;
};

std::string name(const Combo& c) {
    return "v" + std::to_string(static_cast<unsigned>(c.version)) + (c.pcrel ? "+pcrel " : " ") +
           std::string(abi_named(c.abi).name) + (c.abi == AbiArch::AArch64Big ? "" : "");
}

// Spec v1 section 1.2.1 (no s390x), v2 erratum 1 (s390x, PCREL), v3 2.2.1.
std::vector<Combo> combos() {
    std::vector<Combo> out;
    for (AbiArch a : {AbiArch::Amd64Little, AbiArch::AArch64Little, AbiArch::AArch64Big})
        out.push_back({Version::V1, a, false});
    for (Version v : {Version::V2, Version::V3})
        for (AbiArch a :
             {AbiArch::Amd64Little, AbiArch::AArch64Little, AbiArch::AArch64Big, AbiArch::S390xBig})
            for (bool pcrel : {false, true})
                out.push_back({v, a, pcrel});
    return out;
}

// Functions exercising every rule kind the combination can encode, added
// out of address order so that the writer has to sort them.
std::vector<FdeSpec> functions_for(const Combo& c) {
    const Abi& abi = abi_named(c.abi);
    const bool s390x = abi.arch == Arch::S390x;
    const bool amd64 = abi.arch == Arch::X86_64;
    const bool aarch64 = abi.arch == Arch::AArch64;
    const bool v1 = c.version == Version::V1;
    const bool v3 = c.version == Version::V3;
    const std::uint16_t sp = abi.sp_reg;
    const std::uint16_t fp = abi.fp_reg;
    // CFA offsets that need 1, 1, 2 and 4-byte data words; s390x stores
    // (offset - 160) / 8 (spec v3 section 3.1.3).
    auto cfa_off = [&](int n) -> std::int32_t {
        static constexpr std::int32_t plain[] = {8, 16, 300, 70000};
        static constexpr std::int32_t scaled[] = {0, 2, 300, 40000};
        return s390x ? 160 + 8 * scaled[n] : plain[n];
    };
    const RegRule ra_saved = amd64 ? at_cfa(-8) : s390x ? at_cfa(-48) : at_cfa(-8);
    const RegRule fp_saved = amd64 ? at_cfa(-16) : s390x ? at_cfa(-72) : at_cfa(-16);
    const RegRule ra_unsaved = amd64 ? at_cfa(-8) : same();

    std::vector<FdeSpec> out;

    FdeSpec prologue;
    prologue.start = 0x1000;
    prologue.size = 0x80;
    prologue.fres = {
        fre(0x00, {sp, cfa_off(0)}, ra_unsaved, same()),
        fre(0x04, {sp, cfa_off(1)}, ra_saved, fp_saved),
        fre(0x08, {fp, cfa_off(1)}, ra_saved, fp_saved),
        fre(0x10, {sp, cfa_off(2)}, ra_saved, fp_saved),
        fre(0x20, {sp, cfa_off(3)}, ra_saved, fp_saved),
    };
    if (!s390x) prologue.fres.push_back(fre(0x30, {sp, -8}, ra_saved, fp_saved));
    // The RA still in its register with the FP saved: a padding word
    // (SFRAME_FRE_RA_OFFSET_INVALID) in v2 and v3.
    if (!amd64 && !v1) prologue.fres.push_back(fre(0x40, {sp, cfa_off(1)}, same(), fp_saved));
    if (aarch64) prologue.fres.push_back(fre(0x50, {sp, cfa_off(1)}, ra_saved, fp_saved, true));
    // v2 s390x: RA and FP saved in floating-point registers f8/f9 (DWARF 24,
    // 25), encoded as (regnum << 1) | 1 (spec v2 erratum 1).
    if (s390x && c.version == Version::V2)
        prologue.fres.push_back(fre(0x60, {sp, cfa_off(0)}, val_reg(24), val_reg(25)));
    prologue.fres.push_back(fre(0x7f, {sp, cfa_off(0)}, ra_unsaved, same()));

    FdeSpec big; // FRE starts beyond 16 bits: SFRAME_FRE_TYPE_ADDR4
    big.start = 0x2000;
    big.size = 0x30000;
    big.fres = {fre(0, {sp, cfa_off(0)}, ra_unsaved, same()),
                fre(0x100, {sp, cfa_off(1)}, ra_saved, fp_saved),
                fre(0x20000, {fp, cfa_off(1)}, ra_saved, fp_saved)};

    FdeSpec mid; // SFRAME_FRE_TYPE_ADDR2
    mid.start = 0x40000;
    mid.size = 0x2000;
    mid.fres = {fre(0, {sp, cfa_off(0)}, ra_unsaved, same()),
                fre(0x1ff, {sp, cfa_off(2)}, ra_saved, fp_saved)};

    out.push_back(big);
    out.push_back(mid);
    out.push_back(prologue);

    // PC-mask, 16-byte blocks (spec v3 section 2.3.3.1); v1 stores no size
    // and implies 16 on AMD64 only (layout_v1.cpp).
    if (!v1 || amd64) {
        FdeSpec plt;
        plt.start = 0x50000;
        plt.size = 0x40;
        plt.pc_type = PcType::Mask;
        plt.rep_size = 16;
        plt.fres = {fre(0, {sp, cfa_off(0)}, ra_unsaved, same()),
                    fre(11, {sp, cfa_off(1)}, ra_unsaved, same())};
        out.push_back(plt);
    }
    if (!v1) {
        FdeSpec outer; // RA undefined: zero data words (v2 erratum 2)
        outer.start = 0x50100;
        outer.size = 0x20;
        outer.fres = {fre(0, {}, undefined(), same()), fre(8, {sp, cfa_off(1)}, ra_saved, fp_saved),
                      fre(0x10, {}, undefined(), same())};
        out.push_back(outer);
    }

    if (v3) {
        FdeSpec signal;
        signal.start = 0x50200;
        signal.size = 0x10;
        signal.signal = true;
        signal.fres = {fre(0, {sp, cfa_off(1)}, ra_saved, fp_saved)};
        out.push_back(signal);

        FdeSpec empty; // no FREs: the outermost frame (spec v3 section 1.2)
        empty.start = 0x50300;
        empty.size = 0x10;
        out.push_back(empty);

        // Flexible FDE (spec v3 section 3.2). s390x CFA offsets stay scaled.
        const std::uint16_t other = s390x ? 1 : amd64 ? 10 : 9; // a DRAP-like register
        const std::int32_t deref_off = s390x ? 168 : -8;
        FdeSpec flex;
        flex.start = 0x50400;
        flex.size = 0x80;
        flex.fde_type = FdeType::Flex;
        flex.fres = {
            fre(0x00, {sp, cfa_off(0)}, ra_unsaved, same()),
            fre(0x09, {other, cfa_off(0)}, ra_unsaved, same()),
            fre(0x18, {fp, deref_off, true}, ra_unsaved, at_reg(fp, 0)),
            fre(0x20, {sp, cfa_off(1)}, at_cfa(-16), val_reg(3)),
            fre(0x28, {fp, cfa_off(1)}, val_reg(3), at_cfa(-16)),
            fre(0x30, {fp, cfa_off(1)}, at_reg(fp, 8), at_reg(fp, 0)),
            // Control word (40 << 3) | 1 needs 2-byte data words.
            fre(0x38, {sp, cfa_off(3)}, at_cfa(-24), val_reg(40)),
            fre(0x40, {}, undefined(), same()),
            // An explicit RA padding word with no FP rule after it.
            fre(0x48, {sp, cfa_off(1)}, with_source(ra_unsaved, RegRule::Source::Padding), same()),
        };
        if (s390x) flex.fres.push_back(fre(0x50, {sp, cfa_off(0)}, val_reg(24), val_reg(25)));
        if (aarch64)
            flex.fres.push_back(fre(0x58, {fp, cfa_off(1)}, at_reg(fp, 8), at_reg(fp, 0), true));
        out.push_back(flex);
    }

    if (aarch64) {
        FdeSpec keyb; // PAuth key B (FDE info bit 5)
        keyb.start = 0x50500;
        keyb.size = 0x10;
        keyb.pauth_key = PauthKey::B;
        keyb.fres = {fre(0, {sp, 0}, same(), same()),
                     fre(4, {sp, 16}, at_cfa(-8), at_cfa(-16), true)};
        out.push_back(keyb);
    }
    return out;
}

WriterOptions options_for(const Combo& c, std::uint64_t vaddr) {
    WriterOptions o;
    o.version = c.version;
    o.abi = c.abi;
    o.pcrel = c.pcrel;
    o.section_vaddr = vaddr;
    return o;
}

// What the decoder must say about an FRE's topmost-only status.
bool expect_topmost_only(const Abi& abi, const FdeSpec& f, const FreSpec& r) {
    if (r.ra.kind == RegRule::Kind::Undefined) return false;
    auto plain = [&](std::uint16_t reg) { return reg == abi.sp_reg || reg == abi.fp_reg; };
    bool t = r.ra.kind == RegRule::Kind::SameValue && abi.ra_in_register;
    if (f.fde_type == FdeType::Flex) {
        t = t || !plain(r.cfa.reg);
        for (const RegRule* x : {&r.ra, &r.fp})
            if (x->reads_register() && !plain(x->reg)) t = true;
    } else {
        for (const RegRule* x : {&r.ra, &r.fp})
            if (x->kind == RegRule::Kind::ValReg) t = true;
    }
    return t;
}

// The row at `pc` must be FRE `k` of function `f` with FDE index `index`.
void check_row(const Section& s, const FdeSpec& f, std::uint32_t index, std::size_t k,
               std::uint64_t pc, std::uint64_t begin, std::uint64_t end) {
    INFO("pc " << std::hex << pc << std::dec << ", FRE " << k);
    const FreSpec& want = f.fres[k];
    auto row = s.lookup(pc);
    REQUIRE(row.has_value());
    CHECK(row->pc_begin == begin);
    CHECK(row->pc_end == end);
    CHECK(row->func_start == f.start);
    CHECK(row->func_size == f.size);
    CHECK(row->fde_index == index);
    CHECK(row->fre_index == k);
    CHECK(row->signal_frame == f.signal);
    CHECK(row->pauth_key_b == (f.pauth_key == PauthKey::B));
    CHECK(row->pc_mask == (f.pc_type == PcType::Mask));
    CHECK(row->mangled_ra == want.mangled_ra);
    CHECK(rule_str(row->ra) == rule_str(want.ra));
    if (want.ra.kind == RegRule::Kind::Undefined) {
        CHECK(row->outermost);
        return;
    }
    CHECK_FALSE(row->outermost);
    CHECK(cfa_str(row->cfa) == cfa_str(want.cfa));
    CHECK(rule_str(row->fp) == rule_str(want.fp));
    CHECK(row->topmost_only == expect_topmost_only(s.abi(), f, want));
}

// Every FRE of every function, probed at its first, middle and last byte
// (and, for PC-mask FDEs, in the third repeat block).
void check_all_rows(const Section& s, const std::vector<FdeSpec>& fdes) {
    std::vector<std::size_t> order(fdes.size());
    std::iota(order.begin(), order.end(), std::size_t{0});
    std::stable_sort(order.begin(), order.end(),
                     [&](auto a, auto b) { return fdes[a].start < fdes[b].start; });
    REQUIRE(s.fde_count() == fdes.size());
    for (std::uint32_t index = 0; index < order.size(); ++index) {
        const FdeSpec& f = fdes[order[index]];
        INFO("function at " << std::hex << f.start);
        if (f.fres.empty()) {
            auto row = s.lookup(f.start + f.size - 1);
            if (s.version() == Version::V3) {
                REQUIRE(row.has_value());
                CHECK(row->outermost);
                CHECK(row->pc_begin == f.start);
                CHECK(row->pc_end == f.start + f.size);
            } else {
                CHECK_FALSE(row.has_value());
            }
            continue;
        }
        const bool mask = f.pc_type == PcType::Mask;
        const std::uint64_t limit = mask ? f.rep_size : f.size;
        for (std::uint64_t block : {std::uint64_t{0}, std::uint64_t{2}}) {
            if (block != 0 && !mask) continue;
            const std::uint64_t base = f.start + block * limit;
            for (std::size_t k = 0; k < f.fres.size(); ++k) {
                const std::uint64_t b = base + f.fres[k].start;
                const std::uint64_t e =
                    base + (k + 1 < f.fres.size() ? f.fres[k + 1].start : limit);
                for (std::uint64_t pc : {b, b + (e - b) / 2, e - 1})
                    check_row(s, f, index, k, pc, b, e);
            }
        }
        // Just past the function (the test functions never touch).
        CHECK(s.lookup(f.start + f.size).error().code() == Errc::NotFound);
    }
}

// --- shared test vectors ---------------------------------------------------

using test::load_vectors;
using test::Vector;

std::vector<std::uint8_t> vector_bytes(const std::string& name) {
    const auto j = nlohmann::json::parse(test::read_text(test::gas_vectors_dir() / name));
    return j.at("content").get<std::vector<std::uint8_t>>();
}

// A decoded section as writer input: the options its header implies and each
// FDE's rules as Section::row() reads them, in the order of their FREs (the
// writer places FREs in input order and sorts the FDEs, as GNU ld does).
// `exact` also copies the FRE and data word widths, which the writer
// otherwise picks itself.
struct Decoded {
    WriterOptions options;
    std::vector<FdeSpec> fdes;
};

Decoded decode(const Section& s, bool exact) {
    Decoded d;
    const Header& h = s.header();
    d.options.version = h.version;
    d.options.abi = h.abi_arch;
    d.options.section_vaddr = s.vaddr();
    d.options.pcrel = h.pcrel();
    d.options.sorted = h.sorted();
    d.options.frame_pointer = (h.flags & flag::frame_pointer) != 0;
    d.options.cfa_fixed_ra_offset = h.cfa_fixed_ra_offset;
    d.options.cfa_fixed_fp_offset = h.cfa_fixed_fp_offset;
    std::vector<std::uint32_t> by_fres(s.fde_count());
    std::iota(by_fres.begin(), by_fres.end(), 0U);
    if (h.sorted())
        std::stable_sort(by_fres.begin(), by_fres.end(), [&](auto a, auto b) {
            return s.fde(a)->fre_offset < s.fde(b)->fre_offset;
        });
    for (const std::uint32_t i : by_fres) {
        auto fde = s.fde(i);
        REQUIRE(fde.has_value());
        FdeSpec f;
        f.start = fde->start;
        f.size = fde->size;
        f.pc_type = fde->pc_type;
        f.rep_size = fde->rep_size;
        f.fde_type = fde->fde_type;
        f.signal = fde->signal;
        f.pauth_key = fde->pauth_key;
        if (exact) f.fre_type = fde->fre_type;
        auto fres = s.fres(*fde);
        REQUIRE(fres.has_value());
        for (std::uint32_t k = 0; k < fres->size(); ++k) {
            const Fre& raw = (*fres)[k];
            auto row = s.row(*fde, raw, k, fde->size);
            REQUIRE(row.has_value());
            FreSpec r = fre(raw.start, row->cfa, row->ra, row->fp, raw.mangled_ra);
            if (exact) r.word_size = raw.word_size;
            f.fres.push_back(r);
        }
        d.fdes.push_back(std::move(f));
    }
    return d;
}

// Every FRE's Row, in section order, for whole-section comparison.
std::vector<std::string> all_rows(const Section& s) {
    std::vector<std::string> out;
    for (std::uint32_t i = 0; i < s.fde_count(); ++i) {
        auto fde = s.fde(i);
        REQUIRE(fde.has_value());
        auto fres = s.fres(*fde);
        REQUIRE(fres.has_value());
        for (std::uint32_t k = 0; k < fres->size(); ++k) {
            const std::uint64_t next = k + 1 < fres->size() ? (*fres)[k + 1].start : fde->size;
            auto row = s.row(*fde, (*fres)[k], k, next);
            REQUIRE(row.has_value());
            out.push_back(row_str(*row));
        }
    }
    return out;
}

Expected<std::vector<std::uint8_t>> write(const WriterOptions& o, const std::vector<FdeSpec>& fdes,
                                          SectionMap* map = nullptr) {
    Writer w(o);
    for (const auto& f : fdes)
        w.add(f);
    return w.write(map);
}

std::string hex_bytes(const std::vector<std::uint8_t>& b) {
    std::string s;
    char buf[4];
    for (auto x : b) {
        std::snprintf(buf, sizeof buf, "%02x", x);
        s += buf;
    }
    return s;
}

} // namespace

TEST_CASE("writer round trip: every version x ABI combination decodes to the rows written",
          "[writer]") {
    const auto all = combos();
    REQUIRE(all.size() == 19);
    for (const Combo& c : all) {
        INFO("combination " << name(c));
        const std::uint64_t vaddr = 0x60000;
        const auto fdes = functions_for(c);
        SectionMap map;
        auto bytes = write(options_for(c, vaddr), fdes, &map);
        if (!bytes) FAIL(bytes.error().message());
        auto s = Section::parse(*bytes, vaddr);
        REQUIRE(s.has_value());
        CHECK(s->version() == c.version);
        CHECK(s->header().abi_arch == c.abi);
        CHECK(s->view().order() == abi_named(c.abi).order);
        CHECK(s->header().sorted());
        CHECK(s->header().pcrel() == (c.pcrel && c.version != Version::V1));
        CHECK(s->searches_in_place());
        CHECK(s->used_size() == bytes->size());
        CHECK(s->header().cfa_fixed_ra_offset == (abi_named(c.abi).arch == Arch::X86_64 ? -8 : 0));

        // The map names the offsets the decoder finds.
        REQUIRE(map.fdes.size() == fdes.size());
        for (std::uint32_t i = 0; i < s->fde_count(); ++i) {
            auto f = s->fde(i);
            REQUIRE(f.has_value());
            CHECK(f->entry_offset == map.fdes[i].entry_offset);
            CHECK(f->attr_offset == map.fdes[i].attr_offset);
            CHECK(f->start == fdes[map.fdes[i].input_index].start);
            auto fres = s->fres(*f);
            REQUIRE(fres.has_value());
            REQUIRE(fres->size() == map.fdes[i].fre_offsets.size());
            for (std::size_t k = 0; k < fres->size(); ++k)
                CHECK((*fres)[k].offset == map.fdes[i].fre_offsets[k]);
        }

        check_all_rows(*s, fdes);
        const auto problems = validate(*s);
        for (const auto& p : problems)
            INFO("problem: " << p.message << " at " << p.offset);
        CHECK(problems.empty());

        // Dumping is stable across a decode/re-encode cycle, and describes the
        // functions that were written.
        const std::string text = dump(*s);
        CHECK(text.find("Num FDEs: " + std::to_string(fdes.size()) + "\n") != std::string::npos);
        CHECK(text == dump(*s));
        const Decoded again = decode(*s, false);
        auto bytes2 = write(again.options, again.fdes);
        REQUIRE(bytes2.has_value());
        auto s2 = Section::parse(*bytes2, vaddr);
        REQUIRE(s2.has_value());
        CHECK(dump(*s2) == text);
        CHECK(all_rows(*s2) == all_rows(*s));
        // Nothing was forced, so the writer's own choices come back unchanged.
        CHECK(hex_bytes(*bytes2) == hex_bytes(*bytes));
    }
}

TEST_CASE("writer picks the narrowest FRE type and data word size, and honours forced ones",
          "[writer]") {
    const Abi& abi = abi_amd64();
    WriterOptions o;
    FdeSpec f;
    f.start = 0x401000;
    f.size = 0x20000;
    f.fres = {fre(0, {abi.sp_reg, 8}, at_cfa(-8), same()),
              fre(0x1ff, {abi.sp_reg, 0x7fff}, at_cfa(-8), same()),
              fre(0x10000, {abi.sp_reg, 0x8000}, at_cfa(-8), at_cfa(-0x8000))};
    SectionMap map;
    auto bytes = write(o, {f}, &map);
    REQUIRE(bytes.has_value());
    auto s = Section::parse(*bytes, 0);
    REQUIRE(s.has_value());
    auto fde = s->fde(0);
    REQUIRE(fde.has_value());
    CHECK(fde->fre_type == FreType::Addr4);
    auto fres = s->fres(*fde);
    REQUIRE(fres.has_value());
    REQUIRE(fres->size() == 3);
    CHECK((*fres)[0].word_size == 1);
    CHECK((*fres)[1].word_size == 2);
    CHECK((*fres)[2].word_size == 4); // 0x8000 does not fit a signed 16-bit word
    CHECK((*fres)[2].size == 4 + 1 + 2 * 4);

    f.size = 0x100;
    f.fres.pop_back();
    f.fres[1].start = 0xff;
    f.fres[0].word_size = 4;
    bytes = write(o, {f});
    REQUIRE(bytes.has_value());
    s = Section::parse(*bytes, 0);
    REQUIRE(s.has_value());
    fde = s->fde(0);
    REQUIRE(fde.has_value());
    CHECK(fde->fre_type == FreType::Addr1);
    fres = s->fres(*fde);
    REQUIRE(fres.has_value());
    CHECK((*fres)[0].word_size == 4);
    CHECK(s->lookup(0x401000 + 0xff)->cfa.offset == 0x7fff);

    f.fre_type = FreType::Addr2;
    bytes = write(o, {f});
    REQUIRE(bytes.has_value());
    s = Section::parse(*bytes, 0);
    REQUIRE(s.has_value());
    CHECK(s->fde(0)->fre_type == FreType::Addr2);
}

TEST_CASE("writer output matches GNU as byte for byte, from rules typed in from objdump",
          "[writer]") {
    SECTION("v3 AMD64, PC-relative (cfi-sframe-x86_64-1, binutils 2.46)") {
        WriterOptions o;
        o.version = Version::V3;
        o.section_vaddr = 0x402000;
        const RegRule ra = RegRule::at_cfa(-8, RegRule::Source::Header);
        FdeSpec f;
        f.start = 0x401000;
        f.size = 25;
        f.fres = {fre(0x0, {7, 8}, ra, same()), fre(0x1, {7, 16}, ra, at_cfa(-16)),
                  fre(0x4, {6, 16}, ra, at_cfa(-16)), fre(0x18, {7, 8}, ra, at_cfa(-16))};
        auto bytes = write(o, {f});
        REQUIRE(bytes.has_value());
        CHECK(hex_bytes(*bytes) == hex_bytes(vector_bytes("cfi-sframe-x86_64-1-2.46.json")));
    }
    SECTION("v3 AMD64 flexible FDE, DRAP (cfi-sframe-x86_64-esc-expr-1, binutils 2.46)") {
        WriterOptions o;
        o.section_vaddr = 0x402048;
        const RegRule ra = RegRule::at_cfa(-8, RegRule::Source::Header);
        FdeSpec f;
        f.start = 0x401000;
        f.size = 95;
        f.fde_type = FdeType::Flex;
        f.fres = {fre(0x00, {7, 8}, ra, same()),        fre(0x09, {10, 0}, ra, same()),
                  fre(0x18, {10, 0}, ra, at_reg(6, 0)), fre(0x1a, {6, -8, true}, ra, at_reg(6, 0)),
                  fre(0x52, {10, 0}, ra, at_reg(6, 0)), fre(0x5e, {7, 8}, ra, at_reg(6, 0))};
        auto bytes = write(o, {f});
        REQUIRE(bytes.has_value());
        CHECK(hex_bytes(*bytes) ==
              hex_bytes(vector_bytes("cfi-sframe-x86_64-esc-expr-1-2.46.json")));
    }
    SECTION("v3 AMD64 flexible FDE, RA in a register and RA undefined "
            "(cfi-sframe-x86_64-ra-undefined-flex-1)") {
        WriterOptions o;
        o.section_vaddr = 0x402040;
        const RegRule ra = RegRule::at_cfa(-8, RegRule::Source::Header);
        FdeSpec f;
        f.start = 0x401000;
        f.size = 7;
        f.fde_type = FdeType::Flex;
        f.fres = {fre(0, {7, 8}, ra, same()), fre(1, {7, 16}, ra, at_cfa(-16)),
                  fre(4, {6, 16}, ra, at_cfa(-16)), fre(5, {6, 16}, val_reg(3), at_cfa(-16)),
                  fre(6, {}, undefined(), same())};
        auto bytes = write(o, {f});
        REQUIRE(bytes.has_value());
        CHECK(hex_bytes(*bytes) ==
              hex_bytes(vector_bytes("cfi-sframe-x86_64-ra-undefined-flex-1-2.46.json")));
    }
    SECTION("v2 AArch64, section-relative starts (test-aarch64, binutils 2.44)") {
        WriterOptions o;
        o.version = Version::V2;
        o.abi = AbiArch::AArch64Little;
        o.pcrel = false;
        o.section_vaddr = 0x970;
        auto fn = [](std::uint64_t start, std::uint32_t size, std::vector<FreSpec> fres) {
            FdeSpec f;
            f.start = start;
            f.size = size;
            f.fres = std::move(fres);
            return f;
        };
        auto bytes =
            write(o, {fn(0x798, 80,
                         {fre(0, {31, 0}, same(), same()), fre(4, {31, 32}, at_cfa(-32), same()),
                          fre(0x4c, {31, 0}, same(), same())}),
                      fn(0x7e8, 8, {fre(0, {31, 0}, same(), same())}),
                      fn(0x7f0, 20,
                         {fre(0, {31, 0}, same(), same()), fre(4, {31, 16}, at_cfa(-16), same()),
                          fre(0x10, {31, 0}, same(), same())}),
                      fn(0x804, 8, {fre(0, {31, 0}, same(), same())})});
        REQUIRE(bytes.has_value());
        CHECK(hex_bytes(*bytes) == hex_bytes(vector_bytes("test-aarch64-2.44.json")));
    }
    SECTION("v1 AMD64, zero-sized function (cfi-sframe-common-1, binutils 2.40)") {
        WriterOptions o;
        o.version = Version::V1;
        o.section_vaddr = 0x401000;
        FdeSpec f;
        f.start = 0x401000;
        f.size = 0;
        f.fres = {fre(0, {7, 8}, at_cfa(-8), same())};
        auto bytes = write(o, {f});
        REQUIRE(bytes.has_value());
        CHECK(hex_bytes(*bytes) == hex_bytes(vector_bytes("cfi-sframe-common-1-2.40.json")));
    }
}

TEST_CASE("every shared test vector re-encodes to identical rows and identical bytes",
          "[writer][vectors]") {
    const auto vectors = load_vectors();
    REQUIRE(vectors.size() == 110);
    std::size_t encoded = 0;
    std::vector<std::string> differing;
    for (const auto& v : vectors) {
        if (v.bytes.empty()) continue;
        INFO("vector " << v.name);
        auto s = Section::parse(v.bytes, v.base);
        REQUIRE(s.has_value());
        const auto want = all_rows(*s);
        for (bool exact : {false, true}) {
            INFO((exact ? "with the vector's FRE and word sizes" : "with the writer's own sizes"));
            const Decoded d = decode(*s, exact);
            auto bytes = write(d.options, d.fdes);
            if (!bytes) FAIL(bytes.error().message());
            auto s2 = Section::parse(*bytes, v.base);
            REQUIRE(s2.has_value());
            CHECK(all_rows(*s2) == want);
            CHECK(validate(*s2).size() == validate(*s).size());
            // GNU as's bytes, unless the section carries more than its rows.
            const std::vector<std::uint8_t> used(
                v.bytes.begin(), v.bytes.begin() + static_cast<std::ptrdiff_t>(s->used_size()));
            if (*bytes != used)
                differing.push_back(v.name + (exact ? " (exact)" : " (auto)") + ": " +
                                    hex_bytes(*bytes) + " vs " + hex_bytes(used));
        }
        ++encoded;
    }
    CHECK(encoded == 98);
    // Every section GNU as and ld wrote comes back byte for byte, whether the
    // writer picks the FRE and data word widths itself or copies them.
    for (const auto& n : differing)
        FAIL_CHECK("not byte-identical: " << n);
}

TEST_CASE("writer refuses what the version, ABI or FDE type cannot express", "[writer]") {
    const Abi& amd64 = abi_amd64();
    auto one = [](std::vector<FreSpec> fres, std::uint32_t size = 0x40) {
        FdeSpec f;
        f.start = 0x1000;
        f.size = size;
        f.fres = std::move(fres);
        return f;
    };
    auto expect = [](const WriterOptions& o, const FdeSpec& f, Errc code,
                     const std::string& words) {
        auto r = write(o, {f});
        REQUIRE_FALSE(r.has_value());
        INFO(r.error().message());
        CHECK(r.error().code() == code);
        CHECK(r.error().what().find(words) != std::string::npos);
        CHECK(r.error().what().find("function 0 (0x1000)") != std::string::npos);
    };
    WriterOptions v3;
    WriterOptions v2;
    v2.version = Version::V2;
    WriterOptions v1;
    v1.version = Version::V1;
    WriterOptions s390x_v2 = v2;
    s390x_v2.abi = AbiArch::S390xBig;
    WriterOptions s390x_v3 = v3;
    s390x_v3.abi = AbiArch::S390xBig;
    WriterOptions arm_v2 = v2;
    arm_v2.abi = AbiArch::AArch64Little;

    // AMD64 fixes the RA at CFA-8 in the header (spec v3 section 3.1.1).
    expect(v3, one({fre(0, {7, 16}, at_cfa(-16), same())}), Errc::Unsupported,
           "fixes the RA at [CFA-8]");
    // Default FDEs base the CFA on SP or FP only, never dereferenced.
    expect(v3, one({fre(0, {10, 0}, at_cfa(-8), same())}), Errc::Unsupported, "flexible FDE");
    expect(v3, one({fre(0, {6, -8, true}, at_cfa(-8), same())}), Errc::Unsupported, "flexible FDE");
    expect(v3, one({fre(0, {7, 8}, at_cfa(-8), at_reg(6, 0))}), Errc::Unsupported,
           "use a flexible FDE");
    FdeSpec flex = one({fre(0, {10, 0}, at_cfa(-8), same())});
    flex.fde_type = FdeType::Flex;
    expect(v2, flex, Errc::Unsupported, "flexible FDEs need SFrame version 3");
    // A flexible control word of 0 is padding: "RA = CFA + off" cannot be said.
    flex.fres[0].ra = RegRule{RegRule::Kind::ValCfa, 0, 16, RegRule::Source::Fre};
    expect(v3, flex, Errc::Unsupported, "padding word");
    // s390x CFA offsets are 160 + 8n (spec v3 section 3.1.3).
    expect(s390x_v2, one({fre(0, {15, 164}, same(), same())}), Errc::Unsupported,
           "not 160 plus a multiple of 8");
    // v2 s390x reads odd RA/FP words as register numbers.
    expect(s390x_v2, one({fre(0, {15, 160}, at_cfa(-47), same())}), Errc::Unsupported,
           "odd offsets");
    // v3 moved register-saved RA/FP to flexible FDEs.
    expect(s390x_v3, one({fre(0, {15, 160}, val_reg(24), same())}), Errc::Unsupported,
           "flexible FDEs");
    // RA at CFA+0 is indistinguishable from the padding word.
    expect(arm_v2, one({fre(0, {31, 16}, at_cfa(0), same())}), Errc::Unsupported, "padding word");
    // Version limits.
    expect(v1, one({fre(0, {7, 8}, undefined(), same())}), Errc::Unsupported, "erratum 2");
    WriterOptions arm_v1 = v1;
    arm_v1.abi = AbiArch::AArch64Little;
    expect(arm_v1, one({fre(0, {31, 16}, same(), at_cfa(-16))}), Errc::Unsupported,
           "no padding word");
    FdeSpec sig = one({fre(0, {7, 8}, at_cfa(-8), same())});
    sig.signal = true;
    expect(v2, sig, Errc::Unsupported, "version 3");
    FdeSpec mask = one({fre(0, {7, 8}, at_cfa(-8), same())});
    mask.pc_type = PcType::Mask;
    // v1 stores no repeat block size: a reader takes AMD64's 16-byte PLT
    // entry (layout_v1.cpp), so only 16 can be written, and only for AMD64.
    mask.rep_size = 8;
    expect(v1, mask, Errc::Unsupported,
           "repeat block size 8 in SFrame version 1, which stores none");
    mask.rep_size = 16;
    CHECK(write(v1, {mask}).has_value());
    expect(arm_v1, mask, Errc::Unsupported, "PC-mask FDEs on aarch64 need SFrame version 2");
    mask.rep_size = 0;
    expect(v3, mask, Errc::Malformed, "repeat block size 0");
    // FRE order and range.
    expect(v3, one({fre(4, {7, 8}, at_cfa(-8), same()), fre(4, {7, 16}, at_cfa(-8), same())}),
           Errc::Malformed, "FRE 1 (+0x4): start is not above");
    expect(v3, one({fre(0, {7, 8}, at_cfa(-8), same()), fre(0x40, {7, 16}, at_cfa(-8), same())}),
           Errc::Malformed, "outside the function (64 bytes)");
    // Forced widths that do not fit.
    FdeSpec narrow = one({fre(0, {7, 300}, at_cfa(-8), same())});
    narrow.fres[0].word_size = 1;
    expect(v3, narrow, Errc::Unsupported, "data word 0 (300) does not fit in 1 bytes");
    FdeSpec addr =
        one({fre(0, {7, 8}, at_cfa(-8), same()), fre(0x100, {7, 16}, at_cfa(-8), same())}, 0x200);
    addr.fre_type = FreType::Addr1;
    expect(v3, addr, Errc::Unsupported, "does not fit FRE type 0");
    // AArch64-only bits.
    FdeSpec keyb = one({fre(0, {7, 8}, at_cfa(-8), same())});
    keyb.pauth_key = PauthKey::B;
    expect(v3, keyb, Errc::Unsupported, "PAuth key B on amd64");
    expect(v3, one({fre(0, {7, 8}, at_cfa(-8), same(), true)}), Errc::Unsupported,
           "mangled-RA bit on amd64");

    // Section-level limits.
    WriterOptions far = v2;
    far.section_vaddr = 0x1000 + (std::uint64_t{1} << 31) + 64;
    auto r = write(far, {one({fre(0, {amd64.sp_reg, 8}, at_cfa(-8), same())})});
    REQUIRE_FALSE(r.has_value());
    CHECK(r.error().code() == Errc::Unsupported);
    CHECK(r.error().what().find("32-bit start field") != std::string::npos);
    WriterOptions fp3 = v3;
    fp3.frame_pointer = true;
    r = write(fp3, {});
    REQUIRE_FALSE(r.has_value());
    CHECK(r.error().what().find("SFRAME_F_FRAME_POINTER") != std::string::npos);
    WriterOptions s390x_v1 = v1;
    s390x_v1.abi = AbiArch::S390xBig;
    r = write(s390x_v1, {});
    REQUIRE_FALSE(r.has_value());
    CHECK(r.error().code() == Errc::Unsupported);
    FdeSpec a = one({fre(0, {7, 8}, at_cfa(-8), same())});
    FdeSpec b = a;
    b.start = 0x1020;
    r = write(v3, {a, b});
    REQUIRE_FALSE(r.has_value());
    CHECK(r.error().code() == Errc::Malformed);
    CHECK(r.error().what().find("function 1 (0x1020) overlaps function 0 [0x1000, 0x1040)") !=
          std::string::npos);
    // The same pair is written when the checks are off, for decoder tests.
    v3.quirks.unchecked = true;
    CHECK(write(v3, {a, b}).has_value());
}

TEST_CASE("writer quirks make the odd sections decoder tests need", "[writer]") {
    const Abi& abi = abi_amd64();
    FdeSpec a;
    a.start = 0x2000;
    a.size = 0x10;
    a.fres = {fre(0, {abi.sp_reg, 8}, at_cfa(-8), same())};
    FdeSpec b = a;
    b.start = 0x1000;
    WriterOptions o;
    o.quirks.keep_fde_order = true;
    o.quirks.extra_flags = 0x80;
    o.quirks.auxhdr = {1, 2, 3};
    o.quirks.byte_order = ByteOrder::Big;
    SectionMap map;
    auto bytes = write(o, {a, b}, &map);
    REQUIRE(bytes.has_value());
    CHECK((*bytes)[0] == 0xde); // big-endian magic on a little-endian ABI
    CHECK((*bytes)[3] == (flag::fde_sorted | flag::fde_func_start_pcrel | 0x80));
    CHECK((*bytes)[7] == 3);
    CHECK(map.fde_subsection == 31);
    REQUIRE(map.fdes.size() == 2);
    CHECK(map.fdes[0].input_index == 0); // kept in the order given
    CHECK(map.fdes[1].input_index == 1);

    o.quirks = {};
    o.sorted = false;
    bytes = write(o, {a, b}, &map);
    REQUIRE(bytes.has_value());
    auto s = Section::parse(*bytes, 0);
    REQUIRE(s.has_value());
    CHECK_FALSE(s->header().sorted());
    CHECK_FALSE(s->searches_in_place());
    CHECK(s->fde(0)->start == 0x2000);
    CHECK(s->lookup(0x1004)->func_start == 0x1000);
    CHECK(s->lookup(0x2004)->func_start == 0x2000);
    CHECK(validate(*s).empty());
}

// SPDX-License-Identifier: MIT
// step() and backtrace() on fake stacks, for each ABI and rule kind. Sections
// are made with the Writer; the AMD64 and DRAP ones are also checked against
// the bytes GNU as wrote for the same rules (shared test vectors), so that a
// misreading shared by writer and decoder would show.
#include "catch.hpp"
#include "fake_memory.hpp"
#include "sfunwind/sframe/section.hpp"
#include "sfunwind/sframe/writer.hpp"
#include "sfunwind/unwind/backtrace.hpp"
#include "support.hpp"

#include <memory>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

using namespace sfunwind;
using namespace sfunwind::sframe;
using test::FakeMemory;
using test::FakeRegisters;

namespace {

RegRule at_cfa(std::int32_t off) {
    return RegRule::at_cfa(off);
}
RegRule same() {
    return RegRule::same_value();
}
RegRule val_reg(std::uint16_t reg) {
    return {RegRule::Kind::ValReg, reg, 0, RegRule::Source::Fre};
}
RegRule at_reg(std::uint16_t reg, std::int32_t off) {
    return {RegRule::Kind::AtReg, reg, off, RegRule::Source::Fre};
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

FdeSpec function(std::uint64_t start, std::uint32_t size, std::vector<FreSpec> fres) {
    FdeSpec f;
    f.start = start;
    f.size = size;
    f.fres = std::move(fres);
    return f;
}

// A written section whose bytes live as long as the Section.
struct Built {
    std::shared_ptr<std::vector<std::uint8_t>> bytes;
    std::shared_ptr<const Section> section;
    SectionMap map;

    Row row(std::uint64_t pc) const {
        auto r = section->lookup(pc);
        if (!r) FAIL("lookup " << std::hex << pc << ": " << r.error().message());
        return *r;
    }
};

Built build(const WriterOptions& o, const std::vector<FdeSpec>& fdes) {
    Writer w(o);
    for (const auto& f : fdes)
        w.add(f);
    Built b;
    auto bytes = w.write(&b.map);
    if (!bytes) FAIL("write: " << bytes.error().message());
    b.bytes = std::make_shared<std::vector<std::uint8_t>>(std::move(*bytes));
    auto s = Section::parse(*b.bytes, o.section_vaddr);
    if (!s) FAIL("parse: " << s.error().message());
    b.section = std::make_shared<const Section>(std::move(*s));
    return b;
}

Module module(const std::string& name, const Built& b, std::uint64_t bias, std::uint64_t link_begin,
              std::uint64_t link_end) {
    Module m;
    m.name = name;
    m.bias = bias;
    m.begin = link_begin + bias;
    m.end = link_end + bias;
    m.rows = std::make_shared<const RowSourceOf<Section>>(b.section, "SFrame", b.bytes);
    return m;
}

std::vector<std::uint8_t> vector_bytes(const std::string& name) {
    const auto j = nlohmann::json::parse(test::read_text(test::gas_vectors_dir() / name));
    return j.at("content").get<std::vector<std::uint8_t>>();
}

FrameRegs regs(std::uint64_t pc, std::uint64_t sp, std::uint64_t fp,
               std::optional<std::uint64_t> ra = std::nullopt) {
    FrameRegs r;
    r.pc = pc;
    r.sp = sp;
    r.fp = fp;
    r.ra = ra;
    return r;
}

WriterOptions v3_amd64(std::uint64_t vaddr) {
    WriterOptions o;
    o.section_vaddr = vaddr;
    return o;
}

} // namespace

TEST_CASE("AMD64: SP- and FP-based CFA, RA at CFA-8, FP at CFA-16", "[step]") {
    // The function of gas test cfi-sframe-x86_64-1: push %rbp; mov %rsp,%rbp;
    // ...; pop %rbp. The written section must be GNU as's, byte for byte.
    const Abi& abi = abi_amd64();
    const Built b = build(v3_amd64(0x402000),
                          {function(0x401000, 25,
                                    {fre(0x0, {abi.sp_reg, 8}, at_cfa(-8), same()),
                                     fre(0x1, {abi.sp_reg, 16}, at_cfa(-8), at_cfa(-16)),
                                     fre(0x4, {abi.fp_reg, 16}, at_cfa(-8), at_cfa(-16)),
                                     fre(0x18, {abi.sp_reg, 8}, at_cfa(-8), at_cfa(-16))})});
    REQUIRE(*b.bytes == vector_bytes("cfi-sframe-x86_64-1-2.46.json"));

    FakeMemory mem(0x7ff000, 0x1000, ByteOrder::Little);
    mem.put64(0x7ff800, 0x405555); // return address pushed by the call
    mem.put64(0x7ff7f8, 0x7ff900); // the caller's rbp, pushed at +0

    SECTION("at entry: CFA = rsp+8, FP untouched") {
        auto r = step(b.row(0x401000), abi, regs(0x401000, 0x7ff800, 0x1234), true, mem);
        REQUIRE(r.has_value());
        CHECK(r->cfa == 0x7ff808);
        CHECK(r->caller->pc == 0x405555);
        CHECK(r->caller->sp == 0x7ff808);
        CHECK(r->caller->fp == 0x1234);
        CHECK_FALSE(r->fp_restored);
    }
    SECTION("after push %rbp: CFA = rsp+16, FP at CFA-16") {
        for (bool topmost : {true, false}) {
            auto r = step(b.row(0x401002), abi, regs(0x401002, 0x7ff7f8, 0x1234), topmost, mem);
            REQUIRE(r.has_value());
            CHECK(r->cfa == 0x7ff808);
            CHECK(r->caller->pc == 0x405555);
            CHECK(r->caller->sp == 0x7ff808);
            CHECK(r->caller->fp == 0x7ff900);
            CHECK(r->fp_restored);
        }
    }
    SECTION("in the body: CFA = rbp+16, whatever rsp is") {
        auto r = step(b.row(0x401010), abi, regs(0x401010, 0x7ff700, 0x7ff7f8), false, mem);
        REQUIRE(r.has_value());
        CHECK(r->cfa == 0x7ff808);
        CHECK(r->caller->pc == 0x405555);
        CHECK(r->caller->sp == 0x7ff808);
        CHECK(r->caller->fp == 0x7ff900);
    }
}

TEST_CASE("backtrace through two biased modules ends at an outermost row", "[step][backtrace]") {
    const Abi& abi = abi_amd64();
    // A PIE program (link addresses from 0x1000) and a shared library whose
    // _start-like function has RA undefined (spec v3 section 2.4.1).
    const Built exe = build(
        v3_amd64(0x3000), {function(0x1100, 0x80,
                                    {fre(0, {abi.sp_reg, 8}, at_cfa(-8), same()),
                                     fre(1, {abi.sp_reg, 16}, at_cfa(-8), at_cfa(-16)),
                                     fre(4, {abi.fp_reg, 16}, at_cfa(-8), at_cfa(-16))}),
                           function(0x1200, 0x40,
                                    {fre(0, {abi.sp_reg, 8}, at_cfa(-8), same()),
                                     fre(4, {abi.sp_reg, 32}, at_cfa(-8), same())}),
                           function(0x1300, 0x20, {fre(0, {abi.sp_reg, 8}, at_cfa(-8), same())})});
    const Built lib = build(v3_amd64(0x5000),
                            {function(0x2000, 0x40, {fre(0, {}, RegRule::undefined(), same())})});
    const std::uint64_t exe_bias = 0x555555554000;
    const std::uint64_t lib_bias = 0x7f0000000000;
    ModuleSet modules;
    modules.add(module("libc.so", lib, lib_bias, 0x2000, 0x3000));
    modules.add(module("a.out", exe, exe_bias, 0x1000, 0x2000));

    const std::uint64_t S = 0x7ffe0800;
    const std::uint64_t F = 0x7ffe0900;
    FakeMemory mem(0x7ffe0000, 0x1000, ByteOrder::Little);
    mem.put64(S, exe_bias + 0x1225);      // f2's return into f1 (+0x25)
    mem.put64(S + 32, exe_bias + 0x1150); // f1's return into main (+0x50)
    mem.put64(F, 0);                      // main's saved rbp
    mem.put64(F + 8, lib_bias + 0x2020);  // main's return into the library

    const Backtrace bt = backtrace(modules, regs(exe_bias + 0x1308, S, F), mem);
    INFO(bt.stop.message());
    CHECK(bt.complete());
    CHECK(bt.stop.reason == StopReason::Outermost);
    CHECK_FALSE(bt.stop.error.has_value());
    REQUIRE(bt.frames.size() == 4);
    CHECK(bt.frames[0].regs.pc == exe_bias + 0x1308);
    CHECK(bt.frames[1].regs.pc == exe_bias + 0x1225);
    CHECK(bt.frames[1].regs.sp == S + 8);
    CHECK(bt.frames[2].regs.pc == exe_bias + 0x1150);
    CHECK(bt.frames[2].regs.sp == S + 40);
    CHECK(bt.frames[2].regs.fp == F);
    CHECK(bt.frames[3].regs.pc == lib_bias + 0x2020);
    CHECK(bt.frames[3].regs.sp == F + 16);
    CHECK(bt.frames[3].regs.fp == 0);
    CHECK(bt.frames[0].cfa == S + 8);
    CHECK(bt.frames[1].cfa == S + 40);
    CHECK(bt.frames[2].cfa == F + 16);
    for (int i = 0; i < 3; ++i) {
        REQUIRE(bt.frames[static_cast<std::size_t>(i)].module != nullptr);
        CHECK(bt.frames[static_cast<std::size_t>(i)].module->name == "a.out");
    }
    REQUIRE(bt.frames[3].module != nullptr);
    CHECK(bt.frames[3].module->name == "libc.so");
    // Frame 0's PC is precise; every caller's is a return address.
    CHECK(bt.frames[0].address == FrameAddress::instruction_pointer(exe_bias + 0x1308));
    for (std::size_t i = 1; i < 4; ++i) {
        CHECK(bt.frames[i].address.is_return_address());
        CHECK(bt.frames[i].address.address() == bt.frames[i].regs.pc);
        CHECK(bt.frames[i].address.lookup_address() == bt.frames[i].regs.pc - 1);
    }
    // Rows are in link-time addresses; callers are looked up at pc - 1.
    REQUIRE(bt.frames[1].row.has_value());
    CHECK(bt.frames[1].row->func_start == 0x1200);
    CHECK(bt.frames[1].row->pc_begin == 0x1204);
    REQUIRE(bt.frames[2].row.has_value());
    CHECK(bt.frames[2].row->cfa.reg == abi.fp_reg);
    REQUIRE(bt.frames[3].row.has_value());
    CHECK(bt.frames[3].row->outermost);

    SECTION("a return address outside every module stops the walk with NotFound") {
        mem.put64(F + 8, 0x1000);
        const Backtrace cut = backtrace(modules, regs(exe_bias + 0x1308, S, F), mem);
        CHECK(cut.stop.reason == StopReason::NoRow);
        REQUIRE(cut.stop.error.has_value());
        CHECK(cut.stop.error->code() == Errc::NotFound);
        CHECK(cut.frames.size() == 4);
        CHECK_FALSE(cut.frames[3].row.has_value());
    }
}

TEST_CASE("AArch64: saved RA and FP, RA in LR only in the topmost frame, PAuth", "[step]") {
    for (ByteOrder order : {ByteOrder::Little, ByteOrder::Big}) {
        const Abi& abi = abi_aarch64(order);
        INFO(abi.name);
        WriterOptions o;
        o.abi = order == ByteOrder::Little ? AbiArch::AArch64Little : AbiArch::AArch64Big;
        o.section_vaddr = 0x500000;
        // stp x29, x30, [sp, #-32]!; mov x29, sp; ...; and a PAuth variant:
        // paciasp; stp x29, x30, [sp, #-16]!
        FdeSpec signed_fn = function(0x400700, 0x20,
                                     {fre(0, {abi.sp_reg, 0}, same(), same()),
                                      fre(4, {abi.sp_reg, 0}, same(), same(), true),
                                      fre(8, {abi.sp_reg, 16}, at_cfa(-8), at_cfa(-16), true)});
        signed_fn.pauth_key = PauthKey::B;
        const Built b = build(o, {function(0x400600, 0x40,
                                           {fre(0, {abi.sp_reg, 0}, same(), same()),
                                            fre(4, {abi.sp_reg, 32}, at_cfa(-24), at_cfa(-32)),
                                            fre(8, {abi.fp_reg, 32}, at_cfa(-24), at_cfa(-32))}),
                                  signed_fn});
        CHECK(b.section->view().order() == order);
        const std::uint64_t S = 0x7fff0000;
        FakeMemory mem(0x7ffe0000, 0x20000, order);
        mem.put64(S + 8, 0x400abc);               // x30
        mem.put64(S, 0x7fff0100);                 // x29
        mem.put64(S + 0x108, 0x003f000000400def); // a signed x30 (PAC in bits 48-55)
        mem.put64(S + 0x100, 0x7fff0200);

        // Leaf: the RA is in x30, which only the topmost frame knows.
        const Row leaf = b.row(0x400600);
        CHECK(leaf.topmost_only);
        auto r = step(leaf, abi, regs(0x400600, S, 0x7fff0100, 0x400abc), true, mem);
        REQUIRE(r.has_value());
        CHECK(r->caller->pc == 0x400abc);
        CHECK(r->caller->sp == S);
        CHECK(r->caller->fp == 0x7fff0100);
        r = step(leaf, abi, regs(0x400600, S, 0x7fff0100), false, mem);
        REQUIRE_FALSE(r.has_value());
        CHECK(r.error().code() == Errc::UnsafeRule);
        CHECK(r.error().where() == 0x400600);
        r = step(leaf, abi, regs(0x400600, S, 0x7fff0100, 0x400abc), false, mem);
        REQUIRE_FALSE(r.has_value());
        CHECK(r.error().code() == Errc::UnsafeRule);

        // Frame record saved: RA at CFA-24, FP at CFA-32.
        for (std::uint64_t pc : {0x400604ULL, 0x400610ULL}) {
            const std::uint64_t sp = S;
            const std::uint64_t fp = pc == 0x400604 ? 0x1111 : S;
            r = step(b.row(pc), abi, regs(pc, sp, fp), false, mem);
            REQUIRE(r.has_value());
            CHECK(r->cfa == S + 32);
            CHECK(r->caller->pc == 0x400abc);
            CHECK(r->caller->sp == S + 32);
            CHECK(r->caller->fp == 0x7fff0100);
        }

        // A signed RA: the PAC bits are stripped with StepOptions::pac_mask.
        const Row signed_row = b.row(0x400708);
        CHECK(signed_row.mangled_ra);
        CHECK(signed_row.pauth_key_b);
        r = step(signed_row, abi, regs(0x400708, S + 0x100, 0), false, mem);
        REQUIRE(r.has_value());
        CHECK(r->caller->pc == 0x400def);
        CHECK(r->caller->fp == 0x7fff0200);
        StepOptions narrow;
        narrow.pac_mask = 0xff00000000000000ULL;
        r = step(signed_row, abi, regs(0x400708, S + 0x100, 0), false, mem, nullptr, narrow);
        REQUIRE(r.has_value());
        CHECK(r->caller->pc == 0x003f000000400def);
        // Signed but still in x30 (after paciasp, before the store).
        const Row in_lr = b.row(0x400704);
        CHECK(in_lr.mangled_ra);
        r = step(in_lr, abi, regs(0x400704, S, 0, 0x0055000000400aaaULL), true, mem);
        REQUIRE(r.has_value());
        CHECK(r->caller->pc == 0x400aaa);
    }
}

TEST_CASE("s390x v2: scaled CFA offsets, CFA = SP + 160, RA in a register only at the top",
          "[step]") {
    const Abi& abi = abi_s390x();
    WriterOptions o;
    o.version = Version::V2;
    o.abi = AbiArch::S390xBig;
    o.section_vaddr = 0x20000;
    // stmg %r11,%r15,88(%r15); aghi %r15,-160 — and a leaf that parks the RA
    // in r14 and the FP in f8 (DWARF 24).
    const Built b = build(o, {function(0x10000, 0x40,
                                       {fre(0, {abi.sp_reg, 160}, same(), same()),
                                        fre(6, {abi.sp_reg, 160}, at_cfa(-48), at_cfa(-72)),
                                        fre(0xc, {abi.sp_reg, 320}, at_cfa(-48), at_cfa(-72))}),
                              function(0x10100, 0x20,
                                       {fre(0, {abi.sp_reg, 160}, same(), same()),
                                        fre(4, {abi.sp_reg, 160}, val_reg(14), val_reg(24))}),
                              function(0x10200, 0x20, {fre(0, {}, RegRule::undefined(), same())})});
    CHECK(b.section->view().order() == ByteOrder::Big);

    // Stored CFA words are (offset - 160) / 8 (spec v3 section 3.1.3): FRE
    // start (1 byte), info byte, then the words.
    REQUIRE(b.map.fdes.size() == 3);
    const auto& fre_at = b.map.fdes[0].fre_offsets;
    REQUIRE(fre_at.size() == 3);
    CHECK((*b.bytes)[fre_at[0] + 2] == 0);
    CHECK((*b.bytes)[fre_at[2] + 2] == 20);
    CHECK(static_cast<std::int8_t>((*b.bytes)[fre_at[2] + 3]) == -48);
    // (14 << 1) | 1 and (24 << 1) | 1 (spec v2 erratum 1, s390x).
    const auto& leaf_at = b.map.fdes[1].fre_offsets;
    CHECK((*b.bytes)[leaf_at[1] + 3] == 29);
    CHECK((*b.bytes)[leaf_at[1] + 4] == 49);

    const std::uint64_t S = 0x3ff0000;
    FakeMemory mem(0x3fe0000, 0x20000, ByteOrder::Big);
    mem.put64(S + 320 - 48, 0x10222);   // r14 slot of the frame
    mem.put64(S + 320 - 72, 0x3ff0400); // r11 slot

    const Row body = b.row(0x10010);
    CHECK(body.cfa.offset == 320);
    auto r = step(body, abi, regs(0x10010, S, 0x1), false, mem);
    REQUIRE(r.has_value());
    CHECK(r->cfa == S + 320);
    CHECK(r->caller->sp == S + 160); // SP = CFA - 160
    CHECK(r->caller->pc == 0x10222);
    CHECK(r->caller->fp == 0x3ff0400);

    // Leaf at entry: CFA = SP + 160, so the caller's SP is the same.
    const Row entry = b.row(0x10000);
    r = step(entry, abi, regs(0x10000, S, 0x77, 0x10030), true, mem);
    REQUIRE(r.has_value());
    CHECK(r->caller->sp == S);
    CHECK(r->caller->pc == 0x10030);
    CHECK(r->caller->fp == 0x77);
    CHECK(step(entry, abi, regs(0x10000, S, 0x77), false, mem).error().code() == Errc::UnsafeRule);

    // RA "in r14", FP "in f8": the register file of the topmost frame.
    const Row regsaved = b.row(0x10104);
    CHECK(regsaved.topmost_only);
    CHECK(regsaved.ra.kind == RegRule::Kind::ValReg);
    CHECK(regsaved.ra.reg == 14);
    FakeRegisters fprs;
    fprs.set(24, 0x3ff0800);
    r = step(regsaved, abi, regs(0x10104, S, 0x77, 0x10034), true, mem, &fprs);
    REQUIRE(r.has_value());
    CHECK(r->caller->pc == 0x10034);
    CHECK(r->caller->fp == 0x3ff0800);
    CHECK(fprs.queries() == 1);
    r = step(regsaved, abi, regs(0x10104, S, 0x77, 0x10034), false, mem, &fprs);
    REQUIRE_FALSE(r.has_value());
    CHECK(r.error().code() == Errc::UnsafeRule);

    SECTION("a backtrace keeps going through a frame that does not move the SP") {
        ModuleSet modules;
        modules.add(module("vmlinux", b, 0, 0x10000, 0x10300));
        mem.put64(S + 320 - 48, 0x10210); // the body returns into the outermost function
        const Backtrace bt = backtrace(modules, regs(0x10000, S, 0x77, 0x10030), mem);
        INFO(bt.stop.message());
        CHECK(bt.complete());
        REQUIRE(bt.frames.size() == 3);
        CHECK(bt.frames[1].regs.sp == S);
        CHECK(bt.frames[1].regs.pc == 0x10030);
        CHECK(bt.frames[2].regs.pc == 0x10210);
        CHECK(bt.frames[2].regs.sp == S + 160);
    }
}

TEST_CASE("flexible FDE: CFA = *(rbp-8) (DRAP), FP = *(rbp+0), CFA = r10 at the top only",
          "[step]") {
    const Abi& abi = abi_amd64();
    // gas test cfi-sframe-x86_64-esc-expr-1, stepped on GNU as's own bytes;
    // the writer must produce the same section from the same rules.
    const std::vector<std::uint8_t> gas = vector_bytes("cfi-sframe-x86_64-esc-expr-1-2.46.json");
    const RegRule ra = RegRule::at_cfa(-8, RegRule::Source::Header);
    FdeSpec f =
        function(0x401000, 95,
                 {fre(0x00, {7, 8}, ra, same()), fre(0x09, {10, 0}, ra, same()),
                  fre(0x18, {10, 0}, ra, at_reg(6, 0)), fre(0x1a, {6, -8, true}, ra, at_reg(6, 0)),
                  fre(0x52, {10, 0}, ra, at_reg(6, 0)), fre(0x5e, {7, 8}, ra, at_reg(6, 0))});
    f.fde_type = FdeType::Flex;
    const Built b = build(v3_amd64(0x402048), {f});
    REQUIRE(*b.bytes == gas);
    auto parsed = Section::parse(gas, 0x402048);
    REQUIRE(parsed.has_value());

    const std::uint64_t B = 0x7ff700; // rbp, after the realignment
    const std::uint64_t C = 0x7ff810; // the CFA, saved at rbp-8 by the DRAP sequence
    FakeMemory mem(0x7ff000, 0x1000, ByteOrder::Little);
    mem.put64(B - 8, C);
    mem.put64(C - 8, 0x405000);
    mem.put64(B, 0x7ff900);

    auto drap = parsed->lookup(0x401020);
    REQUIRE(drap.has_value());
    CHECK(drap->cfa.deref);
    CHECK_FALSE(drap->topmost_only);
    for (bool topmost : {true, false}) {
        auto r = step(*drap, abi, regs(0x401020, 0x7ff600, B), topmost, mem);
        REQUIRE(r.has_value());
        CHECK(r->cfa == C);
        CHECK(r->caller->sp == C);
        CHECK(r->caller->pc == 0x405000);
        CHECK(r->caller->fp == 0x7ff900);
        CHECK(r->fp_restored);
    }

    // CFA = r10 + 0 between the DRAP set-up and the frame: a register only
    // the topmost frame has.
    auto r10 = parsed->lookup(0x40100a);
    REQUIRE(r10.has_value());
    CHECK(r10->topmost_only);
    FakeRegisters extra;
    extra.set(10, C);
    auto r = step(*r10, abi, regs(0x40100a, 0x7ff600, 0x5555), true, mem, &extra);
    REQUIRE(r.has_value());
    CHECK(r->caller->sp == C);
    CHECK(r->caller->pc == 0x405000);
    CHECK(r->caller->fp == 0x5555);
    r = step(*r10, abi, regs(0x40100a, 0x7ff600, 0x5555), false, mem, &extra);
    REQUIRE_FALSE(r.has_value());
    CHECK(r.error().code() == Errc::UnsafeRule);
    r = step(*r10, abi, regs(0x40100a, 0x7ff600, 0x5555), true, mem, nullptr);
    REQUIRE_FALSE(r.has_value());
    CHECK(r.error().code() == Errc::UnsafeRule);
    CHECK(r.error().what().find("r10") != std::string::npos);

    SECTION("the dereferenced CFA slot is unreadable") {
        mem.hole(B - 8, B);
        r = step(*drap, abi, regs(0x401020, 0x7ff600, B), false, mem);
        REQUIRE_FALSE(r.has_value());
        CHECK(r.error().code() == Errc::MemoryUnreadable);
        CHECK(r.error().where() == B - 8);
    }
}

TEST_CASE("PC-mask FDE: PLT entries, rows found by PC % block size", "[step]") {
    const Abi& abi = abi_amd64();
    // v1 stores no block size; AMD64's 16-byte PLT entry is implied.
    for (Version v : {Version::V1, Version::V2, Version::V3}) {
        INFO("SFrame v" << static_cast<int>(v));
        WriterOptions o;
        o.version = v;
        o.section_vaddr = 0x2000;
        // pltN: jmp *GOT(%rip) (6 bytes); push $N (5); jmp .plt (5): the push
        // at +6 makes CFA = rsp+16 from +11 on.
        FdeSpec plt = function(0x1020, 0x40,
                               {fre(0, {abi.sp_reg, 8}, at_cfa(-8), same()),
                                fre(11, {abi.sp_reg, 16}, at_cfa(-8), same())});
        plt.pc_type = PcType::Mask;
        plt.rep_size = 16;
        const Built b = build(o, {plt});
        // The third block: [0x1040, 0x1050).
        const Row late = b.row(0x1020 + 32 + 12);
        CHECK(late.pc_mask);
        CHECK(late.pc_begin == 0x104b);
        CHECK(late.pc_end == 0x1050);
        CHECK(late.cfa.offset == 16);
        const Row early = b.row(0x1020 + 32 + 3);
        CHECK(early.pc_begin == 0x1040);
        CHECK(early.pc_end == 0x104b);
        CHECK(early.cfa.offset == 8);

        FakeMemory mem(0x7ff000, 0x1000, ByteOrder::Little);
        mem.put64(0x7ff800, 3);        // the pushed relocation index
        mem.put64(0x7ff808, 0x401234); // the return address
        auto r = step(late, abi, regs(0x104c, 0x7ff800, 0), true, mem);
        REQUIRE(r.has_value());
        CHECK(r->caller->pc == 0x401234);
        CHECK(r->caller->sp == 0x7ff810);
        r = step(early, abi, regs(0x1043, 0x7ff808, 0), true, mem);
        REQUIRE(r.has_value());
        CHECK(r->caller->pc == 0x401234);
        CHECK(r->caller->sp == 0x7ff810);
    }
}

TEST_CASE("outermost rows end the walk without an error", "[step][backtrace]") {
    const Abi& abi = abi_amd64();
    // An FRE without data words, and (v3) an FDE without FREs.
    FdeSpec empty = function(0x1100, 0x10, {});
    const Built b =
        build(v3_amd64(0x2000),
              {function(0x1000, 0x10, {fre(0, {}, RegRule::undefined(), same())}), empty});
    FakeMemory mem(0x7ff000, 0x1000, ByteOrder::Little);
    for (std::uint64_t pc : {0x1004ULL, 0x1104ULL}) {
        const Row row = b.row(pc);
        CHECK(row.outermost);
        auto r = step(row, abi, regs(pc, 0x7ff800, 0), true, mem);
        REQUIRE(r.has_value());
        CHECK(r->outermost());
        CHECK(r->end == StackEnd::RaUndefined);
        ModuleSet modules;
        modules.add(module("static", b, 0, 0x1000, 0x1200));
        const Backtrace bt = backtrace(modules, regs(pc, 0x7ff800, 0), mem);
        CHECK(bt.complete());
        CHECK_FALSE(bt.stop.error.has_value());
        CHECK(bt.stop.message() ==
              "outermost frame: the return address is undefined at " + to_hex(pc));
        CHECK(bt.frames.size() == 1);
        CHECK(mem.reads() == 0);
    }
    // A zero return address also ends the stack.
    const Built c =
        build(v3_amd64(0x2000), {function(0x1000, 0x10, {fre(0, {7, 8}, at_cfa(-8), same())})});
    auto r = step(c.row(0x1000), abi, regs(0x1000, 0x7ff800, 0), true, mem);
    REQUIRE(r.has_value());
    CHECK(r->outermost());
    CHECK(r->end == StackEnd::RaZero);
}

TEST_CASE("unreadable memory gives Errc::MemoryUnreadable with the address", "[step][backtrace]") {
    const Abi& abi = abi_amd64();
    const Built b = build(v3_amd64(0x2000),
                          {function(0x1000, 0x10, {fre(0, {7, 16}, at_cfa(-8), at_cfa(-16))})});
    FakeMemory mem(0x7ff000, 0x1000, ByteOrder::Little);
    mem.put64(0x7ff808, 0x1008);
    mem.put64(0x7ff800, 0x7ff900);
    const Row row = b.row(0x1004);

    SECTION("the RA slot") {
        mem.hole(0x7ff80c, 0x7ff80d); // one byte of it is enough
        auto r = step(row, abi, regs(0x1004, 0x7ff800, 0), true, mem);
        REQUIRE_FALSE(r.has_value());
        CHECK(r.error().code() == Errc::MemoryUnreadable);
        CHECK(r.error().where() == 0x7ff808);
        CHECK(r.error().message().find("0x7ff808") != std::string::npos);
    }
    SECTION("the FP slot") {
        mem.hole(0x7ff800, 0x7ff808);
        auto r = step(row, abi, regs(0x1004, 0x7ff800, 0), true, mem);
        REQUIRE_FALSE(r.has_value());
        CHECK(r.error().code() == Errc::MemoryUnreadable);
        CHECK(r.error().where() == 0x7ff800);
    }
    SECTION("a stack pointer outside the stack, in a backtrace") {
        ModuleSet modules;
        modules.add(module("a.out", b, 0, 0x1000, 0x1010));
        const Backtrace bt = backtrace(modules, regs(0x1004, 0x10000, 0), mem);
        REQUIRE(bt.stop.error.has_value());
        CHECK(bt.stop.error->code() == Errc::MemoryUnreadable);
        CHECK(bt.stop.error->where() == 0x10008);
        CHECK(bt.frames.size() == 1);
    }
}

TEST_CASE("impossible frames: the SP going backwards, a misaligned CFA", "[step]") {
    const Abi& abi = abi_amd64();
    const Built b = build(v3_amd64(0x2000), {function(0x1000, 0x10,
                                                      {fre(0, {6, 16}, at_cfa(-8), at_cfa(-16)),
                                                       fre(8, {7, 12}, at_cfa(-8), same())})});
    FakeMemory mem(0x7ff000, 0x1000, ByteOrder::Little);
    mem.put64(0x7ff108, 0x1234);
    // rbp below rsp: the caller's SP (rbp + 16) would be below this frame's.
    auto r = step(b.row(0x1000), abi, regs(0x1000, 0x7ff800, 0x7ff100), false, mem);
    REQUIRE_FALSE(r.has_value());
    CHECK(r.error().code() == Errc::BadFrame);
    CHECK(r.error().where() == 0x1000);
    StepOptions lax;
    lax.check_stack_direction = false;
    r = step(b.row(0x1000), abi, regs(0x1000, 0x7ff800, 0x7ff100), false, mem, nullptr, lax);
    REQUIRE(r.has_value());
    CHECK(r->caller->pc == 0x1234);
    // CFA = rsp + 12 is not 8-byte aligned.
    r = step(b.row(0x1008), abi, regs(0x1008, 0x7ff800, 0), true, mem);
    REQUIRE_FALSE(r.has_value());
    CHECK(r.error().code() == Errc::BadFrame);
}

TEST_CASE("a stack whose frames form a cycle ends within a bounded number of frames",
          "[step][backtrace]") {
    const Built b = build(v3_amd64(0x2000),
                          {function(0x1000, 0x40, {fre(0, {6, 16}, at_cfa(-8), at_cfa(-16))})});
    ModuleSet modules;
    modules.add(module("a.out", b, 0, 0x1000, 0x1040));
    FakeMemory mem(0x7ff000, 0x1000, ByteOrder::Little);

    SECTION("a frame record that points to itself: no progress") {
        const std::uint64_t F = 0x7ff800;
        mem.put64(F, F);          // saved rbp = rbp
        mem.put64(F + 8, 0x1011); // returns to where it is
        const Backtrace bt = backtrace(modules, regs(0x1010, 0x7ff700, F), mem);
        CHECK(bt.stop.reason == StopReason::NoProgress);
        REQUIRE(bt.stop.error.has_value());
        CHECK(bt.stop.error->code() == Errc::BadFrame);
        CHECK(bt.stop.error->what().find("no progress") != std::string::npos);
        CHECK(bt.frames.size() == 2);
    }
    SECTION("two frame records pointing at each other") {
        const std::uint64_t F1 = 0x7ff800;
        const std::uint64_t F2 = 0x7ff700;
        mem.put64(F1, F2);
        mem.put64(F1 + 8, 0x1021);
        mem.put64(F2, F1);
        mem.put64(F2 + 8, 0x1031);
        // The stack direction check catches it at the second step...
        Backtrace bt = backtrace(modules, regs(0x1010, 0x7ff600, F1), mem);
        CHECK(bt.stop.reason == StopReason::StepFailed);
        REQUIRE(bt.stop.error.has_value());
        CHECK(bt.stop.error->code() == Errc::BadFrame);
        CHECK(bt.frames.size() == 2);
        // ...and without it, the frame limit does.
        BacktraceOptions lax;
        lax.max_frames = 64;
        lax.step.check_stack_direction = false;
        bt = backtrace(modules, regs(0x1010, 0x7ff600, F1), mem, nullptr, lax);
        CHECK(bt.stop.reason == StopReason::FrameLimit);
        REQUIRE(bt.stop.error.has_value());
        CHECK(bt.stop.error->code() == Errc::BadFrame);
        CHECK(bt.frames.size() == 64);
    }
}

TEST_CASE("a damaged FDE ends the walk with its error, and its frame has no row",
          "[step][backtrace]") {
    Built b =
        build(v3_amd64(0x2000), {function(0x1000, 0x10, {fre(0, {7, 16}, at_cfa(-8), same())}),
                                 function(0x1100, 0x10, {fre(0, {7, 8}, at_cfa(-8), same())})});
    // v3 section 2.3: FDE index entries are 16 bytes, sfdi_func_start_fre_off
    // at byte 12. Point the second function's FREs past the section; the
    // section still parses (FDEs are decoded when looked up).
    auto bytes = std::make_shared<std::vector<std::uint8_t>>(*b.bytes);
    const std::size_t fde_at = 28 + (*bytes)[7] + test::get_le(*bytes, 20, 4) + 16 + 12;
    test::put_le(*bytes, fde_at, 0xffffff00, 4);
    auto s = Section::parse(*bytes, 0x2000);
    REQUIRE(s.has_value());
    b.bytes = bytes;
    b.section = std::make_shared<const Section>(std::move(*s));
    ModuleSet modules;
    modules.add(module("a.out", b, 0, 0x1000, 0x1110));
    FakeMemory mem(0x7ff000, 0x1000, ByteOrder::Little);
    mem.put64(0x7ff808, 0x1105); // frame 0 returns into the damaged function

    const Backtrace bt = backtrace(modules, regs(0x1004, 0x7ff800, 0), mem);
    REQUIRE(bt.frames.size() == 2);
    CHECK(bt.frames[0].row.has_value());
    CHECK_FALSE(bt.frames[1].row.has_value());
    CHECK(bt.frames[1].regs.pc == 0x1105);
    REQUIRE(bt.stop.error.has_value());
    CHECK(bt.stop.error->code() == Errc::Malformed);
    CHECK(bt.stop.message().find("a.out: FDE 1:") == 0);
}

TEST_CASE("address arithmetic that wraps around is an error naming the values",
          "[step][backtrace]") {
    const Abi& abi = abi_amd64();
    FakeMemory mem(0x7ff000, 0x1000, ByteOrder::Little);
    SECTION("CFA = rsp + 16 past the top of the address space") {
        const Built b = build(v3_amd64(0x2000),
                              {function(0x1000, 0x10, {fre(0, {7, 16}, at_cfa(-8), same())})});
        auto r = step(b.row(0x1004), abi, regs(0x1004, 0xfffffffffffffff8ULL, 0), true, mem);
        REQUIRE_FALSE(r.has_value());
        CHECK(r.error().code() == Errc::BadFrame);
        CHECK(r.error().is_address());
        CHECK(r.error().where() == 0x1004);
        CHECK(r.error().what() == "integer overflow: the CFA address rsp (0xfffffffffffffff8)+0x10 "
                                  "wraps around the address space");
        CHECK(mem.reads() == 0);
    }
    SECTION("CFA = rbp - 16 below address 0") {
        const Built b = build(v3_amd64(0x2000),
                              {function(0x1000, 0x10, {fre(0, {6, -16}, at_cfa(-8), same())})});
        auto r = step(b.row(0x1004), abi, regs(0x1004, 0x7ff800, 8), true, mem);
        REQUIRE_FALSE(r.has_value());
        CHECK(r.error().code() == Errc::BadFrame);
        CHECK(r.error().what() ==
              "integer overflow: the CFA address rbp (0x8)-0x10 wraps around the address space");
    }
    SECTION("an FP slot below address 0") {
        const Built b = build(v3_amd64(0x2000),
                              {function(0x1000, 0x10, {fre(0, {7, 8}, at_cfa(-8), at_cfa(-16))})});
        FakeMemory low(0, 0x100, ByteOrder::Little);
        low.put64(0, 0x1234); // the RA slot, CFA-8
        auto r = step(b.row(0x1004), abi, regs(0x1004, 0, 0), true, low);
        REQUIRE_FALSE(r.has_value());
        CHECK(r.error().code() == Errc::BadFrame);
        CHECK(r.error().what() == "integer overflow: the frame pointer address CFA (0x8)-0x10 "
                                  "wraps around the address space");
    }
}

TEST_CASE("a frame a signal interrupted is looked up and named at its exact PC",
          "[step][backtrace]") {
    // handler (frame 0) -> trampoline (signal FDE) -> the interrupted
    // function, stopped on its first instruction, right after another
    // function: pc - 1 would be in that other function.
    FdeSpec tramp = function(0x1000, 0x10, {fre(0, {7, 16}, at_cfa(-8), at_cfa(-16))});
    tramp.signal = true;
    const Built b = build(v3_amd64(0x2000),
                          {tramp, function(0x1100, 0x10, {fre(0, {7, 8}, at_cfa(-8), same())}),
                           function(0x1110, 0x10, {fre(0, {7, 8}, at_cfa(-8), same())}),
                           function(0x1200, 0x10, {fre(0, {7, 8}, at_cfa(-8), same())})});
    ModuleSet modules;
    modules.add(module("a.out", b, 0, 0x1000, 0x1210));
    FakeMemory mem(0x7ff000, 0x1000, ByteOrder::Little);
    mem.put64(0x7ff800, 0x1004);   // the handler returns into the trampoline
    mem.put64(0x7ff808, 0x7ffa00); // the interrupted frame's rbp, saved by the "kernel"
    mem.put64(0x7ff810, 0x1110);   // its PC: the first byte of the function at 0x1110
    mem.put64(0x7ff818, 0x1208);   // which returns into the function at 0x1200
    mem.put64(0x7ff820, 0);        // and that one ends the stack
    const Backtrace bt = backtrace(modules, regs(0x1204, 0x7ff800, 0), mem);
    INFO(bt.stop.message());
    REQUIRE(bt.frames.size() >= 3);
    CHECK(bt.frames[1].address == FrameAddress::return_address(0x1004));
    REQUIRE(bt.frames[1].row.has_value());
    CHECK(bt.frames[1].row->signal_frame);
    CHECK(bt.frames[2].regs.pc == 0x1110);
    CHECK(bt.frames[2].address == FrameAddress::instruction_pointer(0x1110));
    CHECK(bt.frames[2].address.lookup_address() == 0x1110);
    REQUIRE(bt.frames[2].row.has_value());
    CHECK(bt.frames[2].row->func_start == 0x1110);
    CHECK(bt.frames[3].address == FrameAddress::return_address(0x1208));
    CHECK(bt.complete());
    CHECK(bt.stop.end == StackEnd::RaZero);
}

TEST_CASE("errors name a section offset or a target address as such", "[error]") {
    CHECK(Error(Errc::Malformed, "bad FRE", 0x1c).message() == "bad FRE (at offset 0x1c)");
    CHECK(Error(Errc::BadFrame, "CFA not aligned", Address{0x401871}).message() ==
          "CFA not aligned (at 0x401871)");
    CHECK(Error(Errc::NotFound, "nothing covers 0x401871", Address{0x401871}).message() ==
          "nothing covers 0x401871");
    CHECK(Error(Errc::NotFound, "nothing covers 0x401871", Address{0x401871}).is_address());
    CHECK(Error(Errc::Io, "no file").message() == "no file");
}

TEST_CASE("ABIs by name, and the psABIs' DWARF register names", "[abi]") {
    for (const Abi* abi :
         {&abi_amd64(), &abi_aarch64(ByteOrder::Little), &abi_aarch64(ByteOrder::Big), &abi_s390x(),
          &abi_ppc64(ByteOrder::Big), &abi_ppc64(ByteOrder::Little)})
        CHECK(abi_named(abi->name) == abi);
    CHECK(abi_named("aarch64-be") == nullptr);
    CHECK(known_register_name(abi_amd64(), 6) == "rbp");
    CHECK(known_register_name(abi_amd64(), 16) == "rip");
    CHECK(!known_register_name(abi_amd64(), 17));
    CHECK(register_name(abi_amd64(), 17) == "r17");
    CHECK(known_register_name(abi_aarch64(ByteOrder::Little), 31) == "sp");
    CHECK(!known_register_name(abi_aarch64(ByteOrder::Little), 32));
    // s390x ELF ABI supplement: DWARF 16-31 are f0 f2 f4 f6 f1 f3 f5 f7 f8
    // f10 f12 f14 f9 f11 f13 f15.
    CHECK(known_register_name(abi_s390x(), 16) == "f0");
    CHECK(known_register_name(abi_s390x(), 17) == "f2");
    CHECK(known_register_name(abi_s390x(), 20) == "f1");
    CHECK(known_register_name(abi_s390x(), 31) == "f15");
    CHECK(!known_register_name(abi_s390x(), 32));
    CHECK(known_register_name(abi_ppc64(ByteOrder::Little), 65) == "lr");
    CHECK(!known_register_name(abi_ppc64(ByteOrder::Little), 64));
}

TEST_CASE("ModuleSet: built from a list, the same order and finds as one add() at a time") {
    // Descending starts, as a process's libraries are mapped, and two
    // modules at one start (both ways must keep them in the same order).
    std::vector<Module> list;
    for (std::uint64_t i = 0; i < 300; ++i) {
        Module m;
        m.name = "lib" + std::to_string(i);
        m.begin = 0x7f0000000000 - i * 0x10000;
        m.end = m.begin + 0x8000;
        list.push_back(m);
    }
    Module twin = list[7];
    twin.name = "twin";
    list.push_back(twin);
    ModuleSet one_by_one;
    for (const Module& m : list)
        one_by_one.add(m);
    const ModuleSet sorted(list);
    REQUIRE(sorted.modules().size() == one_by_one.modules().size());
    for (std::size_t i = 0; i < sorted.modules().size(); ++i) {
        CHECK(sorted.modules()[i].name == one_by_one.modules()[i].name);
        CHECK(sorted.modules()[i].begin == one_by_one.modules()[i].begin);
    }
    for (const Module& m : list) {
        for (const std::uint64_t pc : {m.begin, m.end - 1, m.end}) {
            const Module* a = sorted.find(pc);
            const Module* b = one_by_one.find(pc);
            REQUIRE((a == nullptr) == (b == nullptr));
            if (a != nullptr) CHECK(a->name == b->name);
        }
    }
    CHECK(sorted.find(list[3].begin + 0x100)->name == "lib3");
    CHECK(sorted.find(list[3].begin + 0x9000) == nullptr); // between two modules
}

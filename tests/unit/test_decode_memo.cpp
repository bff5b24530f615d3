// SPDX-License-Identifier: MIT
// The callee-saved analysis's decoding memo (core/src/callee_saved/
// decode_memo.hpp): what it gives is what Capstone decodes, instruction by
// instruction, at every address, for x86-64 and AArch64 code.
#include "../../core/src/callee_saved/decode_memo.hpp"
#include "../../core/src/callee_saved/instruction.hpp"
#include "../../core/src/callee_saved/x86_64_form_memo.hpp"
#include "catch.hpp"
#include "open_elf.hpp"
#include "sfunwind/abi.hpp"
#include "support.hpp"

#include <cstdint>
#include <initializer_list>
#include <sstream>
#include <string>
#include <vector>

using namespace sfunwind;
using namespace sfunwind::callee_saved::detail;

namespace {

// Every field of one instruction's two decodes, each given to `same` with its
// name and whether the two are equal.
template <typename Same>
void compare_fields(const Code& want, const Instruction& w, const Code& got, const Instruction& g,
                    Same&& same) {
    same("address", g.address == w.address);
    same("size", g.size == w.size);
    same("flow", g.flow == w.flow);
    same("target", g.target == w.target);
    same("direct_call", g.direct_call == w.direct_call);
    same("returns", g.returns == w.returns);
    same("padding", g.padding == w.padding);
    same("sp", g.sp == w.sp);
    same("sp_delta", g.sp_delta == w.sp_delta);
    same("fp", g.fp == w.fp);
    same("fp_delta", g.fp_delta == w.fp_delta);
    same("store_base", g.store_base == w.store_base);
    same("store_disp", g.store_disp == w.store_disp);
    same("store_size", g.store_size == w.store_size);
    same("load_base", g.load_base == w.load_base);
    same("clobbered", g.clobbered == w.clobbered);
    same("copies", g.copies == w.copies);
    same("copy_from", g.copy_from == w.copy_from);
    same("copy_to", g.copy_to == w.copy_to);
    same("written", g.written == w.written);
    same("saves", g.saves == w.saves);
    same("loads", g.loads == w.loads);
    const auto ws = want.saves_and_loads(w);
    const auto gs = got.saves_and_loads(g);
    same("saves_and_loads size", gs.size() == ws.size());
    for (std::size_t k = 0; k < ws.size() && k < gs.size(); ++k) {
        same("saves_and_loads index", gs[k].index == ws[k].index);
        same("saves_and_loads disp", gs[k].disp == ws[k].disp);
    }
}

// Two decodes are the same, field by field; the first difference is named
// with its instruction's address. The fields are compared plainly and
// asserted once per decode: an assertion per field, about 10 M of them here,
// made this file's tests take a minute under ASan.
void require_same(const Code& want, const Code& got) {
    REQUIRE(got.instructions.size() == want.instructions.size());
    std::string difference;
    for (std::size_t i = 0; i < want.instructions.size() && difference.empty(); ++i) {
        const Instruction& w = want.instructions[i];
        const Instruction& g = got.instructions[i];
        compare_fields(want, w, got, g, [&](const char* field, bool equal) {
            if (equal || !difference.empty()) return;
            std::ostringstream out;
            out << field << " differs in the instruction at 0x" << std::hex << w.address;
            difference = out.str();
        });
    }
    INFO(difference);
    REQUIRE(difference.empty());
}

} // namespace

namespace {

// Decodes x86-64 `code` at `address` with Capstone and with `memo`, requires
// the same instructions, and returns how many there were.
std::size_t decode_both_ways(std::uint64_t address, std::span<const std::uint8_t> code,
                             DecodeMemo& memo) {
    const auto tracked = untracked_callee_saved(abi_amd64());
    Code want;
    Code got;
    REQUIRE(decode_x86_64(address, code, tracked, want, nullptr));
    REQUIRE(decode_x86_64(address, code, tracked, got, &memo));
    require_same(want, got);
    return want.instructions.size();
}

// Decodes every x86-64 function of the SQLite fixture `name` with Capstone
// and with `memo`, `skip` bytes in, and requires the same instructions;
// returns how many there were.
std::size_t decode_sqlite_functions(const char* name, DecodeMemo& memo,
                                    std::initializer_list<std::size_t> skips) {
    const auto large = test::source_dir() / "tests" / "fixtures" / "large";
    const elf::ElfFile file = test::open_elf((large / name).string());
    auto section = file.sframe();
    REQUIRE(section);
    std::size_t instructions = 0;
    for (std::uint32_t i = 0; i < section->fde_count(); ++i) {
        auto fde = section->fde(i);
        if (!fde || fde->size < 2) continue;
        auto bytes = file.loaded_bytes(fde->start, fde->size);
        REQUIRE(bytes);
        for (const std::size_t skip : skips)
            instructions += decode_both_ways(fde->start + skip, bytes->subspan(skip), memo);
    }
    return instructions;
}

} // namespace

TEST_CASE("decode memo: SQLite's functions decode the same with it, at their starts and one byte "
          "in",
          "[callee_saved]") {
    for (const char* name : {"sqlite3-gas-2.47", "sqlite3-clang-23"}) {
        INFO(name);
        DecodeMemo memo;
        // One byte in: what a decoder meets in data, or in the middle of an
        // instruction (encodings the memo has seen, cut short).
        const std::size_t instructions = decode_sqlite_functions(name, memo, {0, 1});
        // Most instructions repeat an encoding or a form: the memo gives
        // them.
        CHECK(instructions > 200000);
        CHECK(memo.hits() > instructions / 4);
        CHECK(memo.hits() + memo.x86_forms().hits() > instructions * 17 / 20);
        // A miss for each instruction Capstone decoded, and for the bytes
        // that end a decode (Capstone cannot decode them either).
        CHECK(memo.hits() + memo.misses() >= instructions);
    }
}

TEST_CASE("decode memo: a memo that stays small (hashed lengths, entries replaced) decodes the "
          "same",
          "[callee_saved]") {
    // 2^8 entries: the table of lengths has 2^10 slots, so starts share
    // them, and most of SQLite's encodings replace others.
    DecodeMemo memo(8);
    const std::size_t instructions = decode_sqlite_functions("sqlite3-gas-2.47", memo, {0});
    CHECK(instructions > 100000);
    // Fewer than with 2^15 entries, but some: the common encodings stay.
    CHECK(memo.hits() > instructions / 10);
    CHECK(memo.hits() + memo.misses() >= instructions);
}

namespace {

// Decodes the whole .text of the static C++ fixture (its glibc's string
// functions hold SSE, AVX2 and AVX-512 code), in pieces of `piece` bytes,
// with Capstone and with `memo`; requires the same instructions.
std::size_t decode_static_text(DecodeMemo& memo, std::size_t piece) {
    const auto bin = test::source_dir() / "tests" / "fixtures" / "bin" / "gas-2.47";
    const elf::ElfFile file = test::open_elf((bin / "cxx_exceptions-O2-nofp-static").string());
    const elf::SectionInfo* text = file.section(".text");
    REQUIRE(text);
    auto bytes = file.loaded_bytes(text->vaddr, text->size);
    REQUIRE(bytes);
    std::size_t instructions = 0;
    for (std::size_t at = 0; at < bytes->size(); at += piece)
        instructions += decode_both_ways(
            text->vaddr + at, bytes->subspan(at, std::min(piece, bytes->size() - at)), memo);
    return instructions;
}

} // namespace

TEST_CASE("decode memo: a static program's code (C library and C++ runtime) decodes the same "
          "with it",
          "[callee_saved]") {
    DecodeMemo memo;
    const std::size_t instructions = decode_static_text(memo, 4096);
    CHECK(instructions > 100000);
    // Encodings seen before, then forms seen before with other
    // displacements and immediates: Capstone decodes the rest.
    const X86FormMemo& forms = memo.x86_forms();
    CHECK(memo.hits() > instructions / 4);
    CHECK(forms.hits() > instructions / 10);
    CHECK(memo.hits() + forms.hits() > instructions * 17 / 20);
    CHECK(forms.size() > 1000);
    CHECK(forms.size() < instructions / 20);
}

TEST_CASE("decode memo: every 8-bit displacement and immediate of every x86-64 form learnt from "
          "real code decodes as Capstone decodes it, and wider ones at their edges",
          "[callee_saved]") {
    DecodeMemo memo;
    decode_static_text(memo, 4096);
    decode_sqlite_functions("sqlite3-clang-23", memo, {0});
    X86FormMemo& forms = memo.x86_forms();
    const auto tracked = untracked_callee_saved(abi_amd64());
    // For an 8-bit field, every value; for a wider one, its edges (each
    // sign, the ends of every narrower range) and a spread of others.
    std::vector<std::uint64_t> wide = {0,
                                       1,
                                       0x7f,
                                       0x80,
                                       0xff,
                                       0x7fff,
                                       0x8000,
                                       0xffff,
                                       0x7fffffff,
                                       0x80000000,
                                       0xffffffff,
                                       ~std::uint64_t{0},
                                       0x8000000000000000ULL};
    for (std::uint64_t v = 0x9e3779b97f4a7c15ULL, k = 0; k < 8;
         ++k, v = v * 6364136223846793005ULL + 1)
        wide.push_back(v);
    std::size_t variants = 0;
    std::size_t with_disp = 0;
    std::size_t with_imm = 0;
    std::string difference;
    forms.for_each([&](std::span<const std::uint8_t> encoding, std::uint64_t address,
                       X86FormMemo::Field disp, X86FormMemo::Field imm) {
        with_disp += disp.size > 0 ? 1 : 0;
        with_imm += imm.size > 0 ? 1 : 0;
        for (const X86FormMemo::Field field : {disp, imm}) {
            if (field.size == 0 || !difference.empty()) continue;
            std::vector<std::uint64_t> values;
            if (field.size == 1)
                for (std::uint64_t v = 0; v < 256; ++v)
                    values.push_back(v);
            else
                values = wide;
            for (const std::uint64_t v : values) {
                std::vector<std::uint8_t> bytes(encoding.begin(), encoding.end());
                for (std::uint8_t k = 0; k < field.size; ++k)
                    bytes[field.offset + k] = static_cast<std::uint8_t>(v >> (8U * k));
                Code want;
                REQUIRE(decode_x86_64(address, bytes, tracked, want, nullptr));
                X86Form form;
                Code got;
                const bool found = forms.find(address, bytes, form);
                if (found) reduce_x86_64(form, address, tracked, got);
                ++variants;
                if (!found || got.instructions.size() != 1 || want.instructions.size() != 1) {
                    difference = "not one instruction both ways";
                } else {
                    compare_fields(want, want.instructions[0], got, got.instructions[0],
                                   [&](const char* name, bool equal) {
                                       if (!equal && difference.empty()) difference = name;
                                   });
                }
                if (!difference.empty()) {
                    std::ostringstream out;
                    out << difference << ": the form of";
                    for (const std::uint8_t b : encoding)
                        out << ' ' << std::hex << static_cast<unsigned>(b);
                    out << " with field value 0x" << v;
                    difference = out.str();
                    break;
                }
            }
        }
    });
    INFO(difference);
    CHECK(difference.empty());
    CHECK(with_disp > 500);
    CHECK(with_imm > 300);
    CHECK(variants > 200000);
}

TEST_CASE("decode memo: AArch64 functions decode the same with it, at their starts and one "
          "instruction in",
          "[callee_saved]") {
    // Static programs: their glibc's functions too (by their symbols: the
    // .sframe section covers the program's own only).
    const auto bin = test::source_dir() / "tests" / "fixtures" / "bin" / "gas-2.47-aarch64";
    const auto tracked = untracked_callee_saved(abi_aarch64(ByteOrder::Little));
    for (const char* name : {"recurse-O2-fp-static", "recurse-O2-nofp-pac-static"}) {
        INFO(name);
        const elf::ElfFile file = test::open_elf((bin / name).string());
        DecodeMemo memo;
        std::size_t instructions = 0;
        std::size_t branches = 0;
        for (const elf::Symbol& symbol : file.function_symbols()) {
            if (symbol.size < 8) continue;
            auto bytes = file.loaded_bytes(symbol.value, symbol.size);
            if (!bytes) continue;
            // One instruction in: another address for every encoding, the
            // targets of its branches with it.
            for (const std::size_t skip : {std::size_t{0}, std::size_t{4}}) {
                const auto code = bytes->subspan(skip);
                Code want;
                Code got;
                const bool want_ok = decode_aarch64(ByteOrder::Little, symbol.value + skip, code,
                                                    tracked, want, nullptr);
                const bool got_ok = decode_aarch64(ByteOrder::Little, symbol.value + skip, code,
                                                   tracked, got, &memo);
                REQUIRE(got_ok == want_ok);
                require_same(want, got);
                instructions += want.instructions.size();
                for (const Instruction& in : want.instructions)
                    if (in.flow == Flow::Branch || in.flow == Flow::Jump || in.direct_call)
                        ++branches;
            }
        }
        CHECK(instructions > 100000);
        CHECK(branches > 10000);
        CHECK(memo.hits() > instructions / 2);
    }
}

TEST_CASE("decode memo: the other byte order forgets what it holds", "[callee_saved]") {
    const auto tracked = untracked_callee_saved(abi_aarch64(ByteOrder::Little));
    // stp x19, x20, [sp, #16] in little-endian order; the same four bytes
    // in big-endian order are another instruction.
    const std::vector<std::uint8_t> code = {0xf3, 0x53, 0x01, 0xa9};
    DecodeMemo memo;
    Code first;
    REQUIRE(decode_aarch64(ByteOrder::Little, 0x1000, code, tracked, first, &memo));
    REQUIRE(first.instructions.size() == 1);
    CHECK(first.instructions[0].saves == 2);
    Code want;
    Code got;
    const bool want_ok = decode_aarch64(ByteOrder::Big, 0x1000, code, tracked, want, nullptr);
    const bool got_ok = decode_aarch64(ByteOrder::Big, 0x1000, code, tracked, got, &memo);
    CHECK(got_ok == want_ok);
    CHECK(memo.hits() == 0);
    require_same(want, got);
    // Little-endian again: the memo starts over, and has it the time after.
    for (int pass = 0; pass < 2; ++pass) {
        Code fresh;
        Code again;
        REQUIRE(decode_aarch64(ByteOrder::Little, 0x2000, code, tracked, fresh, nullptr));
        REQUIRE(decode_aarch64(ByteOrder::Little, 0x2000, code, tracked, again, &memo));
        require_same(fresh, again);
    }
    CHECK(memo.hits() == 1);
}

TEST_CASE("decode memo: a branch's and a call's target follow the address", "[callee_saved]") {
    const auto tracked = untracked_callee_saved(abi_amd64());
    // call (next); jmp (itself); jne +2; push rbx; pop rbx; ret
    const std::vector<std::uint8_t> code = {0xe8, 0x00, 0x00, 0x00, 0x00, 0xeb,
                                            0xfe, 0x75, 0x02, 0x53, 0x5b, 0xc3};
    DecodeMemo memo;
    for (const std::uint64_t start : {0x1000ULL, 0x7fff0000ULL, 0x1000ULL}) {
        INFO("at 0x" << std::hex << start);
        Code want;
        Code got;
        REQUIRE(decode_x86_64(start, code, tracked, want, nullptr));
        REQUIRE(decode_x86_64(start, code, tracked, got, &memo));
        require_same(want, got);
        CHECK(got.instructions[0].target == start + 5);
        CHECK(got.instructions[1].target == start + 5);
        CHECK(got.instructions[2].target == start + 11);
    }
    // The first decode learnt the six encodings; the others found them.
    CHECK(memo.hits() == std::uint64_t{2} * 6);
}

TEST_CASE("decode memo: a 64-bit displacement is not held as an encoding; its form gives it",
          "[callee_saved]") {
    const auto tracked = untracked_callee_saved(abi_amd64());
    // movabs [0x1122334455667788], rax: a store beyond what an entry holds.
    const std::vector<std::uint8_t> code = {0x48, 0xa3, 0x88, 0x77, 0x66,
                                            0x55, 0x44, 0x33, 0x22, 0x11};
    DecodeMemo memo;
    for (int pass = 0; pass < 2; ++pass) {
        Code want;
        Code got;
        REQUIRE(decode_x86_64(0x1000, code, tracked, want, nullptr));
        REQUIRE(decode_x86_64(0x1000, code, tracked, got, &memo));
        require_same(want, got);
        REQUIRE(got.instructions.size() == 1);
        CHECK(got.instructions[0].store_disp == 0x1122334455667788);
    }
    CHECK(memo.hits() == 0);
    CHECK(memo.x86_forms().hits() == 1);
}

TEST_CASE("decode memo: another list of tracked registers forgets what it holds",
          "[callee_saved]") {
    const std::vector<std::uint16_t> rbx_r12 = {3, 12};
    const std::vector<std::uint16_t> r12_rbx = {12, 3};
    // mov [rsp+8], rbx; mov rbx, [rsp+8]
    const std::vector<std::uint8_t> code = {0x48, 0x89, 0x5c, 0x24, 0x08,
                                            0x48, 0x8b, 0x5c, 0x24, 0x08};
    DecodeMemo memo;
    Code first;
    REQUIRE(decode_x86_64(0x1000, code, rbx_r12, first, &memo));
    Code want;
    Code got;
    REQUIRE(decode_x86_64(0x1000, code, r12_rbx, want, nullptr));
    REQUIRE(decode_x86_64(0x1000, code, r12_rbx, got, &memo));
    CHECK(memo.hits() == 0);
    require_same(want, got);
    REQUIRE(got.saves_and_loads(got.instructions[0]).size() == 1);
    CHECK(got.saves_and_loads(got.instructions[0])[0].index == 1);
}

// SPDX-License-Identifier: MIT
// plan_reads() and WindowMemory: a step served from one prefetched window
// must give what the same step gives reading the stack word by word, and
// must read nothing else when the window holds the planned bytes.
#include "catch.hpp"
#include "fake_memory.hpp"
#include "sfunwind/abi.hpp"
#include "sfunwind/unwind/step.hpp"
#include "sfunwind/unwind/window.hpp"

#include <vector>

using namespace sfunwind;
using test::FakeMemory;

namespace {

Row row_of(CfaRule cfa, RegRule ra, RegRule fp) {
    Row r;
    r.cfa = cfa;
    r.ra = ra;
    r.fp = fp;
    return r;
}

std::vector<std::uint8_t> prefetch(FakeMemory& mem, std::uint64_t addr, std::uint32_t size) {
    std::vector<std::uint8_t> bytes(size);
    REQUIRE(mem.read(addr, bytes));
    return bytes;
}

// A reader that fails every read and counts them: the window must suffice.
class NoMemory final : public MemoryReader {
  public:
    bool read(std::uint64_t, std::span<std::uint8_t>) override {
        ++reads;
        return false;
    }
    int reads = 0;
};

} // namespace

TEST_CASE("plan_reads: RA and FP slots relative to the CFA's base register", "[window]") {
    // x86-64 after push %rbp: CFA = rsp+16, RA at CFA-8, FP at CFA-16.
    const Row r = row_of({7, 16, false}, RegRule::at_cfa(-8), RegRule::at_cfa(-16));
    const ReadWindow w = plan_reads(r);
    CHECK(w.base_reg == 7);
    CHECK(w.offset == 0); // rsp + 16 - 16
    CHECK(w.size == 16);

    // FP-based CFA with the FP slot only (AArch64 frame record, RA in x30).
    const Row a = row_of({29, 16, false}, RegRule::same_value(), RegRule::at_cfa(-16));
    const ReadWindow wa = plan_reads(a);
    CHECK(wa.base_reg == 29);
    CHECK(wa.offset == 0);
    CHECK(wa.size == 8);

    // Nothing in memory: RA in the link register, FP unchanged.
    CHECK(plan_reads(row_of({31, 0, false}, RegRule::same_value(), RegRule::same_value())).size ==
          0);
    // The outermost frame reads nothing.
    Row outer = r;
    outer.outermost = true;
    CHECK(plan_reads(outer).size == 0);
}

TEST_CASE("plan_reads: slots far apart span the window between them", "[window]") {
    // s390x-like: CFA = r15+160, RA at CFA-48, FP at CFA-72.
    const Row r = row_of({15, 160, false}, RegRule::at_cfa(-48), RegRule::at_cfa(-72));
    const ReadWindow w = plan_reads(r);
    CHECK(w.base_reg == 15);
    CHECK(w.offset == 160 - 72);
    CHECK(w.size == 72 - 48 + 8);
}

TEST_CASE("plan_reads: a dereferenced CFA plans only the pointer slot", "[window]") {
    // v3 flexible FDE (DRAP): CFA = *(rbp - 8).
    const Row r = row_of({6, -8, true}, RegRule::at_cfa(-8), RegRule::at_cfa(-16));
    const ReadWindow w = plan_reads(r);
    CHECK(w.base_reg == 6);
    CHECK(w.offset == -8);
    CHECK(w.size == 8);
}

TEST_CASE("WindowMemory: a step from the planned window equals a step from memory", "[window]") {
    const Abi& abi = abi_amd64();
    FakeMemory mem(0x7000, 0x100, ByteOrder::Little);
    const std::uint64_t sp = 0x7040;
    mem.put64(sp, 0x7fffaaaa);   // saved rbp at CFA-16
    mem.put64(sp + 8, 0x401234); // return address at CFA-8
    const Row r = row_of({7, 16, false}, RegRule::at_cfa(-8), RegRule::at_cfa(-16));
    const FrameRegs callee{0x401000, sp, 0x1111, std::nullopt};

    auto direct = step(r, abi, callee, true, mem);
    REQUIRE(direct);

    const ReadWindow w = plan_reads(r);
    const std::uint64_t addr = sp + static_cast<std::uint64_t>(w.offset);
    const auto bytes = prefetch(mem, addr, w.size);
    NoMemory none;
    WindowMemory window(addr, bytes, &none);
    auto windowed = step(r, abi, callee, true, window);
    REQUIRE(windowed);
    CHECK(windowed->caller->pc == direct->caller->pc);
    CHECK(windowed->caller->sp == direct->caller->sp);
    CHECK(windowed->caller->fp == direct->caller->fp);
    CHECK(windowed->cfa == direct->cfa);
    CHECK(window.fallback_reads() == 0);
    CHECK(none.reads == 0);
}

TEST_CASE("WindowMemory: reads outside the window go to the fallback", "[window]") {
    FakeMemory mem(0x7000, 0x100, ByteOrder::Little);
    mem.put64(0x7080, 0x42);
    const std::vector<std::uint8_t> bytes(16, 0xab);
    WindowMemory window(0x7000, bytes, &mem);
    std::uint8_t out[8] = {};
    REQUIRE(window.read(0x7008, out)); // inside: the window's bytes
    CHECK(out[0] == 0xab);
    REQUIRE(window.read(0x7080, out)); // outside: the fallback
    CHECK(out[0] == 0x42);
    CHECK(window.fallback_reads() == 1);
    // Straddling the window's end is outside, not half-served.
    CHECK(window.read(0x700c, out));
    CHECK(window.fallback_reads() == 2);
    // Below the window (the subtraction wraps): outside.
    CHECK(!WindowMemory(0x7000, bytes, nullptr).read(0x6ff8, out));
    // No fallback: outside reads fail.
    WindowMemory alone(0x7000, bytes, nullptr);
    CHECK(!alone.read(0x7080, out));
    CHECK(alone.fallback_reads() == 1);
}

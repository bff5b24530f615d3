// SPDX-License-Identifier: MIT
// compare_backtraces(): where two unwinds of one stop part, and which SFrame
// limit explains it.
#include "catch.hpp"
#include "sfunwind/unwind/backtrace_comparison.hpp"

using namespace sfunwind;

namespace {

FrameView frame(std::uint64_t pc, std::uint64_t cfa, std::uint64_t sp, std::string fn = {}) {
    FrameView f;
    f.pc = pc;
    f.cfa = cfa;
    f.sp = sp;
    f.fp = 0x1;
    f.function = std::move(fn);
    return f;
}

std::vector<FrameView> chain(std::size_t n) {
    std::vector<FrameView> out;
    for (std::size_t i = 0; i < n; ++i)
        out.push_back(frame(0x401000 + 0x10 * i, 0x7ff000 + 0x20 * (i + 1), 0x7ff000 + 0x20 * i,
                            "f" + std::to_string(i)));
    return out;
}

// How a walk that reached the end of the stack says so.
BacktraceStop outermost() {
    return BacktraceStop{};
}

// How a walk that stopped for `reason` says so.
BacktraceStop stopped(StopReason reason, Error error) {
    BacktraceStop s;
    s.reason = reason;
    s.error = std::move(error);
    return s;
}

} // namespace

TEST_CASE("compare_backtraces: equal lists agree") {
    const auto a = chain(5);
    const auto cmp = compare_backtraces(a, outermost(), a);
    CHECK(cmp.agree());
    CHECK(cmp.equal == 5);
    REQUIRE(cmp.frames.size() == 5);
    CHECK(cmp.frames[2].cfa_compared);
    CHECK(cmp.frames[2].fp_compared);
}

TEST_CASE("compare_backtraces: SFrame ends early, and why") {
    auto sf = chain(3);
    sf.back().cfa.reset(); // not stepped
    const auto ref = chain(6);
    SECTION("in a module without SFrame") {
        sf.back().module = "libc.so.6";
        const auto cmp = compare_backtraces(
            sf,
            stopped(StopReason::NoRow,
                    Error(Errc::NotFound, "no module with SFrame covers 0x401020")),
            ref);
        CHECK(cmp.equal == 3);
        REQUIRE(cmp.first);
        CHECK(cmp.first->kind == Divergence::Kind::SframeEnded);
        CHECK(cmp.first->frame == 3);
        CHECK(cmp.first->limit == SframeLimit::NoModuleSframe);
        CHECK(cmp.first->explanation.find("3 more") != std::string::npos);
        CHECK(cmp.first->explanation.find("without an SFrame section") != std::string::npos);
        CHECK_FALSE(cmp.frames[2].cfa_compared);
    }
    SECTION("in a module with SFrame but no FDE there") {
        sf.back().in_sframe_module = true;
        const auto cmp = compare_backtraces(
            sf, stopped(StopReason::NoRow, Error(Errc::NotFound, "no FDE covers 0x20")), ref);
        REQUIRE(cmp.first);
        CHECK(cmp.first->limit == SframeLimit::NoFde);
    }
    SECTION("at a rule for the topmost frame only") {
        const auto cmp = compare_backtraces(
            sf, stopped(StopReason::StepFailed, Error(Errc::UnsafeRule, "CFA rule reads r10")),
            ref);
        REQUIRE(cmp.first);
        CHECK(cmp.first->limit == SframeLimit::TopmostOnlyRule);
    }
    SECTION("at an outermost row") {
        const auto cmp = compare_backtraces(sf, outermost(), ref);
        REQUIRE(cmp.first);
        CHECK(cmp.first->limit == SframeLimit::Outermost);
    }
    SECTION("at the frame limit") {
        const auto cmp = compare_backtraces(
            sf, stopped(StopReason::FrameLimit, Error(Errc::BadFrame, "stopped after 3 frames")),
            ref);
        REQUIRE(cmp.first);
        CHECK(cmp.first->limit == SframeLimit::FrameLimit);
    }
}

TEST_CASE("compare_backtraces: the reference ends early") {
    const auto sf = chain(5);
    const auto ref = chain(4);
    const auto cmp = compare_backtraces(sf, outermost(), ref);
    REQUIRE(cmp.first);
    CHECK(cmp.first->kind == Divergence::Kind::ReferenceEnded);
    CHECK(cmp.first->limit == SframeLimit::ReferenceEnded);
    CHECK(cmp.first->frame == 4);
    CHECK(cmp.first->summary == "reference ended after 4 frames, SFrame has 5");
    const auto named = compare_backtraces(sf, outermost(), ref, "CFI");
    REQUIRE(named.first);
    CHECK(named.first->summary == "CFI ended after 4 frames, SFrame has 5");
}

TEST_CASE("compare_backtraces: the first differing value is explained") {
    auto sf = chain(6);
    auto ref = chain(6);
    SECTION("a CFA") {
        sf[2].cfa = 0x7ff0a8;
        sf[2].rule = "CFA=rsp+24 RA=[CFA-8] FP=same (FDE 4, FRE 1)";
        const auto cmp = compare_backtraces(sf, outermost(), ref);
        REQUIRE(cmp.first);
        CHECK(cmp.first->kind == Divergence::Kind::Cfa);
        CHECK(cmp.first->frame == 2);
        CHECK(cmp.first->limit == SframeLimit::None);
        CHECK(cmp.equal == 2);
        CHECK(cmp.first->summary == "CFA 0x7ff0a8 (SFrame) vs 0x7ff060 (reference)");
        CHECK(cmp.first->explanation.find("0x7ff0a8") != std::string::npos);
        CHECK(cmp.first->explanation.find("0x7ff060") != std::string::npos);
        CHECK(cmp.first->explanation.find("FDE 4, FRE 1") != std::string::npos);
    }
    SECTION("a PC after an equal CFA: the RA rule") {
        sf[3].pc = 0x999999;
        sf[2].rule = "CFA=rsp+16 RA=[CFA-16] FP=same (FDE 2, FRE 0)";
        const auto cmp = compare_backtraces(sf, outermost(), ref);
        REQUIRE(cmp.first);
        CHECK(cmp.first->kind == Divergence::Kind::Pc);
        CHECK(cmp.first->frame == 3);
        CHECK(cmp.first->explanation.find("return-address rule") != std::string::npos);
        CHECK(cmp.first->explanation.find("RA=[CFA-16]") != std::string::npos);
    }
    SECTION("an unknown value is not compared") {
        ref[4].fp.reset();
        sf[4].fp = 0x1234;
        const auto cmp = compare_backtraces(sf, outermost(), ref);
        CHECK(cmp.agree());
        CHECK_FALSE(cmp.frames[4].fp_compared);
        // ...unless a value known on one side only is asked to differ.
        const auto strict = compare_backtraces(sf, outermost(), ref, "GDB", true);
        REQUIRE(strict.first);
        CHECK(strict.first->kind == Divergence::Kind::Fp);
        CHECK(strict.first->frame == 4);
        CHECK(strict.first->summary == "fp 0x1234 (SFrame) vs unknown (GDB)");
        CHECK(strict.frames[4].fp_compared);
    }
    SECTION("an FP") {
        sf[1].fp = 0x5;
        const auto cmp = compare_backtraces(sf, outermost(), ref);
        REQUIRE(cmp.first);
        CHECK(cmp.first->kind == Divergence::Kind::Fp);
        CHECK(cmp.first->frame == 1);
    }
}

TEST_CASE("frame_views: the CFA is known once a frame is stepped") {
    Backtrace bt;
    for (int i = 0; i < 3; ++i) {
        Frame f;
        f.regs.pc = 0x1000U + static_cast<unsigned>(i);
        f.regs.sp = 0x8000U + 0x10U * static_cast<unsigned>(i);
        f.cfa = 0x8010U + 0x10U * static_cast<unsigned>(i);
        bt.frames.push_back(f);
    }
    bt.stop.reason = StopReason::NoRow;
    bt.stop.error = Error(Errc::NotFound, "no module with SFrame covers 0x1002");
    const auto v = frame_views(bt);
    REQUIRE(v.size() == 3);
    CHECK(v[0].cfa == 0x8010U);
    CHECK(v[1].sp == 0x8010U);
    CHECK_FALSE(v[2].cfa.has_value());
    CHECK_FALSE(v[2].in_sframe_module);
}

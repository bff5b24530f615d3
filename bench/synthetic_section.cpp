// SPDX-License-Identifier: MIT
#include "synthetic_section.hpp"

#include "sfunwind/row.hpp"
#include "sfunwind/sframe/writer.hpp"

#include <algorithm>
#include <cmath>
#include <optional>
#include <random>
#include <string>

namespace sfunwind::bench {
namespace {

using sframe::FdeSpec;
using sframe::FreSpec;

constexpr std::uint16_t rsp = 7; // DWARF (x86-64 psABI figure 3.36)
constexpr std::uint16_t rbp = 6;
constexpr std::uint64_t code_start = 0x400000;

// The RA is at CFA - 8 in every AMD64 row: the header says so, no FRE does.
FreSpec row(std::uint32_t start, std::uint16_t cfa_reg, std::int32_t cfa_offset,
            std::optional<std::int32_t> fp_slot) {
    FreSpec f;
    f.start = start;
    f.cfa = CfaRule{cfa_reg, cfa_offset, false};
    f.ra = RegRule::at_cfa(-8, RegRule::Source::Header);
    f.fp = fp_slot ? RegRule::at_cfa(*fp_slot) : RegRule::same_value();
    return f;
}

class Generator {
  public:
    explicit Generator(std::uint64_t seed) : rng_(seed) {}

    FdeSpec function(std::uint64_t start) {
        FdeSpec f;
        f.start = start;
        // Log-uniform from 16 bytes to 8 KiB: many small functions, a few large.
        const double log_size = uniform(4.0, 13.0);
        f.size = std::max<std::uint32_t>(16, static_cast<std::uint32_t>(std::exp2(log_size)));
        const unsigned style = pick(100);
        if (style < 25 || f.size < 48) {
            f.fres.push_back(row(0, rsp, 8, std::nullopt)); // a leaf: nothing pushed
        } else if (style < 80) {
            pushed(f);
        } else {
            framed(f);
        }
        return f;
    }

  private:
    // push %r...; (sub $N,%rsp); body; per epilogue: (add $N,%rsp); pop...; ret.
    void pushed(FdeSpec& f) {
        const unsigned pushes = 1 + pick(6);
        const bool rbp_first = pick(2) == 0; // rbp pushed first: FP saved at CFA-16
        const std::int32_t frame = pick(3) == 0 ? 0 : 8 * static_cast<std::int32_t>(1 + pick(600));
        std::uint32_t at = 0;
        std::int32_t cfa = 8;
        std::optional<std::int32_t> fp;
        f.fres.push_back(row(at, rsp, cfa, fp));
        for (unsigned i = 0; i < pushes; ++i) {
            at += 1 + pick(2);
            cfa += 8;
            if (i == 0 && rbp_first) fp = -16;
            f.fres.push_back(row(at, rsp, cfa, fp));
        }
        if (frame > 0) {
            at += frame < 128 ? 4 : 7;
            f.fres.push_back(row(at, rsp, cfa + frame, fp));
        }
        const std::int32_t body_cfa = cfa + frame;
        const unsigned epilogues = 1 + pick(3);
        // Each epilogue needs its pops and a ret: 2 bytes a step at most.
        const std::uint32_t epilogue_bytes = 2 * (pushes + 2) + 8;
        if (f.size <= at + epilogues * epilogue_bytes + 16) return; // no room: prologue only
        std::uint32_t room = f.size - at - epilogues * epilogue_bytes;
        for (unsigned e = 0; e < epilogues; ++e) {
            at += 1 + pick(std::max<std::uint32_t>(1, room / (epilogues - e)));
            room = f.size - at - (epilogues - e) * epilogue_bytes;
            std::int32_t c = body_cfa;
            if (frame > 0) {
                at += frame < 128 ? 4 : 7;
                c = cfa;
                f.fres.push_back(row(at, rsp, c, fp));
            }
            for (unsigned i = pushes; i > 0; --i) {
                at += 1 + pick(2);
                c -= 8;
                f.fres.push_back(row(at, rsp, c, i == 1 ? std::nullopt : fp));
            }
            // ret; the code after it is the body again.
            if (e + 1 < epilogues) {
                at += 1;
                f.fres.push_back(row(at, rsp, body_cfa, fp));
            }
        }
    }

    // push %rbp; mov %rsp,%rbp; body; leave (or pop %rbp); ret.
    void framed(FdeSpec& f) {
        f.fres.push_back(row(0, rsp, 8, std::nullopt));
        f.fres.push_back(row(1, rsp, 16, -16));
        f.fres.push_back(row(4, rbp, 16, -16));
        if (f.size > 24) f.fres.push_back(row(f.size - 1, rsp, 8, std::nullopt));
    }

    // From the engine's raw output, which the C++ standard fixes, and not
    // through std::uniform_*_distribution, whose algorithms each standard
    // library chooses: the same bytes on the host and in the sid chroot.
    unsigned pick(std::uint32_t n) { return static_cast<unsigned>(rng_() % n); }
    double uniform(double lo, double hi) {
        return lo + (hi - lo) * static_cast<double>(rng_() >> 11U) * 0x1p-53;
    }

    std::mt19937_64 rng_;
};

} // namespace

Expected<SyntheticSection> synthetic_section(std::uint32_t functions, std::uint64_t seed) {
    if (functions == 0 || functions > max_synthetic_functions)
        return Error(Errc::Malformed, "a synthetic section has 1 to " +
                                          std::to_string(max_synthetic_functions) + " functions");
    Generator gen(seed);
    std::vector<FdeSpec> fdes;
    fdes.reserve(functions);
    std::uint64_t at = code_start;
    for (std::uint32_t i = 0; i < functions; ++i) {
        fdes.push_back(gen.function(at));
        at = (at + fdes.back().size + 15) & ~std::uint64_t{15};
    }
    sframe::WriterOptions options;
    options.version = sframe::Version::V3;
    options.abi = sframe::AbiArch::Amd64Little;
    options.section_vaddr = (at + 0xfff) & ~std::uint64_t{0xfff};
    sframe::Writer writer(options);
    for (auto& f : fdes)
        writer.add(std::move(f));
    fdes = {};
    auto bytes = writer.write();
    if (!bytes) return std::move(bytes).error();
    return SyntheticSection{std::move(*bytes), options.section_vaddr};
}

} // namespace sfunwind::bench

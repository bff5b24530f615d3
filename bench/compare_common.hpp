// SPDX-License-Identifier: MIT
// What the comparison benchmarks (bench_libsframe, bench_libdw, bench_open)
// share: a program's SFrame section with random PCs drawn from it, and a
// timer that runs two contenders over the same PCs in alternating rounds,
// so that on a machine shared with other work both see the same load.
#pragma once

#include "sfunwind/elf/elf_file.hpp"
#include "sfunwind/error.hpp"
#include "sfunwind/sframe/section.hpp"

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <vector>

namespace sfunwind::bench {

// 16 Ki PCs, the same count and seed as bench_lookup.cpp, so that every
// program times the same lookups.
inline constexpr std::size_t compare_pc_count = std::size_t{1} << 14U;
inline constexpr std::uint64_t compare_pc_seed = 20261121;

struct Program {
    std::string path;
    std::string name; // file name, for the report
    // None for a synthetic section (bench/synthetic_section.hpp): no code,
    // no other sections.
    std::optional<elf::ElfFile> file;
    std::vector<std::uint8_t> sframe; // .sframe bytes, copied (libsframe gets the same copy)
    std::uint64_t sframe_vaddr = 0;
    std::optional<sframe::Section> section;
    std::vector<std::uint64_t> pcs; // link-time PCs inside the section's FDEs
};

// Reads the file, its .sframe section and draws the PCs. Errors name the file.
// `synthetic:N` (N functions, e.g. synthetic:1000000) makes the section of
// bench/synthetic_section.hpp instead, with the same seed every time.
Expected<std::unique_ptr<Program>> load_program(const std::string& path);

// The comparison programs' command line, `[--budget-ms N] ELF...`: loads
// each ELF and runs `run` on it with the time budget; the exit status is 0
// when every program loaded and every `run` returned 0, 2 on usage errors.
int main_over_programs(int argc, char** argv,
                       const std::function<int(const Program&, std::chrono::milliseconds)>& run);

// "SFrame v3, 2935 FDEs, 24854 FREs, 172420 bytes"
std::string describe_section(const sframe::Section& section, std::size_t bytes);

// Best-of-rounds time per call, in ns, for two contenders timed in
// alternating rounds over the same PCs. Each contender is a callable
// (std::uint64_t pc) -> std::uint64_t whose results are summed into a sink,
// so that no call can be optimised away.
struct Timing {
    double a_ns = 0;
    double b_ns = 0;
    unsigned rounds = 0;
};

template <typename A, typename B>
Timing time_pair(const std::vector<std::uint64_t>& pcs, A&& a, B&& b,
                 std::chrono::milliseconds budget, unsigned min_rounds = 7) {
    using Clock = std::chrono::steady_clock;
    volatile std::uint64_t sink = 0;
    auto one_round = [&](auto& f) {
        std::uint64_t sum = 0;
        const auto t0 = Clock::now();
        for (const std::uint64_t pc : pcs)
            sum += f(pc);
        const auto t1 = Clock::now();
        sink = sink + sum;
        return std::chrono::duration<double, std::nano>(t1 - t0).count() /
               static_cast<double>(pcs.size());
    };
    // One untimed round each: caches, page faults, libdw's lazy tables.
    (void)one_round(a);
    (void)one_round(b);
    Timing t;
    t.a_ns = t.b_ns = 1e300;
    const auto end = Clock::now() + budget;
    while (t.rounds < min_rounds || Clock::now() < end) {
        const double ta = one_round(a);
        const double tb = one_round(b);
        if (ta < t.a_ns) t.a_ns = ta;
        if (tb < t.b_ns) t.b_ns = tb;
        ++t.rounds;
        if (t.rounds >= 1000) break;
    }
    return t;
}

// Best-of-rounds time of one call of f(), in ns.
template <typename F>
double time_best(F&& f, std::chrono::milliseconds budget, unsigned min_rounds = 5) {
    using Clock = std::chrono::steady_clock;
    double best = 1e300;
    const auto end = Clock::now() + budget;
    for (unsigned round = 0; round < min_rounds || (Clock::now() < end && round < 100000);
         ++round) {
        const auto t0 = Clock::now();
        f();
        const double ns = std::chrono::duration<double, std::nano>(Clock::now() - t0).count();
        if (ns < best) best = ns;
    }
    return best;
}

// "4.2x" style ratio text, one decimal.
std::string ratio_text(double slower_ns, double faster_ns);

} // namespace sfunwind::bench

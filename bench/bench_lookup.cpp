// SPDX-License-Identifier: MIT
// How fast Section::lookup, Section::parse and validate() are on large real
// sections: the SQLite shell built with gcc + gas 2.47 (SFrame v3, sorted) and
// with clang + lld 23 (v2, PC-relative, not flagged sorted), each also as a
// shuffled copy with the sorted flag clear.
//
// Before anything is timed, every drawn PC is looked up once and must give a
// row that contains it, and the shuffled copy must give the same rows as the
// original; otherwise the program stops, so the timings always measure real,
// successful lookups.
//
//   sfunwind_bench_lookup [benchmark flags]
//   SFUNWIND_LARGE_FIXTURES=DIR  read sections.json and the binaries from DIR
#include "large_fixture.hpp"
#include "sample_pcs.hpp"
#include "sfunwind/sframe/section.hpp"
#include "sfunwind/sframe/validate.hpp"
#include "shuffled_copy.hpp"

#include <benchmark/benchmark.h>
#include <cstdio>
#include <cstdlib>
#include <memory>
#include <optional>
#include <string>
#include <vector>

namespace {

using sfunwind::Errc;
using sfunwind::Error;
using sfunwind::Row;
using sfunwind::Status;
using sfunwind::to_hex;
namespace sframe = sfunwind::sframe;

// A power of two, so the loop wraps with a mask; 16 Ki PCs (128 KiB) keep the
// sequence from repeating within a cache-warm stretch while the table itself
// stays small next to the sections (~170 KB each).
constexpr std::size_t pc_count = std::size_t{1} << 14U;
constexpr std::uint64_t pc_seed = 20261121;
constexpr std::uint64_t shuffle_seed = 4242;

struct Case {
    std::string label;               // "sqlite3-gas-2.47 v3" or "... v3 shuffled"
    std::vector<std::uint8_t> bytes; // owned: the Section refers into them
    std::uint64_t vaddr = 0;
    std::optional<sframe::Section> section;
    std::vector<std::uint64_t> pcs;
    std::size_t problems = 0; // validate()'s findings, reported as a counter
};

std::vector<std::unique_ptr<Case>>& cases() {
    static std::vector<std::unique_ptr<Case>> all;
    return all;
}

Status parse_into(Case& c) {
    auto section = sframe::Section::parse(c.bytes, c.vaddr);
    if (!section) return Error(section.error().code(), c.label + ": " + section.error().message());
    c.section.emplace(std::move(*section));
    return sfunwind::ok();
}

// Every PC must have a row that contains it; failures are counted and the
// first few printed, so a broken decoder cannot make the benchmark fast.
Status check_rows(const Case& c) {
    std::size_t failures = 0;
    for (const std::uint64_t pc : c.pcs) {
        auto row = c.section->lookup(pc);
        const bool ok = row && row->pc_begin <= pc && pc < row->pc_end;
        if (ok) continue;
        if (++failures <= 5)
            std::fprintf(
                stderr, "%s: PC %s: %s\n", c.label.c_str(), to_hex(pc).c_str(),
                row ? ("row [" + to_hex(row->pc_begin) + ", " + to_hex(row->pc_end) + ") misses it")
                          .c_str()
                    : row.error().message().c_str());
    }
    if (failures != 0)
        return Error(Errc::NotFound, c.label + ": " + std::to_string(failures) + " of " +
                                         std::to_string(c.pcs.size()) + " drawn PCs have no row");
    return sfunwind::ok();
}

// Everything but the FDE's position in the section. (Row's defaulted ==
// is unusable while CfaRule has none.)
bool same_row(const Row& a, const Row& b) {
    return a.pc_begin == b.pc_begin && a.pc_end == b.pc_end && a.func_start == b.func_start &&
           a.func_size == b.func_size && a.fre_index == b.fre_index && a.cfa.reg == b.cfa.reg &&
           a.cfa.offset == b.cfa.offset && a.cfa.deref == b.cfa.deref && a.ra == b.ra &&
           a.fp == b.fp && a.signal_frame == b.signal_frame && a.mangled_ra == b.mangled_ra &&
           a.pauth_key_b == b.pauth_key_b && a.outermost == b.outermost && a.pc_mask == b.pc_mask &&
           a.topmost_only == b.topmost_only;
}

// The shuffled copy must be a faithful one: same rows for every drawn PC
// (apart from the FDE's position), and really searched through the index.
Status check_same_rows(const Case& original, const Case& copy) {
    if (copy.section->searches_in_place())
        return Error(Errc::Malformed,
                     copy.label + ": the shuffled copy is still searched in place");
    if (copy.section->fde_count() != original.section->fde_count())
        return Error(Errc::Malformed, copy.label + ": " +
                                          std::to_string(copy.section->fde_count()) +
                                          " FDEs, the original has " +
                                          std::to_string(original.section->fde_count()));
    for (const std::uint64_t pc : original.pcs) {
        auto want = original.section->lookup(pc);
        auto got = copy.section->lookup(pc);
        if (!want || !got)
            return Error(Errc::NotFound,
                         copy.label + ": no row for " + to_hex(pc) + " in one of the copies");
        if (!same_row(*want, *got))
            return Error(Errc::Malformed,
                         copy.label + ": PC " + to_hex(pc) + ": the original gives " +
                             sfunwind::describe(*want, original.section->abi()) + ", the copy " +
                             sfunwind::describe(*got, copy.section->abi()));
    }
    return sfunwind::ok();
}

Status set_up(const std::string& dir) {
    auto sections = sfunwind::bench::load_large_sections(dir);
    if (!sections) return std::move(sections).error();
    for (auto& s : *sections) {
        auto built = std::make_unique<Case>();
        built->label = s.name + " v" + std::to_string(s.version);
        built->bytes = std::move(s.bytes);
        built->vaddr = s.vaddr;
        if (auto st = parse_into(*built); !st) return st;
        auto pcs = sfunwind::bench::draw_pcs(*built->section, pc_count, pc_seed);
        if (!pcs) return Error(pcs.error().code(), built->label + ": " + pcs.error().message());
        built->pcs = std::move(*pcs);
        if (auto st = check_rows(*built); !st) return st;

        auto shuffled = std::make_unique<Case>();
        shuffled->label = built->label + " shuffled";
        auto bytes = sfunwind::bench::shuffled_copy(*built->section, shuffle_seed);
        if (!bytes)
            return Error(bytes.error().code(), shuffled->label + ": " + bytes.error().message());
        shuffled->bytes = std::move(*bytes);
        shuffled->vaddr = built->vaddr;
        if (auto st = parse_into(*shuffled); !st) return st;
        shuffled->pcs = built->pcs;
        if (auto st = check_same_rows(*built, *shuffled); !st) return st;

        for (Case* c : {built.get(), shuffled.get()}) {
            c->problems = sframe::validate(*c->section).size();
            std::fprintf(stderr,
                         "%-36s %7zu bytes  %5u FDEs  %6u FREs  %s  validate: %zu problems\n",
                         c->label.c_str(), c->bytes.size(), c->section->fde_count(),
                         c->section->header().num_fres,
                         c->section->searches_in_place() ? "in place " : "indexed  ", c->problems);
        }
        cases().push_back(std::move(built));
        cases().push_back(std::move(shuffled));
    }
    std::fprintf(stderr, "%zu PCs per section drawn (seed %llu); every one has a row\n", pc_count,
                 static_cast<unsigned long long>(pc_seed));
    return sfunwind::ok();
}

void size_counters(benchmark::State& state, const Case& c) {
    const auto fdes = static_cast<double>(c.section->fde_count());
    const auto extra = static_cast<double>(c.section->extra_memory() + sizeof(sframe::Section));
    state.counters["section_bytes"] = static_cast<double>(c.bytes.size());
    state.counters["fdes"] = fdes;
    state.counters["extra_bytes"] = extra;
    state.counters["extra_bytes_per_fde"] = extra / fdes;
}

// Not inlined: bench/lookup_instructions.py counts its calls to lookup().
[[gnu::noinline]] void bm_lookup(benchmark::State& state, const Case& c) {
    const sframe::Section& section = *c.section;
    const std::size_t mask = c.pcs.size() - 1;
    std::size_t i = 0;
    for (auto _ : state) {
        auto row = section.lookup(c.pcs[i]);
        benchmark::DoNotOptimize(row);
        i = (i + 1) & mask;
    }
    state.SetItemsProcessed(static_cast<std::int64_t>(state.iterations()));
    size_counters(state, c);
}

// The FDE search alone, to tell it apart from the FRE scan in lookup().
void bm_find_fde(benchmark::State& state, const Case& c) {
    const sframe::Section& section = *c.section;
    const std::size_t mask = c.pcs.size() - 1;
    std::size_t i = 0;
    for (auto _ : state) {
        auto fde = section.find_fde(c.pcs[i]);
        benchmark::DoNotOptimize(fde);
        i = (i + 1) & mask;
    }
    state.SetItemsProcessed(static_cast<std::int64_t>(state.iterations()));
}

// Opening a section: the header checks, and for an unsorted one the index.
void bm_parse(benchmark::State& state, const Case& c) {
    for (auto _ : state) {
        auto section = sframe::Section::parse(c.bytes, c.vaddr);
        benchmark::DoNotOptimize(section);
    }
    state.SetBytesProcessed(static_cast<std::int64_t>(state.iterations()) *
                            static_cast<std::int64_t>(c.bytes.size()));
    size_counters(state, c);
}

void bm_validate(benchmark::State& state, const Case& c) {
    for (auto _ : state) {
        auto problems = sframe::validate(*c.section);
        benchmark::DoNotOptimize(problems);
    }
    state.SetBytesProcessed(static_cast<std::int64_t>(state.iterations()) *
                            static_cast<std::int64_t>(c.bytes.size()));
    state.counters["problems"] = static_cast<double>(c.problems);
}

void register_all() {
    for (const auto& owned : cases()) {
        const Case& c = *owned;
        benchmark::RegisterBenchmark(("lookup/" + c.label).c_str(), [&c](benchmark::State& s) {
            bm_lookup(s, c);
        })->Unit(benchmark::kNanosecond);
        benchmark::RegisterBenchmark(("find_fde/" + c.label).c_str(), [&c](benchmark::State& s) {
            bm_find_fde(s, c);
        })->Unit(benchmark::kNanosecond);
        benchmark::RegisterBenchmark(("parse/" + c.label).c_str(), [&c](benchmark::State& s) {
            bm_parse(s, c);
        })->Unit(benchmark::kMicrosecond);
        benchmark::RegisterBenchmark(("validate/" + c.label).c_str(), [&c](benchmark::State& s) {
            bm_validate(s, c);
        })->Unit(benchmark::kMicrosecond);
    }
}

} // namespace

int main(int argc, char** argv) {
    benchmark::Initialize(&argc, argv);
    if (benchmark::ReportUnrecognizedArguments(argc, argv)) return 2;
    const char* env = std::getenv("SFUNWIND_LARGE_FIXTURES");
    const std::string dir = env != nullptr && *env != '\0' ? env : SFUNWIND_LARGE_FIXTURES;
    if (auto status = set_up(dir); !status) {
        std::fprintf(stderr, "sfunwind_bench_lookup: %s\n", status.error().message().c_str());
        return 1;
    }
    register_all();
    benchmark::RunSpecifiedBenchmarks();
    benchmark::Shutdown();
    return 0;
}

// SPDX-License-Identifier: MIT
// What the callee-saved register analysis (sfunwind/callee_saved/) costs:
//
//   cold      FunctionRules::analyse of every function of the program
//             (decoding with Capstone, the data-flow pass, the rule table):
//             per function and per instruction
//   module    the same with one fresh Analyser per pass over the program
//             (what the LLDB debug file and `sfunwind check` run): encodings
//             seen before are not decoded again
//   cached    a frame's rules once its function is analysed: the module's
//             cache lookup and FunctionRules::at(), per frame, at the same
//             PCs the lookup benchmarks use
//   memory    the rule tables the analysis keeps, per function
//
//   sfunwind_bench_callee_saved [--budget-ms N] ELF...
//
// Times are the best of repeated runs.
#include "compare_common.hpp"
#include "sfunwind/callee_saved/module_rules.hpp"

#include <array>
#include <cstdio>

namespace {

using sfunwind::bench::Program;
namespace cs = sfunwind::callee_saved;

int run(const Program& p, std::chrono::milliseconds budget) {
    const auto& section = *p.section;
    const sfunwind::Abi& abi = section.abi();
    std::printf("%s: %s\n", p.name.c_str(),
                sfunwind::bench::describe_section(section, p.sframe.size()).c_str());
    if (abi.arch != sfunwind::Arch::X86_64) {
        std::printf("  not x86-64: the analysis covers x86-64 only\n");
        return 0;
    }
    if (!p.file) {
        std::printf("  no code to analyse (a synthetic section)\n");
        return 1;
    }
    const sfunwind::elf::ElfFile& file = *p.file;
    const cs::RowAt rows = cs::rows_from(&section);
    const cs::CodeAt code = [&](std::uint64_t vaddr, std::uint64_t size) {
        return file.loaded_bytes(vaddr, size);
    };
    cs::CodeFacts facts;
    facts.landing_pads = file.has_section(".gcc_except_table");

    std::vector<sfunwind::sframe::Fde> fdes;
    for (std::uint32_t i = 0; i < section.fde_count(); ++i)
        if (auto f = section.fde(i); f && f->size > 0) fdes.push_back(*f);

    std::size_t analysed = 0;
    std::size_t instructions = 0;
    std::size_t memory = 0;
    std::uint64_t visits = 0;
    // Each pass with FunctionRules::analyse, or with a fresh Analyser.
    auto pass = [&](bool memo) {
        analysed = instructions = memory = 0;
        visits = 0;
        cs::Analyser analyser;
        for (const auto& f : fdes) {
            auto bytes = code(f.start, f.size);
            if (!bytes) continue;
            auto r = memo ? analyser.analyse(abi, f.start, *bytes, rows, {}, facts)
                          : cs::FunctionRules::analyse(abi, f.start, *bytes, rows, {}, facts);
            if (!r) continue;
            ++analysed;
            instructions += r->instruction_starts().size();
            memory += r->memory_bytes();
            visits += r->stats().visits;
        }
    };
    for (const bool memo : {false, true}) {
        const double ns = sfunwind::bench::time_best([&] { pass(memo); }, budget);
        std::printf("  %s: %zu functions analysed (of %zu), %zu instructions: %.1f us per "
                    "function, %.0f ns per instruction (%.2f visits each)\n",
                    memo ? "module" : "cold", analysed, fdes.size(), instructions,
                    ns / 1e3 / static_cast<double>(analysed),
                    ns / static_cast<double>(instructions),
                    static_cast<double>(visits) / static_cast<double>(instructions));
    }
    std::printf("  memory: %.0f bytes of rule table per function\n",
                static_cast<double>(memory) / static_cast<double>(analysed));

    // Cached: every function the PCs fall in analysed once beforehand.
    cs::ModuleRules module(abi, code, rows, facts, 1U << 20);
    std::vector<std::pair<std::uint64_t, std::uint32_t>> function_of(p.pcs.size());
    for (std::size_t i = 0; i < p.pcs.size(); ++i) {
        auto f = section.find_fde(p.pcs[i]);
        function_of[i] = f ? std::pair{f->start, f->size} : std::pair{std::uint64_t{0}, 0U};
        if (f) (void)module.function(f->start, f->size);
    }
    std::array<sfunwind::RegRule, cs::FunctionRules::max_registers> out{};
    volatile std::uint64_t sink = 0;
    const double cached_ns = sfunwind::bench::time_best(
        [&] {
            std::uint64_t sum = 0;
            for (std::size_t i = 0; i < p.pcs.size(); ++i) {
                const auto* r = module.function(function_of[i].first, function_of[i].second);
                if (r == nullptr) continue;
                r->at(p.pcs[i], std::span(out.data(), r->registers().size()));
                sum += static_cast<std::uint64_t>(out[0].kind);
            }
            sink = sink + sum;
        },
        budget);
    std::printf("  cached: %.0f ns per frame (cache lookup + rules at the pc, %zu PCs)\n",
                cached_ns / static_cast<double>(p.pcs.size()), p.pcs.size());
    return 0;
}

} // namespace

int main(int argc, char** argv) {
    return sfunwind::bench::main_over_programs(argc, argv, run);
}

// SPDX-License-Identifier: MIT
// What opening a section costs, per MB of section, and what a Section keeps
// beyond the section bytes, per FDE:
//
//   open      Section::parse: header checks, the sortedness check of the
//             FDE starts, the page index
//   index     Section::parse of the same FDEs written in a shuffled order
//             with SFRAME_F_FDE_SORTED clear (bench/shuffled_copy.hpp), as
//             clang + lld leave them: the sorted FDE order index is built too
//   validate  sframe::validate: every FDE and FRE decoded and checked
//
//   sfunwind_bench_open [--budget-ms N] ELF...
//
// Times are the best of repeated runs; MB = 10^6 bytes.
#include "compare_common.hpp"
#include "sfunwind/sframe/validate.hpp"
#include "shuffled_copy.hpp"

#include <cstdio>
#include <cstdlib>
#include <cstring>

namespace {

using sfunwind::bench::Program;
namespace sframe = sfunwind::sframe;

double bytes_per_fde(const sframe::Section& s) {
    return static_cast<double>(s.extra_memory() + sizeof(sframe::Section)) /
           static_cast<double>(s.fde_count());
}

int run(const Program& p, std::chrono::milliseconds budget) {
    const auto& section = *p.section;
    std::printf("%s: %s\n", p.name.c_str(),
                sfunwind::bench::describe_section(section, p.sframe.size()).c_str());
    const double mb = static_cast<double>(p.sframe.size()) / 1e6;
    bool failed = false;
    auto parse_ns = [&](const std::vector<std::uint8_t>& bytes) {
        return sfunwind::bench::time_best(
            [&] {
                auto s = sframe::Section::parse(bytes, p.sframe_vaddr);
                if (!s) failed = true;
            },
            budget);
    };
    const double open_ns = parse_ns(p.sframe);
    std::size_t problems = 0;
    const double validate_ns =
        sfunwind::bench::time_best([&] { problems = sframe::validate(section).size(); }, budget);

    auto shuffled = sfunwind::bench::shuffled_copy(section, 4242);
    if (!shuffled) {
        std::printf("  shuffled copy: %s\n", shuffled.error().message().c_str());
        return 1;
    }
    auto unsorted = sframe::Section::parse(*shuffled, p.sframe_vaddr);
    if (!unsorted || unsorted->searches_in_place()) {
        std::printf("  the shuffled copy does not parse into an indexed section\n");
        return 1;
    }
    const double index_ns = parse_ns(*shuffled);
    if (failed) {
        std::printf("  Section::parse failed while timing\n");
        return 1;
    }
    auto line = [&](const char* what, double ns) {
        std::printf("  %-44s %9.1f us  %8.3f ms/MB  %8.1f MB/s\n", what, ns / 1e3, ns / 1e6 / mb,
                    mb / (ns / 1e9));
    };
    line(section.searches_in_place() ? "open (Section::parse, searched in place)"
                                     : "open (Section::parse, indexed)",
         open_ns);
    line("open + FDE order index (shuffled, unsorted)", index_ns);
    line("validate (every FDE and FRE)", validate_ns);
    std::printf("  validate found %zu problems\n", problems);
    std::printf("  memory beyond the section bytes: %.2f B/FDE as written (%zu B), %.2f B/FDE "
                "unsorted (%zu B)\n",
                bytes_per_fde(section), section.extra_memory() + sizeof(sframe::Section),
                bytes_per_fde(*unsorted), unsorted->extra_memory() + sizeof(sframe::Section));
    return 0;
}

} // namespace

int main(int argc, char** argv) {
    return sfunwind::bench::main_over_programs(argc, argv, run);
}

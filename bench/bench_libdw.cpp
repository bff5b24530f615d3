// SPDX-License-Identifier: MIT
// sfunwind's SFrame lookup against libdw's DWARF CFI lookup
// (dwarf_cfi_addrframe on the same binary's .eh_frame), at the same random
// PCs (bench/compare_common.hpp).
//
//   sfunwind_bench_libdw [--budget-ms N] ELF...
//
// The two tables are different data for the same code, so before timing,
// each PC's SFrame row is compared with its CFI row the way `sfunwind check`
// does (sfunwind/cfi/row_comparison.hpp): the agreement is printed, so that a
// reader sees both lookups answer the same question. It is not required to
// be complete (the PLT's CFI is an expression, for one).
//
// Timed, in alternating rounds, best of rounds: Section::lookup (a full Row)
// against dwarf_cfi_addrframe + dwarf_frame_cfa + dwarf_frame_register for
// the RA and FP columns + free() of the frame, which is what an unwinder asks
// libdw for one frame. Prints `sfunwind vs libdw (dwarf_cfi_addrframe): N.Nx`.
#include "compare_common.hpp"
#include "sfunwind/cfi/cfi_table.hpp"
#include "sfunwind/cfi/row_comparison.hpp"

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <elfutils/libdw.h>

namespace {

using sfunwind::bench::Program;

struct Agreement {
    std::size_t same = 0;
    std::size_t unrepresentable = 0; // CFI rules with no Row form (PLT expressions)
    std::size_t different = 0;
    std::size_t no_cfi = 0;
};

Agreement agree(const Program& p, const sfunwind::cfi::CfiTable& table) {
    Agreement a;
    for (const std::uint64_t pc : p.pcs) {
        auto row = p.section->lookup(pc);
        auto cfi = table.at(pc);
        if (!cfi || !row) {
            ++a.no_cfi;
            continue;
        }
        const auto diffs = sfunwind::cfi::compare(*cfi, *row, p.section->abi());
        if (diffs.empty()) {
            ++a.same;
        } else if (diffs.front().unrepresentable) {
            ++a.unrepresentable;
        } else if (++a.different <= 3) {
            std::printf("  differs at %#llx: %s\n", static_cast<unsigned long long>(pc),
                        diffs.front().message.c_str());
        }
    }
    return a;
}

int run(const Program& p, std::chrono::milliseconds budget) {
    std::printf("%s: %s\n", p.name.c_str(),
                sfunwind::bench::describe_section(*p.section, p.sframe.size()).c_str());
    if (!p.file) {
        std::printf("  skipped: a synthetic section, no .eh_frame to compare with\n");
        return 0;
    }
    if (!p.file->has_section(".eh_frame")) {
        std::printf("  skipped: no .eh_frame\n");
        return 0;
    }
    auto table = sfunwind::cfi::CfiTable::open(*p.file, sfunwind::cfi::Source::EhFrame);
    if (!table) {
        std::printf("  %s\n", table.error().message().c_str());
        return 1;
    }
    const Agreement a = agree(p, *table);
    std::printf(
        "  SFrame row vs .eh_frame row at %zu PCs: %zu agree, %zu CFI rules without a Row form, "
        "%zu differ, %zu without a row in one of them\n",
        p.pcs.size(), a.same, a.unrepresentable, a.different, a.no_cfi);

    Dwarf_CFI* cfi = dwarf_getcfi_elf(p.file->libelf_handle());
    if (cfi == nullptr) {
        std::printf("  libdw: dwarf_getcfi_elf: %s\n", dwarf_errmsg(-1));
        return 1;
    }
    const auto& abi = p.section->abi();
    auto ours = [&](std::uint64_t pc) -> std::uint64_t {
        auto row = p.section->lookup(pc);
        return row ? static_cast<std::uint64_t>(row->cfa.offset + row->ra.offset + row->fp.offset)
                   : 0;
    };
    auto theirs = [&](std::uint64_t pc) -> std::uint64_t {
        Dwarf_Frame* frame = nullptr;
        if (dwarf_cfi_addrframe(cfi, pc, &frame) != 0) return 0;
        std::uint64_t sum = 0;
        Dwarf_Op* ops = nullptr;
        std::size_t nops = 0;
        if (dwarf_frame_cfa(frame, &ops, &nops) == 0 && nops > 0) sum += ops[0].number2;
        Dwarf_Op mem[3];
        if (dwarf_frame_register(frame, abi.ra_reg, mem, &ops, &nops) == 0) sum += nops;
        if (dwarf_frame_register(frame, abi.fp_reg, mem, &ops, &nops) == 0) sum += nops;
        std::free(frame);
        return sum;
    };
    const auto t = sfunwind::bench::time_pair(p.pcs, ours, theirs, budget);
    std::printf("  lookup at random PCs (best of %u rounds of %zu PCs):\n", t.rounds, p.pcs.size());
    std::printf("    sfunwind Section::lookup (.sframe)                      %8.1f ns\n", t.a_ns);
    std::printf("    libdw dwarf_cfi_addrframe + CFA, RA, FP rules (.eh_frame) %8.1f ns\n", t.b_ns);
    std::printf("  sfunwind vs libdw (dwarf_cfi_addrframe): %s  [%s]\n",
                sfunwind::bench::ratio_text(t.b_ns, t.a_ns).c_str(), p.name.c_str());
    dwarf_cfi_end(cfi);
    return 0;
}

} // namespace

int main(int argc, char** argv) {
    return sfunwind::bench::main_over_programs(argc, argv, run);
}

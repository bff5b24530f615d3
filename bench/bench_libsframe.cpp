// SPDX-License-Identifier: MIT
// sfunwind against GNU libsframe (binutils' reference decoder): the same
// .sframe bytes, the same random PCs (bench/compare_common.hpp), first
// checked row by row, then timed.
//
//   sfunwind_bench_libsframe [--budget-ms N] ELF...
//
// Built only where libsframe can read SFrame v3 (the sid chroot, libsframe
// 2.47; bench/CMakeLists.txt), and given v3 sections only: libsframe 2.47
// cannot read v1, misplaces the functions of v2 sections written before
// erratum 1, and refuses unsorted sections.
//
// For every PC, libsframe's sframe_find_fre() (PC relative to the section,
// as its API wants) and Section::lookup() must agree on the FRE's start
// offset, the CFA base register and offset, whether the RA is undefined, the
// RA offset and the FP offset. Two differences are libsframe's, counted
// apart and not failures: it has no row for a v3 FDE without FREs (an
// outermost frame, spec v3 section 1.2), and it reads the RA and FP words of
// flexible FDEs by position, ignoring the control words (spec v3 section
// 3.2), so a padding RA word gives it a wrong RA. Any other difference is
// printed and makes the exit status 1.
//
// Then, in alternating rounds over the same PCs, best of rounds:
//   sframe_find_fre                       libsframe's lookup alone
//   sframe_find_fre + offset getters      libsframe's equivalent of a Row
//   Section::lookup                       a full Row
// and it prints `sfunwind vs libsframe (sframe_find_fre): N.Nx` per program.
// Opening is compared too: sframe_decode() against Section::parse(), per MB,
// and the heap each keeps per FDE beyond the section bytes.
#include "compare_common.hpp"
#include "sfunwind/row.hpp"

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <malloc.h>
#include <optional>
#include <sframe-api.h>
#include <string>

namespace {

using sfunwind::RegRule;
using sfunwind::Row;
using sfunwind::bench::Program;
namespace sframe = sfunwind::sframe;

// The rules both libraries can express, in one form.
struct Rules {
    bool has_fre = true; // false: a v3 FDE without FREs (sfunwind only)
    std::uint32_t fre_start = 0;
    bool ra_undefined = false;
    unsigned cfa_reg = 0; // DWARF register
    std::int32_t cfa_offset = 0;
    std::optional<std::int32_t> ra; // CFA-relative save slot, if any
    std::optional<std::int32_t> fp;
};

std::string text(const Rules& r) {
    if (!r.has_fre) return "no FRE (outermost)";
    char buf[160];
    auto slot = [](const std::optional<std::int32_t>& v) {
        return v ? "c" + std::string(*v < 0 ? "" : "+") + std::to_string(*v) : std::string("-");
    };
    if (r.ra_undefined) {
        std::snprintf(buf, sizeof buf, "start %#x RA undefined", r.fre_start);
        return buf;
    }
    std::snprintf(buf, sizeof buf, "start %#x CFA=r%u%+d RA=%s FP=%s", r.fre_start, r.cfa_reg,
                  r.cfa_offset, slot(r.ra).c_str(), slot(r.fp).c_str());
    return buf;
}

Rules from_row(const Row& row, const sframe::Fde& fde) {
    Rules r;
    if (row.fre_index == 0 && fde.num_fres == 0) {
        r.has_fre = false;
        r.ra_undefined = row.outermost;
        return r;
    }
    const std::uint64_t offset = row.pc_begin - row.func_start;
    r.fre_start = static_cast<std::uint32_t>(
        row.pc_mask && fde.rep_size != 0 ? offset % fde.rep_size : offset);
    r.ra_undefined = row.ra.kind == RegRule::Kind::Undefined;
    if (r.ra_undefined) return r;
    r.cfa_reg = row.cfa.reg;
    r.cfa_offset = row.cfa.offset;
    if (row.ra.kind == RegRule::Kind::AtCfa) r.ra = row.ra.offset;
    if (row.fp.kind == RegRule::Kind::AtCfa) r.fp = row.fp.offset;
    return r;
}

Rules from_libsframe(const sframe_decoder_ctx* d, const sframe_frame_row_entry& fre, bool flex,
                     const sfunwind::Abi& abi) {
    Rules r;
    int err = 0;
    r.fre_start = fre.fre_start_addr;
    r.ra_undefined = sframe_fre_get_ra_undefined_p(d, &fre, &err);
    if (r.ra_undefined) return r;
    const std::uint32_t type = flex ? SFRAME_FDE_TYPE_FLEX : SFRAME_FDE_TYPE_DEFAULT;
    if (flex) {
        const std::uint32_t control = sframe_get_fre_udata(&fre, 0, &err);
        r.cfa_reg = err == 0 ? control >> 3U : ~0U;
    } else {
        r.cfa_reg =
            sframe_fre_get_base_reg_id(&fre, &err) == SFRAME_BASE_REG_FP ? abi.fp_reg : abi.sp_reg;
    }
    r.cfa_offset = sframe_fre_get_cfa_offset(d, &fre, type, &err);
    // An RA word of 0 is padding (SFRAME_FRE_RA_OFFSET_INVALID): no slot.
    const std::int32_t ra = sframe_fre_get_ra_offset(d, &fre, type, &err);
    if (err == 0 && ra != 0) r.ra = ra;
    const std::int32_t fp = sframe_fre_get_fp_offset(d, &fre, type, &err);
    if (err == 0) r.fp = fp;
    return r;
}

struct Check {
    std::size_t same = 0;
    std::size_t empty_fde = 0;  // libsframe has no row for a v3 FDE without FREs
    std::size_t flex_words = 0; // flexible FDE: RA/FP words read by position
    std::size_t different = 0;
};

Check check_rows(const Program& p, const sframe_decoder_ctx* d) {
    Check c;
    const auto& section = *p.section;
    for (const std::uint64_t pc : p.pcs) {
        auto row = section.lookup(pc);
        sframe_frame_row_entry fre;
        std::memset(&fre, 0, sizeof fre);
        const bool found =
            sframe_find_fre(d, static_cast<std::int64_t>(pc - p.sframe_vaddr), &fre) != SFRAME_ERR;
        std::optional<sframe::Fde> fde;
        if (row) {
            auto f = section.fde(row->fde_index);
            if (f) fde = *f;
        }
        const bool flex = fde && fde->fde_type == sframe::FdeType::Flex;
        std::optional<Rules> ours;
        if (row && fde) ours = from_row(*row, *fde);
        std::optional<Rules> theirs;
        if (found) theirs = from_libsframe(d, fre, flex, section.abi());

        if (ours && theirs && ours->has_fre) {
            const bool core = ours->fre_start == theirs->fre_start &&
                              ours->ra_undefined == theirs->ra_undefined &&
                              (ours->ra_undefined || (ours->cfa_reg == theirs->cfa_reg &&
                                                      ours->cfa_offset == theirs->cfa_offset));
            const bool slots =
                ours->ra_undefined || (ours->ra == theirs->ra && ours->fp == theirs->fp);
            if (core && slots) {
                ++c.same;
                continue;
            }
            if (core && flex) {
                ++c.flex_words;
                continue;
            }
        } else if (ours && !ours->has_fre && !found) {
            ++c.empty_fde;
            continue;
        }
        if (++c.different <= 8)
            std::printf("  MISMATCH %s PC %#llx: sfunwind %s, libsframe %s\n", p.name.c_str(),
                        static_cast<unsigned long long>(pc),
                        ours ? text(*ours).c_str() : ("no row: " + row.error().message()).c_str(),
                        theirs ? text(*theirs).c_str() : "no row");
    }
    return c;
}

// Heap in use (glibc), to see what sframe_decode keeps: the arena's
// chunks and the mmapped ones. A block above the mmap threshold (128 KiB
// until the first such block is freed) is mmapped, and uordblks alone missed
// libsframe's copy of the big program's 1.3 MB section (0 B/FDE).
std::size_t heap_in_use() {
    const struct mallinfo2 m = mallinfo2();
    return m.uordblks + m.hblkhd;
}

int run(const Program& p, std::chrono::milliseconds budget) {
    const auto& section = *p.section;
    std::printf("%s: %s\n", p.name.c_str(),
                sfunwind::bench::describe_section(section, p.sframe.size()).c_str());
    if (section.version() != sframe::Version::V3) {
        std::printf("  skipped: libsframe 2.47 is compared on SFrame v3 sections only\n");
        return 0;
    }
    const char* bytes = reinterpret_cast<const char*>(p.sframe.data());
    const std::size_t before = heap_in_use();
    int err = 0;
    sframe_decoder_ctx* d = sframe_decode(bytes, p.sframe.size(), &err);
    if (d == nullptr) {
        std::printf("  libsframe: sframe_decode failed, error %d\n", err);
        return 1;
    }
    const std::size_t libsframe_heap = heap_in_use() - before;

    const Check c = check_rows(p, d);
    std::printf("  rows at %zu PCs: %zu identical, %zu differ%s", p.pcs.size(), c.same, c.different,
                c.empty_fde + c.flex_words == 0 ? "\n" : ";");
    if (c.empty_fde + c.flex_words != 0)
        std::printf(
            " libsframe's own gaps: %zu PCs in FDEs without FREs, %zu flexible-FDE RA/FP words\n",
            c.empty_fde, c.flex_words);

    auto ours = [&](std::uint64_t pc) -> std::uint64_t {
        auto row = section.lookup(pc);
        return row ? static_cast<std::uint64_t>(row->cfa.offset + row->ra.offset + row->fp.offset)
                   : 0;
    };
    auto find_fre = [&](std::uint64_t pc) -> std::uint64_t {
        sframe_frame_row_entry fre;
        if (sframe_find_fre(d, static_cast<std::int64_t>(pc - p.sframe_vaddr), &fre) == SFRAME_ERR)
            return 0;
        return fre.fre_start_addr + fre.fre_info;
    };
    auto find_fre_offsets = [&](std::uint64_t pc) -> std::uint64_t {
        sframe_frame_row_entry fre;
        if (sframe_find_fre(d, static_cast<std::int64_t>(pc - p.sframe_vaddr), &fre) == SFRAME_ERR)
            return 0;
        int e = 0;
        const std::uint64_t base = sframe_fre_get_base_reg_id(&fre, &e);
        const auto cfa = sframe_fre_get_cfa_offset(d, &fre, SFRAME_FDE_TYPE_DEFAULT, &e);
        const auto ra = sframe_fre_get_ra_offset(d, &fre, SFRAME_FDE_TYPE_DEFAULT, &e);
        const auto fp = sframe_fre_get_fp_offset(d, &fre, SFRAME_FDE_TYPE_DEFAULT, &e);
        return base + static_cast<std::uint64_t>(cfa + ra + fp);
    };
    const auto t1 = sfunwind::bench::time_pair(p.pcs, ours, find_fre, budget);
    const auto t2 = sfunwind::bench::time_pair(p.pcs, ours, find_fre_offsets, budget);
    const double ours_ns = std::min(t1.a_ns, t2.a_ns);
    std::printf("  lookup at random PCs (best of %u rounds of %zu PCs):\n", t1.rounds + t2.rounds,
                p.pcs.size());
    std::printf("    sfunwind Section::lookup (full Row)          %8.1f ns\n", ours_ns);
    std::printf("    libsframe sframe_find_fre                    %8.1f ns\n", t1.b_ns);
    std::printf("    libsframe sframe_find_fre + offset getters   %8.1f ns\n", t2.b_ns);
    std::printf("  sfunwind vs libsframe (sframe_find_fre): %s  [%s]\n",
                sfunwind::bench::ratio_text(t1.b_ns, ours_ns).c_str(), p.name.c_str());
    std::printf("  sfunwind vs libsframe (sframe_find_fre + offsets): %s  [%s]\n",
                sfunwind::bench::ratio_text(t2.b_ns, ours_ns).c_str(), p.name.c_str());

    // Opening: the decoder context (libsframe copies the section and
    // decodes every FDE) against Section::parse (header checks, sortedness,
    // page index).
    const double mb = static_cast<double>(p.sframe.size()) / 1e6;
    const double decode_ns = sfunwind::bench::time_best(
        [&] {
            int e = 0;
            sframe_decoder_ctx* x = sframe_decode(bytes, p.sframe.size(), &e);
            sframe_decoder_free(&x);
        },
        budget / 4);
    const double parse_ns = sfunwind::bench::time_best(
        [&] {
            auto s = sframe::Section::parse(p.sframe, p.sframe_vaddr);
            if (!s) std::abort();
        },
        budget / 4);
    const auto fdes = static_cast<double>(section.fde_count());
    const auto ours_extra = static_cast<double>(section.extra_memory() + sizeof(sframe::Section));
    std::printf(
        "  open: sframe_decode %.1f us (%.3f ms/MB), Section::parse %.1f us (%.3f ms/MB)  [%s]\n",
        decode_ns / 1e3, decode_ns / 1e6 / mb, parse_ns / 1e3, parse_ns / 1e6 / mb, p.name.c_str());
    // libsframe keeps its own copy of the section; that copy is not
    // counted, as the caller's bytes are not counted for sfunwind.
    const bool copied = libsframe_heap >= p.sframe.size();
    const double theirs_extra =
        static_cast<double>(copied ? libsframe_heap - p.sframe.size() : libsframe_heap);
    std::printf("  memory beyond the section bytes: libsframe %.1f B/FDE (heap %zu B%s), sfunwind "
                "%.1f B/FDE  [%s]\n",
                theirs_extra / fdes, libsframe_heap, copied ? ", less its copy of the section" : "",
                ours_extra / fdes, p.name.c_str());
    sframe_decoder_free(&d);
    return c.different == 0 ? 0 : 1;
}

} // namespace

int main(int argc, char** argv) {
    return sfunwind::bench::main_over_programs(argc, argv, run);
}

// SPDX-License-Identifier: MIT
#include "cfi_comparison.hpp"

#include <optional>
#include <vector>

namespace sfunwind::cli::bt {
namespace {

RegisterComparison compare_registers(std::span<const callee_saved::FrameValues> saved,
                                     const CfiBacktrace& cfi, const BacktraceComparison& frames,
                                     const Abi& abi) {
    std::vector<std::vector<std::optional<std::uint64_t>>> theirs;
    theirs.reserve(cfi.frames.size());
    for (const auto& f : cfi.frames)
        theirs.push_back(f.callee_saved);
    return callee_saved::compare_values(saved, theirs, frames.frames, untracked_callee_saved(abi));
}

} // namespace

CfiComparison compare_with_cfi(const Backtrace& sframe,
                               std::span<const callee_saved::FrameValues> saved,
                               const CfiBacktrace& cfi, const Abi& abi) {
    CfiComparison c;
    const std::size_t nc = cfi.frames.size();
    for (std::size_t i = 0; i < nc; ++i) {
        const CfiFrame& f = cfi.frames[i];
        FrameView v;
        v.pc = f.pc;
        v.sp = f.sp;
        v.fp = f.fp;
        if (i + 1 < nc && cfi.frames[i + 1].sp)
            v.cfa =
                *cfi.frames[i + 1].sp - static_cast<std::uint64_t>(std::int64_t{abi.sp_from_cfa});
        v.function = f.symbol;
        v.module = f.module;
        c.cfi.push_back(std::move(v));
    }
    c.result = compare_backtraces(frame_views(sframe), sframe.stop, c.cfi, "CFI");
    for (const auto& m : c.result.frames)
        if (m.equal()) ++c.equal;
    const std::size_t ns = sframe.frames.size();
    c.cfi_beyond = nc > ns ? nc - ns : 0;
    if (const auto& d = c.result.first;
        d && !(d->kind == Divergence::Kind::SframeEnded && !sframe.complete())) {
        c.first_difference = d->frame;
        c.first_difference_what = d->summary;
        if (d->kind == Divergence::Kind::ReferenceEnded && !cfi.end_error.empty())
            c.first_difference_what += " (libdwfl: " + cfi.end_error + ")";
    }
    if (!saved.empty()) c.registers = compare_registers(saved, cfi, c.result, abi);
    return c;
}

} // namespace sfunwind::cli::bt

// SPDX-License-Identifier: MIT
#include "cfi_comparison.hpp"

namespace sfunwind::cli::bt {

CfiComparison compare_with_cfi(const Backtrace& sframe, const CfiBacktrace& cfi, const Abi& abi) {
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
    return c;
}

} // namespace sfunwind::cli::bt

// SPDX-License-Identifier: MIT
#include "compare.hpp"

#include <algorithm>
#include <cstdio>

namespace sfunwind::cli::bt {
namespace {

std::string versus(const char* field, std::uint64_t sframe, std::uint64_t cfi) {
    return std::string(field) + " " + to_hex(sframe) + " (SFrame) vs " + to_hex(cfi) + " (CFI)";
}

} // namespace

Comparison compare(const Backtrace& sframe, bool sframe_complete, const CfiBacktrace& cfi,
                   const Abi& abi) {
    Comparison c;
    const std::size_t ns = sframe.frames.size();
    const std::size_t nc = cfi.frames.size();
    const std::size_t n = std::min(ns, nc);
    auto note_difference = [&](std::size_t index, std::string what) {
        if (!c.first_difference || index < *c.first_difference) {
            c.first_difference = index;
            c.first_difference_what = std::move(what);
        }
    };
    for (std::size_t i = 0; i < n; ++i) {
        const Frame& s = sframe.frames[i];
        const CfiFrame& d = cfi.frames[i];
        FrameMatch m;
        std::string what;
        m.pc = s.regs.pc == d.pc;
        if (!m.pc) what = versus("pc", s.regs.pc, d.pc);
        if (d.sp) {
            m.sp_compared = true;
            m.sp = s.regs.sp == *d.sp;
            if (!m.sp && what.empty()) what = versus("sp", s.regs.sp, *d.sp);
        }
        if (i + 1 < nc && cfi.frames[i + 1].sp)
            m.cfi_cfa =
                *cfi.frames[i + 1].sp - static_cast<std::uint64_t>(std::int64_t{abi.sp_from_cfa});
        if (i + 1 < ns && m.cfi_cfa) {
            m.cfa_compared = true;
            m.cfa = s.cfa == *m.cfi_cfa;
            if (!m.cfa && what.empty()) what = versus("CFA", s.cfa, *m.cfi_cfa);
        }
        if (d.fp) {
            m.fp_compared = true;
            m.fp = s.regs.fp == *d.fp;
            if (!m.fp && what.empty()) what = versus("fp", s.regs.fp, *d.fp);
        }
        if (m.equal())
            ++c.equal;
        else
            note_difference(i, std::move(what));
        c.frames.push_back(m);
    }
    const std::string cfi_end = cfi.end_error.empty() ? "" : " (libdwfl: " + cfi.end_error + ")";
    if (nc < ns)
        note_difference(nc, "CFI ended after " + std::to_string(nc) + " frames" + cfi_end +
                                ", SFrame has " + std::to_string(ns));
    else if (sframe_complete && nc > ns)
        note_difference(ns, "SFrame reached the outermost frame after " + std::to_string(ns) +
                                " frames, CFI has " + std::to_string(nc));
    c.cfi_beyond = nc > ns ? nc - ns : 0;
    return c;
}

} // namespace sfunwind::cli::bt

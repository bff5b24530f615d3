// SPDX-License-Identifier: MIT
#include "report.hpp"

#include <cinttypes>
#include <map>

namespace sfunwind::cli::check {

using sfunwind::check::Coverage;
using sfunwind::check::Function;
using sfunwind::check::Report;
using sfunwind::check::Totals;
using sfunwind::check::UnreachableRow;
using sfunwind::check::Verdict;

namespace {

// Without --details, at most this many disagreements and problems are listed.
constexpr std::size_t brief_limit = 20;

std::string percent(std::uint64_t part, std::uint64_t whole) {
    if (whole == 0) return "-";
    char buf[32];
    std::snprintf(buf, sizeof buf, "%.2f%%",
                  100.0 * static_cast<double>(part) / static_cast<double>(whole));
    return buf;
}

void print_function_line(const Function& fn, std::FILE* out) {
    std::fprintf(out, "%s [0x%" PRIx64 ", 0x%" PRIx64 ")", fn.name.c_str(), fn.begin, fn.end);
    if (!fn.section.empty() && fn.section != fn.name)
        std::fprintf(out, " in %s", fn.section.c_str());
}

void print_finding(const Function& fn, const sfunwind::check::Finding& f, std::FILE* out) {
    std::fprintf(out, "  %s: ", sfunwind::check::to_string(f.verdict));
    print_function_line(fn, out);
    std::fprintf(out, " at [0x%" PRIx64 ", 0x%" PRIx64 "): ", f.pc, f.end);
    if (!f.differences.empty()) {
        for (std::size_t i = 0; i < f.differences.size(); ++i)
            std::fprintf(out, "%s%s", i > 0 ? "; " : "", f.differences[i].c_str());
    } else {
        std::fprintf(out, "SFrame: %s; CFI: %s", f.sframe.c_str(), f.cfi.c_str());
    }
    std::fputc('\n', out);
    if (f.verdict == Verdict::Mismatch)
        std::fprintf(out, "      SFrame %s\n      CFI    %s\n", f.sframe.c_str(), f.cfi.c_str());
    if (!f.known.empty()) std::fprintf(out, "      known: %s\n", f.known.c_str());
}

} // namespace

std::uint64_t compared_breakpoints(const Report& report) {
    return report.total(Coverage::Both).breakpoints + report.total(Coverage::Plt).breakpoints;
}

bool fails(const Report& r, const FailOn& f) {
    return (f.mismatch && r.disagreements() > 0) ||
           (f.cfi_only && r.total(Coverage::CfiOnly).functions > 0) ||
           (f.sframe_only && r.total(Coverage::SframeOnly).functions > 0) ||
           (f.unreachable && !r.unreachable.empty()) || (f.problem && !r.problems.empty());
}

void print_text(const FileResult& result, const CheckOptions& options, std::FILE* out) {
    if (!result.report) {
        std::fprintf(out, "%s: error: %s\n", result.path.c_str(), result.error.c_str());
        return;
    }
    const Report& r = *result.report;
    std::fprintf(out, "%s: %s; %s; CFI %s\n", result.path.c_str(), r.abi.c_str(),
                 r.sframe.empty() ? "no SFrame" : r.sframe.c_str(),
                 r.cfi.empty() ? "none" : r.cfi.c_str());
    std::fprintf(out, "  %-12s %9s %9s %10s %11s %9s %12s\n", "class", "functions", "agreeing",
                 "bytes", "breakpoints", "agreement", "(of bytes)");
    for (Coverage c : {Coverage::Both, Coverage::Plt, Coverage::CfiOnly, Coverage::SframeOnly}) {
        const Totals& t = r.total(c);
        const bool compared = c == Coverage::Both || c == Coverage::Plt;
        std::fprintf(out, "  %-12s %9" PRIu64 " %9s %10" PRIu64 " %11s %9s %12s\n",
                     sfunwind::check::to_string(c), t.functions,
                     compared ? std::to_string(t.functions_agreeing).c_str() : "-", t.bytes,
                     compared ? std::to_string(t.breakpoints).c_str() : "-",
                     compared ? percent(t.agreeing, t.breakpoints).c_str() : "-",
                     compared ? percent(t.bytes_agreeing, t.bytes_compared).c_str() : "-");
    }
    // Why functions have CFI and no SFrame, by reason.
    std::map<std::string, std::uint64_t> reasons;
    for (const Function& fn : r.functions)
        if (fn.coverage == Coverage::CfiOnly) ++reasons[sfunwind::check::to_string(fn.reason)];
    if (!reasons.empty()) {
        std::fputs("  cfi-only reasons:", out);
        for (const auto& [name, n] : reasons)
            std::fprintf(out, " %s %" PRIu64, name.c_str(), n);
        std::fputc('\n', out);
    }
    if (r.evaluated > 0)
        std::fprintf(out, "  CFI expressions evaluated by libdwfl at %" PRIu64 " breakpoints\n",
                     r.evaluated);
    std::fprintf(out, "  unreachable rows: %zu\n", r.unreachable.size());

    std::size_t listed = 0;
    std::size_t hidden = 0;
    for (const Function& fn : r.functions) {
        if (fn.coverage != Coverage::Both && fn.coverage != Coverage::Plt) continue;
        for (const auto& f : fn.findings) {
            if (!options.details && listed >= brief_limit) {
                ++hidden;
                continue;
            }
            print_finding(fn, f, out);
            ++listed;
        }
    }
    if (hidden > 0)
        std::fprintf(out, "  ... and %zu more disagreements (--details lists them)\n", hidden);

    if (options.details) {
        for (const Function& fn : r.functions) {
            if (fn.coverage == Coverage::CfiOnly) {
                std::fputs("  cfi-only: ", out);
                print_function_line(fn, out);
                std::fprintf(out, ": %s: %s\n", sfunwind::check::to_string(fn.reason),
                             fn.detail.c_str());
            } else if (fn.coverage == Coverage::SframeOnly) {
                std::fputs("  sframe-only: ", out);
                print_function_line(fn, out);
                std::fprintf(out, ": %s\n", fn.detail.c_str());
            }
        }
        for (const UnreachableRow& u : r.unreachable)
            std::fprintf(out,
                         "  unreachable: %s FDE %u row %u [0x%" PRIx64 ", 0x%" PRIx64 ") %s: %s\n",
                         u.table == UnreachableRow::Table::Sframe ? "SFrame" : "CFI", u.fde, u.row,
                         u.pc_begin, u.pc_end, u.rule.c_str(), u.why.c_str());
    }
    for (std::size_t i = 0; i < r.problems.size(); ++i) {
        if (!options.details && i >= brief_limit) {
            std::fprintf(out, "  ... and %zu more problems (--details lists them)\n",
                         r.problems.size() - i);
            break;
        }
        std::fprintf(out, "  problem: %s\n", r.problems[i].c_str());
    }

    const std::uint64_t compared = compared_breakpoints(r);
    const std::uint64_t disagree = r.disagreements();
    std::fprintf(
        out, "  result: %" PRIu64 " of %" PRIu64 " compared breakpoints disagree (%s agree)%s\n",
        disagree, compared, percent(compared - disagree, compared).c_str(),
        result.failed ? "; FAIL" : "");
    if (options.time) {
        const double s = result.seconds > 0 ? result.seconds : 1e-9;
        std::fprintf(out,
                     "  time: %.3f s for %" PRIu64 " breakpoints compared, %" PRIu64
                     " bytes of code: %.0f breakpoints/s, %.0f bytes/s\n",
                     result.seconds, compared, r.bytes, static_cast<double>(compared) / s,
                     static_cast<double>(r.bytes) / s);
    }
}

} // namespace sfunwind::cli::check

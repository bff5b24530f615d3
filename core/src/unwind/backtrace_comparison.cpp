// SPDX-License-Identifier: MIT
#include "sfunwind/unwind/backtrace_comparison.hpp"

#include "sfunwind/row.hpp"

#include <string>

namespace sfunwind {
namespace {

std::string where(const FrameView& f) {
    std::string s = to_hex(f.pc);
    if (!f.function.empty())
        s += " (" + f.function + ")";
    else if (!f.module.empty())
        s += " (in " + f.module + ")";
    return s;
}

std::string value_or_unknown(const std::optional<std::uint64_t>& v) {
    return v ? to_hex(*v) : "unknown";
}

// The SFrame limit behind a walk that ended at `last` with `stop`.
SframeLimit limit_of(const BacktraceStop& stop, const FrameView* last) {
    switch (stop.reason) {
    case StopReason::Outermost:
        return SframeLimit::Outermost;
    case StopReason::NoRow:
        return last != nullptr && last->in_sframe_module ? SframeLimit::NoFde
                                                         : SframeLimit::NoModuleSframe;
    case StopReason::FrameLimit:
        return SframeLimit::FrameLimit;
    case StopReason::NoProgress:
        return SframeLimit::BadFrame;
    case StopReason::StepFailed:
        break;
    }
    switch (stop.error ? stop.error->code() : Errc::Malformed) {
    case Errc::UnsafeRule:
        return SframeLimit::TopmostOnlyRule;
    case Errc::MemoryUnreadable:
        return SframeLimit::UnreadableMemory;
    case Errc::BadFrame:
        return SframeLimit::BadFrame;
    default:
        return SframeLimit::None;
    }
}

std::string limit_sentence(SframeLimit limit, const FrameView* last) {
    const std::string at = last != nullptr ? where(*last) : "the last frame";
    switch (limit) {
    case SframeLimit::NoModuleSframe:
        return "SFrame limit: " + at +
               " is in a module without an SFrame section, so SFrame cannot step "
               "out of it.";
    case SframeLimit::NoFde:
        return "SFrame limit: the module of " + at +
               " has SFrame, but no FDE covers this PC (code built "
               "without SFrame, or a PLT the linker wrote no FDE for).";
    case SframeLimit::TopmostOnlyRule:
        return "SFrame limit: the row for " + at +
               " reads a register that is known only in the topmost "
               "frame (SFrame v3 appendix A), so SFrame does not step it as a caller frame.";
    case SframeLimit::Outermost:
        return "SFrame marks " + at +
               " as the outermost frame (RA undefined), where the reference goes on.";
    case SframeLimit::UnreadableMemory:
        return "The SFrame rules for " + at + " point at memory the target does not have.";
    case SframeLimit::BadFrame:
        return "The SFrame step out of " + at + " gave an impossible frame.";
    case SframeLimit::FrameLimit:
        return "The SFrame walk stopped at its frame limit.";
    case SframeLimit::ReferenceEnded:
        return "The reference unwinder stopped first.";
    case SframeLimit::None:
        break;
    }
    return {};
}

// Why frame `i` differs, given that frames below it agreed: the row SFrame
// used to step out of frame i-1 (or i itself, for a CFA difference) is the
// first suspect, and saying so points at the FDE to look at.
std::string row_sentence(const std::vector<FrameView>& sframe, std::size_t i) {
    if (i >= sframe.size() || sframe[i].rule.empty()) return {};
    return " SFrame stepped out of frame " + std::to_string(i) + " (" + where(sframe[i]) +
           ") with " + sframe[i].rule + ".";
}

} // namespace

const char* to_string(SframeLimit limit) noexcept {
    switch (limit) {
    case SframeLimit::None:
        return "none";
    case SframeLimit::NoModuleSframe:
        return "no-module-sframe";
    case SframeLimit::NoFde:
        return "no-fde";
    case SframeLimit::TopmostOnlyRule:
        return "topmost-only-rule";
    case SframeLimit::Outermost:
        return "outermost";
    case SframeLimit::UnreadableMemory:
        return "unreadable-memory";
    case SframeLimit::BadFrame:
        return "bad-frame";
    case SframeLimit::FrameLimit:
        return "frame-limit";
    case SframeLimit::ReferenceEnded:
        return "reference-ended";
    }
    return "?";
}

const char* to_string(Divergence::Kind kind) noexcept {
    switch (kind) {
    case Divergence::Kind::Pc:
        return "pc";
    case Divergence::Kind::Cfa:
        return "cfa";
    case Divergence::Kind::Sp:
        return "sp";
    case Divergence::Kind::Fp:
        return "fp";
    case Divergence::Kind::SframeEnded:
        return "sframe-ended";
    case Divergence::Kind::ReferenceEnded:
        return "reference-ended";
    }
    return "?";
}

BacktraceComparison compare_backtraces(const std::vector<FrameView>& sframe,
                                       const BacktraceStop& sframe_stop,
                                       const std::vector<FrameView>& reference,
                                       const std::string& reference_name, bool one_sided_differs) {
    BacktraceComparison out;
    const auto versus = [&reference_name](const char* field,
                                          const std::optional<std::uint64_t>& sframe_value,
                                          const std::optional<std::uint64_t>& reference_value) {
        return std::string(field) + " " + value_or_unknown(sframe_value) + " (SFrame) vs " +
               value_or_unknown(reference_value) + " (" + reference_name + ")";
    };
    const std::size_t common = sframe.size() < reference.size() ? sframe.size() : reference.size();
    // A value known on one side only is a difference when the caller asks
    // (`one_sided_differs`), else it is not compared.
    const auto compare_value = [one_sided_differs](const std::optional<std::uint64_t>& a,
                                                   const std::optional<std::uint64_t>& b,
                                                   bool& compared) {
        if (one_sided_differs && a.has_value() != b.has_value()) {
            compared = true;
            return false;
        }
        compared = a.has_value() && b.has_value();
        return !compared || *a == *b;
    };
    for (std::size_t i = 0; i < common; ++i) {
        const FrameView& s = sframe[i];
        const FrameView& r = reference[i];
        FrameMatch m;
        m.pc = s.pc == r.pc;
        m.cfa = compare_value(s.cfa, r.cfa, m.cfa_compared);
        m.sp = compare_value(s.sp, r.sp, m.sp_compared);
        m.fp = compare_value(s.fp, r.fp, m.fp_compared);
        out.frames.push_back(m);
        if (m.equal() && !out.first) {
            ++out.equal;
            continue;
        }
        if (out.first) continue;
        Divergence d;
        d.frame = i;
        if (!m.pc) {
            d.kind = Divergence::Kind::Pc;
            d.summary = versus("pc", s.pc, r.pc);
            d.explanation = "frame " + std::to_string(i) + ": the PC differs: SFrame " + where(s) +
                            ", reference " + where(r) + ".";
            if (i > 0) {
                const FrameView& sb = sframe[i - 1];
                const FrameView& rb = reference[i - 1];
                if (sb.cfa && rb.cfa && *sb.cfa != *rb.cfa)
                    d.explanation += " The CFAs of frame " + std::to_string(i - 1) +
                                     " differ (SFrame " + to_hex(*sb.cfa) + ", reference " +
                                     to_hex(*rb.cfa) +
                                     "): the SFrame CFA rule does not hold at that PC.";
                else
                    d.explanation +=
                        " Frame " + std::to_string(i - 1) + " has the same CFA on both sides (" +
                        value_or_unknown(sb.cfa) + "), so the return-address rule differs.";
                d.explanation += row_sentence(sframe, i - 1);
            }
        } else if (!m.cfa) {
            d.kind = Divergence::Kind::Cfa;
            d.summary = versus("CFA", s.cfa, r.cfa);
            d.explanation = "frame " + std::to_string(i) + " (" + where(s) +
                            "): the CFA differs: SFrame " + value_or_unknown(s.cfa) +
                            ", reference " + value_or_unknown(r.cfa) + "." +
                            row_sentence(sframe, i);
        } else if (!m.sp) {
            d.kind = Divergence::Kind::Sp;
            d.summary = versus("sp", s.sp, r.sp);
            d.explanation = "frame " + std::to_string(i) + " (" + where(s) +
                            "): the SP differs: SFrame " + value_or_unknown(s.sp) + ", reference " +
                            value_or_unknown(r.sp) + ".";
            if (i > 0) d.explanation += row_sentence(sframe, i - 1);
        } else {
            d.kind = Divergence::Kind::Fp;
            d.summary = versus("fp", s.fp, r.fp);
            d.explanation = "frame " + std::to_string(i) + " (" + where(s) +
                            "): the FP differs: SFrame " + value_or_unknown(s.fp) + ", reference " +
                            value_or_unknown(r.fp) + ".";
            if (i > 0) d.explanation += row_sentence(sframe, i - 1);
        }
        out.first = std::move(d);
    }
    if (out.first || sframe.size() == reference.size()) return out;

    Divergence d;
    d.frame = common;
    if (sframe.size() < reference.size()) {
        const FrameView* last = sframe.empty() ? nullptr : &sframe.back();
        d.kind = Divergence::Kind::SframeEnded;
        d.limit = limit_of(sframe_stop, last);
        d.summary = (sframe_stop.reason == StopReason::Outermost
                         ? "SFrame reached the outermost frame after "
                         : "SFrame stopped after ") +
                    std::to_string(sframe.size()) + " frames, " + reference_name + " has " +
                    std::to_string(reference.size());
        d.explanation = "the SFrame walk ends after " + std::to_string(sframe.size()) +
                        " frames (" + sframe_stop.message() + "); the reference has " +
                        std::to_string(reference.size() - sframe.size()) + " more, the next at " +
                        where(reference[common]) + ".";
        const std::string why = limit_sentence(d.limit, last);
        if (!why.empty()) d.explanation += " " + why;
    } else {
        d.kind = Divergence::Kind::ReferenceEnded;
        d.limit = SframeLimit::ReferenceEnded;
        d.summary = reference_name + " ended after " + std::to_string(reference.size()) +
                    " frames, SFrame has " + std::to_string(sframe.size());
        d.explanation = "the reference ends after " + std::to_string(reference.size()) +
                        " frames; SFrame has " + std::to_string(sframe.size() - reference.size()) +
                        " more, the next at " + where(sframe[common]) + "." +
                        row_sentence(sframe, common - 1);
    }
    out.first = std::move(d);
    return out;
}

std::vector<FrameView> frame_views(const Backtrace& bt) {
    std::vector<FrameView> out;
    out.reserve(bt.frames.size());
    for (std::size_t i = 0; i < bt.frames.size(); ++i) {
        const Frame& f = bt.frames[i];
        FrameView v;
        v.pc = f.regs.pc;
        v.sp = f.regs.sp;
        v.fp = f.regs.fp;
        // The last frame's CFA is known only if the walk stepped it (it ended
        // at the outermost frame); Frame::cfa is 0 otherwise.
        const bool stepped = i + 1 < bt.frames.size();
        if (stepped) v.cfa = f.cfa;
        if (f.module != nullptr) {
            v.module = f.module->name;
            v.in_sframe_module = f.module->sframe() != nullptr;
            if (f.row && v.in_sframe_module)
                v.rule = describe(*f.row, f.module->sframe()->abi()) + " (FDE " +
                         std::to_string(f.row->fde_index) + ", FRE " +
                         std::to_string(f.row->fre_index) + ")";
        }
        out.push_back(std::move(v));
    }
    return out;
}

} // namespace sfunwind

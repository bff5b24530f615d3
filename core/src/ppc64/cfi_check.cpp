// SPDX-License-Identifier: MIT
// Traceback-table rows against DWARF CFI (see sfunwind/ppc64/cfi_check.hpp
// for what counts as agreement, and why).
#include "sfunwind/ppc64/cfi_check.hpp"

#include <algorithm>

namespace sfunwind::ppc64 {
namespace {

using Verdict = CfiCheckEntry::Verdict;

Verdict worst(Verdict a, Verdict b) {
    return static_cast<std::uint8_t>(a) > static_cast<std::uint8_t>(b) ? a : b;
}

bool same_cfa(const CfaRule& a, const CfaRule& b) {
    return a.reg == b.reg && a.offset == b.offset && a.deref == b.deref;
}

// "In a register": CFI same_value, or register(R) (ValReg R+0).
bool in_register(const RegRule& r) {
    return r.kind == RegRule::Kind::SameValue || (r.kind == RegRule::Kind::ValReg && r.offset == 0);
}

Verdict cfa_verdict(const RowDetail& t, const CfaRule& c) {
    const CfaRule& mine = t.row.cfa;
    if (same_cfa(mine, c)) return Verdict::Same;
    if (!(mine.reg == 1 && mine.offset == 0 && mine.deref) || c.deref) return Verdict::Different;
    // The back chain at r1 holds r1 + frame size.
    if (c.reg == 1 && t.state.frame_size &&
        c.offset == static_cast<std::int64_t>(*t.state.frame_size))
        return Verdict::Same;
    // A frame whose size is in a register (stdux r1,r1,r0 for frames over
    // 32 KiB): the back chain still holds the CFA; the size cannot be checked.
    if (c.reg == 1 && c.offset > 0 && t.state.allocated && !t.state.frame_size &&
        !t.state.fixed_size)
        return Verdict::Equivalent;
    // GCC's frame pointer: r31 = CFA - N since `mr r31,r1` after the prologue.
    if (c.reg < 32 && ((t.state.frame_copies >> c.reg) & 1U) != 0 && t.state.fixed_size &&
        c.offset == static_cast<std::int64_t>(*t.state.fixed_size))
        return Verdict::Same;
    const auto& table = t.found.table;
    const std::uint16_t fp = table.alloca_reg ? *table.alloca_reg : 31;
    if (c.reg == fp && t.state.fixed_size &&
        c.offset == static_cast<std::int64_t>(*t.state.fixed_size))
        return Verdict::Equivalent;
    return Verdict::Different;
}

Verdict ra_verdict(const RowDetail& t, const RegRule& c) {
    const RegRule& mine = t.row.ra;
    if (same_rule(mine, c)) return Verdict::Same;
    // Saved, and still in LR or in the register mflr copied it to.
    if (mine.kind == RegRule::Kind::AtCfa && t.state.ra_saved && in_register(c))
        return Verdict::Equivalent;
    // In LR, and CFI names the copy (`.cfi_register lr, r0` after mflr r0).
    if (mine.kind == RegRule::Kind::SameValue && c.kind == RegRule::Kind::ValReg && c.offset == 0 &&
        c.reg < 32 && ((t.state.ra_gprs >> c.reg) & 1U) != 0)
        return Verdict::Equivalent;
    return Verdict::Different;
}

Verdict fp_verdict(const RowDetail& t, const RegRule& c) {
    const RegRule& mine = t.row.fp;
    if (same_rule(mine, c)) return Verdict::Same;
    if (mine.kind == RegRule::Kind::AtCfa && t.state.r31_slot && c.kind == RegRule::Kind::SameValue)
        return Verdict::Equivalent; // saved and not (yet, or any more) changed
    return Verdict::Different;
}

Verdict row_verdict(const RowDetail& t, const cfi::CfiRow& c) {
    if (c.rules.outermost || c.rules.ra.kind == RegRule::Kind::Undefined) return Verdict::Outermost;
    if (!c.representable()) return Verdict::Different;
    return worst(worst(cfa_verdict(t, c.rules.cfa), ra_verdict(t, c.rules.ra)),
                 fp_verdict(t, c.rules.fp));
}

} // namespace

CfiCheckEntry compare_row(const RowDetail& t, const cfi::CfiRow& c, const Abi& abi) {
    CfiCheckEntry e;
    e.verdict = row_verdict(t, c);
    e.message = "table " + describe(t.row, abi) + "; CFI " + describe(c.rules, abi);
    if (e.verdict == Verdict::Outermost)
        e.message += " (CFI marks the outermost frame; tables cannot)";
    else if (!c.representable())
        e.message += " (CFI rule has no Row form: " + c.cfa_state.reason + c.ra_state.reason +
                     c.fp_state.reason + ")";
    return e;
}

CfiCheckResult check_against_cfi(const TracebackIndex& index, const Listing& tables,
                                 const cfi::CfiTable& cfi, const CfiCheckOptions& options) {
    CfiCheckResult out;
    for (const auto& found : tables.tables) {
        if (!found.function_start) continue;
        auto rows = index.rows(found, TracebackIndex::Split::State);
        if (!rows) continue;
        const std::string name = found.function != nullptr ? found.function->names.front()
                                 : found.table.name        ? *found.table.name
                                                           : std::string();
        bool any = false;
        for (const auto& d : *rows) {
            // A jump table is not code; padding is never executed.
            if (d.origin == FrameAnalysis::Origin::Data ||
                d.origin == FrameAnalysis::Origin::Padding)
                continue;
            for (std::uint64_t pc = d.row.pc_begin; pc < d.row.pc_end; pc += 4) {
                auto c = cfi.at(pc);
                if (!c) {
                    ++out.without_cfi;
                    continue;
                }
                any = true;
                ++out.instructions;
                // The verdict alone for most instructions: the entry's text
                // is built only for those kept.
                const Verdict verdict = row_verdict(d, *c);
                auto entry = [&] {
                    CfiCheckEntry e = compare_row(d, *c, index.abi());
                    e.pc = pc;
                    e.function = name;
                    return e;
                };
                const bool analysed = d.origin == FrameAnalysis::Origin::Code ||
                                      d.origin == FrameAnalysis::Origin::Indirect;
                if (!analysed) {
                    ++out.unanalysed;
                    if (verdict == Verdict::Different) {
                        ++out.unanalysed_different;
                        CfiCheckEntry e = entry();
                        e.message += " (not reached by the frame analysis: the table's body state)";
                        out.entries.push_back(std::move(e));
                        continue;
                    }
                }
                switch (verdict) {
                case Verdict::Same:
                    ++out.same;
                    break;
                case Verdict::Equivalent:
                    ++out.equivalent;
                    break;
                case Verdict::Different:
                    ++out.different;
                    break;
                case Verdict::Outermost:
                    ++out.outermost;
                    break;
                }
                if (verdict == Verdict::Different || verdict == Verdict::Outermost ||
                    (verdict == Verdict::Equivalent && options.keep_equivalent))
                    out.entries.push_back(entry());
            }
        }
        if (any) ++out.functions;
    }
    return out;
}

} // namespace sfunwind::ppc64

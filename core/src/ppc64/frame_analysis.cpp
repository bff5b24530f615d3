// SPDX-License-Identifier: MIT
// The forward data-flow pass of ppc64/frame_analysis.hpp. It is a worklist
// over the function's instructions (no recursion); every cell's state can
// only lose facts (flags go from true to false, a size becomes unknown, a
// cell becomes a conflict), so the pass ends after a bounded number of
// updates per instruction.
#include "sfunwind/ppc64/frame_analysis.hpp"

#include "instruction.hpp"

#include <array>
#include <bit>
#include <cstdio>
#include <map>
#include <string>

namespace sfunwind::ppc64 {
namespace {

using isa::Insn;

// Volatile GPRs (r0, r3-r12; ELFv2 ABI 2.2.1.1): a call may change them.
constexpr std::uint32_t volatile_gprs = 0x1ff9U;

class Transfer {
  public:
    explicit Transfer(const TracebackTable& table)
        : alloca_reg_(table.alloca_reg ? *table.alloca_reg : 31U), uses_alloca_(table.uses_alloca) {
    }

    FrameState operator()(const Insn& i, const FrameState& s) const {
        FrameState n = s;
        // A copy of the RA in a GPR dies when the GPR is written. mflr and
        // the slot reload below set it again.
        for (unsigned r = 0; r < 32; ++r)
            if (((s.ra_gprs >> r) & 1U) != 0 && may_write_gpr(i, r)) n.ra_gprs &= ~(1U << r);
        for (unsigned r = 0; r < 32; ++r)
            if (((s.frame_copies >> r) & 1U) != 0 && may_write_gpr(i, r))
                n.frame_copies &= ~(1U << r);
        if (may_write_gpr(i, 31)) n.r31_callers = reloads_r31(i, s);

        const unsigned op = i.opcode();
        // scv (SC form with bit 31 set) returns with LR clobbered (the Linux
        // system call ABI); sc keeps it.
        if (op == 17 && (i.word & 3U) == 1U) n.ra_in_lr = false;
        if (op == isa::op_x && (i.xo_x() == isa::xo_mfspr || i.xo_x() == isa::xo_mtspr) &&
            i.spr() == isa::spr_lr) {
            if (i.xo_x() == isa::xo_mfspr)
                n.ra_gprs = s.ra_in_lr ? (n.ra_gprs | 1U << i.rt()) : (n.ra_gprs & ~(1U << i.rt()));
            else
                n.ra_in_lr = ((s.ra_gprs >> i.rt()) & 1U) != 0;
            return n;
        }
        if (is_call(i)) {
            n.ra_in_lr = false;
            n.ra_gprs &= ~volatile_gprs;
            return n;
        }
        if (op == isa::op_std && i.ra() == 1) {
            if (i.xo_ds() == 1) {
                // stdu rS,-N(r1): the ABI's atomic "allocate and store the
                // back chain" (r1 always points at a back chain).
                if (i.ds() < 0) allocate(n, s, static_cast<std::uint32_t>(-i.ds()));
                return n;
            }
            if (i.xo_ds() == 0) {
                const auto at = r1_offset(s, lr_save_offset);
                if (at && *at == i.ds() && ((s.ra_gprs >> i.rt()) & 1U) != 0) n.ra_saved = true;
                if (i.rt() == 31 && s.r31_callers && !s.r31_slot)
                    n.r31_slot = cfa_offset(s, i.ds());
            }
            return n;
        }
        if (op == isa::op_x && i.xo_x() == isa::xo_stdux && i.ra() == 1) {
            // stdux rS,r1,rB: large frames (rS = r1) and alloca (rS = a copy
            // of the back chain); the size is in a register.
            if (!s.allocated) n.fixed_size.reset(); // a large frame: size unknown
            n.allocated = true;
            n.frame_size.reset();
            return n;
        }
        if (op == isa::op_addi && i.rt() == 1) {
            if (i.ra() != 0 && i.ra() != 1 && is_frame_copy(s, i.ra()) && i.d() == 0)
                back_to_frame(n); // addi r1,rX,0: below any alloca area
            else if (i.ra() != 0 && i.d() > 0)
                pop(n); // addi r1,r1,N / addi r1,r31,N: the epilogue
            return n;
        }
        if (op == isa::op_ld && i.xo_ds() == 0) {
            if (i.rt() == 1) {
                pop(n); // ld r1,0(r1): back to the caller's SP through the back chain
            } else if (i.ra() == 1 && s.ra_saved) {
                const auto at = r1_offset(s, lr_save_offset);
                if (at && *at == i.ds()) n.ra_gprs |= 1U << i.rt();
            }
            return n;
        }
        if (op == isa::op_x && i.xo_x() == isa::xo_or && i.rt() == i.rb()) {
            if (i.ra() == 1 && i.rt() != 1) {
                // mr r1,rX: back to the frame from a copy; otherwise r1
                // stays in the frame at an unknown depth (GCC pops frames
                // with addi or ld, never with mr).
                if (is_frame_copy(s, i.rt()))
                    back_to_frame(n);
                else if (s.allocated)
                    n.frame_size.reset();
            } else if (i.rt() == 1 && i.ra() != 1 && s.allocated && s.frame_size == s.fixed_size) {
                n.frame_copies |= 1U << i.ra(); // mr rX,r1 after the prologue
            }
        }
        return n;
    }

    static bool is_call(const Insn& i) {
        const unsigned op = i.opcode();
        if (op == isa::op_b || op == isa::op_bc) return i.lk();
        if (op == isa::op_xl && (i.xo_x() == isa::xo_bclr || i.xo_x() == isa::xo_bcctr))
            return i.lk();
        return false;
    }

  private:
    // rX holds the post-prologue r1: a recorded copy, or the alloca
    // register the table names (GCC sets it right after the stack update).
    bool is_frame_copy(const FrameState& s, unsigned r) const {
        return ((s.frame_copies >> r) & 1U) != 0 ||
               (uses_alloca_ && r == alloca_reg_ && s.allocated);
    }
    static void back_to_frame(FrameState& n) {
        n.allocated = true;
        n.frame_size = n.fixed_size;
    }

    // `ld r31,D(r1)` from r31's save slot: r31 is the caller's again.
    static bool reloads_r31(const Insn& i, const FrameState& s) {
        return i.opcode() == isa::op_ld && i.xo_ds() == 0 && i.rt() == 31 && i.ra() == 1 &&
               s.r31_slot && cfa_offset(s, i.ds()) == s.r31_slot;
    }
    // CFA-relative offset of r1 + d, when the frame size is known.
    static std::optional<std::int32_t> cfa_offset(const FrameState& s, std::int32_t d) {
        if (!s.allocated) return d;
        if (s.frame_size)
            return static_cast<std::int32_t>(std::int64_t{d} - std::int64_t{*s.frame_size});
        return std::nullopt;
    }

    // r1-relative offset of a CFA-relative slot, when the frame size is known.
    static std::optional<std::int64_t> r1_offset(const FrameState& s, std::int32_t cfa_offset) {
        if (!s.allocated) return cfa_offset;
        if (s.frame_size) return std::int64_t{*s.frame_size} + cfa_offset;
        return std::nullopt;
    }
    static void allocate(FrameState& n, const FrameState& s, std::uint32_t size) {
        n.allocated = true;
        if (!s.allocated) {
            n.frame_size = size;
            n.fixed_size = size;
        } else if (s.frame_size) {
            n.frame_size = *s.frame_size + size;
        } else {
            n.frame_size.reset();
        }
    }
    static void pop(FrameState& n) {
        n.allocated = false;
        n.frame_size.reset();
        n.fixed_size.reset();
        n.frame_copies = 0;
    }

    unsigned alloca_reg_;
    bool uses_alloca_;
};

// Up to two successors inside [start, end).
struct Successors {
    std::array<std::uint64_t, 2> pc{};
    unsigned count = 0;
    void add(std::uint64_t p, std::uint64_t start, std::uint64_t end) {
        if (p >= start && p < end && p % 4 == 0) pc[count++] = p;
    }
};

// `returns(target)`: whether a direct call to target comes back.
template <typename Returns>
Successors successors(const Insn& i, std::uint64_t pc, std::uint64_t start, std::uint64_t end,
                      Returns&& returns) {
    Successors s;
    const unsigned op = i.opcode();
    const std::uint64_t next = pc + 4;
    if (i.word == 0) return s; // the table's zero word, or an illegal instruction
    if (op == isa::op_b) {
        if (i.lk()) {
            const auto li = static_cast<std::uint64_t>(std::int64_t{i.li()});
            if (returns(i.aa() ? li : pc + li)) s.add(next, start, end);
        } else {
            const auto li = static_cast<std::uint64_t>(std::int64_t{i.li()});
            s.add(i.aa() ? li : pc + li, start, end); // outside: a tail call
        }
        return s;
    }
    if (op == isa::op_bc) {
        if (i.lk()) {
            s.add(next, start, end);
            return s;
        }
        const auto bd = static_cast<std::uint64_t>(std::int64_t{i.bd()});
        s.add(i.aa() ? bd : pc + bd, start, end);
        if (!isa::branches_always(i.rt())) s.add(next, start, end);
        return s;
    }
    if (op == isa::op_xl && (i.xo_x() == isa::xo_bclr || i.xo_x() == isa::xo_bcctr)) {
        // blr returns, bctr jumps through CTR (targets unknown here);
        // conditional forms fall through; linking forms are calls.
        if (i.lk() || !isa::branches_always(i.rt())) s.add(next, start, end);
        return s;
    }
    // tw/td 31,rA,rB and twi/tdi 31: unconditional traps (__builtin_trap).
    if ((op == isa::op_x && (i.xo_x() == 4 || i.xo_x() == 68) && i.rt() == 31) ||
        ((op == 2 || op == 3) && i.rt() == 31))
        return s;
    s.add(next, start, end);
    return s;
}

// What holds on both paths into an instruction (same stack height).
FrameState meet(const FrameState& a, const FrameState& b) {
    FrameState m = a;
    if (m.frame_size != b.frame_size) m.frame_size.reset();
    if (m.fixed_size != b.fixed_size) m.fixed_size.reset();
    m.frame_copies &= b.frame_copies;
    m.ra_in_lr = m.ra_in_lr && b.ra_in_lr;
    m.ra_gprs &= b.ra_gprs;
    m.ra_saved = m.ra_saved && b.ra_saved;
    if (m.r31_slot != b.r31_slot) m.r31_slot.reset();
    m.r31_callers = m.r31_callers && b.r31_callers;
    return m;
}

} // namespace

FrameState body_state(const TracebackTable& table) {
    FrameState s;
    s.allocated = !table.frameless();
    s.ra_saved = table.saves_lr;
    s.ra_in_lr = !table.saves_lr;
    if (table.gpr_saved > 0) s.r31_slot = gpr_save_offset(table.fp_saved, 31);
    s.r31_callers = table.gpr_saved == 0;
    return s;
}

Expected<FrameAnalysis> FrameAnalysis::run(ByteView code, std::uint64_t code_vaddr,
                                           std::uint64_t start, const TracebackTable& table,
                                           const AnalysisLimits& limits, const CallTargets* calls) {
    const std::uint64_t end = table.address;
    if (start % 4 != 0 || start < code_vaddr || end < start ||
        !code.contains(start - code_vaddr, end - start))
        return Error(Errc::Malformed,
                     "function [" + to_hex(start) + ", " + to_hex(end) +
                         ") is not word-aligned code inside [" + to_hex(code_vaddr) + ", " +
                         to_hex(code_vaddr + code.size()) + ")",
                     start);
    const std::uint64_t count = (end - start) / 4;
    if (count > limits.max_instructions)
        return Error(Errc::Unsupported,
                     "function at " + to_hex(start) + " has " + std::to_string(count) +
                         " instructions, more than the analysis limit of " +
                         std::to_string(limits.max_instructions),
                     start);

    FrameAnalysis a;
    a.code_ = code;
    a.code_vaddr_ = code_vaddr;
    a.table_ = table;
    a.start_ = start;
    a.end_ = end;
    a.body_ = body_state(table);
    a.states_.resize(static_cast<std::size_t>(count));
    if (count == 0) return a;

    const Transfer transfer(table);
    std::vector<std::uint32_t> work;
    auto insn_at = [&](std::uint32_t idx) {
        Insn insn;
        (void)code.load(start + 4ULL * idx - code_vaddr, insn.word); // inside the checked range
        return insn;
    };
    auto reached = [](Origin o) { return o == Origin::Code || o == Origin::Indirect; };
    std::map<std::uint64_t, bool> returns_cache;
    auto returns = [&](std::uint64_t target) {
        if (calls == nullptr) return true;
        auto [it, fresh] = returns_cache.try_emplace(target, true);
        if (fresh) it->second = !calls->never_returns(target);
        return it->second;
    };
    // GCC's inline jump tables: after `bctr`, words holding the offset of
    // each case label from the table's start (ELFv2 and ELFv1 -fPIC-style
    // switch tables in .text). They are data, and their targets are the
    // bctr's successors. A word ends the table unless it is a non-zero
    // multiple of 4 that leads into the function.
    std::map<std::uint32_t, std::vector<std::uint32_t>> jump_targets;
    constexpr std::uint32_t max_table_entries = 4096;
    for (std::uint32_t idx = 0; idx < count; ++idx) {
        const Insn insn = insn_at(idx);
        if (!(insn.opcode() == isa::op_xl && insn.xo_x() == isa::xo_bcctr && !insn.lk() &&
              isa::branches_always(insn.rt())))
            continue;
        const std::uint64_t base = start + 4ULL * (idx + 1);
        std::vector<std::uint32_t> targets;
        std::uint32_t k = idx + 1;
        for (; k < count && k - idx <= max_table_entries; ++k) {
            const std::uint32_t w = insn_at(k).word;
            const auto entry = static_cast<std::int64_t>(static_cast<std::int32_t>(w));
            const std::uint64_t to = base + static_cast<std::uint64_t>(entry);
            if (w == 0 || w % 4 != 0 || to < start || to >= end) break;
            targets.push_back(static_cast<std::uint32_t>((to - start) / 4));
        }
        if (targets.empty()) continue;
        for (std::uint32_t d = idx + 1; d < k; ++d)
            a.states_[d].origin = Origin::Data;
        jump_targets.emplace(idx, std::move(targets));
        idx = k - 1;
    }

    auto flow = [&](std::uint32_t j, const Cell& here, const FrameState& out) {
        Cell& c = a.states_[j];
        bool changed = false;
        if (c.origin == Origin::Conflict || c.origin == Origin::Data) {
            changed = false;
        } else if (here.origin == Origin::Conflict ||
                   (reached(c.origin) && c.state.allocated != out.allocated)) {
            c.origin = Origin::Conflict;
            changed = true;
        } else if (c.origin == Origin::Unreached) {
            c.origin = Origin::Code;
            c.state = out;
            changed = true;
        } else {
            const FrameState m = meet(c.state, out);
            changed = !(m == c.state);
            c.state = m;
        }
        if (changed) work.push_back(j);
    };
    auto propagate = [&] {
        while (!work.empty()) {
            const std::uint32_t idx = work.back();
            work.pop_back();
            const std::uint64_t pc = start + 4ULL * idx;
            const Insn insn = insn_at(idx);
            const Cell here = a.states_[idx];
            const FrameState out = reached(here.origin) ? transfer(insn, here.state) : FrameState{};
            const Successors next = successors(insn, pc, start, end, returns);
            for (unsigned k = 0; k < next.count; ++k)
                flow(static_cast<std::uint32_t>((next.pc[k] - start) / 4), here, out);
            if (auto t = jump_targets.find(idx); t != jump_targets.end())
                for (const std::uint32_t j : t->second)
                    flow(j, here, out);
        }
    };
    a.states_[0].origin = Origin::Code; // entry: FrameState's defaults
    work.push_back(0);
    propagate();

    // Jump-table targets: seed each stretch of unreached code with the state
    // at the function's bctr instructions, then follow it as before.
    std::optional<FrameState> at_bctr;
    bool bctr_conflict = false;
    for (std::uint32_t idx = 0; idx < count; ++idx) {
        const Insn insn = insn_at(idx);
        if (!(insn.opcode() == isa::op_xl && insn.xo_x() == isa::xo_bcctr && !insn.lk())) continue;
        if (jump_targets.count(idx) != 0) continue; // its targets are known
        const Cell& c = a.states_[idx];
        if (c.origin == Origin::Conflict ||
            (at_bctr && reached(c.origin) && at_bctr->allocated != c.state.allocated))
            bctr_conflict = true;
        if (!reached(c.origin)) continue;
        const FrameState out = transfer(insn, c.state);
        at_bctr = at_bctr ? meet(*at_bctr, out) : out;
    }
    if (at_bctr && !bctr_conflict) {
        for (std::uint32_t idx = 0; idx < count; ++idx) {
            if (a.states_[idx].origin != Origin::Unreached) continue;
            a.states_[idx].origin = Origin::Indirect;
            a.states_[idx].state = *at_bctr;
            work.push_back(idx);
            propagate();
        }
    }
    // Alignment padding (GCC's `nop` and `ori r2,r2,0`) that no path reaches.
    for (std::uint32_t idx = 0; idx < count; ++idx) {
        const std::uint32_t w = insn_at(idx).word;
        if (a.states_[idx].origin == Origin::Unreached &&
            (w == isa::nop_word || w == isa::nop_r2_word))
            a.states_[idx].origin = Origin::Padding;
    }
    return a;
}

std::size_t FrameAnalysis::index_of(std::uint64_t pc) const {
    if (pc < start_ || pc >= end_) return states_.size();
    return static_cast<std::size_t>((pc - start_) / 4);
}

FrameState FrameAnalysis::state_at(std::uint64_t pc) const {
    const std::size_t i = index_of(pc);
    if (i >= states_.size() ||
        (states_[i].origin != Origin::Code && states_[i].origin != Origin::Indirect))
        return body_;
    return states_[i].state;
}

std::uint32_t FrameAnalysis::word_at(std::uint64_t pc) const {
    std::uint32_t w = 0;
    if (index_of(pc) < states_.size()) (void)code_.load((pc & ~std::uint64_t{3}) - code_vaddr_, w);
    return w;
}

bool FrameAnalysis::is_call_at(std::uint64_t pc) const {
    return Transfer::is_call(Insn{word_at(pc)});
}

FrameState FrameAnalysis::state_after(std::uint64_t pc) const {
    return Transfer(table_)(Insn{word_at(pc)}, state_at(pc));
}

FrameAnalysis::Origin FrameAnalysis::origin_at(std::uint64_t pc) const {
    const std::size_t i = index_of(pc);
    return i >= states_.size() ? Origin::Unreached : states_[i].origin;
}

void apply_rules(const FrameState& state, const TracebackTable& table, Row& row) {
    // CFA: the caller's r1. Once the frame exists, r1 points at the back
    // chain word that holds it (ABI: "the stack pointer always points to the
    // back chain"), which stays right through alloca; before, r1 is the CFA.
    row.cfa = CfaRule{1, 0, state.allocated};
    // RA: the LR save doubleword once saved; also when LR was lost without a
    // save the analysis followed, if the table says the function saves LR.
    // Otherwise it is still in LR, or in the GPR mflr copied it to (the
    // lowest: r0 after `mflr r0`), which only the topmost frame knows.
    const bool in_slot =
        state.ra_saved || (!state.ra_in_lr && state.ra_gprs == 0 && table.saves_lr);
    row.topmost_only = !in_slot;
    if (in_slot)
        row.ra = RegRule::at_cfa(lr_save_offset);
    else if (!state.ra_in_lr && state.ra_gprs != 0)
        row.ra = RegRule{RegRule::Kind::ValReg,
                         static_cast<std::uint16_t>(std::countr_zero(state.ra_gprs)), 0,
                         RegRule::Source::Fre};
    else
        row.ra = RegRule::same_value(RegRule::Source::Fre);
    row.fp = state.r31_slot ? RegRule::at_cfa(*state.r31_slot)
                            : RegRule::same_value(RegRule::Source::Fre);
}

} // namespace sfunwind::ppc64

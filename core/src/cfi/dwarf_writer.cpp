// SPDX-License-Identifier: MIT
// SFrame rows to .debug_frame. Layouts follow DWARF 5 section 6.4.1 (CIE and
// FDE, 32-bit DWARF format, CIE version 3) and the opcode encodings of
// section 7.24; the rule table is in the header.
#include "sfunwind/cfi/dwarf_writer.hpp"

#include "../dwarf/emitter.hpp"

#include <algorithm>
#include <array>
#include <cstdio>
#include <dwarf.h>
#include <map>
#include <optional>
#include <string>

namespace sfunwind::cfi {
namespace {

// Every offset rule is factored by this (DW_CFA_offset et al.); 8 is the slot
// size of all three 64-bit ABIs, and offsets that are not a multiple of it
// fall back to expressions.
constexpr std::int64_t data_alignment = -8;
constexpr std::uint32_t address_size = 8;
constexpr std::uint8_t cie_version = 3; // ULEB return-address column, no address_size field

using dwarf::Emitter;

// DW_CFA_nop up to a multiple of the address size, counted from the entry's
// start (the length field included: DWARF 5 section 6.4.1).
void pad_entry(Emitter& e, std::size_t entry_start) {
    while ((e.size() - entry_start) % address_size != 0)
        e.u8(DW_CFA_nop);
}

// A DWARF expression (DW_FORM_block contents) in a scratch buffer.
class Expr {
  public:
    Expr() = default;
    Expr(const Expr&) = delete;
    Expr& operator=(const Expr&) = delete;
    Expr& breg(std::uint16_t reg, std::int32_t off) {
        if (reg < 32) {
            e_.u8(static_cast<unsigned>(DW_OP_breg0) + reg);
        } else {
            e_.u8(DW_OP_bregx);
            e_.uleb(reg);
        }
        e_.sleb(off);
        return *this;
    }
    // The CFA is on the stack when a register rule's expression starts
    // (DWARF 5 section 6.4.2.3, DW_CFA_expression): add `off` to it.
    Expr& plus_const(std::int32_t off) {
        e_.u8(DW_OP_consts);
        e_.sleb(off);
        e_.u8(DW_OP_plus);
        return *this;
    }
    Expr& deref() {
        e_.u8(DW_OP_deref);
        return *this;
    }
    const std::vector<std::uint8_t>& bytes() const { return buf_; }

  private:
    std::vector<std::uint8_t> buf_;
    Emitter e_{buf_, ByteOrder::Little}; // expressions hold no fixed-size fields
};

void block(Emitter& e, const Expr& x) {
    e.uleb(x.bytes().size());
    e.bytes(x.bytes());
}

bool divisible(std::int64_t off) {
    return off % data_alignment == 0;
}

void emit_register_rule(Emitter& e, std::uint16_t col, const RegRule& r) {
    switch (r.kind) {
    case RegRule::Kind::Undefined:
        e.u8(DW_CFA_undefined);
        e.uleb(col);
        return;
    case RegRule::Kind::SameValue:
        e.u8(DW_CFA_same_value);
        e.uleb(col);
        return;
    case RegRule::Kind::AtCfa: {
        if (!divisible(r.offset)) {
            e.u8(DW_CFA_expression);
            e.uleb(col);
            block(e, Expr().plus_const(r.offset));
            return;
        }
        const std::int64_t factored = r.offset / data_alignment;
        if (factored >= 0 && col < 64) {
            e.u8(static_cast<unsigned>(DW_CFA_offset) | col);
            e.uleb(static_cast<std::uint64_t>(factored));
        } else if (factored >= 0) {
            e.u8(DW_CFA_offset_extended);
            e.uleb(col);
            e.uleb(static_cast<std::uint64_t>(factored));
        } else {
            e.u8(DW_CFA_offset_extended_sf);
            e.uleb(col);
            e.sleb(factored);
        }
        return;
    }
    case RegRule::Kind::ValCfa:
        e.u8(DW_CFA_val_expression);
        e.uleb(col);
        block(e, Expr().plus_const(r.offset));
        return;
    case RegRule::Kind::AtReg:
        e.u8(DW_CFA_expression);
        e.uleb(col);
        block(e, Expr().breg(r.reg, r.offset));
        return;
    case RegRule::Kind::ValReg:
        if (r.offset == 0) {
            e.u8(DW_CFA_register);
            e.uleb(col);
            e.uleb(r.reg);
        } else {
            e.u8(DW_CFA_val_expression);
            e.uleb(col);
            block(e, Expr().breg(r.reg, r.offset));
        }
        return;
    }
}

// A CFA rule DW_CFA_def_cfa_offset/_register may modify: register + offset,
// written with DW_CFA_def_cfa or DW_CFA_def_cfa_sf.
bool register_based(const CfaRule& c) {
    return !c.deref && (c.offset >= 0 || divisible(c.offset));
}

void emit_cfa_rule(Emitter& e, const std::optional<CfaRule>& prev, const CfaRule& c) {
    if (!register_based(c)) {
        Expr x;
        x.breg(c.reg, c.offset);
        if (c.deref) x.deref();
        e.u8(DW_CFA_def_cfa_expression);
        block(e, x);
        return;
    }
    if (c.offset < 0) {
        e.u8(DW_CFA_def_cfa_sf);
        e.uleb(c.reg);
        e.sleb(c.offset / data_alignment);
        return;
    }
    if (prev && register_based(*prev)) {
        if (prev->reg == c.reg) {
            e.u8(DW_CFA_def_cfa_offset);
            e.uleb(static_cast<std::uint64_t>(c.offset));
            return;
        }
        if (prev->offset == c.offset) {
            e.u8(DW_CFA_def_cfa_register);
            e.uleb(c.reg);
            return;
        }
    }
    e.u8(DW_CFA_def_cfa);
    e.uleb(c.reg);
    e.uleb(static_cast<std::uint64_t>(c.offset));
}

bool same_cfa(const CfaRule& a, const CfaRule& b) {
    return a.reg == b.reg && a.offset == b.offset && a.deref == b.deref;
}

// The rules in force after the instructions written so far in one FDE.
struct State {
    std::optional<CfaRule> cfa;
    std::optional<RegRule> ra;
    std::optional<RegRule> fp;
    bool ra_signed = false;
    // The first `saved` hold the rules of untracked_callee_saved(abi), in
    // that order (a fixed array: the writer copies a State per row).
    std::array<std::optional<RegRule>, max_untracked_callee_saved> callee_saved{};
    std::size_t saved = 0;
    std::uint64_t loc = 0; // offset from the function start
};

// The kinds a CalleeSavedChange may hold; any other counts as unknown.
RegRule callee_saved_rule(const RegRule& r) {
    if (r.kind == RegRule::Kind::SameValue) return RegRule::same_value(RegRule::Source::Fre);
    if (r.kind == RegRule::Kind::AtCfa) return RegRule::at_cfa(r.offset);
    return RegRule::undefined();
}

void advance(Emitter& e, std::uint64_t delta) {
    // Code alignment factor 1: deltas are bytes.
    if (delta == 0) return;
    if (delta < 0x40) {
        e.u8(static_cast<unsigned>(DW_CFA_advance_loc) | static_cast<unsigned>(delta));
    } else if (delta <= 0xff) {
        e.u8(DW_CFA_advance_loc1);
        e.u8(static_cast<unsigned>(delta));
    } else if (delta <= 0xffff) {
        e.u8(DW_CFA_advance_loc2);
        e.u16(static_cast<std::uint16_t>(delta));
    } else {
        e.u8(DW_CFA_advance_loc4);
        e.u32(static_cast<std::uint32_t>(delta));
    }
}

class Writer {
  public:
    Writer(const sframe::Section& section, const DebugFrameOptions& options)
        : section_(section), abi_(section.abi()), options_(options), e_(out_.bytes, abi_.order) {}

    DebugFrame run() {
        const std::uint32_t n = section_.fde_count();
        for (std::uint32_t i = 0; i < n; ++i) {
            auto fde = section_.fde(i);
            if (!fde) {
                out_.skipped.push_back(std::move(fde).error());
                continue;
            }
            auto status = write_fde(*fde);
            if (!status) out_.skipped.push_back(std::move(status).error());
        }
        if (options_.entry_function) write_entry_fde(*options_.entry_function);
        return std::move(out_);
    }

  private:
    // A CIE and the rules in force after its initial instructions, where an
    // FDE that refers to it starts (DWARF 5 section 6.4.1).
    struct Cie {
        std::uint32_t offset = 0;
        State initial;
    };

    // The CIE for an FDE: its augmentation says signal frame and PAuth key B
    // (one CIE per combination), and its initial instructions hold the rules
    // of the FDE's first row where one is given (`entry`, and the
    // callee-saved registers' rules there, `entry_saved`), so that FDEs that
    // start alike (x86-64: CFA = rsp + 8, RA at CFA - 8, FP and the
    // callee-saved registers unchanged) share them instead of each spelling
    // them out: 17 bytes an FDE on x86-64 with the callee-saved rules. At
    // most `max_entry_cies` such CIEs; FDEs that start otherwise after that
    // use the CIE without entry rules and write theirs.
    const Cie& cie_for(bool signal, bool key_b, const Row* entry,
                       const CalleeSavedChange* entry_saved) {
        CieContents c = cie_contents(signal, key_b, entry, entry_saved);
        if (auto it = cies_.find(c.key); it != cies_.end()) return it->second;
        if (c.has_entry_rules && entry_cies_ >= max_entry_cies) {
            c = cie_contents(signal, key_b, nullptr, nullptr);
            if (auto it = cies_.find(c.key); it != cies_.end()) return it->second;
        }
        if (c.has_entry_rules) ++entry_cies_;
        const std::size_t start = e_.size();
        e_.u32(0);           // length, patched below
        e_.u32(0xffffffffU); // CIE_id of a 32-bit .debug_frame CIE
        e_.u8(cie_version);
        for (const char ch : c.augmentation)
            e_.u8(static_cast<unsigned char>(ch));
        e_.u8(0);
        e_.uleb(1); // code alignment factor
        e_.sleb(data_alignment);
        e_.uleb(abi_.ra_reg);                    // return-address column
        if (!c.augmentation.empty()) e_.uleb(0); // no augmentation data
        e_.bytes(c.initial);
        end_entry(start);
        return cies_.emplace(std::move(c.key), Cie{static_cast<std::uint32_t>(start), c.state})
            .first->second;
    }

    // What a CIE for those arguments holds, and the key it is found by.
    struct CieContents {
        std::string augmentation;
        std::vector<std::uint8_t> initial; // initial instructions
        State state;                       // the rules they leave in force
        bool has_entry_rules = false;
        std::string key; // augmentation, NUL, initial instructions
    };

    CieContents cie_contents(bool signal, bool key_b, const Row* entry,
                             const CalleeSavedChange* entry_saved) const {
        CieContents c;
        if (signal || key_b) {
            c.augmentation = "z";
            if (signal) c.augmentation += 'S';
            if (key_b) c.augmentation += 'B';
        }
        // The registers SFrame does not track: DW_CFA_undefined, or nothing
        // said (always written in the FDEs then).
        c.state.saved = untracked_callee_saved(abi_).size();
        if (options_.undefine_untracked_callee_saved)
            std::fill_n(c.state.callee_saved.begin(), c.state.saved,
                        std::optional<RegRule>(RegRule::undefined()));
        Emitter ie(c.initial, abi_.order);
        if (options_.undefine_untracked_callee_saved)
            for (const std::uint16_t r : untracked_callee_saved(abi_)) {
                ie.u8(DW_CFA_undefined);
                ie.uleb(r);
            }
        // The caller's SP is the CFA plus the ABI's offset (s390x: CFA - 160,
        // SFrame v2 erratum 1); DWARF's default would be the CFA itself.
        if (abi_.sp_from_cfa != 0) {
            ie.u8(DW_CFA_val_expression);
            ie.uleb(abi_.sp_reg);
            block(ie, Expr().plus_const(abi_.sp_from_cfa));
        }
        const std::size_t base_size = c.initial.size();
        if (entry != nullptr) {
            State to = c.state;
            apply(to, *entry);
            // The signing state stays out: DW_CFA_AARCH64_negate_ra_state
            // toggles it, and every FDE starts unsigned.
            to.ra_signed = false;
            if (entry_saved != nullptr) apply(to, *entry_saved);
            transition(ie, c.state, to);
            c.state = to;
        }
        c.has_entry_rules = c.initial.size() > base_size;
        c.key = c.augmentation;
        c.key += '\0';
        c.key.append(c.initial.begin(), c.initial.end());
        return c;
    }

    // The callee-saved rule changes for one FDE that the writer can use: in
    // the function, by increasing pc, one rule per register.
    std::vector<CalleeSavedChange> callee_saved_changes(const sframe::Fde& fde, bool rows_only) {
        if (!options_.callee_saved || rows_only || fde.pc_type == sframe::PcType::Mask) return {};
        std::vector<CalleeSavedChange> changes = options_.callee_saved(fde.start, fde.size);
        const std::size_t n = untracked_callee_saved(abi_).size();
        // Anything else is a caller's mistake: the FDE keeps the CIE's rules.
        for (std::size_t i = 0; i < changes.size(); ++i) {
            const CalleeSavedChange& c = changes[i];
            const bool inside = c.pc >= fde.start && c.pc - fde.start < fde.size;
            const bool ordered = i == 0 || changes[i - 1].pc < c.pc;
            if (!inside || !ordered || c.rules.size() != n) return {};
        }
        return changes;
    }

    // Writes the instructions that take the rules in force, `st`, to those
    // of `to` (at the same location): only the rules that differ. The rules
    // in force are then those of `to` (a rule `to` lacks, only a CIE's
    // callee-saved register without one, is one `st` lacks too).
    void transition(Emitter& e, const State& st, const State& to) const {
        if (to.cfa && (!st.cfa || !same_cfa(*st.cfa, *to.cfa))) emit_cfa_rule(e, st.cfa, *to.cfa);
        if (to.ra && (!st.ra || !same_rule(*st.ra, *to.ra)))
            emit_register_rule(e, abi_.ra_reg, *to.ra);
        if (to.fp && (!st.fp || !same_rule(*st.fp, *to.fp)))
            emit_register_rule(e, abi_.fp_reg, *to.fp);
        // DW_CFA_AARCH64_negate_ra_state toggles the signing state (AArch64
        // DWARF supplement, section 4.4.1), which starts unsigned.
        if (to.ra_signed != st.ra_signed) e.u8(DW_CFA_AARCH64_negate_ra_state);
        const auto regs = untracked_callee_saved(abi_);
        for (std::size_t i = 0; i < regs.size() && i < to.saved; ++i) {
            const auto& r = to.callee_saved[i];
            if (r && (!st.callee_saved[i] || !same_rule(*st.callee_saved[i], *r)))
                emit_register_rule(e, regs[i], *r);
        }
    }

    // The rules of the SFrame row `row` replace the CFA, RA and FP rules.
    static void apply(State& s, const Row& row) {
        s.cfa = row.cfa;
        s.ra = row.ra;
        s.fp = row.fp;
        s.ra_signed = row.mangled_ra;
    }
    // The callee-saved registers' rules of `change` replace theirs.
    static void apply(State& s, const CalleeSavedChange& change) {
        for (std::size_t i = 0; i < s.saved && i < change.rules.size(); ++i)
            s.callee_saved[i] = callee_saved_rule(change.rules[i]);
    }

    // The FDE's rows, from the CIE's rules: the SFrame rows and the
    // callee-saved changes in address order, a DWARF row at each of either
    // (DWARF 5 section 6.4.1: a row holds until the next DW_CFA_advance_loc),
    // each with every rule in force there.
    static std::vector<State> table(const State& cie,
                                    const std::vector<std::pair<std::uint64_t, Row>>& rows,
                                    const std::vector<CalleeSavedChange>& changes,
                                    std::uint64_t start) {
        std::vector<State> out;
        out.reserve(rows.size() + changes.size());
        State s = cie;
        std::size_t j = 0;
        for (std::size_t i = 0; i < rows.size(); ++i) {
            const std::uint64_t at = rows[i].first;
            const std::uint64_t next = i + 1 < rows.size() ? rows[i + 1].first : UINT64_MAX;
            s.loc = at;
            apply(s, rows[i].second);
            // The last change at or before the row's start holds from there.
            for (; j < changes.size() && changes[j].pc - start <= at; ++j)
                apply(s, changes[j]);
            out.push_back(s);
            for (; j < changes.size() && changes[j].pc - start < next; ++j) {
                s.loc = changes[j].pc - start;
                apply(s, changes[j]);
                out.push_back(s);
            }
        }
        return out;
    }

    // The bytes transition() writes.
    std::size_t transition_size(const State& from, const State& to) const {
        scratch_.clear();
        Emitter e(scratch_, abi_.order);
        transition(e, from, to);
        return scratch_.size();
    }

    // After DW_CFA_restore_state, the rules of `to`: from `remembered`, the
    // rules DW_CFA_remember_state saved, except for the CFA rule. DWARF 5
    // section 6.4.2.4 says that DW_CFA_remember_state pushes the rules of
    // every register, and not whether the CFA rule is one of them (LLDB,
    // GDB and libdw push it): a reader may have the CFA rule of the
    // remembered row or the one in force before. Where the two differ and
    // `to` has a CFA rule of its own, it is written whole, which sets it
    // under either reading.
    void after_restore(Emitter& e, const State& remembered, const State& before,
                       const State& to) const {
        const bool same_both =
            remembered.cfa && before.cfa && to.cfa && same_cfa(*remembered.cfa, *before.cfa);
        if (to.cfa && (!same_both || !same_cfa(*remembered.cfa, *to.cfa))) {
            emit_cfa_rule(e, same_both ? remembered.cfa : std::nullopt, *to.cfa);
            State from = remembered;
            from.cfa = to.cfa;
            transition(e, from, to);
            return;
        }
        transition(e, remembered, to);
    }

    std::size_t after_restore_size(const State& remembered, const State& before,
                                   const State& to) const {
        scratch_.clear();
        Emitter e(scratch_, abi_.order);
        after_restore(e, remembered, before, to);
        return scratch_.size();
    }

    // How many of the RA, FP and callee-saved rules differ between a and b.
    static std::size_t differing(const State& a, const State& b) {
        auto same_opt = [](const std::optional<RegRule>& x, const std::optional<RegRule>& y) {
            return x.has_value() == y.has_value() && (!x || same_rule(*x, *y));
        };
        std::size_t n = same_opt(a.ra, b.ra) ? 0U : 1U;
        n += same_opt(a.fp, b.fp) ? 0U : 1U;
        for (std::size_t i = 0; i < a.saved && i < b.saved; ++i)
            n += same_opt(a.callee_saved[i], b.callee_saved[i]) ? 0U : 1U;
        return n;
    }

    // Where DW_CFA_remember_state and DW_CFA_restore_state shorten the
    // table, as GCC's .cfi_remember_state and .cfi_restore_state do around
    // an epilogue: a row that needs many rules written from the row before
    // (the body of a function after an epilogue) is written as a restore of
    // an earlier row's rules, remembered when that row was written, and the
    // rules that still differ, where that takes fewer bytes (the remember
    // and the restore cost one each). The earlier row is the one among the
    // `lookback` rows before with the fewest rules that differ. Pairs do not
    // nest: the stack never holds more than one set. Not where the RA
    // signing state (AArch64) of the row before differs from the
    // remembered row's: DW_CFA_AARCH64_negate_ra_state toggles it, and
    // whether a restore restores it is the reader's to say.
    struct StackUse {
        std::vector<bool> remember_after;
        std::vector<bool> restore_at;
    };
    StackUse plan_stack(const std::vector<State>& rows) const {
        static constexpr std::size_t lookback = 32;
        StackUse use{std::vector<bool>(rows.size(), false), std::vector<bool>(rows.size(), false)};
        std::size_t free_from = 0; // rows before this are inside a pair
        for (std::size_t i = 2; i < rows.size(); ++i) {
            const State& before = rows[i - 1];
            const std::size_t plain = transition_size(before, rows[i]);
            if (plain <= 2) continue;
            const std::size_t low = std::max(free_from, i >= lookback ? i - lookback : 0);
            std::size_t best = rows.size();
            std::size_t best_differing = differing(before, rows[i]);
            for (std::size_t k = i - 1; k-- > low;) {
                if (rows[k].ra_signed != before.ra_signed) continue;
                const std::size_t d = differing(rows[k], rows[i]);
                if (d < best_differing) {
                    best = k;
                    best_differing = d;
                    if (d == 0) break;
                }
            }
            if (best == rows.size() || 2 + after_restore_size(rows[best], before, rows[i]) >= plain)
                continue;
            use.remember_after[best] = true;
            use.restore_at[i] = true;
            free_from = i;
        }
        return use;
    }

    // Writes the FDE's rows from the rules its CIE leaves in force.
    void emit_table(const State& initial, const std::vector<State>& rows) {
        const StackUse use = plan_stack(rows);
        const State* current = &initial;   // the rules in force
        const State* remembered = nullptr; // those DW_CFA_remember_state saved
        std::uint64_t loc = initial.loc;
        for (std::size_t i = 0; i < rows.size(); ++i) {
            const State& row = rows[i];
            if (row.loc > loc) {
                advance(e_, row.loc - loc);
                loc = row.loc;
            }
            if (use.restore_at[i] && remembered != nullptr) {
                e_.u8(DW_CFA_restore_state);
                after_restore(e_, *remembered, *current, row);
            } else {
                transition(e_, *current, row);
            }
            current = &row;
            if (use.remember_after[i]) {
                e_.u8(DW_CFA_remember_state);
                remembered = &row;
            }
        }
    }

    Status write_fde(const sframe::Fde& fde) {
        auto fres = section_.fres(fde);
        if (!fres) return std::move(fres).error();
        // The repeat block size is the stored one, or the one SFrame v1
        // implies for the ABI (section.hpp, Fde::rep_size); without one
        // lookup() has no row either, so the FDE is skipped.
        const bool mask = fde.pc_type == sframe::PcType::Mask;
        if (mask && fde.rep_size == 0 && !fres->empty())
            return Error(Errc::Unsupported,
                         "FDE " + std::to_string(fde.index) + " at " + to_hex(fde.start) +
                             " is a PC-mask FDE without a repeat block size",
                         fde.entry_offset);

        std::vector<std::pair<std::uint64_t, Row>> rows;
        if (fres->empty()) {
            // An FDE without FREs is the outermost frame where the version
            // says so (SFrame v3 section 2.3); lookup() knows which.
            auto row = section_.lookup(fde.start);
            if (!row) return std::move(row).error();
            Row r = *row;
            // A CFA rule is required even where nothing is unwound.
            r.cfa = unwound_nowhere_cfa();
            rows.emplace_back(0, r);
        } else {
            const std::uint64_t block = mask ? fde.rep_size : fde.size;
            for (std::uint64_t base = 0; base < fde.size; base += block) {
                for (std::uint32_t i = 0; i < fres->size(); ++i) {
                    const sframe::Fre& fre = (*fres)[i];
                    if (base + fre.start >= fde.size) break;
                    const std::uint64_t next = i + 1 < fres->size() ? (*fres)[i + 1].start : block;
                    auto row = section_.row(fde, fre, i, next);
                    if (!row) return std::move(row).error();
                    // An outermost FRE has no CFA rule (no data words); DWARF
                    // needs one, and nothing is unwound through it.
                    if (row->outermost) row->cfa = unwound_nowhere_cfa();
                    rows.emplace_back(base + fre.start, *row);
                }
                if (!mask) break;
            }
        }

        const auto changes = callee_saved_changes(fde, fres->empty());
        // The first row's rules go to the CIE when the row starts the
        // function (and with them the callee-saved rules that start there).
        const bool first_at_start = !rows.empty() && rows.front().first == 0;
        const bool saved_at_start = !changes.empty() && changes.front().pc == fde.start;
        const Cie& cie = cie_for(fde.signal, fde.pauth_key == sframe::PauthKey::B,
                                 first_at_start ? &rows.front().second : nullptr,
                                 first_at_start && saved_at_start ? &changes.front() : nullptr);
        const bool z = fde.signal || fde.pauth_key == sframe::PauthKey::B;
        WrittenFunction fn;
        fn.start = fde.start;
        fn.size = fde.size;
        fn.sframe_fde = fde.index;
        fn.pc_mask = fde.pc_type == sframe::PcType::Mask;
        fn.offset = begin_fde(cie.offset, fde.start, fde.size);
        if (z) e_.uleb(0); // augmentation data length
        const std::vector<State> tbl = table(cie.initial, rows, changes, fde.start);
        emit_table(cie.initial, tbl);
        fn.rows = static_cast<std::uint32_t>(tbl.size());
        fn.callee_saved_changes = static_cast<std::uint32_t>(changes.size());
        end_entry(fn.offset);
        out_.functions.push_back(fn);
        return ok();
    }

    // An FDE's header (DWARF 5 section 6.4.1), its length patched by
    // end_entry(): returns the FDE's offset.
    std::uint64_t begin_fde(std::uint32_t cie, std::uint64_t start, std::uint64_t size) {
        const std::size_t at = e_.size();
        e_.u32(0);   // length
        e_.u32(cie); // CIE_pointer: section offset of the CIE
        e_.u64(start);
        e_.u64(size);
        return at;
    }
    // Pads the CIE or FDE at `at` to the address size and writes its length.
    void end_entry(std::uint64_t at) {
        pad_entry(e_, at);
        e_.patch_u32(at, static_cast<std::uint32_t>(e_.size() - at - 4));
    }

    // The CFA rule of a row nothing is unwound through (the outermost
    // frame), which DWARF requires all the same: the CFA at a function's
    // first instruction (x86-64: rsp + 8, as GCC's CIE and glibc's _start
    // say).
    CfaRule unwound_nowhere_cfa() const {
        return CfaRule{abi_.sp_reg, entry_cfa_offset(abi_), false};
    }

    // The process's entry function, when no FDE written covers its start: one
    // row, RA undefined (the outermost frame; DWARF 5 section 6.4.4: an
    // undefined return address means no caller) and the CFA rule of a
    // function's first instruction, which nothing unwinds through. It ends
    // where the next FDE written starts, if that is sooner: SFrame's rows
    // stay the only ones wherever SFrame has any.
    void write_entry_fde(FunctionRange fn) {
        if (fn.size == 0 || fn.start > UINT64_MAX - fn.size) return;
        std::uint64_t end = fn.start + fn.size;
        for (const WrittenFunction& w : out_.functions) {
            if (w.start <= fn.start && fn.start - w.start < w.size) return;
            if (w.start > fn.start) end = std::min(end, w.start);
        }
        fn.size = end - fn.start;
        Row r;
        r.cfa = unwound_nowhere_cfa();
        r.ra = RegRule::undefined();
        r.fp = RegRule::same_value();
        r.outermost = true;
        WrittenFunction w;
        w.start = fn.start;
        w.size = fn.size;
        w.entry_function = true;
        w.rows = 1;
        const Cie& cie = cie_for(false, false, nullptr, nullptr);
        w.offset = begin_fde(cie.offset, fn.start, fn.size);
        State row = cie.initial;
        apply(row, r);
        emit_table(cie.initial, {row});
        end_entry(w.offset);
        out_.functions.push_back(w);
    }

    const sframe::Section& section_;
    const Abi& abi_;
    DebugFrameOptions options_;
    DebugFrame out_;
    Emitter e_;
    // transition_size() and after_restore_size() write here.
    mutable std::vector<std::uint8_t> scratch_;
    // CIEs by augmentation and initial instructions.
    std::map<std::string, Cie> cies_;
    static constexpr std::size_t max_entry_cies = 64;
    std::size_t entry_cies_ = 0;
};

} // namespace

Expected<DebugFrame> write_debug_frame(const sframe::Section& section,
                                       const DebugFrameOptions& options) {
    if (section.abi().arch == Arch::Ppc64)
        return Error(Errc::Unsupported,
                     "no DWARF register mapping for " + std::string(section.abi().name));
    DebugFrame out = Writer(section, options).run();
    const bool translated = std::any_of(out.functions.begin(), out.functions.end(),
                                        [](const WrittenFunction& w) { return !w.entry_function; });
    if (!translated && section.fde_count() != 0)
        return Error(Errc::Malformed, "no FDE of the SFrame section could be translated: " +
                                          out.skipped.front().message());
    return out;
}

} // namespace sfunwind::cfi

// SPDX-License-Identifier: MIT
// SFrame rows to .debug_frame. Layouts follow DWARF 5 section 6.4.1 (CIE and
// FDE, 32-bit DWARF format, CIE version 3) and the opcode encodings of
// section 7.24; the rule table is in the header.
#include "sfunwind/cfi/dwarf_writer.hpp"

#include <algorithm>
#include <array>
#include <boost/endian/conversion.hpp>
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

class Emitter {
  public:
    Emitter(std::vector<std::uint8_t>& out, ByteOrder order) : out_(out), order_(order) {}

    void u8(unsigned v) { out_.push_back(static_cast<std::uint8_t>(v)); }
    void u16(std::uint16_t v) { fixed(v, 2); }
    void u32(std::uint32_t v) { fixed(v, 4); }
    void u64(std::uint64_t v) { fixed(v, 8); }
    void patch_u32(std::size_t at, std::uint32_t v) {
        std::array<std::uint8_t, 4> b{};
        if (order_ == ByteOrder::Little)
            boost::endian::endian_store<std::uint32_t, 4, boost::endian::order::little>(b.data(),
                                                                                        v);
        else
            boost::endian::endian_store<std::uint32_t, 4, boost::endian::order::big>(b.data(), v);
        for (std::size_t i = 0; i < 4; ++i)
            out_[at + i] = b[i];
    }
    void uleb(std::uint64_t v) {
        do {
            std::uint8_t b = v & 0x7fU;
            v >>= 7;
            if (v != 0) b |= 0x80U;
            out_.push_back(b);
        } while (v != 0);
    }
    void sleb(std::int64_t v) {
        while (true) {
            const auto b = static_cast<std::uint8_t>(static_cast<std::uint64_t>(v) & 0x7fU);
            // Arithmetic shift: C++20 defines it for negative values.
            // cppcheck-suppress shiftNegativeLHS
            v >>= 7;
            const bool sign = (b & 0x40U) != 0;
            if ((v == 0 && !sign) || (v == -1 && sign)) {
                out_.push_back(b);
                return;
            }
            out_.push_back(static_cast<std::uint8_t>(b | 0x80U));
        }
    }
    void bytes(const std::vector<std::uint8_t>& b) { out_.insert(out_.end(), b.begin(), b.end()); }
    std::size_t size() const { return out_.size(); }
    // DW_CFA_nop up to a multiple of the address size, counted from the
    // entry's start (the length field included: DWARF 5 section 6.4.1).
    void pad_entry(std::size_t entry_start) {
        while ((out_.size() - entry_start) % address_size != 0)
            u8(DW_CFA_nop);
    }

  private:
    void fixed(std::uint64_t v, unsigned n) {
        std::array<std::uint8_t, 8> b{};
        if (order_ == ByteOrder::Little)
            boost::endian::endian_store<std::uint64_t, 8, boost::endian::order::little>(b.data(),
                                                                                        v);
        else
            boost::endian::endian_store<std::uint64_t, 8, boost::endian::order::big>(b.data(), v);
        const std::size_t first = order_ == ByteOrder::Little ? 0 : 8 - n;
        out_.insert(out_.end(), b.begin() + static_cast<std::ptrdiff_t>(first),
                    b.begin() + static_cast<std::ptrdiff_t>(first + n));
    }

    std::vector<std::uint8_t>& out_;
    ByteOrder order_;
};

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
    std::vector<std::optional<RegRule>> callee_saved; // untracked_callee_saved(abi) order
    std::uint64_t loc = 0;                            // offset from the function start
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
    // One CIE per (signal frame, PAuth key B) combination in use.
    std::uint32_t cie_for(bool signal, bool key_b) {
        const int key = (signal ? 1 : 0) | (key_b ? 2 : 0);
        if (auto it = cies_.find(key); it != cies_.end()) return it->second;
        const std::size_t start = e_.size();
        e_.u32(0);           // length, patched below
        e_.u32(0xffffffffU); // CIE_id of a 32-bit .debug_frame CIE
        e_.u8(cie_version);
        std::string aug;
        if (signal || key_b) {
            aug = "z";
            if (signal) aug += 'S';
            if (key_b) aug += 'B';
        }
        for (const char c : aug)
            e_.u8(static_cast<unsigned char>(c));
        e_.u8(0);
        e_.uleb(1); // code alignment factor
        e_.sleb(data_alignment);
        e_.uleb(abi_.ra_reg);         // return-address column
        if (!aug.empty()) e_.uleb(0); // no augmentation data
        if (options_.undefine_untracked_callee_saved)
            for (const std::uint16_t r : untracked_callee_saved(abi_)) {
                e_.u8(DW_CFA_undefined);
                e_.uleb(r);
            }
        // The caller's SP is the CFA plus the ABI's offset (s390x: CFA - 160,
        // SFrame v2 erratum 1); DWARF's default would be the CFA itself.
        if (abi_.sp_from_cfa != 0) {
            e_.u8(DW_CFA_val_expression);
            e_.uleb(abi_.sp_reg);
            block(e_, Expr().plus_const(abi_.sp_from_cfa));
        }
        end_entry(start);
        const auto offset = static_cast<std::uint32_t>(start);
        cies_.emplace(key, offset);
        return offset;
    }

    void advance_to(State& st, std::uint64_t at) {
        if (at > st.loc) {
            advance(e_, at - st.loc);
            st.loc = at;
        }
    }

    // The callee-saved registers' rules from `at`: only those that differ
    // from the rules in force (the CIE's, then the previous change's).
    void emit_callee_saved(State& st, const CalleeSavedChange& change, std::uint64_t at) {
        advance_to(st, at);
        const auto regs = untracked_callee_saved(abi_);
        for (std::size_t i = 0; i < regs.size() && i < change.rules.size(); ++i) {
            const RegRule r = callee_saved_rule(change.rules[i]);
            if (st.callee_saved[i] && same_rule(*st.callee_saved[i], r)) continue;
            emit_register_rule(e_, regs[i], r);
            st.callee_saved[i] = r;
        }
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

    void emit_row(State& st, const Row& row, std::uint64_t at) {
        advance_to(st, at);
        if (!st.cfa || !same_cfa(*st.cfa, row.cfa)) {
            emit_cfa_rule(e_, st.cfa, row.cfa);
            st.cfa = row.cfa;
        }
        if (!st.ra || !same_rule(*st.ra, row.ra)) {
            emit_register_rule(e_, abi_.ra_reg, row.ra);
            st.ra = row.ra;
        }
        if (!st.fp || !same_rule(*st.fp, row.fp)) {
            emit_register_rule(e_, abi_.fp_reg, row.fp);
            st.fp = row.fp;
        }
        // DW_CFA_AARCH64_negate_ra_state toggles the signing state (AArch64
        // DWARF supplement, section 4.4.1), which starts unsigned.
        if (row.mangled_ra != st.ra_signed) {
            e_.u8(DW_CFA_AARCH64_negate_ra_state);
            st.ra_signed = row.mangled_ra;
        }
    }

    // The SFrame rows and the callee-saved changes, in address order: a DWARF
    // row starts at each of either (DWARF 5 section 6.4.1: a row holds until
    // the next DW_CFA_advance_loc). Returns the number of rows.
    std::uint32_t merge_rows(State& st, const std::vector<std::pair<std::uint64_t, Row>>& rows,
                             const std::vector<CalleeSavedChange>& changes, std::uint64_t start) {
        // The CIE's initial rules for the registers (DW_CFA_undefined, or
        // nothing said: always written then).
        st.callee_saved.assign(untracked_callee_saved(abi_).size(),
                               options_.undefine_untracked_callee_saved
                                   ? std::optional<RegRule>(RegRule::undefined())
                                   : std::nullopt);
        std::uint32_t written = 0;
        std::size_t j = 0;
        for (std::size_t i = 0; i < rows.size(); ++i) {
            const std::uint64_t at = rows[i].first;
            const std::uint64_t next = i + 1 < rows.size() ? rows[i + 1].first : UINT64_MAX;
            // The last change at or before the row's start holds from there.
            const CalleeSavedChange* pending = nullptr;
            while (j < changes.size() && changes[j].pc - start <= at)
                pending = &changes[j++];
            emit_row(st, rows[i].second, at);
            if (pending != nullptr) emit_callee_saved(st, *pending, at);
            ++written;
            for (; j < changes.size() && changes[j].pc - start < next; ++j) {
                emit_callee_saved(st, changes[j], changes[j].pc - start);
                ++written;
            }
        }
        return written;
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

        const std::uint32_t cie = cie_for(fde.signal, fde.pauth_key == sframe::PauthKey::B);
        const bool z = fde.signal || fde.pauth_key == sframe::PauthKey::B;
        WrittenFunction fn;
        fn.start = fde.start;
        fn.size = fde.size;
        fn.sframe_fde = fde.index;
        fn.pc_mask = fde.pc_type == sframe::PcType::Mask;
        fn.offset = begin_fde(cie, fde.start, fde.size);
        if (z) e_.uleb(0); // augmentation data length
        State st;
        const auto changes = callee_saved_changes(fde, fres->empty());
        if (changes.empty()) {
            for (const auto& [at, row] : rows)
                emit_row(st, row, at);
            fn.rows = static_cast<std::uint32_t>(rows.size());
        } else {
            fn.rows = merge_rows(st, rows, changes, fde.start);
            fn.callee_saved_changes = static_cast<std::uint32_t>(changes.size());
        }
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
        e_.pad_entry(at);
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
        w.offset = begin_fde(cie_for(false, false), fn.start, fn.size);
        State st;
        emit_row(st, r, 0);
        end_entry(w.offset);
        out_.functions.push_back(w);
    }

    const sframe::Section& section_;
    const Abi& abi_;
    DebugFrameOptions options_;
    DebugFrame out_;
    Emitter e_;
    std::map<int, std::uint32_t> cies_;
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

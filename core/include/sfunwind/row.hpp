// SPDX-License-Identifier: MIT
// A Row: the unwind rules that hold at one PC, independent of the SFrame
// version, FDE type and ABI that produced them. Every consumer (the CLI, the
// GDB bridge, the LLDB plugin, the CFI checker) works from Rows.
#pragma once

#include <cstdint>
#include <string>

namespace sfunwind {

struct Abi;

// CFA = reg + offset, or *(reg + offset) when deref is set (v3 flexible FDEs).
struct CfaRule {
    std::uint16_t reg = 0; // DWARF register number
    std::int32_t offset = 0;
    bool deref = false;
    bool operator==(const CfaRule&) const = default;
};

// Where the caller's value of a register (RA or FP) is.
struct RegRule {
    enum class Kind : std::uint8_t {
        Undefined, // no value: for the RA, the outermost frame
        SameValue, // the register still holds it (not saved yet)
        AtCfa,     // *(CFA + offset)
        ValCfa,    // CFA + offset (not dereferenced)
        AtReg,     // *(reg + offset)
        ValReg,    // reg + offset; with offset 0, "in register reg"
    };
    Kind kind = Kind::SameValue;
    std::uint16_t reg = 0;
    std::int32_t offset = 0;
    // Where the rule came from. It does not change what the rule means, but
    // tools that print the section (objdump's "f", "U", "u") need it.
    enum class Source : std::uint8_t {
        Fre,     // the FRE's data words
        Header,  // the header's fixed offset (sfh_cfa_fixed_ra/fp_offset)
        Padding, // a flexible FRE's padding word: the ABI default applies
        Absent,  // no data word: the ABI default applies
    };
    Source source = Source::Fre;

    static RegRule undefined() { return {Kind::Undefined, 0, 0, Source::Fre}; }
    static RegRule same_value(Source src = Source::Absent) { return {Kind::SameValue, 0, 0, src}; }
    static RegRule at_cfa(std::int32_t off, Source src = Source::Fre) {
        return {Kind::AtCfa, 0, off, src};
    }
    bool reads_register() const { return kind == Kind::AtReg || kind == Kind::ValReg; }
    bool operator==(const RegRule&) const = default;
};

struct Row {
    // Where the row applies, as link-time addresses: [pc_begin, pc_end). For a
    // PC-mask FDE this is the block that contains the looked-up PC. A lookup
    // (sframe::Section::lookup, a RowSource's) gives this same row at every
    // PC from the one looked up to pc_end, which is where the next FDE starts
    // when FDEs overlap: callee_saved::RowAt relies on that. (Below the
    // looked-up PC it need not: FREs whose starts do not ascend, in a
    // corrupt section, are chosen by the first start past the PC.)
    std::uint64_t pc_begin = 0;
    std::uint64_t pc_end = 0;
    std::uint64_t func_start = 0;
    std::uint32_t func_size = 0;
    std::uint32_t fde_index = 0;
    std::uint32_t fre_index = 0; // index of the FRE within its FDE

    CfaRule cfa;
    RegRule ra;
    RegRule fp;

    bool signal_frame = false; // v3 FDE signal bit
    bool mangled_ra = false;   // AArch64: RA signed with a PAuth key
    bool pauth_key_b = false;
    bool outermost = false; // RA undefined: the stack ends here
    bool pc_mask = false;   // from a PC-mask (PLT-style) FDE
    // A rule reads a register other than SP/FP (or the RA register itself):
    // only trustworthy in the topmost frame (spec v3 appendix A; s390x v2 "RA
    // in register" rules, section 3.1.3).
    bool topmost_only = false;

    bool operator==(const Row&) const = default;
};

// Whether two rules mean the same: the Source (where SFrame stored a rule)
// is not part of the meaning, and operands count only for the kinds that
// have them (RegRule's == compares every field). Inline: the .debug_frame
// writer compares every tracked register's rule at every row.
inline bool same_rule(const RegRule& a, const RegRule& b) {
    using K = RegRule::Kind;
    if (a.kind != b.kind) return false;
    switch (a.kind) {
    case K::Undefined:
    case K::SameValue:
        return true;
    case K::AtCfa:
    case K::ValCfa:
        return a.offset == b.offset;
    case K::AtReg:
    case K::ValReg:
        return a.reg == b.reg && a.offset == b.offset;
    }
    return false;
}

// Whether `ra` is the ABI's fixed return-address rule (x86-64: [CFA-8],
// Abi::fixed_ra_offset), which SFrame keeps in its header, not in FREs.
bool is_fixed_ra_rule(const RegRule& ra, const Abi& abi);

// "CFA=rsp+16 RA=[CFA-8] FP=same", for logs, messages and every tool.
std::string describe(const Row& row, const Abi& abi);
// One rule in the same words: "rsp+16", "[rbp-8]" (dereferenced).
std::string describe(const CfaRule& rule, const Abi& abi);
// "same", "undefined", "[CFA-8]", "CFA+16", "[x29+8]", "x30".
std::string describe(const RegRule& rule, const Abi& abi);

} // namespace sfunwind

// SPDX-License-Identifier: MIT
#include "c_rows.hpp"

#include "sfunwind/unwind/window.hpp"

namespace sfunwind::gdb {
namespace {

sfunwind_gdb_rule rule_to_c(const RegRule& r) {
    sfunwind_gdb_rule out{};
    out.kind = static_cast<std::uint8_t>(r.kind);
    out.source = static_cast<std::uint8_t>(r.source);
    out.reg = r.reg;
    out.offset = r.offset;
    return out;
}

RegRule rule_from_c(const sfunwind_gdb_rule& r) {
    RegRule out;
    // Unknown kinds become Undefined: step() then ends the stack there
    // instead of reading an invented location.
    out.kind = r.kind <= static_cast<std::uint8_t>(RegRule::Kind::ValReg)
                   ? static_cast<RegRule::Kind>(r.kind)
                   : RegRule::Kind::Undefined;
    out.source = r.source <= static_cast<std::uint8_t>(RegRule::Source::Absent)
                     ? static_cast<RegRule::Source>(r.source)
                     : RegRule::Source::Fre;
    out.reg = r.reg;
    out.offset = r.offset;
    return out;
}

std::uint32_t flag_if(bool on, sfunwind_gdb_row_flags flag) {
    return on ? static_cast<std::uint32_t>(flag) : 0U;
}

} // namespace

std::uint32_t row_flags(const Row& r) {
    return flag_if(r.signal_frame, SFUNWIND_GDB_ROW_SIGNAL) |
           flag_if(r.mangled_ra, SFUNWIND_GDB_ROW_MANGLED_RA) |
           flag_if(r.pauth_key_b, SFUNWIND_GDB_ROW_PAUTH_KEY_B) |
           flag_if(r.outermost, SFUNWIND_GDB_ROW_OUTERMOST) |
           flag_if(r.pc_mask, SFUNWIND_GDB_ROW_PC_MASK) |
           flag_if(r.topmost_only, SFUNWIND_GDB_ROW_TOPMOST_ONLY);
}

void to_c(const FoundRow& found, sfunwind_gdb_row& out) {
    const Row& r = found.row;
    out = {};
    out.pc_begin = r.pc_begin + found.bias;
    out.pc_end = r.pc_end + found.bias;
    out.func_start = r.func_start + found.bias;
    out.func_size = r.func_size;
    out.fde_index = r.fde_index;
    out.fre_index = r.fre_index;
    out.module = found.module;
    out.cfa_reg = r.cfa.reg;
    out.cfa_deref = r.cfa.deref ? 1 : 0;
    out.cfa_offset = r.cfa.offset;
    out.ra = rule_to_c(r.ra);
    out.fp = rule_to_c(r.fp);
    out.flags = row_flags(r);
    const ReadWindow w = plan_reads(r);
    out.window_reg = w.base_reg;
    out.window_offset = w.offset;
    out.window_size = w.size;
}

Row from_c(const sfunwind_gdb_row& row) {
    Row r;
    r.pc_begin = row.pc_begin;
    r.pc_end = row.pc_end;
    r.func_start = row.func_start;
    r.func_size = row.func_size;
    r.fde_index = row.fde_index;
    r.fre_index = row.fre_index;
    r.cfa.reg = row.cfa_reg;
    r.cfa.deref = row.cfa_deref != 0;
    r.cfa.offset = row.cfa_offset;
    r.ra = rule_from_c(row.ra);
    r.fp = rule_from_c(row.fp);
    r.signal_frame = (row.flags & SFUNWIND_GDB_ROW_SIGNAL) != 0;
    r.mangled_ra = (row.flags & SFUNWIND_GDB_ROW_MANGLED_RA) != 0;
    r.pauth_key_b = (row.flags & SFUNWIND_GDB_ROW_PAUTH_KEY_B) != 0;
    r.outermost = (row.flags & SFUNWIND_GDB_ROW_OUTERMOST) != 0;
    r.pc_mask = (row.flags & SFUNWIND_GDB_ROW_PC_MASK) != 0;
    r.topmost_only = (row.flags & SFUNWIND_GDB_ROW_TOPMOST_ONLY) != 0;
    return r;
}

} // namespace sfunwind::gdb

// SPDX-License-Identifier: MIT
// Turning the DWARF operations libdw hands out for a frame (dwarf_frame_cfa,
// dwarf_frame_register) into Row rules.
#pragma once

#include "sfunwind/cfi/cfi_table.hpp"
#include "sfunwind/row.hpp"

#include <cstddef>
#include <elfutils/libdw.h>
#include <string>

namespace sfunwind::cfi::detail {

struct CfaTranslation {
    CfaRule rule;
    RuleState state;
};

struct RegTranslation {
    RegRule rule;
    RuleState state;
};

// The CFA from dwarf_frame_cfa's expression (nops 0: no CFA rule).
CfaTranslation translate_cfa(const Dwarf_Op* ops, std::size_t nops);

// A register's rule from dwarf_frame_register's location description. With
// nops 0, ops null means "same value" and any other ops "undefined" (libdw.h).
RegTranslation translate_register(const Dwarf_Op* ops, std::size_t nops);

// "DW_OP_breg7 8; DW_OP_deref", for reasons and messages.
std::string describe_ops(const Dwarf_Op* ops, std::size_t nops);

} // namespace sfunwind::cfi::detail

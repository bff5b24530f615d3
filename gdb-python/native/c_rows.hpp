// SPDX-License-Identifier: MIT
// sfunwind::Row <-> struct sfunwind_gdb_row. The C row carries run-time
// addresses (link-time + the module's bias) and the read window of
// sfunwind::plan_reads(); converting back gives a Row whose addresses are run
// time, which step() accepts: its rules never mix PCs with stack values.
#pragma once

#include "module_table.hpp"
#include "sfunwind_gdb.h"

namespace sfunwind::gdb {

void to_c(const FoundRow& found, sfunwind_gdb_row& out);
// The row's sfunwind_gdb_row_flags.
std::uint32_t row_flags(const Row& row);
Row from_c(const sfunwind_gdb_row& row);

} // namespace sfunwind::gdb

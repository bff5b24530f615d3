// SPDX-License-Identifier: MIT
// `sfunwind check` (SFrame against DWARF CFI, per row) and `sfunwind
// convert` (DWARF CFI to an SFrame v3 section). cli/main.cpp dispatches to
// these; they return the exit statuses of cli/commands.hpp.
#pragma once

#include "commands.hpp"

namespace sfunwind::cli {

int run_check(const Args& args);
int run_convert(const Args& args);

namespace check {
struct CheckOptions;
// `sfunwind check --callee-saved`.
int run_check_callee_saved(const CheckOptions& options);
} // namespace check

} // namespace sfunwind::cli

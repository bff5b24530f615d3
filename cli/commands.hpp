// SPDX-License-Identifier: MIT
// The subcommands of `sfunwind`. Each takes the arguments after its name and
// returns the process exit status: 0 success, 1 a finding (a difference, a
// problem in the section, an incomplete backtrace), 2 a usage or input error.
#pragma once

#include <string>
#include <vector>

namespace sfunwind::cli {

using Args = std::vector<std::string>;

inline constexpr int exit_ok = 0;
inline constexpr int exit_finding = 1;
inline constexpr int exit_usage = 2;

int run_dump(const Args& args);
int run_lookup(const Args& args);
int run_validate(const Args& args);
int run_tbtab(const Args& args);

} // namespace sfunwind::cli

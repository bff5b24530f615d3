// SPDX-License-Identifier: MIT
// `sfunwind bt`: stop a program (launched under ptrace, attached to, or from a
// core dump), unwind every thread with SFrame and, with --compare-cfi, check
// each frame against libdwfl's DWARF CFI unwind of the same stop.
#pragma once

namespace sfunwind::cli {

// The arguments after the word `bt`. Returns the exit status: 0 every walk
// ended cleanly (and agreed with CFI when comparing), 1 a difference or an
// SFrame walk that failed, 2 a usage or input error.
int run_bt(int argc, char** argv);

} // namespace sfunwind::cli

// SPDX-License-Identifier: MIT
// The files `target create` is about to load, made ready before it runs.
//
// LLDB looks for a module's symbols while `target create` adds it, so the
// plugin's debug files must exist before the command runs. The SB API's
// command override callback (SBCommandInterpreter::SetCommandOverrideCallback)
// runs with the command's words before LLDB executes it, however it was
// invoked: typed, through its alias `file`, by the driver for `lldb PROG` and
// `lldb -c CORE`, or through SBCommandInterpreter::HandleCommand. The
// callback never handles the command itself: LLDB always runs it next.
#pragma once

#include <lldb/API/SBDebugger.h>
#include <string>

namespace sfunwind::lldb_plugin {

class Coverage;

// What a `target create` command names, as absolute paths ("" when absent).
struct TargetCreateFiles {
    std::string program;
    std::string core;
};

// The program and core of `target create`'s words (argv as LLDB passes them
// to the override: the command's name words first, null-terminated),
// following its options (`help target create`, LLDB 19 and 23). Relative
// paths are made absolute against the current directory, as LLDB does.
TargetCreateFiles parse_target_create(const char** argv);

// Registers the override for `target create` in the debugger's interpreter;
// it calls coverage.prepare() with what the command names. False when LLDB
// refused it.
bool install_target_create_hook(lldb::SBDebugger& debugger, Coverage& coverage);

} // namespace sfunwind::lldb_plugin

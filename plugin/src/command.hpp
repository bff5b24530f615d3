// SPDX-License-Identifier: MIT
// The base of every `sframe` subcommand: parses the options, keeps every
// exception and error inside the command (a failing command must never take
// the debugger down, issue 4), and prints modules found broken since the last
// command, once each.
#pragma once

#include "args.hpp"
#include "session.hpp"

#include <lldb/API/SBCommandInterpreter.h>
#include <lldb/API/SBCommandReturnObject.h>
#include <lldb/API/SBDebugger.h>
#include <span>
#include <string>
#include <vector>

namespace sfunwind::lldb_plugin {

class Command : public lldb::SBCommandPluginInterface {
  public:
    explicit Command(Session& s) : session_(s) {}
    bool DoExecute(lldb::SBDebugger debugger, char** argv,
                   lldb::SBCommandReturnObject& result) final;

  protected:
    virtual std::span<const OptionSpec> options() const = 0;
    // Writes to `result`; returns false (with result.SetError) on failure.
    virtual bool run(lldb::SBDebugger& debugger, const ParsedArgs& args,
                     lldb::SBCommandReturnObject& result) = 0;

    Session& session_;
};

// Help texts and registration of every subcommand under `sframe`.
void register_commands(lldb::SBDebugger& debugger, Session& session);

// Each command's factory (one file each).
lldb::SBCommandPluginInterface* make_bt_command(Session& s);
lldb::SBCommandPluginInterface* make_compare_command(Session& s);
lldb::SBCommandPluginInterface* make_show_unwind_command(Session& s);
lldb::SBCommandPluginInterface* make_dump_command(Session& s);
lldb::SBCommandPluginInterface* make_status_command(Session& s);
lldb::SBCommandPluginInterface* make_cover_command(Session& s);
lldb::SBCommandPluginInterface* make_provider_command(Session& s);
lldb::SBCommandPluginInterface* make_callee_saved_command(Session& s);

// Whether the plugin's frame provider is registered for the target (LLDB 22+).
bool provider_active(lldb::SBDebugger& debugger, lldb::SBTarget& target);

} // namespace sfunwind::lldb_plugin

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
#include <utility>
#include <vector>

namespace sfunwind::lldb_plugin {

class Command : public lldb::SBCommandPluginInterface {
  public:
    explicit Command(Session& s) : session_(s) {}
    bool DoExecute(lldb::SBDebugger debugger, char** argv,
                   lldb::SBCommandReturnObject& result) final;
    // The command's full name and usage line, and how many positional
    // arguments it takes: a bad option or a word too many is then one line
    // naming the usage ("sframe bt: unknown option '-z' (usage: sframe bt
    // [-c COUNT] ...)"). Set when the command is registered (plugin.cpp).
    void set_usage(std::string name, std::string usage, std::size_t max_positional) {
        name_ = std::move(name);
        usage_ = std::move(usage);
        max_positional_ = max_positional;
    }

  protected:
    virtual std::span<const OptionSpec> options() const = 0;
    // Writes to `result`; returns false (with result.SetError) on failure.
    virtual bool run(lldb::SBDebugger& debugger, const ParsedArgs& args,
                     lldb::SBCommandReturnObject& result) = 0;

    Session& session_;

  private:
    std::string name_ = "sframe";
    std::string usage_;
    std::size_t max_positional_ = static_cast<std::size_t>(-1);
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

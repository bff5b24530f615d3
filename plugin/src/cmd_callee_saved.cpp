// SPDX-License-Identifier: MIT
// `sframe callee-saved on|off|status`: whether the generated debug files say
// where each function keeps its caller's callee-saved registers (x86-64 rbx,
// r12-r15; AArch64 x19-x28, d8-d15)
// (debug_file_cache.hpp). SFrame has no rules for them (SFrame v3 section
// 2.4); with the setting on, the rules come from the analysis of each
// function's instructions and LLDB shows those registers, and the variables
// kept in them, in caller frames; off, LLDB shows them unavailable there.
#include "command.hpp"

#include <array>

namespace sfunwind::lldb_plugin {
namespace {

constexpr std::array<OptionSpec, 0> callee_saved_options{};

class CalleeSavedCommand final : public Command {
  public:
    using Command::Command;

  protected:
    std::span<const OptionSpec> options() const override { return callee_saved_options; }

    bool run(lldb::SBDebugger& /*debugger*/, const ParsedArgs& args,
             lldb::SBCommandReturnObject& result) override {
        const std::string word = args.positional.empty() ? "status" : args.positional.front();
        if (args.positional.size() > 1 || (word != "on" && word != "off" && word != "status")) {
            result.SetError(("sframe callee-saved: on, off or status, not '" + word +
                             "' (usage: sframe callee-saved [on | off | status])")
                                .c_str());
            return false;
        }
        if (word != "status") session_.coverage.set_callee_saved(word == "on");
        const bool on = session_.coverage.callee_saved();
        result.Printf("callee-saved registers SFrame has no rules for, in generated debug files: "
                      "%s%s\n",
                      on ? "on" : "off",
                      word == "status"
                          ? ""
                          : " (for modules LLDB loads from now on; loaded modules keep their "
                            "files, and so do modules LLDB's debuginfod client has cached: clear "
                            "plugin.symbol-locator.debuginfod.cache-path to apply it to those)");
        return true;
    }
};

} // namespace

lldb::SBCommandPluginInterface* make_callee_saved_command(Session& s) {
    return new CalleeSavedCommand(s);
}

} // namespace sfunwind::lldb_plugin

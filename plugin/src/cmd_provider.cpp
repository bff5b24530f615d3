// SPDX-License-Identifier: MIT
// `sframe provider on|off|status`: frame-provider mode (LLDB 22 and later).
// A Python scripted frame provider, registered for the target, whose frames
// come from the core's SFrame walk (`sframe bt --from-registers`, started
// from the registers of LLDB's own frame 0, which the provider passes on
// unchanged).
//
// What LLDB 23.1.4 does with provider frames (measured by the CEO and in
// tests/lldb/test_provider.py): bt and frame select work; a provider frame's
// register context is freed while still in use (a use-after-free that
// crashes LLDB), so the frames given here are PC-only dictionaries, never
// ScriptedFrame objects with registers, and `sframe compare` (which reads
// LLDB's frames' registers) refuses to run while the provider is on;
// variables of provider frames are empty; the command-line driver can
// deadlock while it builds provider frames (Python SB API use does not).
#include "command.hpp"
#include "sb_target.hpp"

#include <array>
#include <filesystem>
#include <fstream>
#include <lldb/API/SBCommandInterpreter.h>
#include <lldb/API/SBExecutionContext.h>
#include <system_error>

namespace sfunwind::lldb_plugin {
namespace {

constexpr std::array<OptionSpec, 1> provider_options{{{'\0', "with-registers", false}}};

constexpr const char* provider_module = "sfunwind_frame_provider";
constexpr const char* provider_class = "SFrameFrameProvider";

// The provider, written next to the debug-file cache and imported with
// `command script import`.
constexpr const char* provider_source = R"PY(# SPDX-License-Identifier: MIT
# Written by the sfunwind LLDB plugin (`sframe provider on`): a scripted
# frame provider whose frames are the SFrame walk of sfunwind's core.
# Frame 0 is LLDB's own (live registers); every caller frame is a PC-only
# frame (LLDB 23.1.4 crashes on register contexts of provider frames).
import json

import lldb
from lldb.plugins.scripted_frame_provider import ScriptedFrameProvider


class SFrameFrameProvider(ScriptedFrameProvider):
    @staticmethod
    def get_description():
        return "sfunwind: frames stepped by SFrame"

    def __init__(self, input_frames, args):
        super().__init__(input_frames, args)
        self.pcs = None
        # LLDB 23.1.4 holds the thread's frame-list lock while it asks
        # get_frame_at_index for frames, and touching an input frame there
        # throws "Resource deadlock avoided" (terminating LLDB); the walk is
        # done here, before that.
        self._walk()

    def _walk(self):
        if self.pcs is not None:
            return self.pcs
        self.pcs = []
        top = self.input_frames.GetFrameAtIndex(0)
        if not top.IsValid():
            return self.pcs
        regs = [top.GetPC(), top.GetSP(), top.GetFP()]
        triple = self.target.GetTriple() or ""
        for name in ("lr" if triple.startswith("aarch64") else "r14" if triple.startswith("s390x") else None,):
            if name:
                value = top.FindRegister(name)
                if value.IsValid():
                    regs.append(value.GetValueAsUnsigned())
        res = lldb.SBCommandReturnObject()
        interp = self.target.GetDebugger().GetCommandInterpreter()
        interp.HandleCommand("sframe bt --json -t %d --from-registers %s" %
                             (self.thread.GetIndexID(), ",".join("0x%x" % r for r in regs)), res)
        if res.Succeeded():
            self.pcs = [f["pc"] for f in json.loads(res.GetOutput())["frames"]]
        return self.pcs

    def get_frame_at_index(self, index):
        if index == 0:
            return 0
        pcs = self._walk()
        if index < len(pcs):
            return {"idx": index, "pc": pcs[index]}
        return None
)PY";

bool run(lldb::SBDebugger& debugger, lldb::SBTarget& target, const std::string& line,
         std::string* out) {
    lldb::SBCommandReturnObject r;
    lldb::SBExecutionContext context(target);
    debugger.GetCommandInterpreter().HandleCommand(line.c_str(), context, r, false);
    if (out != nullptr)
        *out = std::string(r.GetOutput() != nullptr ? r.GetOutput() : "") +
               (r.GetError() != nullptr ? r.GetError() : "");
    return r.Succeeded();
}

class ProviderCommand final : public Command {
  public:
    using Command::Command;

  protected:
    std::span<const OptionSpec> options() const override { return provider_options; }

    bool run(lldb::SBDebugger& debugger, const ParsedArgs& args,
             lldb::SBCommandReturnObject& result) override {
        const std::string what = args.positional.empty() ? "status" : args.positional.front();
        const int major = lldb_major_version();
        lldb::SBTarget target = debugger.GetSelectedTarget();
        if (what == "status") {
            if (major < 22) {
                result.Printf("frame providers need LLDB 22 or newer; this is LLDB %d\n", major);
                return true;
            }
            result.Printf("SFrame frame provider: %s\n",
                          target.IsValid() && provider_active(debugger, target) ? "on" : "off");
            return true;
        }
        if (what != "on" && what != "off") {
            result.SetError(("sframe provider: on, off or status, not '" + what +
                             "' (usage: sframe provider [on | off | status])")
                                .c_str());
            return false;
        }
        if (major < 22) {
            result.SetError(
                ("sframe provider: frame providers need LLDB 22 or newer; this is LLDB " +
                 std::to_string(major))
                    .c_str());
            return false;
        }
        if (!target.IsValid()) {
            result.SetError("sframe provider: no target");
            return false;
        }
        if (what == "off") {
            std::string out;
            if (!::sfunwind::lldb_plugin::run(debugger, target, "target frame-provider clear",
                                              &out)) {
                result.SetError(("sframe provider: " + out).c_str());
                return false;
            }
            result.Printf("SFrame frame provider: off\n");
            return true;
        }
        if (args.has("with-registers") && major <= 23) {
            result.SetError(
                ("sframe provider: --with-registers is refused on LLDB " + std::to_string(major) +
                 ": register contexts of provider frames are freed while in use there and crash "
                 "LLDB (use-after-free in 23.1.4)")
                    .c_str());
            return false;
        }
        const std::filesystem::path dir = session_.coverage.cache_dir();
        std::error_code ec;
        std::filesystem::create_directories(dir, ec);
        const std::filesystem::path file = dir / (std::string(provider_module) + ".py");
        {
            std::ofstream f(file);
            f << provider_source;
            if (!f) {
                result.SetError(("sframe provider: cannot write " + file.string()).c_str());
                return false;
            }
        }
        std::string out;
        if (!::sfunwind::lldb_plugin::run(
                debugger, target, "command script import \"" + file.string() + "\"", &out) ||
            !::sfunwind::lldb_plugin::run(debugger, target,
                                          std::string("target frame-provider register -C ") +
                                              provider_module + "." + provider_class,
                                          &out)) {
            result.SetError(("sframe provider: " + out).c_str());
            return false;
        }
        result.Printf("SFrame frame provider: on (%s); bt and frame select show SFrame's frames; "
                      "caller frames "
                      "carry a PC only: no registers or variables (LLDB %d)\n",
                      file.c_str(), major);
        return true;
    }
};

} // namespace

bool provider_active(lldb::SBDebugger& debugger, lldb::SBTarget& target) {
    if (lldb_major_version() < 22) return false;
    std::string out;
    run(debugger, target, "target frame-provider list", &out);
    return out.find(provider_class) != std::string::npos;
}

lldb::SBCommandPluginInterface* make_provider_command(Session& s) {
    return new ProviderCommand(s);
}

} // namespace sfunwind::lldb_plugin

// SPDX-License-Identifier: MIT
// The plugin's entry point and the `sframe` command family. LLDB's plugin
// loader (`plugin load`, and the plugin folders it scans at start-up) looks
// for exactly `bool lldb::PluginInitialize(lldb::SBDebugger)`; it is the
// only symbol this library exports. The library uses the public SB API only,
// which keeps its ABI across LLDB releases, and does not link liblldb: the
// SB symbols come from the LLDB that loads it (sb_symbols.hpp), so one
// build serves LLDB 19 and LLDB 23.
#include "command.hpp"
#include "sb_symbols.hpp"
#include "session.hpp"

#include <exception>
#include <lldb/API/SBCommandInterpreter.h>
#include <lldb/API/SBDebugger.h>

namespace sfunwind::lldb_plugin {

Session& session() {
    static Session* s = new Session(); // never destroyed: see session.hpp
    return *s;
}

void register_commands(lldb::SBDebugger& debugger, Session& s) {
    lldb::SBCommandInterpreter interp = debugger.GetCommandInterpreter();
    lldb::SBCommand sframe =
        interp.AddMultiwordCommand("sframe", "Unwind with SFrame (the .sframe section) through "
                                             "sfunwind, and make LLDB's own unwinder use it.");
    sframe.SetHelpLong(
        "The sfunwind plugin reads the SFrame section of every module of the target.\n"
        "'sframe bt' unwinds the selected thread by SFrame alone; 'sframe compare' puts that\n"
        "unwind next to LLDB's own; 'sframe show-unwind' and 'sframe dump' print the rows.\n"
        "For LLDB's own commands (bt, up, frame variable, finish) the plugin writes, for each\n"
        "module with SFrame, a debug file whose .debug_frame is translated from the SFrame\n"
        "rows. LLDB gets it when it loads the module, from the plugin's cache through\n"
        "target.debug-file-search-paths or from the plugin's debuginfod responder, with no\n"
        "command; 'sframe cover' (also run by a stop hook) adds the files LLDB did not ask\n"
        "for. 'sframe status' says which modules are covered and how.");
    sframe.AddCommand(
        "bt", make_bt_command(s),
        "Backtrace of the selected thread stepped by SFrame alone (sfunwind's unwinder), from the "
        "thread's live registers and memory. Per frame: pc, CFA, sp, fp, the SFrame row used to "
        "step "
        "out of it and the symbol; then why the walk ended. With -r, each frame's x86-64 rbx and "
        "r12-r15 as the analysis of the callee frames' instructions recovers them ('<not saved>' "
        "where it cannot prove where the value is; nothing when 'sframe callee-saved' is off).",
        "sframe bt [-c COUNT] [-t THREAD_INDEX] [-s|--summary] [-r|--registers] [-j|--json]\n"
        "  -c COUNT   stop after COUNT frames (default 100000)\n"
        "  -t INDEX   the thread with this index ('thread list'), not the selected one\n"
        "  -s         print the frame count, time and end only\n"
        "  -r         each frame's recovered callee-saved registers (x86-64 rbx, r12-r15)\n"
        "  -j         JSON output");
    sframe.AddCommand(
        "compare", make_compare_command(s),
        "Unwind the selected thread by SFrame and by LLDB's own unwinder and compare them frame by "
        "frame (pc, CFA, sp, fp). The first divergence is explained: the values on both sides, the "
        "SFrame row used, and the SFrame limit behind it when there is one (no SFrame for the "
        "module "
        "or PC, a rule only valid in the topmost frame, ...). On x86-64, with 'sframe "
        "callee-saved' on, also each frame's recovered rbx and r12-r15 against LLDB's values "
        "(frames #1 on, where both have the frame at the same pc): equal, unknown to SFrame (the "
        "analysis declined), or differing, which makes the frame a mismatch.",
        "sframe compare [-c COUNT] [-t THREAD_INDEX] [-j|--json]");
    sframe.AddCommand(
        "show-unwind", make_show_unwind_command(s),
        "Print the SFrame rows of the function containing an address, or of the functions named "
        "NAME, as a table of rows in the manner of 'image show-unwind'.",
        "sframe show-unwind -a ADDRESS | -n NAME\n"
        "  ADDRESS: a number (0x... or decimal) or $pc, $sp, $<register> of the selected frame");
    sframe.AddCommand(
        "dump", make_dump_command(s),
        "Dump a module's SFrame section in the layout of 'objdump --sframe' (default: the "
        "executable).",
        "sframe dump [MODULE]   (MODULE: a file name as 'image list' shows it, or a path)");
    sframe.AddCommand(
        "status", make_status_command(s),
        "Show which modules have SFrame (version, FDEs, size, how it was found), which 'sframe bt' "
        "uses, and which modules LLDB's own unwinder covers with generated DWARF CFI (the debug "
        "file "
        "and how LLDB found it).",
        "sframe status [-j|--json]");
    sframe.AddCommand(
        "cover", make_cover_command(s),
        "Generate the SFrame-derived debug files of the selected target's modules (cached by "
        "build-id) and make LLDB load the ones it did not get when it loaded the module (a module "
        "with a separate debug file of its own, or LLDB's debuginfod client off). Runs by itself "
        "from a stop hook; --off stops giving LLDB the files for modules it loads later.",
        "sframe cover [--on | --off] [-d|--cache-dir DIR]");
    sframe.AddCommand(
        "provider", make_provider_command(s),
        "Frame-provider mode (LLDB 22 or newer): 'on' registers a scripted frame provider for the "
        "selected target whose caller frames come from sfunwind's SFrame walk, so that bt and "
        "frame "
        "select show them; 'off' clears the target's frame providers. On LLDB 23.1.4 provider "
        "frames "
        "carry a PC only (their register contexts crash LLDB, so --with-registers is refused), "
        "have "
        "no variables, and 'sframe compare' is refused while the provider is on.",
        "sframe provider [on | off | status]");
    sframe.AddCommand(
        "callee-saved", make_callee_saved_command(s),
        "Whether the generated debug files say where each x86-64 function keeps its caller's rbx "
        "and r12-r15, which SFrame has no rules for: 'on' (the default) takes them from the "
        "analysis of each function's instructions, so that LLDB shows those registers and the "
        "variables kept in them in caller frames; 'off' leaves them unavailable there. Applies to "
        "modules LLDB loads from now on (a file made with the other setting is regenerated); "
        "loaded modules keep their files.",
        "sframe callee-saved [on | off | status]");
}

} // namespace sfunwind::lldb_plugin

namespace lldb {
__attribute__((visibility("default"))) bool PluginInitialize(lldb::SBDebugger debugger);
}

bool lldb::PluginInitialize(lldb::SBDebugger debugger) {
    // Before any SB call: see sb_symbols.hpp.
    if (!sfunwind::lldb_plugin::make_sb_api_visible(__builtin_return_address(0))) return false;
    try {
        auto& s = sfunwind::lldb_plugin::session();
        sfunwind::lldb_plugin::register_commands(debugger, s);
        s.coverage.initialize(debugger);
        return true;
    } catch (const std::exception&) {
        return false;
    }
}

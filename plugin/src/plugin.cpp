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

#include <algorithm>
#include <cstddef>
#include <exception>
#include <lldb/API/SBCommandInterpreter.h>
#include <lldb/API/SBDebugger.h>
#include <string>

namespace sfunwind::lldb_plugin {

Session& session() {
    static Session* s = new Session(); // never destroyed: see session.hpp
    return *s;
}

namespace {

// One subcommand: a one-line help (what `help sframe` lists: at most about
// 56 characters, so that LLDB's list keeps one line per subcommand in 80
// columns), its syntax, and the long help `help sframe NAME` adds. Every
// factory returns a Command (command.hpp).
void add(lldb::SBCommand& parent, const char* name, lldb::SBCommandPluginInterface* impl,
         std::size_t max_positional, const char* help, const char* syntax, const char* long_help) {
    // The usage in errors: the syntax's first line, without its notes.
    std::string usage(syntax);
    usage.resize(std::min({usage.find('\n'), usage.find("  "), usage.size()}));
    static_cast<Command*>(impl)->set_usage(std::string("sframe ") + name, usage, max_positional);
    lldb::SBCommand command = parent.AddCommand(name, impl, help, syntax);
    // LLDB wraps help text to the terminal itself: the source's line breaks go.
    std::string text(long_help);
    std::replace(text.begin(), text.end(), '\n', ' ');
    command.SetHelpLong(text.c_str());
}

} // namespace

void register_commands(lldb::SBDebugger& debugger, Session& s) {
    lldb::SBCommandInterpreter interp = debugger.GetCommandInterpreter();
    lldb::SBCommand sframe = interp.AddMultiwordCommand(
        "sframe", "Unwind with SFrame (the .sframe section) through sfunwind.");
    sframe.SetHelpLong(
        "The sfunwind plugin reads the SFrame section of every module of the target. "
        "'sframe bt' unwinds the selected thread by SFrame alone; 'sframe compare' puts that "
        "unwind next to LLDB's own; 'sframe show-unwind' and 'sframe dump' print the rows. "
        "For LLDB's own commands (bt, up, frame variable, finish) the plugin writes, for each "
        "module with SFrame, a debug file whose .debug_frame is translated from the SFrame "
        "rows. LLDB gets it when it loads the module, from the plugin's cache through "
        "target.debug-file-search-paths or from the plugin's debuginfod responder, with no "
        "command; 'sframe cover' (also run by a stop hook) adds the files LLDB did not ask "
        "for. 'sframe status' says whether SFrame is in use for the selected frame, and "
        "which modules are covered and how. In ~/.lldbinit, 'sframe cover --off' turns the "
        "debug files off for every session of this user.");
    add(sframe, "bt", make_bt_command(s), 0, "Backtrace of the selected thread by SFrame alone.",
        "sframe bt [-c COUNT] [-t THREAD_INDEX] [-s|--summary] [-r|--registers] [-j|--json]\n"
        "  -c COUNT   stop after COUNT frames (default 100000)\n"
        "  -t INDEX   the thread with this index ('thread list'), not the selected one\n"
        "  -s         print the frame count, time and end only\n"
        "  -r         each frame's recovered callee-saved registers\n"
        "  -j         JSON output",
        "The selected thread stepped by sfunwind's unwinder alone, from the thread's live\n"
        "registers and memory. Per frame: pc, CFA, sp, fp, the SFrame row used to step out\n"
        "of it and the symbol; then why the walk ended. With -r, each frame's callee-saved\n"
        "registers SFrame has no rules for (x86-64 rbx, r12-r15; AArch64 x19-x28, d8-d15;\n"
        "s390x r6-r10, r12, r13, f8-f15) as the analysis of the callee frames' instructions\n"
        "recovers them ('<not saved>' where it cannot prove where the value is; nothing when\n"
        "'sframe callee-saved' is off).");
    add(sframe, "compare", make_compare_command(s), 0,
        "Compare the SFrame unwind with LLDB's own, frame by frame.",
        "sframe compare [-c COUNT] [-t THREAD_INDEX] [-j|--json]",
        "Unwinds the selected thread by SFrame and by LLDB's own unwinder and compares them\n"
        "frame by frame (pc, CFA, sp, fp). The first divergence is explained: the values on\n"
        "both sides, the SFrame row used, and the SFrame limit behind it when there is one\n"
        "(no SFrame for the module or PC, a rule only valid in the topmost frame, ...).\n"
        "With 'sframe callee-saved' on, also each frame's recovered callee-saved registers\n"
        "against LLDB's values (frames #1 on, where both have the frame at the same pc):\n"
        "equal, unknown to SFrame (the analysis declined), or differing, which makes the\n"
        "frame a mismatch.");
    add(sframe, "show-unwind", make_show_unwind_command(s), 0,
        "Print the SFrame rows of a function.",
        "sframe show-unwind -a ADDRESS | -n NAME\n"
        "  ADDRESS: a number (0x... or decimal) or $pc, $sp, $<register> of the selected frame",
        "The SFrame rows of the function containing an address, or of the functions named\n"
        "NAME, as a table of rows in the manner of 'image show-unwind'.");
    add(sframe, "dump", make_dump_command(s), 1,
        "Dump a module's SFrame section as objdump --sframe does.",
        "sframe dump [MODULE]   (MODULE: a file name as 'image list' shows it, or a path)",
        "A module's SFrame section in the layout of 'objdump --sframe' (default: the\n"
        "executable).");
    add(sframe, "status", make_status_command(s), 0,
        "Is SFrame in use for the selected frame, and why not.", "sframe status [-j|--json]",
        "First the selected frame: whether SFrame unwinds it (the module, the SFrame row,\n"
        "and whether LLDB's own unwinder has the module's SFrame-derived DWARF CFI), or why\n"
        "not (no SFrame in its module, no row for its address, the debug files off). Then\n"
        "per module: SFrame version, FDEs, size, how it was found; whether 'sframe bt' uses\n"
        "it; how LLDB's own unwinder is covered (the debug file, and how LLDB found it).");
    add(sframe, "cover", make_cover_command(s), 0,
        "Give LLDB the SFrame-derived debug files (--off: stop).",
        "sframe cover [--on | --off] [-d|--cache-dir DIR] [--cache-limit SIZE]\n"
        "  SIZE: bytes, or with a suffix K, M, G, T (powers of 1024); 0 for no limit",
        "Generates the SFrame-derived debug files of the selected target's modules (cached\n"
        "by build-id) and makes LLDB load the ones it did not get when it loaded the module\n"
        "(a module with a separate debug file of its own, or LLDB's debuginfod client off).\n"
        "Runs by itself from a stop hook. --off stops giving LLDB the files for modules it\n"
        "loads later (in ~/.lldbinit: for every session of this user); --on resumes.\n"
        "The cache is bounded: after each file it writes, the least recently used files go\n"
        "until it fits its limit (default 1G, else $SFUNWIND_LLDB_CACHE_LIMIT;\n"
        "--cache-limit SIZE sets it and applies it at once). Files this LLDB process uses\n"
        "are kept even beyond the limit.");
    add(sframe, "provider", make_provider_command(s), 1, "Frame-provider mode (LLDB 22 or newer).",
        "sframe provider [on | off | status]",
        "'on' registers a scripted frame provider for the selected target whose caller\n"
        "frames come from sfunwind's SFrame walk, so that bt and frame select show them;\n"
        "'off' clears the target's frame providers. On LLDB 23.1.4 provider frames carry a\n"
        "PC only (their register contexts crash LLDB, so --with-registers is refused), have\n"
        "no variables, and 'sframe compare' is refused while the provider is on.");
    add(sframe, "callee-saved", make_callee_saved_command(s), 1,
        "Recover rbx, r12-r15 in caller frames (on|off).",
        "sframe callee-saved [on | off | status]",
        "Whether the generated debug files say where each x86-64 function keeps its\n"
        "caller's rbx and r12-r15, which SFrame has no rules for: 'on' (the default) takes\n"
        "them from the analysis of each function's instructions, so that LLDB shows those\n"
        "registers and the variables kept in them in caller frames; 'off' leaves them\n"
        "unavailable there. Applies to modules LLDB loads from now on (a file made with the\n"
        "other setting is regenerated); loaded modules keep their files.");
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

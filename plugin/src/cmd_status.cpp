// SPDX-License-Identifier: MIT
// `sframe status`: which modules have SFrame (version, size, where found),
// which `sframe bt` uses, and how LLDB's own unwinder is covered.
#include "command.hpp"
#include "display.hpp"
#include "json_out.hpp"
#include "sfunwind/row.hpp"
#include "sfunwind/unwind/frame_address.hpp"

#include <array>
#include <cstdint>
#include <lldb/API/SBDebugger.h>
#include <lldb/API/SBFrame.h>
#include <lldb/API/SBProcess.h>
#include <lldb/API/SBThread.h>
#include <string>
#include <vector>

namespace sfunwind::lldb_plugin {
namespace {

constexpr std::array<OptionSpec, 1> status_options{{{'j', "json", false}}};

const char* how_found(elf::SframeLocation::How how) {
    switch (how) {
    case elf::SframeLocation::How::SectionName:
        return "section name";
    case elf::SframeLocation::How::SectionType:
        return "section type SHT_GNU_SFRAME";
    case elf::SframeLocation::How::Segment:
        return "PT_GNU_SFRAME segment";
    }
    return "?";
}

// `sframe status`'s answer for the selected frame: whether SFrame unwinds
// it (finds its caller), and if not, why.
std::string frame_line(lldb::SBTarget& target, const std::vector<TargetModule>& modules,
                       const std::vector<ModuleCoverage>& coverage, bool coverage_on) {
    lldb::SBProcess process = target.IsValid() ? target.GetProcess() : lldb::SBProcess();
    lldb::SBFrame frame =
        process.IsValid() ? process.GetSelectedThread().GetSelectedFrame() : lldb::SBFrame();
    if (!frame.IsValid()) return "selected frame: none (no process or core file)";
    const std::uint32_t index = frame.GetFrameID();
    const std::uint64_t pc = frame.GetPC();
    const char* function = frame.GetFunctionName();
    std::string head = "selected frame #" + std::to_string(index) + " (" + to_hex(pc);
    if (function != nullptr) head += std::string(" in ") + function;
    head += "): ";
    // A caller's PC is a return address: its row is the one at PC - 1
    // (FrameAddress), which the walk uses too.
    const FrameAddress where =
        index == 0 ? FrameAddress::instruction_pointer(pc) : FrameAddress::return_address(pc);
    const std::uint64_t addr = where.lookup_address();
    for (std::size_t i = 0; i < modules.size(); ++i) {
        const TargetModule& m = modules[i];
        if (!m.loaded || addr < m.begin || addr >= m.end) continue;
        if (!m.table->sframe())
            return head + "no SFrame: " + m.name + " has none (" + m.table->problem() +
                   "); LLDB's own unwind plans take it";
        auto row = m.table->rows->lookup(addr - m.bias);
        if (!row)
            return head + "no SFrame row in " + m.name + ": " + row.error().message() +
                   "; LLDB's own unwind plans take it";
        if (row->outermost)
            return head + "SFrame marks it the outermost frame (RA undefined): the stack ends here";
        std::string line = head + "SFrame in use: " + m.name + ", " +
                           describe(*row, m.table->rows->abi()) +
                           "; sframe bt: " + (m.loaded ? "yes" : "no") + "; LLDB's unwinder: ";
        const ModuleCoverage& c = coverage[i];
        if (c.state == ModuleCoverage::State::InUse)
            line += "DWARF CFI translated from it (" + c.debug_file + ")";
        else if (!coverage_on)
            line += "not covered: SFrame debug files off (sframe cover --off)";
        else
            line += "not covered: " + c.detail;
        if (index == 0 && c.state == ModuleCoverage::State::InUse)
            line += "; at frame 0 LLDB may prefer its own instruction analysis";
        return line;
    }
    return head + "no SFrame: no module LLDB loaded holds " + to_hex(addr);
}

class StatusCommand final : public Command {
  public:
    using Command::Command;

  protected:
    std::span<const OptionSpec> options() const override { return status_options; }

    bool run(lldb::SBDebugger& debugger, const ParsedArgs& args,
             lldb::SBCommandReturnObject& result) override {
        lldb::SBTarget target = debugger.GetSelectedTarget();
        // A report only: 'sframe cover' (and the plugin's stop hook) change
        // what LLDB uses.
        const auto modules =
            target.IsValid() ? session_.catalog.modules(target) : std::vector<TargetModule>{};
        const auto coverage =
            target.IsValid() ? session_.coverage.report(target) : std::vector<ModuleCoverage>{};

        if (args.has("json")) {
            JsonOut j;
            j.begin_object();
            j.key("lldb").value(lldb::SBDebugger::GetVersionString());
            j.key("cache_dir").value(session_.coverage.cache_dir());
            j.key("coverage_enabled").value(session_.coverage.enabled());
            j.key("callee_saved").value(session_.coverage.callee_saved());
            j.key("unlocked_files").value(session_.coverage.unlocked_files_warning());
            // How many times the cache was listed to apply its size limit.
            j.key("cache_listings").value(session_.coverage.cache_listings());
            // How many debug files' stamps were checked (the stop hook checks
            // a module's until LLDB uses the file).
            j.key("stamp_checks").value(session_.coverage.stamp_checks());
            // How many modules the stop hook (and `sframe cover`) listed in
            // full: a module whose file LLDB uses is not listed again.
            j.key("listed_modules").value(session_.coverage.listed_modules());
            const ResponderStatus r = session_.coverage.responder_status();
            j.key("responder").begin_object();
            j.key("url").value(r.url).key("problem").value(r.problem);
            j.key("requests").value(r.requests).key("served").value(r.served);
            j.end_object();
            j.key("modules").begin_array();
            for (std::size_t i = 0; i < modules.size(); ++i) {
                const TargetModule& m = modules[i];
                const ModuleCoverage& c = coverage[i];
                j.begin_object();
                j.key("name").value(m.name).key("path").value(m.path).key("uuid").value(m.uuid);
                j.key("loaded").value(m.loaded).key("bias").value(m.bias);
                if (m.table->sframe()) {
                    const auto& s = *m.table->sframe();
                    j.key("sframe").begin_object();
                    j.key("version").value(std::uint64_t{static_cast<unsigned>(s.version())});
                    j.key("fdes").value(std::uint64_t{s.fde_count()});
                    j.key("bytes").value(s.used_size());
                    j.key("found_by").value(how_found(m.table->where->how));
                    j.end_object();
                } else {
                    j.key("sframe").null();
                    j.key("problem").value(m.table->problem());
                }
                j.key("sframe_bt").value(m.loaded && m.table->sframe() != nullptr);
                j.key("coverage").value(to_string(c.state));
                j.key("debug_file").value(c.debug_file);
                j.key("detail").value(c.detail);
                j.key("has_eh_frame").value(c.has_eh_frame);
                // Made in this session: what the translation cost.
                if (c.cache.debug_frame_bytes != 0) {
                    j.key("translation").begin_object();
                    j.key("microseconds")
                        .value(static_cast<std::uint64_t>(c.cache.milliseconds * 1000.0));
                    j.key("sframe_bytes").value(c.cache.sframe_bytes);
                    j.key("debug_frame_bytes").value(c.cache.debug_frame_bytes);
                    j.key("functions").value(c.cache.functions);
                    j.key("entry_function").value(c.cache.entry_function != 0);
                    j.key("symbols_added").value(c.cache.symbols_added);
                    j.key("callee_saved_functions").value(c.cache.callee_saved_functions);
                    j.key("skipped_fdes").value(c.cache.skipped_fdes);
                    if (c.cache.skipped_fdes != 0)
                        j.key("first_skipped").value(c.cache.first_skipped);
                    j.end_object();
                }
                j.end_object();
            }
            j.end_array();
            j.end_object();
            result.Printf("%s\n", j.str().c_str());
            return true;
        }

        result.Printf("sfunwind LLDB plugin in %s\n", lldb::SBDebugger::GetVersionString());
        result.Printf("debug files: %s (%s), in target.debug-file-search-paths\n",
                      session_.coverage.cache_dir().c_str(),
                      session_.coverage.enabled() ? "on" : "off");
        if (const auto problem = session_.coverage.unlocked_files_warning(); !problem.empty())
            result.Printf("  %s\n", problem.c_str());
        result.Printf("callee-saved registers SFrame has no rules for, in generated files: %s\n",
                      session_.coverage.callee_saved() ? "on" : "off");
        if (const ResponderStatus r = session_.coverage.responder_status(); !r.url.empty())
            result.Printf(
                "debuginfod responder: %s (first in plugin.symbol-locator.debuginfod.server-urls), "
                "%llu requests, %llu files sent\n",
                r.url.c_str(), static_cast<unsigned long long>(r.requests),
                static_cast<unsigned long long>(r.served));
        else
            result.Printf("debuginfod responder: not running%s%s\n", r.problem.empty() ? "" : ": ",
                          r.problem.c_str());
        if (!target.IsValid()) {
            result.Printf("no target\n");
            return true;
        }
        result.Printf("%s\n",
                      frame_line(target, modules, coverage, session_.coverage.enabled()).c_str());
        for (std::size_t i = 0; i < modules.size(); ++i) {
            const TargetModule& m = modules[i];
            const ModuleCoverage& c = coverage[i];
            result.Printf("%s (%s)\n", m.name.c_str(), m.path.c_str());
            if (!m.table->sframe()) {
                result.Printf("  SFrame: none (%s)\n", m.table->problem().c_str());
                continue;
            }
            const auto& s = *m.table->sframe();
            result.Printf(
                "  SFrame: %s, %u FDEs, %llu bytes, found by %s%s\n", version_name(s.version()),
                s.fde_count(), static_cast<unsigned long long>(s.used_size()),
                how_found(m.table->where->how), s.header().pcrel() ? ", PC-relative starts" : "");
            result.Printf("  sframe bt/compare: %s\n",
                          m.loaded ? "yes" : "no (not loaded in a process)");
            std::string lldb_line;
            switch (c.state) {
            case ModuleCoverage::State::InUse:
                lldb_line = "DWARF CFI from " + c.debug_file + " (" + c.detail + ")";
                break;
            case ModuleCoverage::State::Generated:
                lldb_line = "not yet: " + c.debug_file + " exists, but " + c.detail;
                break;
            case ModuleCoverage::State::Failed:
                lldb_line = "not covered: " + c.detail;
                break;
            case ModuleCoverage::State::NoSframe:
                lldb_line = "LLDB's own";
                break;
            }
            if (c.has_eh_frame && c.state == ModuleCoverage::State::InUse)
                lldb_line += "; the module's own .eh_frame comes first where it covers a PC";
            result.Printf("  LLDB unwind plans: %s\n", lldb_line.c_str());
            // Known only when the file was made in this session.
            if (c.cache.skipped_fdes != 0)
                result.Printf("  not translated: %llu SFrame FDE(s), the first: %s\n",
                              static_cast<unsigned long long>(c.cache.skipped_fdes),
                              c.cache.first_skipped.c_str());
        }
        return true;
    }
};

} // namespace

lldb::SBCommandPluginInterface* make_status_command(Session& s) {
    return new StatusCommand(s);
}

} // namespace sfunwind::lldb_plugin

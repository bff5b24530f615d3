// SPDX-License-Identifier: MIT
// `sframe cover`: generate the debug files of the selected target's modules
// and make LLDB use them (coverage.hpp). Also what the plugin's stop hook runs.
#include "cache_limit.hpp"
#include "command.hpp"

#include <array>
#include <cstdint>
#include <lldb/API/SBFile.h>

namespace sfunwind::lldb_plugin {
namespace {

constexpr std::array<OptionSpec, 5> cover_options{{
    {'\0', "stop-hook", false},
    {'\0', "on", false},
    {'\0', "off", false},
    {'d', "cache-dir", true},
    {'\0', "cache-limit", true},
}};

class CoverCommand final : public Command {
  public:
    using Command::Command;

  protected:
    std::span<const OptionSpec> options() const override { return cover_options; }

    bool run(lldb::SBDebugger& debugger, const ParsedArgs& args,
             lldb::SBCommandReturnObject& result) override {
        if (args.has("on") && args.has("off")) {
            result.SetError(
                "sframe cover: --on or --off, not both (usage: sframe cover [--on | --off] "
                "[-d|--cache-dir DIR] [--cache-limit SIZE])");
            return false;
        }
        if (const auto* text = args.get("cache-limit")) {
            const auto bytes = parse_size(*text);
            if (!bytes) {
                result.SetError(("sframe cover --cache-limit: " + bytes.error().message()).c_str());
                return false;
            }
            if (const auto* dir = args.get("cache-dir"))
                session_.coverage.set_cache_dir(debugger, *dir);
            const Eviction ev = session_.coverage.set_cache_limit(*bytes);
            result.Printf("SFrame debug-file cache %s: limit %s, %llu bytes in use",
                          session_.coverage.cache_dir().c_str(), format_size(*bytes).c_str(),
                          static_cast<unsigned long long>(ev.bytes_after));
            if (!ev.removed.empty())
                result.Printf(" (%zu least recently used file(s) removed)", ev.removed.size());
            if (!ev.busy.empty())
                result.Printf(" (%zu file(s) over the limit left in place, in use by another "
                              "process)",
                              ev.busy.size());
            result.Printf("\n");
            for (const auto& e : ev.errors)
                result.Printf("sframe: cannot remove %s\n", e.c_str());
            return true;
        }
        if (args.has("off")) {
            session_.coverage.set_enabled(debugger, false);
            result.Printf("SFrame debug files: off for modules LLDB loads from now on (files "
                          "already in use stay "
                          "in use)\n");
            return true;
        }
        if (args.has("on")) session_.coverage.set_enabled(debugger, true);
        if (!args.has("stop-hook")) {
            if (const auto problem = session_.coverage.cache_limit_problem(); !problem.empty())
                result.Printf("warning: sframe: %s\n", problem.c_str());
        }
        if (const auto* dir = args.get("cache-dir"))
            session_.coverage.set_cache_dir(debugger, *dir);
        lldb::SBTarget target = debugger.GetSelectedTarget();
        if (!target.IsValid()) {
            if (!args.has("stop-hook"))
                result.Printf("no target; debug files go to %s\n",
                              session_.coverage.cache_dir().c_str());
            return true;
        }
        const bool quiet = args.has("stop-hook");
        const auto lines = session_.coverage.install(debugger, target, !quiet);
        if (quiet) {
            // A stop hook's results are not always shown (LLDB driven from
            // Python in synchronous mode drops them): problems go straight
            // to the debugger's error file, once each.
            std::string text;
            for (const auto& line : lines)
                if (line.find("not covered") != std::string::npos ||
                    line.find("failed") != std::string::npos || line.rfind("hint:", 0) == 0)
                    text += "sframe: " + line + "\n";
            for (const auto& problem : session_.catalog.take_new_problems())
                text += "warning: sframe: " + problem + "\n";
            if (!text.empty()) {
                lldb::SBFile err = debugger.GetErrorFile();
                std::size_t written = 0;
                err.Write(reinterpret_cast<const std::uint8_t*>(text.data()), text.size(),
                          &written);
                err.Flush();
            }
            return true;
        }
        for (const auto& line : lines)
            result.Printf("sframe: %s\n", line.c_str());
        if (const auto problem = session_.coverage.unlocked_files_warning(); !problem.empty())
            result.Printf("warning: sframe: %s\n", problem.c_str());
        if (!quiet) {
            std::size_t in_use = 0;
            std::size_t with_sframe = 0;
            for (const auto& c : session_.coverage.report(target)) {
                if (c.state != ModuleCoverage::State::NoSframe) ++with_sframe;
                if (c.state == ModuleCoverage::State::InUse) ++in_use;
            }
            result.Printf("%zu of %zu modules with SFrame unwind through generated DWARF CFI "
                          "(cache %s, limit %s)\n",
                          in_use, with_sframe, session_.coverage.cache_dir().c_str(),
                          format_size(session_.coverage.cache_limit()).c_str());
        }
        return true;
    }
};

} // namespace

lldb::SBCommandPluginInterface* make_cover_command(Session& s) {
    return new CoverCommand(s);
}

} // namespace sfunwind::lldb_plugin

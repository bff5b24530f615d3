// SPDX-License-Identifier: MIT
// `sframe bt`: the selected thread unwound by the core alone, from the
// thread's live registers and memory.
#include "command.hpp"
#include "display.hpp"
#include "thread_command.hpp"

#include <algorithm>
#include <array>
#include <chrono>
#include <optional>
#include <string>
#include <vector>

namespace sfunwind::lldb_plugin {
namespace {

constexpr std::array<OptionSpec, 6> bt_options{{
    count_option,
    thread_option,
    json_option,
    {'s', "summary", false},
    {'r', "registers", false},
    {'\0', "from-registers", true},
}};

// "    rbx=0x5 r12=<not saved> ...": a frame's own values, as recovered (the
// wording of `sfunwind bt --registers`).
std::string registers_line(const Abi& abi, const callee_saved::FrameValues& v) {
    const auto regs = untracked_callee_saved(abi);
    std::string line = "   ";
    for (std::size_t k = 0; k < regs.size() && k < v.values.size(); ++k)
        line += " " + register_name(abi, regs[k]) + "=" +
                (v.values[k] ? to_hex(*v.values[k]) : std::string("<not saved>"));
    return line;
}

// "PC,SP,FP[,RA]" in hex or decimal.
std::optional<FrameRegs> parse_registers(const std::string& text) {
    std::vector<std::uint64_t> v;
    std::size_t start = 0;
    while (start <= text.size()) {
        const std::size_t end = std::min(text.find(',', start), text.size());
        const auto n = parse_number(std::string_view(text).substr(start, end - start));
        if (!n) return std::nullopt;
        v.push_back(*n);
        start = end + 1;
    }
    if (v.size() < 3 || v.size() > 4) return std::nullopt;
    FrameRegs r;
    r.pc = v[0];
    r.sp = v[1];
    r.fp = v[2];
    if (v.size() == 4) r.ra = v[3];
    return r;
}

constexpr std::uint32_t default_max_frames = 100000;

class BtCommand final : public Command {
  public:
    using Command::Command;

  protected:
    std::span<const OptionSpec> options() const override { return bt_options; }

    bool run(lldb::SBDebugger& debugger, const ParsedArgs& args,
             lldb::SBCommandReturnObject& result) override {
        auto request = thread_request(debugger, args, "sframe bt", default_max_frames, result);
        if (!request) return false;
        StopContext& stop = request->stop;
        std::optional<FrameRegs> given;
        if (const auto* r = args.get("from-registers")) {
            given = parse_registers(*r);
            if (!given) {
                result.SetError(
                    ("sframe bt: --from-registers wants PC,SP,FP[,RA], not '" + *r + "'").c_str());
                return false;
            }
        }
        const auto t0 = std::chrono::steady_clock::now();
        auto walk = sframe_walk(session_.catalog, stop, request->max_frames, given);
        if (!walk) {
            result.SetError(("sframe bt: " + walk.error().message()).c_str());
            return false;
        }
        const bool registers = args.has("registers");
        const std::string withheld = registers ? callee_saved_withheld(session_, stop) : "";
        if (registers && withheld.empty()) recover_callee_saved(**walk, stop);
        const auto t1 = std::chrono::steady_clock::now();
        const SframeWalk& w = **walk;
        const double ms = std::chrono::duration<double, std::milli>(t1 - t0).count();
        if (args.has("json")) {
            JsonOut j;
            j.begin_object();
            j.key("thread").value(std::uint64_t{stop.thread.GetIndexID()});
            j.key("tid").value(std::uint64_t{stop.thread.GetThreadID()});
            j.key("complete").value(w.bt.complete());
            j.key("stop_code").value(w.bt.stop.code_name());
            j.key("stop").value(w.bt.stop.message());
            j.key("microseconds").value(static_cast<std::uint64_t>(ms * 1000.0));
            j.key("memory_reads").value(w.memory_reads);
            if (registers) {
                j.key("callee_saved_recovered").value(withheld.empty());
                if (!withheld.empty()) j.key("callee_saved_withheld").value(withheld);
            }
            j.key("frames");
            json_frames(j, args.has("summary") ? std::vector<FrameView>{} : w.views, &w);
            j.key("frame_count").value(std::uint64_t{w.views.size()});
            j.end_object();
            result.Printf("%s\n", j.str().c_str());
            return true;
        }
        result.Printf("thread #%u: SFrame backtrace, %zu frames (%.3f ms, %llu memory reads)\n",
                      stop.thread.GetIndexID(), w.views.size(), ms,
                      static_cast<unsigned long long>(w.memory_reads));
        if (!args.has("summary"))
            for (std::size_t i = 0; i < w.views.size(); ++i) {
                const FrameView& v = w.views[i];
                std::string line = "  #" + std::to_string(i) + "  pc=" + addr16(v.pc) +
                                   " cfa=" + addr16(v.cfa) + " sp=" + addr16(v.sp) +
                                   " fp=" + addr16(v.fp) + "  " +
                                   (v.function.empty() ? std::string("??") : v.function);
                if (!v.module.empty()) line += " (" + v.module + ")";
                if (!v.rule.empty()) line += "\n        row: " + v.rule;
                if (i < w.saved.size() && w.saved[i].analysed)
                    line += "\n" + registers_line(*stop.abi, w.saved[i]);
                result.Printf("%s\n", line.c_str());
            }
        if (!withheld.empty())
            result.Printf("callee-saved registers: not recovered: %s\n", withheld.c_str());
        if (w.bt.complete())
            result.Printf("end of stack: %s\n", w.bt.stop.message().c_str());
        else
            result.Printf("stopped: %s\n", w.bt.stop.message().c_str());
        return true;
    }
};

} // namespace

lldb::SBCommandPluginInterface* make_bt_command(Session& s) {
    return new BtCommand(s);
}

} // namespace sfunwind::lldb_plugin

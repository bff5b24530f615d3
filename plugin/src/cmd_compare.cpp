// SPDX-License-Identifier: MIT
// `sframe compare`: the same stop unwound by the core (SFrame) and by LLDB's
// own unwinder, frame by frame, with the first divergence explained by the
// core's compare_backtraces().
#include "command.hpp"
#include "display.hpp"
#include "sb_target.hpp"
#include "thread_command.hpp"

#include <array>
#include <optional>
#include <string>
#include <utility>
#include <vector>

namespace sfunwind::lldb_plugin {
namespace {

constexpr std::array<OptionSpec, 3> compare_options{{count_option, thread_option, json_option}};

// Frames compared when -c is not given (both unwinds stop there).
constexpr std::uint32_t default_max_frames = 4096;

std::string field(const char* name, const std::optional<std::uint64_t>& s,
                  const std::optional<std::uint64_t>& r, bool compared, bool equal) {
    if (!compared) return std::string(" ") + name + " " + addr16(s ? s : r) + (s || r ? "?" : " ");
    if (equal) return std::string(" ") + name + " " + addr16(s) + " ";
    return std::string(" ") + name + " SFrame " + addr16(s) + " LLDB " + addr16(r) + " ";
}

// The SFrame walk's recovered callee-saved registers against LLDB's values
// in the same frames, or nothing when they are not recovered ('sframe
// callee-saved off', an ABI the analysis does not cover).
struct RegisterCheck {
    std::optional<callee_saved::RegisterComparison> result;
    std::string withheld; // why there is none
    // Per compared frame: whether a register differs (the frame is a mismatch).
    std::vector<bool> frame_differs;
};

// `withheld`: callee_saved_withheld(), asked once per command (the walk
// recovered the registers when it was empty).
RegisterCheck check_registers(std::string withheld, const StopContext& stop, const SframeWalk& walk,
                              const std::vector<RegisterValues>& lldb,
                              const BacktraceComparison& cmp) {
    RegisterCheck c;
    c.frame_differs.assign(cmp.frames.size(), false);
    c.withheld = std::move(withheld);
    if (!c.withheld.empty()) return c;
    c.result = callee_saved::compare_values(walk.saved, lldb, cmp.frames,
                                            untracked_callee_saved(*stop.abi));
    for (const auto& d : c.result->differences)
        if (d.frame < c.frame_differs.size()) c.frame_differs[d.frame] = true;
    return c;
}

class CompareCommand final : public Command {
  public:
    using Command::Command;

  protected:
    std::span<const OptionSpec> options() const override { return compare_options; }

    bool run(lldb::SBDebugger& debugger, const ParsedArgs& args,
             lldb::SBCommandReturnObject& result) override {
        auto request = thread_request(debugger, args, "sframe compare", default_max_frames, result);
        if (!request) return false;
        StopContext& stop = request->stop;
        const std::uint32_t max_frames = request->max_frames;
        if (provider_active(debugger, stop.target)) {
            result.SetError(
                "sframe compare: the SFrame frame provider is on, so LLDB's frames are SFrame's "
                "own, "
                "and reading their registers crashes LLDB 23; run 'sframe provider off' first");
            return false;
        }
        auto walk = sframe_walk(session_.catalog, stop, max_frames);
        if (!walk) {
            result.SetError(("sframe compare: " + walk.error().message()).c_str());
            return false;
        }
        std::string withheld = callee_saved_withheld(session_, stop);
        if (withheld.empty()) recover_callee_saved(**walk, stop);
        const std::vector<FrameView>& sf = (*walk)->views;
        // LLDB 23.1.4 crashes (SIGSEGV in its unwinder) computing the caller
        // of a frame called from an s390x signal trampoline on the stack
        // (qemu-user; measured with the SB API alone, no plugin). SFrame sees
        // the trampoline as a PC outside every module: LLDB is not asked for
        // frames from the one below it on.
        std::uint32_t lldb_limit = max_frames;
        std::string limited;
        if (stop.abi->arch == Arch::S390x && lldb_major_version() >= 23)
            for (std::size_t i = 1; i < sf.size(); ++i)
                if (sf[i].module.empty()) {
                    lldb_limit = static_cast<std::uint32_t>(i > 1 ? i - 1 : 1);
                    limited = "LLDB's frames stop at frame " + std::to_string(lldb_limit - 1) +
                              ": LLDB " + std::to_string(lldb_major_version()) +
                              " crashes unwinding past an s390x signal trampoline (frame " +
                              std::to_string(i) + ")";
                    break;
                }
        std::vector<RegisterValues> ref_registers;
        const std::vector<FrameView> ref = lldb_frames(stop, lldb_limit, &ref_registers);
        const BacktraceComparison cmp = compare_backtraces(sf, (*walk)->bt.stop, ref);
        const RegisterCheck regs =
            check_registers(std::move(withheld), stop, **walk, ref_registers, cmp);
        // A frame agrees when its values and its callee-saved registers do.
        std::size_t agreeing = 0;
        for (std::size_t i = 0; i < cmp.frames.size(); ++i)
            if (cmp.frames[i].equal() && !regs.frame_differs[i]) ++agreeing;
        const auto first_register_difference = [&]() -> std::optional<std::size_t> {
            for (std::size_t i = 0; i < regs.frame_differs.size(); ++i)
                if (regs.frame_differs[i]) return i;
            return std::nullopt;
        }();

        if (args.has("json")) {
            JsonOut j;
            j.begin_object();
            j.key("thread").value(std::uint64_t{stop.thread.GetIndexID()});
            j.key("sframe_stop_code").value((*walk)->bt.stop.code_name());
            j.key("sframe_stop").value((*walk)->bt.stop.message());
            j.key("sframe_frames");
            json_frames(j, sf, walk->get());
            j.key("lldb_frames");
            json_frames(j, ref);
            j.key("matches").begin_array();
            for (std::size_t i = 0; i < cmp.frames.size(); ++i) {
                const FrameMatch& m = cmp.frames[i];
                j.begin_object();
                j.key("pc")
                    .value(m.pc)
                    .key("cfa")
                    .value(m.cfa)
                    .key("cfa_compared")
                    .value(m.cfa_compared);
                j.key("sp").value(m.sp).key("sp_compared").value(m.sp_compared);
                j.key("fp").value(m.fp).key("fp_compared").value(m.fp_compared);
                j.key("lldb_callee_saved");
                if (i < ref_registers.size())
                    json_registers(j, *stop.abi, ref_registers[i]);
                else
                    j.null();
                j.key("callee_saved_equal").value(!regs.frame_differs[i]);
                j.end_object();
            }
            j.end_array();
            j.key("equal").value(std::uint64_t{agreeing});
            j.key("callee_saved");
            if (regs.result) {
                const auto& r = *regs.result;
                j.begin_object();
                j.key("compared").value(std::uint64_t{r.compared});
                j.key("equal").value(std::uint64_t{r.equal});
                j.key("unknown").value(std::uint64_t{r.unknown});
                j.key("wrong").value(std::uint64_t{r.differences.size()});
                j.key("differences").begin_array();
                for (const auto& d : r.differences) {
                    j.begin_object();
                    j.key("frame").value(std::uint64_t{d.frame});
                    j.key("register").value(register_name(*stop.abi, d.reg));
                    j.key("sframe").value(d.sframe);
                    j.key("lldb").value(d.reference);
                    j.end_object();
                }
                j.end_array();
                j.end_object();
            } else {
                j.null();
                j.key("callee_saved_withheld").value(regs.withheld);
            }
            if (!limited.empty()) j.key("lldb_frames_limited").value(limited);
            j.key("divergence");
            if (cmp.first) {
                j.begin_object();
                j.key("kind").value(to_string(cmp.first->kind));
                j.key("frame").value(std::uint64_t{cmp.first->frame});
                j.key("limit").value(to_string(cmp.first->limit));
                j.key("explanation").value(cmp.first->explanation);
                j.end_object();
            } else {
                j.null();
            }
            j.end_object();
            result.Printf("%s\n", j.str().c_str());
            return true;
        }

        result.Printf("thread #%u: SFrame (%zu frames) against LLDB's unwinder (%zu frames)\n",
                      stop.thread.GetIndexID(), sf.size(), ref.size());
        for (std::size_t i = 0; i < cmp.frames.size(); ++i) {
            const FrameMatch& m = cmp.frames[i];
            const FrameView& s = sf[i];
            const FrameView& r = ref[i];
            const bool same = m.equal() && !regs.frame_differs[i];
            std::string line = "  #" + std::to_string(i) + (same ? "  same " : "  DIFF ");
            line += m.pc ? " pc " + addr16(s.pc) + " "
                         : " pc SFrame " + addr16(s.pc) + " LLDB " + addr16(r.pc) + " ";
            line += field("cfa", s.cfa, r.cfa, m.cfa_compared, m.cfa);
            line += field("sp", s.sp, r.sp, m.sp_compared, m.sp);
            line += field("fp", s.fp, r.fp, m.fp_compared, m.fp);
            line += " " + (r.function.empty() ? s.function : r.function);
            if (regs.result)
                for (const auto& d : regs.result->differences)
                    if (d.frame == i)
                        line += "\n     DIFFERS: " + register_name(*stop.abi, d.reg) + " " +
                                to_hex(d.sframe) + " (SFrame) vs " + to_hex(d.reference) +
                                " (LLDB)";
            result.Printf("%s\n", line.c_str());
        }
        for (std::size_t i = cmp.frames.size(); i < ref.size(); ++i)
            result.Printf("  #%zu  LLDB only   pc %s  %s\n", i, addr16(ref[i].pc).c_str(),
                          ref[i].function.c_str());
        for (std::size_t i = cmp.frames.size(); i < sf.size(); ++i)
            result.Printf("  #%zu  SFrame only pc %s  %s\n", i, addr16(sf[i].pc).c_str(),
                          sf[i].function.c_str());
        if (!limited.empty()) result.Printf("note: %s\n", limited.c_str());
        result.Printf("%zu of %zu frames agree (a ? marks a value only one side has)\n", agreeing,
                      cmp.frames.size());
        if (regs.result)
            result.Printf(
                "Compared %zu callee-saved register values with LLDB's (frames #1 on): %zu "
                "equal, %zu unknown to SFrame, %zu differ\n",
                regs.result->compared, regs.result->equal, regs.result->unknown,
                regs.result->differences.size());
        else
            result.Printf("callee-saved registers: not compared: %s\n", regs.withheld.c_str());
        if (first_register_difference)
            result.Printf("callee-saved registers differ first at frame %zu\n",
                          *first_register_difference);
        if (cmp.first)
            result.Printf("first divergence at frame %zu (%s; SFrame limit: %s): %s\n",
                          cmp.first->frame, to_string(cmp.first->kind), to_string(cmp.first->limit),
                          cmp.first->explanation.c_str());
        else if (!first_register_difference)
            result.Printf("the two unwinds agree on every frame\n");
        return true;
    }
};

} // namespace

lldb::SBCommandPluginInterface* make_compare_command(Session& s) {
    return new CompareCommand(s);
}

} // namespace sfunwind::lldb_plugin

// SPDX-License-Identifier: MIT
// `sframe compare`: the same stop unwound by the core (SFrame) and by LLDB's
// own unwinder, frame by frame, with the first divergence explained by the
// core's compare_backtraces().
#include "command.hpp"
#include "display.hpp"
#include "sb_target.hpp"
#include "thread_command.hpp"

#include <array>

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
        const std::vector<FrameView> ref = lldb_frames(stop, lldb_limit);
        const BacktraceComparison cmp = compare_backtraces(sf, (*walk)->bt.stop, ref);

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
            for (const auto& m : cmp.frames) {
                j.begin_object();
                j.key("pc")
                    .value(m.pc)
                    .key("cfa")
                    .value(m.cfa)
                    .key("cfa_compared")
                    .value(m.cfa_compared);
                j.key("sp").value(m.sp).key("sp_compared").value(m.sp_compared);
                j.key("fp").value(m.fp).key("fp_compared").value(m.fp_compared);
                j.end_object();
            }
            j.end_array();
            j.key("equal").value(std::uint64_t{cmp.equal});
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
            std::string line = "  #" + std::to_string(i) + (m.equal() ? "  same " : "  DIFF ");
            line += m.pc ? " pc " + addr16(s.pc) + " "
                         : " pc SFrame " + addr16(s.pc) + " LLDB " + addr16(r.pc) + " ";
            line += field("cfa", s.cfa, r.cfa, m.cfa_compared, m.cfa);
            line += field("sp", s.sp, r.sp, m.sp_compared, m.sp);
            line += field("fp", s.fp, r.fp, m.fp_compared, m.fp);
            line += " " + (r.function.empty() ? s.function : r.function);
            result.Printf("%s\n", line.c_str());
        }
        for (std::size_t i = cmp.frames.size(); i < ref.size(); ++i)
            result.Printf("  #%zu  LLDB only   pc %s  %s\n", i, addr16(ref[i].pc).c_str(),
                          ref[i].function.c_str());
        for (std::size_t i = cmp.frames.size(); i < sf.size(); ++i)
            result.Printf("  #%zu  SFrame only pc %s  %s\n", i, addr16(sf[i].pc).c_str(),
                          sf[i].function.c_str());
        if (!limited.empty()) result.Printf("note: %s\n", limited.c_str());
        result.Printf("%zu of %zu frames agree (a ? marks a value only one side has)\n", cmp.equal,
                      cmp.frames.size());
        if (cmp.first)
            result.Printf("first divergence at frame %zu (%s; SFrame limit: %s): %s\n",
                          cmp.first->frame, to_string(cmp.first->kind), to_string(cmp.first->limit),
                          cmp.first->explanation.c_str());
        else
            result.Printf("the two unwinds agree on every frame\n");
        return true;
    }
};

} // namespace

lldb::SBCommandPluginInterface* make_compare_command(Session& s) {
    return new CompareCommand(s);
}

} // namespace sfunwind::lldb_plugin

// SPDX-License-Identifier: MIT
#include "thread_command.hpp"

#include <string>

namespace sfunwind::lldb_plugin {
namespace {

// Enough for any real stack, small enough that a typo cannot make a command
// walk for minutes.
constexpr std::uint64_t max_frame_count = 10'000'000;

} // namespace

std::optional<ThreadRequest> thread_request(lldb::SBDebugger& debugger, const ParsedArgs& args,
                                            std::string_view command,
                                            std::uint32_t default_max_frames,
                                            lldb::SBCommandReturnObject& result) {
    const std::string name(command);
    ThreadRequest r;
    r.max_frames = default_max_frames;
    if (const auto* c = args.get("count")) {
        const auto n = parse_number(*c);
        if (!n || *n == 0 || *n > max_frame_count) {
            result.SetError(
                (name + ": bad frame count '" + *c + "' (see 'help " + name + "')").c_str());
            return std::nullopt;
        }
        r.max_frames = static_cast<std::uint32_t>(*n);
    }
    std::optional<std::uint32_t> thread;
    if (const auto* t = args.get("thread")) {
        const auto n = parse_number(*t);
        if (!n || *n > 0xffffffffU) {
            result.SetError(
                (name + ": bad thread index '" + *t + "' (see 'help " + name + "')").c_str());
            return std::nullopt;
        }
        thread = static_cast<std::uint32_t>(*n);
    }
    auto stop = current_stop(debugger, thread);
    if (!stop) {
        result.SetError((name + ": " + stop.error().message()).c_str());
        return std::nullopt;
    }
    r.stop = std::move(*stop);
    return r;
}

std::string callee_saved_withheld(const Session& session, const StopContext& stop) {
    if (!callee_saved::supported(*stop.abi))
        return "the callee-saved register analysis does not cover " + std::string(stop.abi->name);
    if (!session.coverage.callee_saved()) return "'sframe callee-saved' is off";
    return {};
}

void json_registers(JsonOut& j, const Abi& abi,
                    std::span<const std::optional<std::uint64_t>> values) {
    const auto regs = untracked_callee_saved(abi);
    j.begin_object();
    for (std::size_t k = 0; k < regs.size() && k < values.size(); ++k)
        j.key(register_name(abi, regs[k])).value(values[k]);
    j.end_object();
}

void json_frames(JsonOut& j, const std::vector<FrameView>& frames, const SframeWalk* walk) {
    j.begin_array();
    for (std::size_t i = 0; i < frames.size(); ++i) {
        const FrameView& v = frames[i];
        j.begin_object();
        if (walk != nullptr && i < walk->link_pcs.size())
            j.key("module_path")
                .value(walk->module_paths[i])
                .key("link_pc")
                .value(walk->link_pcs[i]);
        j.key("pc").value(v.pc).key("cfa").value(v.cfa).key("sp").value(v.sp).key("fp").value(v.fp);
        j.key("function").value(v.function).key("module").value(v.module).key("row").value(v.rule);
        if (walk != nullptr && i < walk->saved.size() && walk->saved[i].analysed)
            json_registers(j.key("callee_saved"), *walk->abi, walk->saved[i].values);
        j.end_object();
    }
    j.end_array();
}

} // namespace sfunwind::lldb_plugin

// SPDX-License-Identifier: MIT
// What `sframe bt` and `sframe compare` share: the -c (frame count), -t
// (thread) and -j (JSON) options, the stop they unwind, and their frames as
// JSON.
#pragma once

#include "args.hpp"
#include "json_out.hpp"
#include "session.hpp"
#include "walk.hpp"

#include <cstdint>
#include <lldb/API/SBCommandReturnObject.h>
#include <lldb/API/SBDebugger.h>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

namespace sfunwind::lldb_plugin {

inline constexpr OptionSpec count_option{'c', "count", true};
inline constexpr OptionSpec thread_option{'t', "thread", true};
inline constexpr OptionSpec json_option{'j', "json", false};

struct ThreadRequest {
    std::uint32_t max_frames = 0;
    StopContext stop;
};

// The frame limit (-c, else `default_max_frames`) and the stop of the thread
// -t names (else the selected one). On a bad option value, or when there is
// no stopped thread, sets "COMMAND: why" as the result's error and returns
// nothing.
std::optional<ThreadRequest> thread_request(lldb::SBDebugger& debugger, const ParsedArgs& args,
                                            std::string_view command,
                                            std::uint32_t default_max_frames,
                                            lldb::SBCommandReturnObject& result);

// Why the SFrame walk's callee-saved registers (x86-64 rbx, r12-r15) are
// not recovered at this stop (an ABI the analysis does not cover, 'sframe
// callee-saved off'), or empty when they are: `sframe bt -r` and `sframe
// compare` decide alike.
std::string callee_saved_withheld(const Session& session, const StopContext& stop);

// Callee-saved register values (untracked_callee_saved(abi) order) as a JSON
// object by register name, null where unknown: {"rbx": 5, "r12": null, ...}.
void json_registers(JsonOut& j, const Abi& abi,
                    std::span<const std::optional<std::uint64_t>> values);

// Frames as a JSON array of objects: pc, cfa, sp, fp, function, module, row
// ("" when there is none) and, with the SFrame walk they came from, each
// frame's module file and the link-time address its row was looked up at,
// and its recovered callee-saved registers where the walk has them
// (callee_saved, see json_registers()).
void json_frames(JsonOut& j, const std::vector<FrameView>& frames,
                 const SframeWalk* walk = nullptr);

} // namespace sfunwind::lldb_plugin

// SPDX-License-Identifier: MIT
// Which files the debugger and the processes it debugs have mapped, from
// /proc (Linux proc(5)): where the debuginfod responder looks for the file of
// a build-id LLDB asks about. A library the dynamic loader just reported
// (launch, dlopen) or one of an attached process is mapped in the debugged
// process, which is a child of LLDB's lldb-server (launch) or traced by it
// (attach); a core file LLDB reads is mapped in LLDB itself.
#pragma once

#include <optional>
#include <string>
#include <vector>

namespace sfunwind::lldb_plugin {

// The distinct files of /proc/PID/maps, in address order ("self" for this
// process); empty when it cannot be read.
std::vector<std::string> mapped_files(const std::string& pid);

// The processes this one debugs: its descendants (lldb-server and what it
// launched) and the processes one of them traces (attach), as /proc names.
// Reads every process's /proc/PID/status: about 8 ms with 660 processes.
std::vector<std::string> debugged_processes();

// This process's descendants, from the /proc/PID/task/TID/children lists
// (proc(5); CONFIG_PROC_CHILDREN), sorted; none when this process's lists
// cannot be read. Reads the lists of this process and its descendants only.
std::optional<std::vector<long>> descendant_processes();

} // namespace sfunwind::lldb_plugin

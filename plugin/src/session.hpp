// SPDX-License-Identifier: MIT
// What the plugin keeps for the lifetime of the process it is loaded in: the
// module catalog and the debug-file coverage of every target. One Session
// serves every SBDebugger the plugin is initialised for.
#pragma once

#include "coverage.hpp"
#include "module_catalog.hpp"

#include <memory>

namespace sfunwind::lldb_plugin {

struct Session {
    ModuleCatalog catalog;
    Coverage coverage{catalog};
};

// The process-wide session, created on first use and never destroyed: LLDB
// may run commands on any thread until it unloads, and it never unloads plugins.
Session& session();

} // namespace sfunwind::lldb_plugin

// SPDX-License-Identifier: MIT
// The plugin does not link liblldb (one build serves LLDB 19 and 23, whose
// libraries have different sonames), so its SB API calls are bound lazily to
// the liblldb already in the process. When LLDB runs inside Python, `import
// lldb` loads liblldb with RTLD_LOCAL and those lookups would fail; this
// promotes the liblldb that called PluginInitialize to the global scope
// first (dlopen with RTLD_NOLOAD | RTLD_GLOBAL), so the bindings succeed.
#pragma once

namespace sfunwind::lldb_plugin {

// `caller` is an address inside the code that called PluginInitialize.
// Returns false when no loaded object exporting the SB API was found; the
// plugin must then make no SB call.
bool make_sb_api_visible(const void* caller);

} // namespace sfunwind::lldb_plugin

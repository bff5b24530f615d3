// SPDX-License-Identifier: MIT
#include "sb_symbols.hpp"

#include <dlfcn.h>
#include <link.h>
#include <string_view>

namespace sfunwind::lldb_plugin {
namespace {

// A symbol every liblldb since the SB API began exports.
constexpr const char* probe_symbol = "_ZN4lldb10SBDebugger21GetCommandInterpreterEv";

bool promote(const char* path) {
    if (path == nullptr || *path == '\0') return false;
    void* handle = ::dlopen(path, RTLD_LAZY | RTLD_GLOBAL | RTLD_NOLOAD);
    if (handle == nullptr) return false;
    const bool has_api = ::dlsym(handle, probe_symbol) != nullptr;
    // The NOLOAD reference is dropped again; the promotion to the global
    // scope stays for the life of the library.
    ::dlclose(handle);
    return has_api;
}

int promote_lldb_objects(struct dl_phdr_info* info, std::size_t, void* found) {
    const std::string_view name(info->dlpi_name != nullptr ? info->dlpi_name : "");
    if (name.find("lldb") != std::string_view::npos && promote(info->dlpi_name)) {
        *static_cast<bool*>(found) = true;
        return 1;
    }
    return 0;
}

} // namespace

bool make_sb_api_visible(const void* caller) {
    // Already visible (the lldb driver links liblldb): nothing to do.
    if (::dlsym(RTLD_DEFAULT, probe_symbol) != nullptr) return true;
    Dl_info info{};
    if (::dladdr(caller, &info) != 0 && promote(info.dli_fname)) return true;
    bool found = false;
    ::dl_iterate_phdr(promote_lldb_objects, &found);
    return found;
}

} // namespace sfunwind::lldb_plugin

// SPDX-License-Identifier: MIT
#include "target_create_hook.hpp"

#include "coverage.hpp"

#include <cstdlib>
#include <filesystem>
#include <list>
#include <lldb/API/SBCommandInterpreter.h>
#include <mutex>
#include <string_view>
#include <system_error>

namespace sfunwind::lldb_plugin {
namespace {

// The options of `target create` that take a value, by short and long name
// (LLDB 19 and 23). -d/--no-dependents takes one only when attached.
constexpr std::string_view valued_short = "apvbScslr";
constexpr std::string_view valued_long[] = {"arch", "platform", "version", "build",      "sysroot",
                                            "core", "label",    "symfile", "remote-file"};

std::string absolute(const std::string& path) {
    if (path.empty()) return path;
    std::string p = path;
    if (p.size() >= 2 && p[0] == '~' && p[1] == '/')
        if (const char* home = std::getenv("HOME")) p = home + p.substr(1);
    std::error_code ec;
    const auto abs = std::filesystem::absolute(p, ec);
    return ec ? p : abs.lexically_normal().string();
}

// One baton per debugger, alive as long as the process: LLDB keeps the
// pointer in its command object and never gives it back.
struct Baton {
    Coverage* coverage;
    std::string debugger_name;
};

std::mutex batons_mutex;
std::list<Baton>& batons() {
    static auto* list =
        new std::list<Baton>(); // never destroyed: LLDB may call the hook until it exits
    return *list;
}

bool on_target_create(void* baton, const char** argv) {
    try {
        const auto* b = static_cast<const Baton*>(baton);
        const TargetCreateFiles files = parse_target_create(argv);
        b->coverage->prepare(b->debugger_name, files.program, files.core);
    } catch (...) {
        // The command must run whatever happens here.
    }
    return false; // not handled: LLDB runs `target create` itself
}

} // namespace

TargetCreateFiles parse_target_create(const char** argv) {
    TargetCreateFiles out;
    if (argv == nullptr) return out;
    std::size_t i = 0;
    // The command's own name words ("target", "create").
    for (const char* word : {"target", "create"})
        if (argv[i] != nullptr && std::string_view(argv[i]) == word) ++i;
    bool options = true;
    std::string core;
    for (; argv[i] != nullptr; ++i) {
        const std::string_view w = argv[i];
        if (options && w == "--") {
            options = false;
            continue;
        }
        if (options && w.size() > 2 && w.substr(0, 2) == "--") {
            std::string_view name = w.substr(2);
            std::string_view value;
            bool has_value = false;
            if (const std::size_t eq = name.find('='); eq != std::string_view::npos) {
                value = name.substr(eq + 1);
                name = name.substr(0, eq);
                has_value = true;
            }
            bool valued = false;
            for (const auto v : valued_long)
                valued = valued || name == v;
            if (valued && !has_value && argv[i + 1] != nullptr) {
                value = argv[++i];
                has_value = true;
            }
            if (name == "core" && has_value) core = std::string(value);
            continue;
        }
        if (options && w.size() > 1 && w[0] == '-') {
            // Clustered flags end at the first option that takes a value,
            // which takes the rest of the word or the next word.
            for (std::size_t k = 1; k < w.size(); ++k) {
                const char c = w[k];
                if (c == 'd') break; // its value, if any, is the rest of the word
                if (valued_short.find(c) == std::string_view::npos) continue;
                std::string_view value = w.substr(k + 1);
                if (value.empty() && argv[i + 1] != nullptr) value = argv[++i];
                if (c == 'c') core = std::string(value);
                break;
            }
            continue;
        }
        if (out.program.empty()) out.program = absolute(std::string(w));
    }
    out.core = absolute(core);
    return out;
}

bool install_target_create_hook(lldb::SBDebugger& debugger, Coverage& coverage) {
    Baton* b = nullptr;
    {
        const std::lock_guard lock(batons_mutex);
        b = &batons().emplace_back(Baton{&coverage, debugger.GetInstanceName()});
    }
    return debugger.GetCommandInterpreter().SetCommandOverrideCallback("target create",
                                                                       &on_target_create, b);
}

} // namespace sfunwind::lldb_plugin

// SPDX-License-Identifier: MIT
// The options dump, lookup and validate share: --raw, --base ADDR, --help.
#pragma once

#include "commands.hpp"
#include "input.hpp"

#include <cstdio>
#include <optional>
#include <variant>

namespace sfunwind::cli {

struct CommonOptions {
    InputOptions input;
    Args positional;
    bool help = false;
};

// Splits args into shared options and the rest; prints the error and returns
// nullopt on bad usage.
inline std::optional<CommonOptions> parse_common(const Args& args, const char* command) {
    CommonOptions o;
    bool base_given = false;
    for (std::size_t i = 0; i < args.size(); ++i) {
        const std::string& a = args[i];
        if (a == "--help" || a == "-h") {
            o.help = true;
        } else if (a == "--raw") {
            o.input.raw = true;
        } else if (a == "--base") {
            if (i + 1 >= args.size()) {
                std::fprintf(stderr, "sfunwind %s: --base needs an address\n", command);
                return std::nullopt;
            }
            auto v = parse_address(args[++i]);
            if (!v) {
                std::fprintf(stderr, "sfunwind %s: bad address '%s'\n", command, args[i].c_str());
                return std::nullopt;
            }
            o.input.base = *v;
            base_given = true;
        } else if (a.size() > 1 && a[0] == '-' && a != "--") {
            std::fprintf(stderr, "sfunwind %s: unknown option '%s'\n", command, a.c_str());
            return std::nullopt;
        } else if (a != "--") {
            o.positional.push_back(a);
        }
    }
    if (base_given && !o.input.raw) {
        std::fprintf(stderr, "sfunwind %s: --base only applies with --raw\n", command);
        return std::nullopt;
    }
    return o;
}

// The common head of a command over files: parses the shared options, prints
// `help` for --help (exit 0) or when fewer than `min_files` are given (exit 2).
// Returns the options to go on with, or the exit status to return.
inline std::variant<CommonOptions, int> begin_command(const Args& args, const char* command,
                                                      const char* help, std::size_t min_files = 1) {
    auto o = parse_common(args, command);
    if (!o) return exit_usage;
    if (o->help) {
        std::fputs(help, stdout);
        return exit_ok;
    }
    if (o->positional.size() < min_files) {
        std::fputs(help, stderr);
        return exit_usage;
    }
    return std::move(*o);
}

} // namespace sfunwind::cli

// SPDX-License-Identifier: MIT
// Option parsing for the `sframe` commands: LLDB hands a command its words
// already split; this sorts them into options and positional arguments.
#pragma once

#include "sfunwind/error.hpp"

#include <cstdint>
#include <map>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

namespace sfunwind::lldb_plugin {

struct OptionSpec {
    char short_name; // '\0' when there is none
    std::string_view long_name;
    bool takes_value;
};

struct ParsedArgs {
    std::map<std::string, std::string, std::less<>> options; // by long name; "" for flags
    std::vector<std::string> positional;

    bool has(std::string_view name) const { return options.find(name) != options.end(); }
    const std::string* get(std::string_view name) const {
        auto it = options.find(name);
        return it == options.end() ? nullptr : &it->second;
    }
};

// `argv` is LLDB's null-terminated word list (may be null). Unknown options
// and missing values are errors naming the word.
Expected<ParsedArgs> parse_args(char** argv, std::span<const OptionSpec> specs);

// A decimal or 0x-prefixed hexadecimal unsigned number, the whole word.
std::optional<std::uint64_t> parse_number(std::string_view word);

} // namespace sfunwind::lldb_plugin

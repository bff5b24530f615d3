// SPDX-License-Identifier: MIT
#include "args.hpp"

#include <charconv>

namespace sfunwind::lldb_plugin {

Expected<ParsedArgs> parse_args(char** argv, std::span<const OptionSpec> specs) {
    ParsedArgs out;
    std::vector<std::string> words;
    for (char** p = argv; p != nullptr && *p != nullptr; ++p)
        words.emplace_back(*p);
    for (std::size_t i = 0; i < words.size(); ++i) {
        const std::string& w = words[i];
        if (w == "--") {
            out.positional.insert(out.positional.end(),
                                  words.begin() + static_cast<std::ptrdiff_t>(i) + 1, words.end());
            break;
        }
        if (w.size() < 2 || w[0] != '-' || (w[1] >= '0' && w[1] <= '9')) {
            out.positional.push_back(w);
            continue;
        }
        const OptionSpec* spec = nullptr;
        std::string inline_value;
        bool has_inline = false;
        if (w[1] == '-') {
            std::string_view name = std::string_view(w).substr(2);
            if (auto eq = name.find('='); eq != std::string_view::npos) {
                inline_value = std::string(name.substr(eq + 1));
                has_inline = true;
                name = name.substr(0, eq);
            }
            for (const auto& s : specs)
                if (s.long_name == name) spec = &s;
        } else {
            for (const auto& s : specs)
                if (s.short_name != '\0' && s.short_name == w[1]) spec = &s;
            if (spec != nullptr && w.size() > 2) {
                inline_value = w.substr(2);
                has_inline = true;
            }
        }
        if (spec == nullptr) return Error(Errc::Malformed, "unknown option '" + w + "'");
        std::string value;
        if (spec->takes_value) {
            if (has_inline) {
                value = inline_value;
            } else if (i + 1 < words.size()) {
                value = words[++i];
            } else {
                return Error(Errc::Malformed, "option '" + w + "' needs a value");
            }
        } else if (has_inline) {
            return Error(Errc::Malformed, "option '" + w + "' takes no value");
        }
        out.options[std::string(spec->long_name)] = value;
    }
    return out;
}

std::optional<std::uint64_t> parse_number(std::string_view word) {
    int base = 10;
    if (word.size() > 2 && word[0] == '0' && (word[1] == 'x' || word[1] == 'X')) {
        word.remove_prefix(2);
        base = 16;
    }
    if (word.empty()) return std::nullopt;
    std::uint64_t v = 0;
    const auto [ptr, ec] = std::from_chars(word.data(), word.data() + word.size(), v, base);
    if (ec != std::errc() || ptr != word.data() + word.size()) return std::nullopt;
    return v;
}

} // namespace sfunwind::lldb_plugin

// SPDX-License-Identifier: MIT
#include "proc_maps.hpp"

#include <cerrno>
#include <cstring>
#include <fstream>

namespace sfunwind::cli::bt {
namespace {

// Splits off the next space-separated field.
std::string_view next_field(std::string_view& rest) {
    const auto start = rest.find_first_not_of(' ');
    if (start == std::string_view::npos) {
        rest = {};
        return {};
    }
    rest.remove_prefix(start);
    const auto end = rest.find(' ');
    const std::string_view field = rest.substr(0, end);
    rest.remove_prefix(end == std::string_view::npos ? rest.size() : end);
    return field;
}

std::optional<std::uint64_t> parse_hex(std::string_view s) {
    if (s.empty() || s.size() > 16) return std::nullopt;
    std::uint64_t v = 0;
    for (char c : s) {
        unsigned d = 0;
        if (c >= '0' && c <= '9')
            d = static_cast<unsigned>(c - '0');
        else if (c >= 'a' && c <= 'f')
            d = static_cast<unsigned>(c - 'a' + 10);
        else if (c >= 'A' && c <= 'F')
            d = static_cast<unsigned>(c - 'A' + 10);
        else
            return std::nullopt;
        v = (v << 4) | d;
    }
    return v;
}

std::optional<std::uint64_t> parse_dec(std::string_view s) {
    if (s.empty() || s.size() > 19) return std::nullopt;
    std::uint64_t v = 0;
    for (char c : s) {
        if (c < '0' || c > '9') return std::nullopt;
        v = v * 10 + static_cast<std::uint64_t>(c - '0');
    }
    return v;
}

} // namespace

std::optional<MapEntry> parse_maps_line(std::string_view line) {
    // "start-end perms offset dev inode    path"; the path may contain spaces.
    MapEntry e;
    std::string_view rest = line;
    const std::string_view range = next_field(rest);
    const auto dash = range.find('-');
    if (dash == std::string_view::npos) return std::nullopt;
    auto start = parse_hex(range.substr(0, dash));
    auto end = parse_hex(range.substr(dash + 1));
    const std::string_view perms = next_field(rest);
    auto offset = parse_hex(next_field(rest));
    const std::string_view dev = next_field(rest);
    auto inode = parse_dec(next_field(rest));
    if (!start || !end || !offset || !inode || *end < *start || perms.size() != 4 || dev.empty())
        return std::nullopt;
    e.start = *start;
    e.end = *end;
    e.offset = *offset;
    e.perms = std::string(perms);
    e.dev = std::string(dev);
    e.inode = *inode;
    const auto path_start = rest.find_first_not_of(' ');
    if (path_start != std::string_view::npos) {
        std::string_view path = rest.substr(path_start);
        constexpr std::string_view deleted = " (deleted)";
        if (path.size() > deleted.size() && path.substr(path.size() - deleted.size()) == deleted) {
            e.deleted = true;
            path.remove_suffix(deleted.size());
        }
        e.path = std::string(path);
    }
    return e;
}

Expected<std::vector<MapEntry>> read_proc_maps(pid_t pid) {
    const std::string path = "/proc/" + std::to_string(pid) + "/maps";
    std::ifstream in(path);
    if (!in) return Error(Errc::Io, "cannot read " + path + ": " + std::strerror(errno));
    std::vector<MapEntry> out;
    std::string line;
    while (std::getline(in, line))
        if (auto e = parse_maps_line(line)) out.push_back(std::move(*e));
    if (out.empty())
        return Error(Errc::Io,
                     path + " lists no mappings (has process " + std::to_string(pid) + " exited?)");
    return out;
}

} // namespace sfunwind::cli::bt

// SPDX-License-Identifier: MIT
// Helpers shared by the unit tests: files, test vectors, text normalisation.
#pragma once

#include <cstdint>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <sstream>
#include <string>
#include <vector>

namespace sfunwind::test {

// Little-endian stores and loads, for patching copies of sections and files.
inline void put_le(std::vector<std::uint8_t>& b, std::size_t at, std::uint64_t v, unsigned n) {
    for (unsigned i = 0; i < n; ++i)
        b.at(at + i) = static_cast<std::uint8_t>(v >> (8U * i));
}
inline std::uint64_t get_le(const std::vector<std::uint8_t>& b, std::size_t at, unsigned n) {
    std::uint64_t v = 0;
    for (unsigned i = 0; i < n; ++i)
        v |= std::uint64_t{b.at(at + i)} << (8U * i);
    return v;
}

inline std::filesystem::path source_dir() {
    return SFUNWIND_SOURCE_DIR;
}
// The GNU as test vectors kept in the repository (tests/vectors/gas-sframe/README.md).
inline std::filesystem::path gas_vectors_dir() {
    return source_dir() / "tests" / "vectors" / "gas-sframe";
}

inline std::string read_text(const std::filesystem::path& p) {
    std::ifstream in(p, std::ios::binary);
    return {std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};
}

inline std::vector<std::uint8_t> read_bytes(const std::filesystem::path& p) {
    std::ifstream in(p, std::ios::binary);
    return {std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};
}

// Lines with trailing blanks removed, leading and trailing empty lines dropped.
inline std::string normalise(const std::string& text) {
    std::istringstream in(text);
    std::vector<std::string> lines;
    for (std::string line; std::getline(in, line);) {
        while (!line.empty() && (line.back() == ' ' || line.back() == '\t' || line.back() == '\r'))
            line.pop_back();
        lines.push_back(line);
    }
    while (!lines.empty() && lines.back().empty())
        lines.pop_back();
    std::size_t first = 0;
    while (first < lines.size() && lines[first].empty())
        ++first;
    std::string out;
    for (std::size_t i = first; i < lines.size(); ++i)
        out += lines[i] + "\n";
    return out;
}

// objdump's output from "Contents of the SFrame section" on: the lines
// before it name the file and its format, which a raw section does not have.
inline std::string section_part(const std::string& text) {
    const auto at = text.find("Contents of the SFrame section");
    return at == std::string::npos ? text : text.substr(at);
}

} // namespace sfunwind::test

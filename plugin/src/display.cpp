// SPDX-License-Identifier: MIT
#include "display.hpp"

#include <cstdio>

namespace sfunwind::lldb_plugin {

std::string addr16(std::uint64_t v) {
    char buf[24];
    std::snprintf(buf, sizeof buf, "0x%016llx", static_cast<unsigned long long>(v));
    return buf;
}

std::string addr16(const std::optional<std::uint64_t>& v) {
    return v ? addr16(*v) : std::string("      unknown     ");
}

const char* version_name(sframe::Version v) {
    switch (v) {
    case sframe::Version::V1:
        return "v1";
    case sframe::Version::V2:
        return "v2";
    case sframe::Version::V3:
        return "v3";
    }
    return "?";
}

} // namespace sfunwind::lldb_plugin

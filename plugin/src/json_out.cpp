// SPDX-License-Identifier: MIT
#include "json_out.hpp"

#include <cstdio>

namespace sfunwind::lldb_plugin {

void JsonOut::separate() {
    if (need_comma_) out_ += ',';
    need_comma_ = true;
}

JsonOut& JsonOut::begin_object() {
    separate();
    out_ += '{';
    need_comma_ = false;
    return *this;
}

JsonOut& JsonOut::end_object() {
    out_ += '}';
    need_comma_ = true;
    return *this;
}

JsonOut& JsonOut::begin_array() {
    separate();
    out_ += '[';
    need_comma_ = false;
    return *this;
}

JsonOut& JsonOut::end_array() {
    out_ += ']';
    need_comma_ = true;
    return *this;
}

JsonOut& JsonOut::key(std::string_view k) {
    value(k);
    out_ += ':';
    need_comma_ = false;
    return *this;
}

JsonOut& JsonOut::value(std::string_view s) {
    separate();
    out_ += '"';
    for (const char c : s) {
        const auto u = static_cast<unsigned char>(c);
        if (c == '"' || c == '\\') {
            out_ += '\\';
            out_ += c;
        } else if (u < 0x20) {
            char buf[8];
            std::snprintf(buf, sizeof buf, "\\u%04x", static_cast<unsigned>(u));
            out_ += buf;
        } else {
            out_ += c;
        }
    }
    out_ += '"';
    return *this;
}

JsonOut& JsonOut::value(std::uint64_t v) {
    separate();
    out_ += std::to_string(v);
    return *this;
}

JsonOut& JsonOut::value(std::int64_t v) {
    separate();
    out_ += std::to_string(v);
    return *this;
}

JsonOut& JsonOut::value(bool b) {
    separate();
    out_ += b ? "true" : "false";
    return *this;
}

JsonOut& JsonOut::value(std::optional<std::uint64_t> v) {
    return v ? value(*v) : null();
}

JsonOut& JsonOut::null() {
    separate();
    out_ += "null";
    return *this;
}

} // namespace sfunwind::lldb_plugin

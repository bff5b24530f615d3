// SPDX-License-Identifier: MIT
// A small JSON emitter for the commands' --json output, which the tests read.
// Only what the commands print: objects, arrays, strings, integers, booleans
// and null. Addresses are written as numbers (JSON numbers hold 64-bit values
// exactly in Python's json module, which the tests use).
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

namespace sfunwind::lldb_plugin {

class JsonOut {
  public:
    JsonOut& begin_object();
    JsonOut& end_object();
    JsonOut& begin_array();
    JsonOut& end_array();
    JsonOut& key(std::string_view k);
    JsonOut& value(std::string_view s);
    JsonOut& value(const char* s) { return value(std::string_view(s)); }
    JsonOut& value(std::uint64_t v);
    JsonOut& value(std::int64_t v);
    JsonOut& value(bool b);
    JsonOut& value(std::optional<std::uint64_t> v);
    JsonOut& null();
    const std::string& str() const noexcept { return out_; }

  private:
    void separate();
    std::string out_;
    bool need_comma_ = false;
};

} // namespace sfunwind::lldb_plugin

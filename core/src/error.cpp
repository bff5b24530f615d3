// SPDX-License-Identifier: MIT
#include "sfunwind/error.hpp"

#include <cstdio>

namespace sfunwind {

const char* to_string(Errc code) noexcept {
    switch (code) {
    case Errc::Truncated:
        return "truncated";
    case Errc::BadMagic:
        return "bad magic";
    case Errc::Unsupported:
        return "unsupported";
    case Errc::Malformed:
        return "malformed";
    case Errc::NotFound:
        return "not found";
    case Errc::MemoryUnreadable:
        return "memory unreadable";
    case Errc::BadFrame:
        return "bad frame";
    case Errc::UnsafeRule:
        return "unsafe rule";
    case Errc::Io:
        return "i/o error";
    }
    return "error";
}

std::string to_hex(std::uint64_t value) {
    char buf[24];
    std::snprintf(buf, sizeof buf, "0x%llx", static_cast<unsigned long long>(value));
    return buf;
}

std::string Error::message() const {
    if (where_ == no_offset) return what_;
    if (address_) {
        const std::string at = to_hex(where_);
        return what_.find(at) == std::string::npos ? what_ + " (at " + at + ")" : what_;
    }
    char buf[48];
    std::snprintf(buf, sizeof buf, " (at offset 0x%llx)", static_cast<unsigned long long>(where_));
    return what_ + buf;
}

} // namespace sfunwind

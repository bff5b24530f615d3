// SPDX-License-Identifier: MIT
// Errors carry what went wrong and where: the byte offset in the section (or
// the address in the target) that the problem was found at.
#pragma once

#include <cstdint>
#include <string>
#include <utility>
#include <variant>

namespace sfunwind {

enum class Errc : std::uint8_t {
    Truncated,        // a read would run past the end of the data
    BadMagic,         // not an SFrame section
    Unsupported,      // a valid value this library does not handle (version, ABI)
    Malformed,        // a field has a value the spec does not allow
    NotFound,         // no FDE/FRE covers the PC; no section in the file
    MemoryUnreadable, // the memory reader failed
    BadFrame,         // a step produced an impossible frame (sp went backwards, ...)
    UnsafeRule,       // a register-based rule asked for outside the topmost frame
    Io,               // file or system error
    // The end of a stack is not an error: see StepResult::caller and
    // StopReason::Outermost.
};

const char* to_string(Errc code) noexcept;

// "0x1f": how messages spell addresses and offsets.
std::string to_hex(std::uint64_t value);

// Sentinel for "no location": errors about the input as a whole.
inline constexpr std::uint64_t no_offset = ~std::uint64_t{0};

// Where an error is in the target's address space (a pc, a traceback
// table), not a byte offset in the input.
struct Address {
    std::uint64_t value;
};

class Error {
  public:
    Error(Errc code, std::string what, std::uint64_t offset = no_offset)
        : code_(code), where_(offset), what_(std::move(what)) {}
    Error(Errc code, std::string what, Address address)
        : code_(code), where_(address.value), address_(true), what_(std::move(what)) {}

    Errc code() const noexcept { return code_; }
    // Byte offset in the input, or an address in the target (is_address()).
    std::uint64_t where() const noexcept { return where_; }
    bool is_address() const noexcept { return address_; }
    const std::string& what() const noexcept { return what_; }
    // "what (at offset 0x1c)", or "what (at 0x401871)" for an address the
    // text does not already name: the form every tool prints.
    std::string message() const;

  private:
    Errc code_;
    std::uint64_t where_;
    bool address_ = false;
    std::string what_;
};

// A value or an Error, in the manner of llvm::Expected / std::expected (C++23,
// which g++ 12 lacks).
template <typename T> class [[nodiscard]] Expected {
  public:
    Expected(T value)
        : v_(std::in_place_index<0>, std::move(value)) {} // NOLINT(google-explicit-constructor)
    Expected(Error error)
        : v_(std::in_place_index<1>, std::move(error)) {} // NOLINT(google-explicit-constructor)

    explicit operator bool() const noexcept { return v_.index() == 0; }
    bool has_value() const noexcept { return v_.index() == 0; }

    T& value() & { return std::get<0>(v_); }
    const T& value() const& { return std::get<0>(v_); }
    T&& value() && { return std::get<0>(std::move(v_)); }
    T& operator*() & { return value(); }
    const T& operator*() const& { return value(); }
    T* operator->() { return &value(); }
    const T* operator->() const { return &value(); }

    const Error& error() const& { return std::get<1>(v_); }
    Error&& error() && { return std::get<1>(std::move(v_)); }

  private:
    std::variant<T, Error> v_;
};

// The result of an operation that yields nothing but can fail.
using Status = Expected<std::monostate>;
inline Status ok() {
    return std::monostate{};
}

} // namespace sfunwind

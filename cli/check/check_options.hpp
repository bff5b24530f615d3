// SPDX-License-Identifier: MIT
// Command lines of `sfunwind check` and `sfunwind convert`.
#pragma once

#include "commands.hpp"
#include "sfunwind/cfi/cfi_table.hpp"

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace sfunwind::cli::check {

// What makes `check` exit with status 1 (commands.hpp exit_finding).
struct FailOn {
    bool mismatch = true;     // a compared breakpoint that does not agree (functions and PLT)
    bool cfi_only = false;    // a function with CFI and no SFrame
    bool sframe_only = false; // a function with SFrame and no CFI
    bool unreachable = false; // a row no lookup returns
    bool problem = false;     // an FDE either table cannot read
};

struct CheckOptions {
    std::vector<std::string> files;
    bool details = false;
    bool json = false;
    bool time = false;
    // Progress on stderr: unset = when stderr is a terminal.
    std::optional<bool> progress;
    bool evaluate = true;
    cfi::Source cfi_source = cfi::Source::EhFrameThenDebugFrame;
    FailOn fail_on;
    // Check the callee-saved register rules recovered from instructions
    // instead of the SFrame rows (cmd_check_callee_saved.cpp).
    bool callee_saved = false;
};

struct ConvertOptions {
    std::string file;
    std::string output;
    std::uint64_t vaddr = 0;
    bool pcrel = true;
    bool plt = true;
    bool verbose = false;
    cfi::Source cfi_source = cfi::Source::EhFrameThenDebugFrame;
};

template <typename T> struct Parsed {
    std::optional<T> options; // empty: --help was asked for, or a usage error (printed)
    bool help = false;
};

Parsed<CheckOptions> parse_check(const Args& args);
Parsed<ConvertOptions> parse_convert(const Args& args);

extern const char* const check_help;
extern const char* const convert_help;

} // namespace sfunwind::cli::check

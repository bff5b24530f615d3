// SPDX-License-Identifier: MIT
// Command line of `sfunwind bt`.
#pragma once

#include <bitset>
#include <cstdint>
#include <cstdio>
#include <optional>
#include <string>
#include <sys/types.h>
#include <vector>

namespace sfunwind::cli::bt {

// Signal numbers 1..64 (Linux has at most 64).
using SignalSet = std::bitset<65>;

// The signals that stop a launched program by default: the ones whose
// default action is a core dump because the program did something wrong
// (SIGSEGV, SIGBUS, SIGILL, SIGFPE, SIGABRT, SIGTRAP, SIGSYS). Other signals
// are delivered to the program so that its own handlers run.
SignalSet default_stop_signals();

struct BtOptions {
    enum class Mode : std::uint8_t { Launch, Attach, Core };
    Mode mode = Mode::Launch;
    std::vector<std::string> program; // Launch: PROG ARGS...
    pid_t pid = 0;                    // Attach
    std::string core_path;            // Core
    std::string exe_path;             // Core

    bool compare_cfi = false;
    bool json = false;
    bool verbose = false;
    bool require_complete = false;
    bool callee_saved = true; // recover rbx, r12-r15 per frame (--no-callee-saved)
    bool registers = false;   // print them in text output (--registers)
    std::uint32_t max_frames = 65536;
    SignalSet stop_on = default_stop_signals();
    unsigned timeout_seconds = 0; // 0: wait for a stop signal forever
};

struct ParseResult {
    std::optional<BtOptions> options; // empty: usage error (message printed) or --help
    bool help = false;
};

ParseResult parse_options(int argc, char** argv);
void print_usage(std::FILE* out);

// "SIGSEGV", "SEGV", "segv" or "11"; nullopt when it names no signal.
std::optional<int> parse_signal(const std::string& text);
// "SIGSEGV" (or "SIG34" for real-time signals).
std::string signal_name(int sig);

} // namespace sfunwind::cli::bt

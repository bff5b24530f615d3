// SPDX-License-Identifier: MIT
#include "options.hpp"

#include <algorithm>
#include <cctype>
#include <csignal>
#include <cstring>
#include <limits>
#include <string_view>

namespace sfunwind::cli::bt {
namespace {

constexpr const char* usage_text = R"(usage: sfunwind bt [OPTIONS] -- PROG [ARGS...]
       sfunwind bt [OPTIONS] -p PID
       sfunwind bt [OPTIONS] --core CORE EXE

Stops a program and prints every thread's backtrace, unwound with the SFrame
(.sframe) sections of the program and its shared libraries.

Targets:
  -- PROG [ARGS...]    run PROG under ptrace until a stop signal reaches it,
                       print the backtraces, then kill it
  -p, --pid PID        attach to a running process (all threads), print the
                       backtraces, detach; the process continues
  --core CORE EXE      read a core dump of EXE

Options:
  --compare-cfi        also unwind with DWARF CFI (elfutils libdwfl, as
                       eu-stack does) and compare frame by frame: pc, sp, CFA
                       and fp where both unwinders know them, and the
                       callee-saved registers where SFrame's walk recovered
                       them and libdwfl has a value
  --registers          print each frame's rbx and r12-r15 (x86-64), as
                       recovered from the functions' instructions, or
                       `<not saved>` where unknown (JSON always has them)
  --no-callee-saved    do not recover rbx, r12-r15 (AArch64 x19-x28, d8-d15;
                       s390x r6-r10, r12, r13, f8-f15): SFrame has no rules
                       for them, so they come from an analysis of each
                       function's code, anchored by its SFrame rows
  --max-frames N       stop each walk after N frames (default 65536)
  --stop-on SIGNALS    comma-separated signals that also stop PROG (names or
                       numbers, e.g. USR1,SIGALRM,34), or `all`
  --timeout SECONDS    stop PROG after SECONDS if no stop signal came
  --require-complete   a walk that leaves the SFrame-covered code (a library
                       without .sframe, a function without an FDE) is a failure
  --json               print one JSON document instead of text
  -v, --verbose        list every mapped module, with or without SFrame
  -h, --help           this text

A launched PROG stops at the first SIGSEGV, SIGBUS, SIGILL, SIGFPE, SIGABRT,
SIGTRAP or SIGSYS delivered to any of its threads (plus --stop-on signals);
other signals are passed on to it so its handlers run. The thread that got
the signal is printed first; the other threads are interrupted wherever they
are.

An SFrame walk ends at the outermost frame, where it leaves the code SFrame
covers (glibc on Debian 12 has no .sframe: walks end in libc), or at an error.

Exit status: 0 every walk ended at the outermost frame or left the covered
code (and, with --compare-cfi, agreed with CFI on every frame SFrame
produced and every callee-saved register value it recovered); 1 a walk
failed or differed from CFI, or PROG ended without a stop signal; 2 usage
or input errors (no such program, pid or core).
)";

std::string upper(std::string s) {
    std::transform(s.begin(), s.end(), s.begin(),
                   [](unsigned char c) { return static_cast<char>(std::toupper(c)); });
    return s;
}

std::optional<std::uint64_t> parse_unsigned(const std::string& text, std::uint64_t max) {
    if (text.empty() || text.size() > 19) return std::nullopt;
    std::uint64_t v = 0;
    for (char c : text) {
        if (c < '0' || c > '9') return std::nullopt;
        v = v * 10 + static_cast<std::uint64_t>(c - '0');
    }
    if (v > max) return std::nullopt;
    return v;
}

bool usage_error(const std::string& message) {
    std::fprintf(stderr, "sfunwind bt: %s\nRun `sfunwind bt --help` for usage.\n", message.c_str());
    return false;
}

bool parse_signal_list(const std::string& text, SignalSet& set) {
    if (text == "all") {
        set.set();
        set.reset(0);
        set.reset(SIGKILL); // never reaches a signal-delivery-stop
        return true;
    }
    std::string_view rest = text;
    while (true) {
        const auto comma = rest.find(',');
        const std::string word(rest.substr(0, comma));
        auto sig = parse_signal(word);
        if (!sig) return usage_error("--stop-on: '" + word + "' is not a signal");
        set.set(static_cast<std::size_t>(*sig));
        if (comma == std::string_view::npos) return true;
        rest.remove_prefix(comma + 1);
    }
}

} // namespace

SignalSet default_stop_signals() {
    SignalSet s;
    for (int sig : {SIGSEGV, SIGBUS, SIGILL, SIGFPE, SIGABRT, SIGTRAP, SIGSYS})
        s.set(static_cast<std::size_t>(sig));
    return s;
}

std::optional<int> parse_signal(const std::string& text) {
    if (auto n = parse_unsigned(text, 64); n && *n >= 1) return static_cast<int>(*n);
    std::string name = upper(text);
    if (name.rfind("SIG", 0) == 0) name.erase(0, 3);
    for (int sig = 1; sig < SIGRTMIN; ++sig) {
        const char* abbrev = sigabbrev_np(sig);
        if (abbrev != nullptr && name == abbrev) return sig;
    }
    return std::nullopt;
}

std::string signal_name(int sig) {
    const char* abbrev = sigabbrev_np(sig);
    return std::string("SIG") + (abbrev != nullptr ? abbrev : std::to_string(sig));
}

void print_usage(std::FILE* out) {
    std::fputs(usage_text, out);
}

ParseResult parse_options(int argc, char** argv) {
    ParseResult result;
    BtOptions o;
    auto fail = [](const std::string& message) {
        usage_error(message);
        return ParseResult{};
    };
    bool have_target = false;
    auto set_target = [&](BtOptions::Mode mode) {
        if (have_target) return usage_error("give one target: -- PROG, -p PID or --core CORE EXE");
        have_target = true;
        o.mode = mode;
        return true;
    };
    for (int i = 0; i < argc; ++i) {
        const std::string a = argv[i];
        auto value = [&](const char* what) -> std::optional<std::string> {
            if (i + 1 >= argc) {
                usage_error(a + " needs " + what);
                return std::nullopt;
            }
            return std::string(argv[++i]);
        };
        if (a == "-h" || a == "--help") {
            result.help = true;
            return result;
        }
        if (a == "--compare-cfi") {
            o.compare_cfi = true;
        } else if (a == "--json") {
            o.json = true;
        } else if (a == "-v" || a == "--verbose") {
            o.verbose = true;
        } else if (a == "--require-complete") {
            o.require_complete = true;
        } else if (a == "--registers") {
            o.registers = true;
        } else if (a == "--no-callee-saved") {
            o.callee_saved = false;
        } else if (a == "--max-frames") {
            auto v = value("a number");
            if (!v) return result;
            auto n = parse_unsigned(*v, 1000000);
            if (!n || *n == 0)
                return fail("--max-frames: '" + *v + "' is not a number from 1 to 1000000");
            o.max_frames = static_cast<std::uint32_t>(*n);
        } else if (a == "--timeout") {
            auto v = value("a number of seconds");
            if (!v) return result;
            auto n = parse_unsigned(*v, 86400);
            if (!n || *n == 0)
                return fail("--timeout: '" + *v + "' is not a number of seconds (1-86400)");
            o.timeout_seconds = static_cast<unsigned>(*n);
        } else if (a == "--stop-on") {
            auto v = value("a list of signals");
            if (!v || !parse_signal_list(*v, o.stop_on)) return result;
        } else if (a == "-p" || a == "--pid") {
            auto v = value("a process id");
            if (!v) return result;
            auto n =
                parse_unsigned(*v, static_cast<std::uint64_t>(std::numeric_limits<pid_t>::max()));
            if (!n || *n == 0) return fail(a + ": '" + *v + "' is not a process id");
            if (!set_target(BtOptions::Mode::Attach)) return result;
            o.pid = static_cast<pid_t>(*n);
        } else if (a == "--core") {
            if (i + 2 >= argc) return fail("--core needs a core file and the executable");
            if (!set_target(BtOptions::Mode::Core)) return result;
            o.core_path = argv[++i];
            o.exe_path = argv[++i];
        } else if (a == "--") {
            if (i + 1 >= argc) return fail("-- must be followed by the program to run");
            if (!set_target(BtOptions::Mode::Launch)) return result;
            o.program.assign(argv + i + 1, argv + argc);
            break;
        } else if (a.size() > 1 && a[0] == '-') {
            return fail("unknown option '" + a + "'");
        } else {
            // The program without `--`: everything from here is its command line.
            if (!set_target(BtOptions::Mode::Launch)) return result;
            o.program.assign(argv + i, argv + argc);
            break;
        }
    }
    if (!have_target) return fail("no target: give -- PROG [ARGS...], -p PID or --core CORE EXE");
    if (o.timeout_seconds != 0 && o.mode != BtOptions::Mode::Launch)
        return fail("--timeout only applies to a launched program");
    if (o.registers && !o.callee_saved)
        return fail("--registers prints what --no-callee-saved turns off: give one of them");
    result.options = std::move(o);
    return result;
}

} // namespace sfunwind::cli::bt

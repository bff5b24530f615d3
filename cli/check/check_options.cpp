// SPDX-License-Identifier: MIT
#include "check_options.hpp"

#include "input.hpp"

#include <cstdio>
#include <sstream>

namespace sfunwind::cli::check {

const char* const check_help = R"(usage: sfunwind check [OPTIONS] FILE...

Compare each file's SFrame section with its DWARF CFI (.eh_frame, then
.debug_frame), read by elfutils libdw. For every function either covers, the
rules for the CFA, the return address and the frame pointer are compared at
every breakpoint: every place where either table starts a row (an SFrame FRE,
repeated per block for PC-mask FDEs; a CFI row) or an FDE starts or ends.
Neither table changes between two breakpoints, so this covers every
instruction without disassembling. A CFI rule SFrame has no form for (the
x86-64 PLT's CFA expression) is evaluated by libdwfl at every byte instead.

Each function falls in one class:
  both         SFrame and CFI: compared
  plt          linker stubs (.plt, .plt.got, .plt.sec, .iplt, or a PC-mask
               SFrame FDE): compared
  cfi-only     CFI, no SFrame FDE, with the reason when the CFI tells it
               (drap, cfi-expression, ra-rule, fp-rule, outermost,
               signal-frame, assembly, no-sframe-section, unknown)
  sframe-only  SFrame, no CFI
and rows that are legal but that no lookup ever returns are listed apart.

Options:
  --details          list every disagreement, every cfi-only and sframe-only
                     function and every unreachable row (text and JSON)
  --json             one JSON document on stdout instead of text
  --fail-on=LIST     exit 1 when any of these is found (default: mismatch):
                       mismatch     a compared breakpoint that does not agree
                       cfi-only     a function with CFI but no SFrame
                       sframe-only  a function with SFrame but no CFI
                       unreachable  a row no lookup returns
                       problem      an FDE either table cannot read
                       any          all of these;  none: exit 0 on findings
  --cfi=both|eh|debug  the CFI to compare with (default both)
  --no-evaluate      do not evaluate CFI expressions with libdwfl
  --callee-saved     check the callee-saved registers SFrame has no rules for
                     (x86-64 rbx, r12-r15; AArch64 x19-x28, d8-d15;
                     s390x r6-r10, r12, r13, f8-f15) instead: where each is saved, as
                     recovered from the function's instructions (anchored by
                     its SFrame rows), against the CFI at every instruction.
                     Each (instruction, register) is equal, equivalent (the
                     register still holds the value the CFI's slot does),
                     unknown (the analysis declined: "not saved"), or wrong;
                     exit 1 on any wrong. --details lists every wrong pair
                     (else the first 50) and the functions the analysis
                     declined; --json, --cfi and --progress apply.
  --time             print the time taken and the throughput
  --progress         progress on stderr even when it is not a terminal
  --no-progress      no progress, even on a terminal

"Breakpoints" in the counts are the row boundaries compared, not
instructions: every instruction between two breakpoints has the same rules.
Throughput (--time) is breakpoints compared, and bytes of code covered by
either table, per second of wall time for the file (reading it included).

Exit status: 0 nothing --fail-on names was found, 1 something was,
2 usage errors or files that cannot be read or have neither SFrame nor CFI.
)";

const char* const convert_help = R"(usage: sfunwind convert [OPTIONS] FILE -o SECTION

Write an SFrame v3 section made from FILE's DWARF CFI (.eh_frame, then
.debug_frame; rules read by elfutils libdw), as raw bytes, for binaries whose
compiler or assembler wrote none. Each CFI FDE becomes one SFrame FDE; rows
that change none of the CFA, RA and FP rules are merged, as GNU as does.
Functions whose CFA or FP is based on another register (DRAP) or read
through memory get v3 flexible FDEs. Functions whose CFI has a rule SFrame
cannot hold (a DWARF expression) are left out and listed, apart from the
x86-64 PLT: its CFA expression is evaluated by libdwfl at each byte of one
entry, and the PLT gets a PC-mask FDE repeating every entry, as GNU ld makes.

Options:
  -o, --output FILE  where to write the section (required)
  --vaddr ADDR       the address the section will have in FILE (default 0)
  --no-pcrel         store function starts relative to the section start
                     instead of to each start field (SFRAME_F_FDE_FUNC_START_PCREL)
  --no-plt           no PC-mask FDEs for the PLT
  --cfi=both|eh|debug  the CFI to convert (default both)
  -v, --verbose      list every function left out, and why

Function starts are stored relative to the section's address (v3 section
2.3.1), so the section must end up at --vaddr. objcopy --add-section gives an
added section address 0 (and no PT_LOAD maps it; sfunwind and its debugger
adapters read .sframe from the file), which is the default:

  sfunwind convert PROG -o prog.sframe
  objcopy --add-section .sframe=prog.sframe \
          --set-section-flags .sframe=alloc,readonly PROG PROG.withsframe
  sfunwind check PROG.withsframe

(objcopy warns that the allocated section is not in a segment; that is
expected.) To place it elsewhere, pass the same address to --vaddr and to
objcopy's --change-section-address .sframe=ADDR.

Exit status: 0 written, 1 written with functions left out, 2 usage errors,
unreadable files, or nothing to write.
)";

namespace {

// "--name=value" or "--name value"; advances i past the value.
std::optional<std::string> value_of(const Args& args, std::size_t& i, const std::string& name) {
    const std::string& a = args[i];
    if (a.size() > name.size() && a.compare(0, name.size(), name) == 0 && a[name.size()] == '=')
        return a.substr(name.size() + 1);
    if (a == name) {
        if (i + 1 >= args.size()) return std::nullopt;
        return args[++i];
    }
    return std::nullopt;
}

bool is_option(const std::string& a, const std::string& name) {
    return a == name || (a.size() > name.size() && a.compare(0, name.size(), name) == 0 &&
                         a[name.size()] == '=');
}

std::optional<cfi::Source> parse_source(const std::string& v) {
    if (v == "both") return cfi::Source::EhFrameThenDebugFrame;
    if (v == "eh") return cfi::Source::EhFrame;
    if (v == "debug") return cfi::Source::DebugFrame;
    return std::nullopt;
}

std::optional<FailOn> parse_fail_on(const std::string& list) {
    FailOn f;
    f.mismatch = false;
    std::istringstream in(list);
    for (std::string item; std::getline(in, item, ',');) {
        if (item == "mismatch")
            f.mismatch = true;
        else if (item == "cfi-only")
            f.cfi_only = true;
        else if (item == "sframe-only")
            f.sframe_only = true;
        else if (item == "unreachable")
            f.unreachable = true;
        else if (item == "problem")
            f.problem = true;
        else if (item == "any")
            f = {true, true, true, true, true};
        else if (item == "none")
            f = {false, false, false, false, false};
        else
            return std::nullopt;
    }
    return f;
}

template <typename T> Parsed<T> usage_error(const char* command, const std::string& what) {
    std::fprintf(stderr, "sfunwind %s: %s\n", command, what.c_str());
    return {};
}

} // namespace

Parsed<CheckOptions> parse_check(const Args& args) {
    CheckOptions o;
    bool positional_only = false;
    for (std::size_t i = 0; i < args.size(); ++i) {
        const std::string& a = args[i];
        if (positional_only || a.empty() || a[0] != '-' || a == "-") {
            o.files.push_back(a);
        } else if (a == "--") {
            positional_only = true;
        } else if (a == "--help" || a == "-h") {
            return {std::nullopt, true};
        } else if (a == "--details") {
            o.details = true;
        } else if (a == "--json") {
            o.json = true;
        } else if (a == "--time") {
            o.time = true;
        } else if (a == "--progress") {
            o.progress = true;
        } else if (a == "--no-progress") {
            o.progress = false;
        } else if (a == "--no-evaluate") {
            o.evaluate = false;
        } else if (a == "--callee-saved") {
            o.callee_saved = true;
        } else if (is_option(a, "--fail-on")) {
            auto v = value_of(args, i, "--fail-on");
            if (!v) return usage_error<CheckOptions>("check", "--fail-on needs a list");
            auto f = parse_fail_on(*v);
            if (!f) return usage_error<CheckOptions>("check", "bad --fail-on list '" + *v + "'");
            o.fail_on = *f;
        } else if (is_option(a, "--cfi")) {
            auto v = value_of(args, i, "--cfi");
            auto s = v ? parse_source(*v) : std::nullopt;
            if (!s) return usage_error<CheckOptions>("check", "--cfi takes both, eh or debug");
            o.cfi_source = *s;
        } else {
            return usage_error<CheckOptions>("check", "unknown option '" + a + "'");
        }
    }
    if (o.files.empty()) return usage_error<CheckOptions>("check", "no FILE given (see --help)");
    return {std::move(o), false};
}

Parsed<ConvertOptions> parse_convert(const Args& args) {
    ConvertOptions o;
    std::vector<std::string> files;
    bool positional_only = false;
    for (std::size_t i = 0; i < args.size(); ++i) {
        const std::string& a = args[i];
        if (positional_only || a.empty() || a[0] != '-' || a == "-") {
            files.push_back(a);
        } else if (a == "--") {
            positional_only = true;
        } else if (a == "--help" || a == "-h") {
            return {std::nullopt, true};
        } else if (a == "-v" || a == "--verbose") {
            o.verbose = true;
        } else if (a == "--no-pcrel") {
            o.pcrel = false;
        } else if (a == "--no-plt") {
            o.plt = false;
        } else if (a == "-o" || is_option(a, "--output")) {
            auto v = a == "-o" ? (i + 1 < args.size() ? std::optional(args[++i]) : std::nullopt)
                               : value_of(args, i, "--output");
            if (!v || v->empty())
                return usage_error<ConvertOptions>("convert", "-o needs a file name");
            o.output = *v;
        } else if (is_option(a, "--vaddr")) {
            auto v = value_of(args, i, "--vaddr");
            auto addr = v ? parse_address(*v) : std::nullopt;
            if (!addr) return usage_error<ConvertOptions>("convert", "--vaddr needs an address");
            o.vaddr = *addr;
        } else if (is_option(a, "--cfi")) {
            auto v = value_of(args, i, "--cfi");
            auto s = v ? parse_source(*v) : std::nullopt;
            if (!s) return usage_error<ConvertOptions>("convert", "--cfi takes both, eh or debug");
            o.cfi_source = *s;
        } else {
            return usage_error<ConvertOptions>("convert", "unknown option '" + a + "'");
        }
    }
    if (files.size() != 1)
        return usage_error<ConvertOptions>("convert", "give exactly one FILE (see --help)");
    if (o.output.empty()) return usage_error<ConvertOptions>("convert", "-o SECTION is required");
    o.file = files.front();
    return {std::move(o), false};
}

} // namespace sfunwind::cli::check

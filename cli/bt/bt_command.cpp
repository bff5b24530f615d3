// SPDX-License-Identifier: MIT
#include "bt_command.hpp"

#include "commands.hpp"
#include "core_file.hpp"
#include "dwfl_session.hpp"
#include "options.hpp"
#include "proc_maps.hpp"
#include "process_memory.hpp"
#include "process_modules.hpp"
#include "registers.hpp"
#include "report.hpp"
#include "sfunwind/callee_saved/module_rules.hpp"
#include "sfunwind/unwind/backtrace.hpp"
#include "thread_walk.hpp"
#include "traced_process.hpp"

#include <csignal>
#include <cstdio>
#include <memory>
#include <optional>
#include <string>
#include <vector>

namespace sfunwind::cli {
namespace {

using namespace bt;

int fail(const std::string& message, int status) {
    std::fprintf(stderr, "sfunwind bt: %s\n", message.c_str());
    return status;
}

// What siginfo says about where a signal came from (sigaction(2), "The
// siginfo_t argument").
std::string siginfo_detail(const StopEvent& e) {
    if (!e.has_siginfo) return {};
    const siginfo_t& si = e.siginfo;
    const std::string from = "from pid " + std::to_string(si.si_pid);
    switch (si.si_code) {
    case SI_USER:
        return "sent by kill() " + from;
    case SI_TKILL:
        return "sent by tgkill() " + from;
    case SI_QUEUE:
        return "sent by sigqueue() " + from;
    case SI_KERNEL:
        return "sent by the kernel";
    default:
        break;
    }
    const auto addr = reinterpret_cast<std::uintptr_t>(si.si_addr);
    if (e.signal == SIGSEGV && si.si_code == SEGV_MAPERR)
        return "SEGV_MAPERR, address " + to_hex(addr);
    if (e.signal == SIGSEGV && si.si_code == SEGV_ACCERR)
        return "SEGV_ACCERR, address " + to_hex(addr);
    if (e.signal == SIGSEGV || e.signal == SIGBUS || e.signal == SIGILL || e.signal == SIGFPE)
        return "code " + std::to_string(si.si_code) + ", address " + to_hex(addr);
    return "code " + std::to_string(si.si_code);
}

// Every module of one process shares its ABI; the first ELF file that names
// a supported one decides.
std::optional<Abi> abi_of(const ProcessModules& modules) {
    for (const auto& m : modules.all())
        if (m.elf() != nullptr)
            if (auto abi = m.elf()->abi()) return abi;
    return std::nullopt;
}

// Each frame's rbx, r12-r15 along the SFrame walk, outward from the
// thread's registers, by the analysis of each frame's function.
void recover_callee_saved(ThreadWalk& t, const ThreadRegisters& regs, const Abi& abi,
                          const ProcessModules& modules, MemoryReader& memory) {
    const auto registers = untracked_callee_saved(abi);
    std::vector<std::optional<std::uint64_t>> initial;
    initial.reserve(registers.size());
    for (std::uint16_t reg : registers)
        initial.push_back(regs.table.value(reg));
    const auto rules_of = [&modules](const Frame& f) -> const callee_saved::FunctionRules* {
        const ProcessModule* m = modules.find(f.address.lookup_address());
        if (m == nullptr || !m->callee_saved || !f.row) return nullptr;
        return m->callee_saved->function(f.row->func_start, f.row->func_size);
    };
    t.saved = callee_saved::walk_values(t.sframe.frames, registers, initial, rules_of, memory);
}

void walk(ThreadWalk& t, const ThreadRegisters& regs, const Abi& abi, const ModuleSet& set,
          const ProcessModules& modules, MemoryReader& memory, const BtOptions& o) {
    RegisterTable table = regs.table;
    BacktraceOptions bo;
    bo.max_frames = o.max_frames;
    t.sframe = backtrace(set, table.frame_regs(abi, regs.pc), memory, &table, bo);
    t.end = classify(t.sframe, modules, t.end_message);
    if (o.callee_saved && callee_saved::supported(abi))
        recover_callee_saved(t, regs, abi, modules, memory);
}

void compare_all(std::vector<ThreadWalk>& threads, DwflSession& session, const Abi& abi,
                 const BtOptions& o) {
    const bool callee_saved = o.callee_saved && callee_saved::supported(abi);
    auto cfi = session.unwind_all(abi, o.max_frames, callee_saved);
    for (auto& t : threads) {
        if (!t.error.empty()) continue;
        auto it = cfi.find(t.tid);
        // A thread libdwfl does not list has an empty CFI backtrace: every
        // SFrame frame is then a difference.
        t.cfi = it != cfi.end() ? std::move(it->second)
                                : CfiBacktrace{{}, "libdwfl does not list this thread"};
        t.comparison = compare_with_cfi(t.sframe, t.saved, *t.cfi, abi);
    }
}

int finish(Report& report, const BtOptions& o, const std::string& compare_error) {
    bool passed = !report.threads.empty() && compare_error.empty();
    for (const auto& t : report.threads)
        passed = passed && t.passed(o.require_complete);
    report.exit_status = passed ? exit_ok : exit_finding;
    if (o.json)
        print_json(report, stdout);
    else
        print_text(report, stdout);
    std::fflush(stdout);
    if (!compare_error.empty())
        std::fprintf(stderr, "sfunwind bt: cannot compare with CFI: %s\n", compare_error.c_str());
    if (report.threads.empty()) std::fprintf(stderr, "sfunwind bt: no thread could be stopped\n");
    return report.exit_status;
}

int run_live(const BtOptions& o) {
    std::unique_ptr<TracedProcess> proc;
    StopEvent stop;
    Report report;
    if (o.mode == BtOptions::Mode::Launch) {
        auto launched = TracedProcess::launch(o.program);
        if (!launched) return fail(launched.error().message(), exit_usage);
        proc = std::move(*launched);
        auto ev = proc->run_until_stop(o.stop_on, o.timeout_seconds);
        if (!ev) return fail(ev.error().message(), exit_finding);
        stop = *ev;
        proc->stop_all(stop.tid);
        report.kind = "program";
        if (stop.timed_out)
            report.stop = "no stop signal within " + std::to_string(o.timeout_seconds) +
                          " s; interrupted every thread";
        else
            report.stop =
                "stopped by " + signal_name(stop.signal) + " in thread " + std::to_string(stop.tid);
    } else {
        auto attached = TracedProcess::attach(o.pid);
        if (!attached) return fail(attached.error().message(), exit_usage);
        proc = std::move(*attached);
        report.kind = "process";
        report.stop = "attached; every thread interrupted";
    }
    const pid_t pid = proc->pid();
    const auto tids = proc->threads(stop.tid);
    if (tids.empty())
        return fail("process " + std::to_string(pid) + ": no thread could be stopped",
                    exit_finding);
    report.program = proc->program();
    report.pid = pid;

    auto maps = read_proc_maps(pid);
    if (!maps) return fail(maps.error().message(), exit_finding);
    ProcessMemory memory(pid, tids.front());
    const ProcessModules modules = modules_from_maps(pid, *maps, memory);
    const std::optional<Abi> abi = abi_of(modules);
    if (!abi)
        return fail("process " + std::to_string(pid) + ": no module with a supported ABI",
                    exit_finding);
    const ModuleSet set = modules.sframe_modules();
    report.abi = *abi;
    report.modules = &modules;
    report.verbose = o.verbose;
    report.require_complete = o.require_complete;
    report.print_registers = o.registers;

    for (pid_t tid : tids) {
        ThreadWalk t;
        t.tid = tid;
        if (tid == stop.tid && !stop.timed_out) {
            t.signal = stop.signal;
            t.stop_detail = siginfo_detail(stop);
        }
        auto regs = read_thread_registers(tid);
        if (!regs)
            t.error = regs.error().message();
        else
            walk(t, *regs, *abi, set, modules, memory, o);
        report.threads.push_back(std::move(t));
    }

    // libdwfl both unwinds with CFI and names functions from separate debug
    // files; without --compare-cfi a failure only costs those names.
    std::string compare_error;
    auto session = DwflSession::live(pid);
    if (session) {
        report.dwfl = session->get();
        if (o.compare_cfi) compare_all(report.threads, **session, *abi, o);
    } else if (o.compare_cfi) {
        compare_error = session.error().message();
    }
    // Printed while the target is still stopped; then `proc` goes out of
    // scope after `session`: a launched program is killed, an attached
    // process detached.
    return finish(report, o, compare_error);
}

int run_core(const BtOptions& o) {
    auto core = CoreFile::open(o.core_path);
    if (!core) return fail(core.error().message(), exit_usage);
    auto session = DwflSession::core(o.core_path, o.exe_path);
    if (!session) return fail(session.error().message(), exit_usage);
    DwflSession& dwfl = **session;
    const ProcessModules modules = dwfl.modules();
    const std::optional<Abi> abi = abi_of(modules);
    if (!abi)
        return fail(o.core_path + ": no module with a supported ABI (is " + o.exe_path +
                        " the program that dumped it?)",
                    exit_usage);
    auto threads = dwfl.threads();
    if (!threads) return fail(o.core_path + ": " + threads.error().message(), exit_usage);

    Report report;
    report.kind = "core";
    report.program = o.exe_path;
    report.core = o.core_path;
    report.pid = dwfl.pid();
    report.abi = *abi;
    report.modules = &modules;
    report.dwfl = &dwfl;
    report.verbose = o.verbose;
    report.require_complete = o.require_complete;
    report.print_registers = o.registers;
    const auto& notes = (*core)->threads();
    const pid_t first = notes.empty() ? 0 : notes.front().tid;
    const int first_signal = notes.empty() ? 0 : notes.front().signal;
    report.stop = first_signal != 0 ? "dumped at " + signal_name(first_signal) + " in thread " +
                                          std::to_string(first)
                                    : "no signal recorded";

    const ModuleSet set = modules.sframe_modules();
    // The thread that took the signal first, then the rest in note order.
    std::vector<CoreThread> ordered;
    for (const auto& t : *threads)
        if (t.tid == first) ordered.push_back(t);
    for (const auto& t : *threads)
        if (t.tid != first) ordered.push_back(t);
    for (const auto& ct : ordered) {
        ThreadWalk t;
        t.tid = ct.tid;
        if (ct.tid == first) t.signal = first_signal;
        if (!ct.regs)
            t.error = "no registers in " + o.core_path + ": " + ct.error;
        else
            walk(t, *ct.regs, *abi, set, modules, **core, o);
        report.threads.push_back(std::move(t));
    }
    if (o.compare_cfi) compare_all(report.threads, dwfl, *abi, o);
    return finish(report, o, {});
}

} // namespace

int run_bt(int argc, char** argv) {
    const ParseResult parsed = parse_options(argc, argv);
    if (parsed.help) {
        print_usage(stdout);
        return exit_ok;
    }
    if (!parsed.options) return exit_usage;
    const BtOptions& o = *parsed.options;
    if (o.mode == BtOptions::Mode::Core) return run_core(o);
    return run_live(o);
}

} // namespace sfunwind::cli

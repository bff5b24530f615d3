// SPDX-License-Identifier: MIT
// A process held under ptrace: launched (PTRACE_SEIZE before exec, killed
// when done) or attached to (PTRACE_SEIZE + PTRACE_INTERRUPT of every
// thread, detached when done). PTRACE_SEIZE rather than PTRACE_TRACEME or
// PTRACE_ATTACH so that PTRACE_INTERRUPT can stop threads without sending
// them a signal that would have to be suppressed or re-delivered.
#pragma once

#include "options.hpp"
#include "sfunwind/error.hpp"

#include <csignal>
#include <cstdint>
#include <map>
#include <memory>
#include <set>
#include <string>
#include <sys/types.h>
#include <vector>

namespace sfunwind::cli::bt {

struct StopEvent {
    pid_t tid = 0;  // the thread that got the signal (the main thread on a timeout)
    int signal = 0; // 0 on a timeout
    bool timed_out = false;
    bool has_siginfo = false;
    siginfo_t siginfo{};
};

class TracedProcess {
  public:
    // Starts argv[0] (searched in PATH) traced from its first instruction.
    // Errors name the program.
    static Expected<std::unique_ptr<TracedProcess>> launch(const std::vector<std::string>& argv);
    // Seizes and interrupts every thread of a running process. Errors name the pid.
    static Expected<std::unique_ptr<TracedProcess>> attach(pid_t pid);

    // Kills a launched process; detaches from an attached one.
    ~TracedProcess();
    TracedProcess(const TracedProcess&) = delete;
    TracedProcess& operator=(const TracedProcess&) = delete;

    // Launched processes: lets the program run, passing on signals not in
    // `stop_on`, until a thread stops with one of them or the timeout (0:
    // none) expires. An error when the program ends first.
    Expected<StopEvent> run_until_stop(const SignalSet& stop_on, unsigned timeout_seconds);

    // Interrupts every thread but `except` and waits until each is stopped,
    // so that all registers and memory hold still.
    void stop_all(pid_t except);

    pid_t pid() const noexcept { return pid_; }
    // Every live thread, `first` first, then by tid.
    std::vector<pid_t> threads(pid_t first = 0) const;
    const std::string& program() const noexcept { return program_; }

  private:
    TracedProcess() = default;
    void resume(pid_t tid, int signal);
    void wait_for_stops(std::set<pid_t> pending);
    void release();

    pid_t pid_ = 0;
    bool launched_ = false;
    std::string program_;
    std::set<pid_t> threads_;
    std::set<pid_t> stopped_;
    // Signals that reached threads while we were stopping them: an attached
    // process gets them back when we detach.
    std::map<pid_t, int> pending_signals_;
};

} // namespace sfunwind::cli::bt

// SPDX-License-Identifier: MIT
// ptrace(2) "Stopped states", "PTRACE_SEIZE", "Attaching and detaching" are
// the reference for the stops handled here: with PTRACE_SEIZE a stop is a
// signal-delivery-stop (event 0), a group-stop or PTRACE_INTERRUPT stop
// (PTRACE_EVENT_STOP), or a ptrace event (clone, exec).
#include "traced_process.hpp"

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <dirent.h>
#include <fcntl.h>
#include <sys/ptrace.h>
#include <sys/time.h>
#include <sys/wait.h>
#include <unistd.h>

namespace sfunwind::cli::bt {
namespace {

volatile std::sig_atomic_t alarm_fired = 0;

void on_alarm(int /*signal*/) {
    alarm_fired = 1;
}

// SIGALRM after `seconds`, then every 100 ms, without SA_RESTART, so that a
// blocked waitpid() returns EINTR. Repeating closes the race in which the
// first alarm lands between checking the flag and calling waitpid().
class IntervalAlarm {
  public:
    explicit IntervalAlarm(unsigned seconds) : armed_(seconds != 0) {
        alarm_fired = 0;
        if (!armed_) return;
        struct sigaction sa {};
        sa.sa_handler = on_alarm;
        sigemptyset(&sa.sa_mask);
        sigaction(SIGALRM, &sa, &old_);
        itimerval t{};
        t.it_value.tv_sec = static_cast<time_t>(seconds);
        t.it_interval.tv_usec = 100000;
        setitimer(ITIMER_REAL, &t, nullptr);
    }
    ~IntervalAlarm() {
        if (!armed_) return;
        itimerval off{};
        setitimer(ITIMER_REAL, &off, nullptr);
        sigaction(SIGALRM, &old_, nullptr);
        alarm_fired = 0;
    }
    IntervalAlarm(const IntervalAlarm&) = delete;
    IntervalAlarm& operator=(const IntervalAlarm&) = delete;
    bool fired() const { return armed_ && alarm_fired != 0; }

  private:
    bool armed_;
    struct sigaction old_ {};
};

std::string describe_exit(int status) {
    if (WIFEXITED(status)) return "exited with status " + std::to_string(WEXITSTATUS(status));
    if (WIFSIGNALED(status)) return "was killed by " + signal_name(WTERMSIG(status));
    return "ended";
}

unsigned event_of(int status) {
    return static_cast<unsigned>(status) >> 16;
}

std::vector<pid_t> list_tasks(pid_t pid) {
    std::vector<pid_t> out;
    const std::string path = "/proc/" + std::to_string(pid) + "/task";
    DIR* dir = ::opendir(path.c_str());
    if (dir == nullptr) return out;
    while (dirent* d = ::readdir(dir)) {
        char* end = nullptr;
        const long tid = std::strtol(d->d_name, &end, 10);
        if (end != d->d_name && *end == '\0' && tid > 0) out.push_back(static_cast<pid_t>(tid));
    }
    ::closedir(dir);
    return out;
}

// A thread that does not stop within this time (uninterruptible sleep, a
// stuck NFS read) is left out rather than hanging the tool.
constexpr unsigned stop_wait_seconds = 5;

} // namespace

TracedProcess::~TracedProcess() {
    release();
}

Expected<std::unique_ptr<TracedProcess>>
TracedProcess::launch(const std::vector<std::string>& argv) {
    if (argv.empty()) return Error(Errc::Io, "no program to run");
    std::vector<std::string> args = argv;
    std::vector<char*> cargs;
    cargs.reserve(args.size() + 1);
    for (auto& a : args)
        cargs.push_back(a.data());
    cargs.push_back(nullptr);
    const std::string who = "'" + argv[0] + "'";

    // `go` holds the child until we have seized it; `err` carries execvp's
    // errno back (close-on-exec: it closes unread when exec succeeds).
    int go[2];
    int err[2];
    if (::pipe2(go, O_CLOEXEC) != 0)
        return Error(Errc::Io, std::string("pipe: ") + std::strerror(errno));
    if (::pipe2(err, O_CLOEXEC) != 0) {
        ::close(go[0]);
        ::close(go[1]);
        return Error(Errc::Io, std::string("pipe: ") + std::strerror(errno));
    }
    const pid_t child = ::fork();
    if (child < 0) {
        const int e = errno;
        for (int fd : {go[0], go[1], err[0], err[1]})
            ::close(fd);
        return Error(Errc::Io, "cannot start " + who + ": fork: " + std::strerror(e));
    }
    if (child == 0) {
        ::close(go[1]);
        ::close(err[0]);
        char c = 0;
        while (::read(go[0], &c, 1) < 0 && errno == EINTR) {
        }
        ::execvp(cargs[0], cargs.data());
        const int e = errno;
        if (::write(err[1], &e, sizeof e) < 0) ::_exit(127);
        ::_exit(127);
    }
    ::close(go[0]);
    ::close(err[1]);

    std::unique_ptr<TracedProcess> p(new TracedProcess());
    p->pid_ = child;
    p->launched_ = true;
    p->program_ = argv[0];
    p->threads_ = {child};
    if (::ptrace(PTRACE_SEIZE, child, nullptr,
                 PTRACE_O_TRACECLONE | PTRACE_O_TRACEEXEC | PTRACE_O_EXITKILL) != 0) {
        const int e = errno;
        ::kill(child, SIGKILL); // before it is released into exec
        ::close(go[1]);
        ::close(err[0]);
        return Error(Errc::Io, "cannot trace " + who + " (pid " + std::to_string(child) +
                                   "): " + std::strerror(e));
    }
    if (::write(go[1], "x", 1) != 1) {
        ::close(go[1]);
        ::close(err[0]);
        return Error(Errc::Io, "cannot start " + who + ": " + std::strerror(errno));
    }
    ::close(go[1]);

    while (true) {
        int status = 0;
        const pid_t w = ::waitpid(child, &status, __WALL);
        if (w < 0) {
            if (errno == EINTR) continue;
            ::close(err[0]);
            return Error(Errc::Io, "cannot start " + who + ": waitpid: " + std::strerror(errno));
        }
        if (WIFEXITED(status) || WIFSIGNALED(status)) {
            p->threads_.clear();
            int e = 0;
            const ssize_t n = ::read(err[0], &e, sizeof e);
            ::close(err[0]);
            if (n == static_cast<ssize_t>(sizeof e))
                return Error(Errc::Io, "cannot run " + who + ": " + std::strerror(e));
            return Error(Errc::Io, who + " " + describe_exit(status) + " before it started");
        }
        if (!WIFSTOPPED(status)) continue;
        if (event_of(status) == PTRACE_EVENT_EXEC) break;
        // Nothing else should stop it before exec; pass on whatever it is.
        p->resume(child, event_of(status) == 0 ? WSTOPSIG(status) : 0);
    }
    ::close(err[0]);
    p->stopped_ = {child};
    return p;
}

Expected<std::unique_ptr<TracedProcess>> TracedProcess::attach(pid_t pid) {
    const std::string who = "process " + std::to_string(pid);
    if (pid == ::getpid())
        return Error(Errc::Io, "cannot attach to " + who + ": it is sfunwind itself");
    if (::kill(pid, 0) != 0 && errno == ESRCH)
        return Error(Errc::Io, "cannot attach to " + who + ": no such process");
    std::unique_ptr<TracedProcess> p(new TracedProcess());
    p->pid_ = pid;
    p->launched_ = false;
    char exe[4096];
    const std::string link = "/proc/" + std::to_string(pid) + "/exe";
    const ssize_t n = ::readlink(link.c_str(), exe, sizeof exe - 1);
    p->program_ = n > 0 ? std::string(exe, static_cast<std::size_t>(n)) : "?";

    // Threads may be created while we attach: list the tasks until a pass
    // finds none we have not seized. Threads created by a seized thread are
    // seized automatically (PTRACE_O_TRACECLONE).
    std::set<pid_t> pending;
    for (int pass = 0; pass < 100; ++pass) {
        bool found_new = false;
        for (pid_t tid : list_tasks(pid)) {
            if (p->threads_.count(tid) != 0) continue;
            if (::ptrace(PTRACE_SEIZE, tid, nullptr, PTRACE_O_TRACECLONE) != 0) {
                if (errno == ESRCH) continue; // exited meanwhile
                if (p->threads_.empty())
                    return Error(
                        Errc::Io,
                        "cannot attach to " + who + ": " + std::strerror(errno) +
                            (errno == EPERM
                                 ? " (already traced, a kernel thread, or another user's process?)"
                                 : ""));
                continue;
            }
            p->threads_.insert(tid);
            found_new = true;
            if (::ptrace(PTRACE_INTERRUPT, tid, nullptr, nullptr) == 0) pending.insert(tid);
        }
        if (!found_new) break;
    }
    if (p->threads_.empty())
        return Error(Errc::Io, "cannot attach to " + who + ": it has no threads");
    p->wait_for_stops(std::move(pending));
    if (p->stopped_.empty()) return Error(Errc::Io, "cannot stop " + who);
    return p;
}

void TracedProcess::resume(pid_t tid, int signal) {
    ::ptrace(PTRACE_CONT, tid, nullptr, static_cast<long>(signal)); // ESRCH: it died meanwhile
    stopped_.erase(tid);
}

Expected<StopEvent> TracedProcess::run_until_stop(const SignalSet& stop_on,
                                                  unsigned timeout_seconds) {
    const std::string who = "'" + program_ + "' (pid " + std::to_string(pid_) + ")";
    const IntervalAlarm alarm(timeout_seconds);
    bool interrupting = false;
    for (pid_t tid : std::set<pid_t>(stopped_))
        resume(tid, 0);
    while (true) {
        if (alarm.fired() && !interrupting) {
            interrupting = ::ptrace(PTRACE_INTERRUPT, pid_, nullptr, nullptr) == 0;
        }
        int status = 0;
        const pid_t tid = ::waitpid(-1, &status, __WALL);
        if (tid < 0) {
            if (errno == EINTR) continue;
            return Error(Errc::Io, who + ": waitpid: " + std::strerror(errno));
        }
        if (WIFEXITED(status) || WIFSIGNALED(status)) {
            threads_.erase(tid);
            stopped_.erase(tid);
            if (tid == pid_) {
                threads_.clear();
                return Error(Errc::NotFound,
                             who + " " + describe_exit(status) + " without a stop signal");
            }
            continue;
        }
        if (!WIFSTOPPED(status)) continue;
        threads_.insert(tid);
        stopped_.insert(tid);
        const int sig = WSTOPSIG(status);
        switch (event_of(status)) {
        case 0:
            if (sig > 0 && static_cast<std::size_t>(sig) < stop_on.size() &&
                stop_on.test(static_cast<std::size_t>(sig))) {
                StopEvent e;
                e.tid = tid;
                e.signal = sig;
                e.has_siginfo = ::ptrace(PTRACE_GETSIGINFO, tid, nullptr, &e.siginfo) == 0;
                return e;
            }
            resume(tid, sig); // the program's own business: deliver it
            break;
        case PTRACE_EVENT_CLONE: {
            unsigned long new_tid = 0;
            if (::ptrace(PTRACE_GETEVENTMSG, tid, nullptr, &new_tid) == 0 && new_tid > 0)
                threads_.insert(static_cast<pid_t>(new_tid));
            resume(tid, 0);
            break;
        }
        case PTRACE_EVENT_EXEC:
            // A later exec: the kernel has ended every other thread, and the
            // exec'ing thread now has the process's pid.
            threads_ = {pid_};
            stopped_ = {pid_};
            resume(pid_, 0);
            break;
        case PTRACE_EVENT_STOP:
            if (interrupting && tid == pid_) {
                StopEvent e;
                e.tid = tid;
                e.timed_out = true;
                return e;
            }
            // A new thread's first stop, or a group-stop (SIGSTOP, SIGTSTP):
            // job control is not honoured while traced, the program keeps running.
            resume(tid, 0);
            break;
        default:
            resume(tid, 0);
            break;
        }
    }
}

void TracedProcess::wait_for_stops(std::set<pid_t> pending) {
    const IntervalAlarm deadline(stop_wait_seconds);
    while (!pending.empty() && !deadline.fired()) {
        int status = 0;
        const pid_t tid = ::waitpid(-1, &status, __WALL);
        if (tid < 0) {
            if (errno == EINTR) continue;
            break;
        }
        if (WIFEXITED(status) || WIFSIGNALED(status)) {
            threads_.erase(tid);
            stopped_.erase(tid);
            pending.erase(tid);
            continue;
        }
        if (!WIFSTOPPED(status)) continue;
        threads_.insert(tid);
        stopped_.insert(tid);
        pending.erase(tid);
        const unsigned event = event_of(status);
        if (event == PTRACE_EVENT_CLONE) {
            // The new thread reports its own first stop.
            unsigned long new_tid = 0;
            if (::ptrace(PTRACE_GETEVENTMSG, tid, nullptr, &new_tid) == 0 && new_tid > 0) {
                const auto t = static_cast<pid_t>(new_tid);
                threads_.insert(t);
                if (stopped_.count(t) == 0) pending.insert(t);
            }
        } else if (event == 0) {
            pending_signals_[tid] = WSTOPSIG(status);
        }
    }
}

void TracedProcess::stop_all(pid_t except) {
    std::set<pid_t> pending;
    for (pid_t tid : threads_) {
        if (tid == except || stopped_.count(tid) != 0) continue;
        if (::ptrace(PTRACE_INTERRUPT, tid, nullptr, nullptr) == 0) pending.insert(tid);
    }
    wait_for_stops(std::move(pending));
}

std::vector<pid_t> TracedProcess::threads(pid_t first) const {
    std::vector<pid_t> out;
    if (first != 0 && stopped_.count(first) != 0) out.push_back(first);
    for (pid_t tid : stopped_)
        if (tid != first) out.push_back(tid);
    return out;
}

void TracedProcess::release() {
    if (pid_ == 0) return;
    if (launched_) {
        if (!threads_.empty()) ::kill(pid_, SIGKILL);
        // Reap every traced thread and the process; SIGKILL cannot be held up.
        while (true) {
            int status = 0;
            const pid_t w = ::waitpid(-1, &status, __WALL);
            if (w < 0 && errno == EINTR) continue;
            if (w < 0) break;
        }
    } else {
        for (pid_t tid : stopped_) {
            const auto it = pending_signals_.find(tid);
            const long sig = it != pending_signals_.end() ? it->second : 0;
            ::ptrace(PTRACE_DETACH, tid, nullptr, sig);
        }
    }
    pid_ = 0;
}

} // namespace sfunwind::cli::bt

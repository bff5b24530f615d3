// SPDX-License-Identifier: MIT
// elfutils libdwfl over a stopped process or a core dump: the DWARF CFI
// backtrace that SFrame is compared with (the way eu-stack unwinds), and,
// for cores, the modules from the link map and each thread's registers.
#pragma once

#include "process_modules.hpp"
#include "registers.hpp"
#include "sfunwind/abi.hpp"
#include "sfunwind/error.hpp"

#include <cstdint>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <sys/types.h>
#include <vector>

struct Dwfl;

namespace sfunwind::cli::bt {

struct CfiFrame {
    std::uint64_t pc = 0;
    bool activation = false; // frame 0, or interrupted by a signal: pc is not a return address
    std::optional<std::uint64_t> sp; // where libdwfl knows the register
    std::optional<std::uint64_t> fp;
    // With unwind_all(..., callee_saved = true): libdwfl's value of each of
    // untracked_callee_saved(abi), in that order; nullopt where it has none.
    std::vector<std::optional<std::uint64_t>> callee_saved;
    std::string symbol; // "name" from dwfl_module_addrinfo, or empty
    std::uint64_t symbol_offset = 0;
    std::string module; // the module's file name, or empty
};

struct CfiBacktrace {
    std::vector<CfiFrame> frames;
    // How libdwfl ended: empty when it reported the end of the stack, else
    // its error (which it also uses for some outermost frames).
    std::string end_error;
};

struct CoreThread {
    pid_t tid = 0;
    std::optional<ThreadRegisters> regs;
    std::string error; // when the registers could not be read
};

class DwflSession {
  public:
    // A ptrace-stopped live process: dwfl_linux_proc_report, then
    // dwfl_linux_proc_attach(..., assume_ptrace_stopped = true), since this
    // tool already holds the ptrace stop. Errors name the pid.
    static Expected<std::unique_ptr<DwflSession>> live(pid_t pid);
    // A core dump and its executable: dwfl_core_file_report (modules from
    // the link map in the core) and dwfl_core_file_attach (threads and
    // registers from the NT_PRSTATUS notes). Errors name the files.
    static Expected<std::unique_ptr<DwflSession>> core(const std::string& core_path,
                                                       const std::string& exe_path);

    ~DwflSession();
    DwflSession(const DwflSession&) = delete;
    DwflSession& operator=(const DwflSession&) = delete;

    // The process id libdwfl attached to (a core's from its notes).
    pid_t pid() const noexcept { return pid_; }

    // The CFI backtrace of every thread, at most max_frames frames each, by
    // tid. One dwfl_getthreads pass, as eu-stack does: dwfl_getthread_frames
    // on a core finds its thread by iterating the others, and elfutils 0.188
    // leaks the per-thread state of every thread it skips. `callee_saved`
    // also reads each frame's CfiFrame::callee_saved.
    std::map<pid_t, CfiBacktrace> unwind_all(const Abi& abi, std::uint32_t max_frames,
                                             bool callee_saved);

    // The function containing `pc` by libdwfl's lookup, which also reads
    // separate debug files (.gnu_debuglink, build-id) that ElfFile does not:
    // Debian's libc6-dbg names glibc's local functions this way.
    SymbolName symbol(FrameAddress address);

    // Every thread with its initial registers: the first frame libdwfl
    // builds (dwfl_thread_getframes calls the core's set_initial_registers),
    // read with dwfl_frame_pc and dwfl_frame_reg (elfutils 0.188+).
    Expected<std::vector<CoreThread>> threads();

    // The modules libdwfl reported, with their SFrame sections.
    ProcessModules modules();

  private:
    DwflSession() = default;
    pid_t pid_ = 0;
    struct Impl;
    std::unique_ptr<Impl> impl_;
};

} // namespace sfunwind::cli::bt

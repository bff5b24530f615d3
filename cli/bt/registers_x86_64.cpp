// SPDX-License-Identifier: MIT
// x86-64: struct user_regs_struct from PTRACE_GETREGS, mapped to the DWARF
// register numbers of the x86-64 psABI (section 3.6.2, "DWARF Register
// Number Mapping"): rax 0, rdx 1, rcx 2, rbx 3, rsi 4, rdi 5, rbp 6, rsp 7,
// r8-r15 8-15, return address (rip) 16.
#include "registers.hpp"

#include <cerrno>
#include <cstring>
#include <string>
#include <sys/ptrace.h>
#include <sys/user.h>

namespace sfunwind::cli::bt {

Expected<ThreadRegisters> read_thread_registers(pid_t tid) {
    user_regs_struct u{};
    if (ptrace(PTRACE_GETREGS, tid, nullptr, &u) != 0)
        return Error(Errc::Io, "cannot read the registers of thread " + std::to_string(tid) + ": " +
                                   std::strerror(errno));
    ThreadRegisters out;
    out.pc = u.rip;
    const std::uint64_t by_dwarf[] = {u.rax, u.rdx, u.rcx, u.rbx, u.rsi, u.rdi, u.rbp, u.rsp, u.r8,
                                      u.r9,  u.r10, u.r11, u.r12, u.r13, u.r14, u.r15, u.rip};
    std::uint16_t reg = 0;
    for (std::uint64_t v : by_dwarf)
        out.table.set(reg++, v);
    return out;
}

} // namespace sfunwind::cli::bt

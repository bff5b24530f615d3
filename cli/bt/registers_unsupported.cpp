// SPDX-License-Identifier: MIT
// Hosts without a ptrace register mapping yet: live targets report
// "unsupported"; core dumps still work (their registers come from libdwfl).
#include "registers.hpp"

#include <string>

namespace sfunwind::cli::bt {

Expected<ThreadRegisters> read_thread_registers(pid_t tid) {
    return Error(Errc::Unsupported, "reading the registers of thread " + std::to_string(tid) +
                                        " is not implemented for this host architecture");
}

} // namespace sfunwind::cli::bt

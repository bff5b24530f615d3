// SPDX-License-Identifier: MIT
#include "report.hpp"

namespace sfunwind::cli::bt {
namespace {

SymbolName lookup(const Report& report, FrameAddress address) {
    SymbolName s = report.modules->symbol(address);
    if (s.name.empty() && report.dwfl != nullptr) s = report.dwfl->symbol(address);
    return s;
}

} // namespace

SymbolName frame_symbol(const Report& report, FrameAddress address) {
    SymbolName s = lookup(report, address);
    // A "return address" on the first byte of a function, with no function
    // before it, is where a signal handler returns to: the sa_restorer
    // trampoline (glibc's __restore_rt), which is entered, not called.
    if (s.name.empty() && address.is_return_address())
        s = lookup(report, FrameAddress::instruction_pointer(address.address()));
    return s;
}

} // namespace sfunwind::cli::bt

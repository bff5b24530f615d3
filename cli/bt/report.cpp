// SPDX-License-Identifier: MIT
#include "report.hpp"

namespace sfunwind::cli::bt {
namespace {

SymbolName lookup(const Report& report, std::uint64_t pc, bool is_return_address) {
    SymbolName s = report.modules->symbol(pc, is_return_address);
    if (s.name.empty() && report.dwfl != nullptr) s = report.dwfl->symbol(pc, is_return_address);
    return s;
}

} // namespace

SymbolName frame_symbol(const Report& report, std::uint64_t pc, bool is_return_address) {
    SymbolName s = lookup(report, pc, is_return_address);
    // A "return address" on the first byte of a function, with no function
    // before it, is where a signal handler returns to: the sa_restorer
    // trampoline (glibc's __restore_rt), which is entered, not called.
    if (s.name.empty() && is_return_address) s = lookup(report, pc, false);
    return s;
}

bool is_return_address(const Backtrace& bt, std::size_t i) {
    return i > 0 && i <= bt.frames.size() &&
           !(bt.frames[i - 1].row && bt.frames[i - 1].row->signal_frame);
}

} // namespace sfunwind::cli::bt

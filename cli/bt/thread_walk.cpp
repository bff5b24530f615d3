// SPDX-License-Identifier: MIT
#include "thread_walk.hpp"

#include <cstdio>

namespace sfunwind::cli::bt {
namespace {} // namespace

const char* to_string(WalkEnd end) noexcept {
    switch (end) {
    case WalkEnd::Outermost:
        return "outermost";
    case WalkEnd::LeftCoverage:
        return "left-coverage";
    case WalkEnd::Failed:
        return "failed";
    }
    return "failed";
}

WalkEnd classify(const Backtrace& bt, const ProcessModules& modules, std::string& message) {
    if (bt.complete()) {
        message = "outermost frame (" + bt.stop.message() + ")";
        return WalkEnd::Outermost;
    }
    if (bt.stop.reason == StopReason::NoRow && !bt.frames.empty()) {
        const std::uint64_t pc = bt.frames.back().regs.pc;
        const ProcessModule* m = modules.find(bt.frames.back().address.lookup_address());
        if (m != nullptr) {
            if (m->table.rows)
                message = "left the SFrame-covered code: no FDE in " + m->short_name() +
                          " covers " + to_hex(pc);
            else
                message = "left the SFrame-covered modules: " + m->short_name() + " at " +
                          to_hex(pc) + " has " +
                          (m->problem.empty() ? std::string("no SFrame") : m->problem);
            return WalkEnd::LeftCoverage;
        }
        message = "pc " + to_hex(pc) + " is in no mapped ELF module";
        return WalkEnd::Failed;
    }
    message = bt.stop.message();
    return WalkEnd::Failed;
}

bool ThreadWalk::passed(bool require_complete) const {
    if (!error.empty()) return false;
    if (end == WalkEnd::Failed) return false;
    if (end == WalkEnd::LeftCoverage && require_complete) return false;
    return !comparison || comparison->agree();
}

} // namespace sfunwind::cli::bt

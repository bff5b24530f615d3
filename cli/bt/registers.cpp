// SPDX-License-Identifier: MIT
#include "registers.hpp"

namespace sfunwind::cli::bt {

FrameRegs RegisterTable::frame_regs(const Abi& abi, std::uint64_t pc) const {
    FrameRegs r;
    r.pc = pc;
    r.sp = value(abi.sp_reg).value_or(0);
    r.fp = value(abi.fp_reg).value_or(0);
    // Only a link register holds the RA in the topmost frame; on x86-64 the
    // "RA register" is the PC itself.
    if (abi.ra_in_register) r.ra = value(abi.ra_reg);
    return r;
}

} // namespace sfunwind::cli::bt

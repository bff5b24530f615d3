// SPDX-License-Identifier: MIT
// Stepping one frame: from a frame's registers and a Row, the caller's
// registers. This is the spec's appendix A algorithm (SFrame v3, "Generating
// Stack Traces using SFrame") with the checks a debugger needs: register-based
// rules only in the topmost frame, stack-direction and alignment sanity,
// outermost detection and precise errors for unreadable memory.
#pragma once

#include "sfunwind/abi.hpp"
#include "sfunwind/error.hpp"
#include "sfunwind/row.hpp"

#include <cstddef>
#include <cstdint>
#include <optional>
#include <span>

namespace sfunwind {

// Reads target memory. Implementations: ptrace, a core file, a debugger's
// API, a test's fake stack, or the process itself.
class MemoryReader {
  public:
    virtual ~MemoryReader() = default;
    // Fills `out` from target address `addr`; false if any byte is unreadable.
    virtual bool read(std::uint64_t addr, std::span<std::uint8_t> out) = 0;
};

// Registers beyond pc/sp/fp/ra, for rules that name another register (v3
// flexible FDEs, s390x v2 register-saved RA). Only consulted in the topmost frame.
class RegisterSource {
  public:
    virtual ~RegisterSource() = default;
    virtual std::optional<std::uint64_t> get(std::uint16_t dwarf_reg) = 0;
};

// The registers SFrame tracks. `ra` is the link register's value where the
// ABI has one (AArch64 x30, s390x r14); a caller frame's ra is unknown.
struct FrameRegs {
    std::uint64_t pc = 0;
    std::uint64_t sp = 0;
    std::uint64_t fp = 0;
    std::optional<std::uint64_t> ra;
};

struct StepOptions {
    // AArch64: bits of a signed return address that hold the PAC; cleared when
    // the row says the RA is mangled. The default keeps a 48-bit user VA.
    std::uint64_t pac_mask = 0xffff000000000000ULL;
    // Refuse caller frames whose SP is below the callee's (the stack grows
    // down on every supported ABI) unless the row is a signal frame.
    bool check_stack_direction = true;
};

// Why a frame has no caller. Both are the normal end of a stack, not failures.
enum class StackEnd : std::uint8_t {
    RaUndefined, // the row marks the outermost frame (RA undefined: SFrame v3 section 2.4.2)
    RaZero,      // the return address found is 0, which ends the stack on every supported psABI
};

const char* to_string(StackEnd end) noexcept;

struct StepResult {
    // The caller's registers; empty when this frame is the outermost one.
    std::optional<FrameRegs> caller;
    StackEnd end = StackEnd::RaUndefined; // why `caller` is empty
    std::uint64_t cfa = 0;                // known unless the row itself ends the stack
    bool fp_restored = false;             // the FP came from the stack (else it is unchanged)

    bool outermost() const noexcept { return !caller; }
};

// Steps from `callee` (whose pc the row was looked up for) to its caller.
// `topmost` is true for frame 0, and for a frame interrupted by a signal whose
// registers are all live. The outermost frame is a result with no caller, not
// an error. Address arithmetic is checked: a rule whose CFA or slot address
// wraps around the address space is an Errc::BadFrame error naming the values.
Expected<StepResult> step(const Row& row, const Abi& abi, const FrameRegs& callee, bool topmost,
                          MemoryReader& memory, RegisterSource* extra = nullptr,
                          const StepOptions& options = {});

} // namespace sfunwind

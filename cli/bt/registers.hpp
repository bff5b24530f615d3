// SPDX-License-Identifier: MIT
// A stopped thread's registers, by DWARF register number, and reading them
// from a live thread with ptrace. Each architecture's ptrace layout lives in
// its own file (registers_x86_64.cpp); others report "unsupported" until
// they are added, since foreign-architecture programs run under qemu and are
// unwound through GDB or LLDB instead.
#pragma once

#include "sfunwind/abi.hpp"
#include "sfunwind/error.hpp"
#include "sfunwind/unwind/step.hpp"

#include <array>
#include <cstdint>
#include <optional>
#include <sys/types.h>

namespace sfunwind::cli::bt {

// Every register the target reported, for rules that name a register other
// than SP, FP and RA (v3 flexible FDEs; only consulted in the topmost frame).
class RegisterTable final : public RegisterSource {
  public:
    static constexpr std::uint16_t max_regs = 128;

    void set(std::uint16_t dwarf_reg, std::uint64_t value) {
        if (dwarf_reg < max_regs) values_[dwarf_reg] = value;
    }
    std::optional<std::uint64_t> get(std::uint16_t dwarf_reg) override {
        return dwarf_reg < max_regs ? values_[dwarf_reg] : std::nullopt;
    }
    std::optional<std::uint64_t> value(std::uint16_t dwarf_reg) const {
        return dwarf_reg < max_regs ? values_[dwarf_reg] : std::nullopt;
    }

    // The registers SFrame walks with, given the ABI's register numbers and the PC.
    FrameRegs frame_regs(const Abi& abi, std::uint64_t pc) const;

  private:
    std::array<std::optional<std::uint64_t>, max_regs> values_{};
};

struct ThreadRegisters {
    std::uint64_t pc = 0;
    RegisterTable table;
};

// Reads a ptrace-stopped thread's registers (PTRACE_GETREGS on x86-64).
// Errors name the thread.
Expected<ThreadRegisters> read_thread_registers(pid_t tid);

} // namespace sfunwind::cli::bt

// SPDX-License-Identifier: MIT
// The core's view of an LLDB target, through the public SB API only: memory
// reads, the registers of the topmost frame, and DWARF register numbers
// translated to LLDB's register names.
#pragma once

#include "sfunwind/abi.hpp"
#include "sfunwind/unwind/step.hpp"

#include <cstdint>
#include <lldb/API/SBFrame.h>
#include <lldb/API/SBProcess.h>
#include <lldb/API/SBTarget.h>
#include <optional>
#include <string>

namespace sfunwind::lldb_plugin {

// The ABI of a target, from its triple (x86_64, aarch64, s390x); null when
// sfunwind has no SFrame ABI for it.
const Abi* abi_of(lldb::SBTarget& target);

// The major version of the LLDB the plugin runs in ("lldb version 19.1.7": 19).
int lldb_major_version();

class SbMemory final : public MemoryReader {
  public:
    explicit SbMemory(const lldb::SBProcess& process) : process_(process) {}
    bool read(std::uint64_t addr, std::span<std::uint8_t> out) override;
    std::uint64_t reads() const noexcept { return reads_; }

  private:
    lldb::SBProcess process_;
    std::uint64_t reads_ = 0;
};

// A register of one LLDB frame by DWARF number; empty when LLDB has no value
// for it (unavailable in a caller frame, unknown name).
std::optional<std::uint64_t> read_register(lldb::SBFrame& frame, const Abi& abi,
                                           std::uint16_t dwarf_reg);

// Every register of the topmost frame, for rules that name one (v3 flexible
// FDEs, s390x register-saved RA).
class SbRegisters final : public RegisterSource {
  public:
    SbRegisters(const lldb::SBFrame& frame, const Abi& abi) : frame_(frame), abi_(abi) {}
    std::optional<std::uint64_t> get(std::uint16_t dwarf_reg) override;

  private:
    lldb::SBFrame frame_;
    const Abi& abi_;
};

// pc, sp, fp (and the link register where the ABI has one) of a frame.
std::optional<FrameRegs> frame_registers(lldb::SBFrame& frame, const Abi& abi);

} // namespace sfunwind::lldb_plugin

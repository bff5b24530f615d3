// SPDX-License-Identifier: MIT
#include "sb_target.hpp"

#include <lldb/API/SBDebugger.h>
#include <lldb/API/SBError.h>
#include <lldb/API/SBValue.h>
#include <string_view>

namespace sfunwind::lldb_plugin {

const Abi* abi_of(lldb::SBTarget& target) {
    const char* triple = target.GetTriple();
    if (triple == nullptr) return nullptr;
    const std::string_view t(triple);
    if (t.rfind("x86_64", 0) == 0) return &abi_amd64();
    if (t.rfind("aarch64_be", 0) == 0) return &abi_aarch64(ByteOrder::Big);
    if (t.rfind("aarch64", 0) == 0 || t.rfind("arm64", 0) == 0)
        return &abi_aarch64(ByteOrder::Little);
    if (t.rfind("s390x", 0) == 0 || t.rfind("systemz", 0) == 0) return &abi_s390x();
    return nullptr;
}

int lldb_major_version() {
    const std::string v = lldb::SBDebugger::GetVersionString();
    const auto at = v.find("version ");
    if (at == std::string::npos) return 0;
    int major = 0;
    for (std::size_t i = at + 8; i < v.size() && v[i] >= '0' && v[i] <= '9'; ++i)
        major = major * 10 + (v[i] - '0');
    return major;
}

bool SbMemory::read(std::uint64_t addr, std::span<std::uint8_t> out) {
    ++reads_;
    lldb::SBError error;
    const std::size_t got = process_.ReadMemory(addr, out.data(), out.size(), error);
    return error.Success() && got == out.size();
}

std::optional<std::uint64_t> read_register(lldb::SBFrame& frame, const Abi& abi,
                                           std::uint16_t dwarf_reg) {
    const auto name = known_register_name(abi, dwarf_reg);
    if (!name) return std::nullopt;
    lldb::SBValue value = frame.FindRegister(name->c_str());
    if (!value.IsValid()) return std::nullopt;
    lldb::SBError error;
    const std::uint64_t v = value.GetValueAsUnsigned(error, 0);
    if (error.Fail()) return std::nullopt;
    return v;
}

std::optional<std::uint64_t> SbRegisters::get(std::uint16_t dwarf_reg) {
    return read_register(frame_, abi_, dwarf_reg);
}

std::optional<FrameRegs> frame_registers(lldb::SBFrame& frame, const Abi& abi) {
    if (!frame.IsValid()) return std::nullopt;
    FrameRegs regs;
    regs.pc = frame.GetPC();
    const auto sp = read_register(frame, abi, abi.sp_reg);
    const auto fp = read_register(frame, abi, abi.fp_reg);
    if (!sp) return std::nullopt;
    regs.sp = *sp;
    // A frame pointer LLDB cannot give is left 0: rules that need it fail
    // on the stack-direction and alignment checks rather than on garbage.
    regs.fp = fp.value_or(0);
    if (abi.ra_in_register) regs.ra = read_register(frame, abi, abi.ra_reg);
    return regs;
}

} // namespace sfunwind::lldb_plugin

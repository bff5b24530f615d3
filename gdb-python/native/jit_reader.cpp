// SPDX-License-Identifier: MIT
// GDB's JIT reader interface (gdb/jit-reader.h, `jit-reader-load`) over the
// same module table as the Python unwinder: GDB calls unwind() for every
// frame its earlier unwinders did not claim, and this file answers from
// SFrame in native code, so a whole backtrace never enters Python.
//
// GDB's side: the reader's unwinder is tried before the DWARF unwinders;
// unwind() returning GDB_FAIL passes the frame on. Registers are exchanged
// by DWARF number in target byte order; registers not set are "not saved".
// get_frame_id() is called after unwind() for the same frame.
#include "frame_unwind.hpp"
#include "module_table.hpp"
#include "sfunwind/unwind/frame_address.hpp"
#include "sfunwind/unwind/step.hpp"
#include "sfunwind_gdb.h"

#include <cstdlib>
#include <cstring>
#include <gdb/jit-reader.h>
#include <optional>

// GDB refuses readers that do not declare a GPL-compatible licence; MIT is.
GDB_DECLARE_GPL_COMPATIBLE_READER

namespace {

namespace g = sfunwind::gdb;
using sfunwind::Abi;
using sfunwind::Arch;

// DWARF numbers GDB maps to each target's PC, which the ABI's RA column
// (x86-64 rip) or link register (AArch64 x30, s390x r14) is not:
// AArch64 "pc" is 32 and s390x PSW address 65 in GDB's DWARF maps.
struct DwarfNumbers {
    int pc;
    int sp;
    int fp;
    int link; // -1: none
};

std::optional<DwarfNumbers> numbers(const Abi& abi) {
    switch (abi.arch) {
    case Arch::X86_64:
        return DwarfNumbers{abi.ra_reg, abi.sp_reg, abi.fp_reg, -1};
    case Arch::AArch64:
        return DwarfNumbers{32, abi.sp_reg, abi.fp_reg, abi.ra_reg};
    case Arch::S390x:
        return DwarfNumbers{65, abi.sp_reg, abi.fp_reg, abi.ra_reg};
    // GDB's DWARF register map for PowerPC (rs6000_dwarf2_reg_to_regnum)
    // gives no DWARF number for the PC, and the reader sets registers by
    // DWARF number only: a caller's PC cannot be given, GDB would stop with
    // "frame did not save the PC" (GDB 13 and 18, every number 0-1299
    // tried). PowerPC frames are left to the Python path.
    case Arch::Ppc64:
        return std::nullopt;
    }
    return std::nullopt;
}

struct State {
    bool enabled = true;
    sfunwind_gdb_native_stats stats{};
    // The last frame unwound, for get_frame_id(): (pc, sp) -> id.
    bool have_last = false;
    std::uint64_t last_pc = 0;
    std::uint64_t last_sp = 0;
    gdb_frame_id last_id{};
};

State& state() {
    static State s;
    return s;
}

std::uint64_t decode(const unsigned char* p, int size, sfunwind::ByteOrder order) {
    std::uint64_t v = 0;
    for (int i = 0; i < size; ++i) {
        const int at = order == sfunwind::ByteOrder::Little ? size - 1 - i : i;
        v = (v << 8U) | p[at];
    }
    return v;
}

std::optional<std::uint64_t> get_reg(gdb_unwind_callbacks* cb, int regnum,
                                     sfunwind::ByteOrder order) {
    if (regnum < 0) return std::nullopt;
    gdb_reg_value* v = cb->reg_get(cb, regnum);
    if (v == nullptr) return std::nullopt;
    std::optional<std::uint64_t> out;
    if (v->defined != 0 && v->size >= 1 && v->size <= 8) out = decode(v->value, v->size, order);
    if (v->free != nullptr) v->free(v);
    return out;
}

void free_value(gdb_reg_value* v) {
    std::free(v);
}

void set_reg(gdb_unwind_callbacks* cb, int regnum, std::uint64_t value, sfunwind::ByteOrder order) {
    // gdb_reg_value ends in a one-byte array that is really `size` bytes.
    auto* v = static_cast<gdb_reg_value*>(std::malloc(sizeof(gdb_reg_value) + 8));
    if (v == nullptr) return;
    v->size = 8;
    v->defined = 1;
    v->free = free_value;
    for (int i = 0; i < 8; ++i) {
        const int shift = order == sfunwind::ByteOrder::Little ? 8 * i : 8 * (7 - i);
        v->value[i] = static_cast<unsigned char>(value >> static_cast<unsigned>(shift));
    }
    cb->reg_set(cb, regnum, v);
}

class JitMemory final : public sfunwind::MemoryReader {
  public:
    explicit JitMemory(gdb_target_read* reader) : read_(reader) {}
    bool read(std::uint64_t addr, std::span<std::uint8_t> out) override {
        return out.size() <= 0x7fffffff &&
               read_(addr, out.data(), static_cast<int>(out.size())) == GDB_SUCCESS;
    }

  private:
    gdb_target_read* read_;
};

class JitRegisters final : public sfunwind::RegisterSource {
  public:
    JitRegisters(gdb_unwind_callbacks* cb, sfunwind::ByteOrder order) : cb_(cb), order_(order) {}
    std::optional<std::uint64_t> get(std::uint16_t reg) override {
        return get_reg(cb_, reg, order_);
    }

  private:
    gdb_unwind_callbacks* cb_;
    sfunwind::ByteOrder order_;
};

struct Unwound {
    g::FrameOutput out;
    std::uint64_t pc = 0;
    std::uint64_t sp = 0;
};

// Looks up and steps the frame whose registers `cb` reads. Null when the
// frame is not in a module with SFrame, or cannot be stepped.
std::optional<Unwound> unwind_frame(gdb_unwind_callbacks* cb) {
    State& st = state();
    const Abi* abi = g::table().abi();
    if (abi == nullptr) return std::nullopt;
    const auto n = numbers(*abi);
    if (!n) return std::nullopt;
    const auto pc = get_reg(cb, n->pc, abi->order);
    if (!pc) return std::nullopt;
    // Fast refusal: neither pc nor pc - 1 (a return address) is in a module.
    if (g::table().module_at(*pc) < 0 &&
        g::table().module_at(sfunwind::FrameAddress::return_address(*pc).lookup_address()) < 0) {
        ++st.stats.frames_declined;
        return std::nullopt;
    }
    const auto sp = get_reg(cb, n->sp, abi->order);
    if (!sp) {
        ++st.stats.failures;
        return std::nullopt;
    }
    // The FP and the "same value" registers of a frame the previous step
    // produced are taken from that step (the table knows the frame by its
    // PC and SP), not read back from GDB: each reg_get costs GDB a value
    // and two allocations.
    g::FrameInput in;
    in.pc = *pc;
    in.sp = *sp;
    JitMemory target(cb->target_read);
    JitRegisters registers(cb, abi->order);
    auto done = g::unwind_frame(g::table(), in, target, registers);
    // GDB's JIT interface has no "outermost" answer: declining the frame
    // lets GDB end the stack there.
    if (!done || done->step.outermost()) {
        ++st.stats.failures;
        return std::nullopt;
    }
    return Unwound{*done, *pc, *sp};
}

gdb_status read_debug_info(gdb_reader_funcs*, gdb_symbol_callbacks*, void*, long) {
    // sfunwind reads no JIT-registered objects: only unwinding.
    return GDB_FAIL;
}

gdb_status unwind(gdb_reader_funcs*, gdb_unwind_callbacks* cb) {
    State& st = state();
    if (!st.enabled) return GDB_FAIL;
    try {
        auto u = unwind_frame(cb);
        if (!u) return GDB_FAIL;
        const Abi& abi = *g::table().abi();
        const auto n = *numbers(abi);
        const sfunwind::FrameRegs& caller = *u->out.step.caller;
        set_reg(cb, n.pc, caller.pc, abi.order);
        set_reg(cb, n.sp, caller.sp, abi.order);
        set_reg(cb, n.fp, caller.fp, abi.order);
        // The callee-saved registers the function's code places; the
        // others stay unset, which GDB shows as <not saved>. The JIT
        // interface numbers registers as DWARF does.
        // AArch64 DWARF 64-95 are GDB's 16-byte v0-v31, of which AAPCS64
        // preserves (and the analysis recovers) the low 8 bytes only: they
        // are not set, as a whole register value would be half a guess.
        for (std::size_t i = 0; i < u->out.saved_count; ++i) {
            const auto& r = u->out.saved[i];
            const bool vector = abi.arch == Arch::AArch64 && r.reg >= 64;
            if (r.kind == sfunwind::callee_saved::SavedRegister::Kind::Value && !vector)
                set_reg(cb, r.reg, r.value, abi.order);
        }
        st.have_last = true;
        st.last_pc = u->pc;
        st.last_sp = u->sp;
        st.last_id = gdb_frame_id{u->out.found.row.func_start + u->out.found.bias, u->out.step.cfa};
        ++st.stats.frames_unwound;
        return GDB_SUCCESS;
    } catch (...) {
        ++st.stats.failures;
        return GDB_FAIL;
    }
}

gdb_frame_id frame_id(gdb_reader_funcs*, gdb_unwind_callbacks* cb) {
    State& st = state();
    ++st.stats.frame_ids;
    try {
        const Abi* abi = g::table().abi();
        if (abi != nullptr && st.have_last) {
            const auto n = *numbers(*abi);
            const auto pc = get_reg(cb, n.pc, abi->order);
            const auto sp = get_reg(cb, n.sp, abi->order);
            if (pc && sp && *pc == st.last_pc && *sp == st.last_sp) return st.last_id;
        }
        if (auto u = unwind_frame(cb))
            return gdb_frame_id{u->out.found.row.func_start + u->out.found.bias, u->out.step.cfa};
    } catch (...) {
    }
    // Only frames unwind() accepted get here, so this is not reached in
    // practice; a zero id would make GDB stop the backtrace, not loop.
    return gdb_frame_id{0, 0};
}

void destroy(gdb_reader_funcs*) {
    state().have_last = false;
}

gdb_reader_funcs reader_funcs{
    GDB_READER_INTERFACE_VERSION, nullptr, read_debug_info, unwind, frame_id, destroy};

} // namespace

extern "C" {

gdb_reader_funcs* gdb_init_reader(void) {
    return &reader_funcs;
}

void sfunwind_gdb_get_native_stats(struct sfunwind_gdb_native_stats* out) {
    if (out != nullptr) *out = state().stats;
}

void sfunwind_gdb_native_enable(int on) {
    state().enabled = on != 0;
    state().have_last = false;
}

} // extern "C"

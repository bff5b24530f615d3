// SPDX-License-Identifier: MIT
// AArch64 instructions reduced for the callee-saved analysis (instruction.hpp),
// decoded with Capstone 4 or 5 (the two differ in instruction ids, register
// numbers and the access flags they give; only what both give alike is used).
//
// Register writes come from Capstone's access lists, widened where those are
// known to be incomplete: every register operand whose access Capstone does
// not know counts as written (Capstone 5 gives LSE atomics none), and so does
// the first register operand of every instruction but stores, compares and
// branches (the AArch64 destination). Compares are the exception the other
// way: Capstone 4 and 5 list `cmp w19, w0` as writing w19, which it only reads.
#include "capstone_decoding.hpp"
#include "decode_memo.hpp"
#include "instruction.hpp"

#include <array>
#include <optional>
#include <string_view>

namespace sfunwind::callee_saved::detail {
namespace {

// Capstone numbers each register class in one run, in both versions.
static_assert(ARM64_REG_X28 - ARM64_REG_X0 == 28 && ARM64_REG_W30 - ARM64_REG_W0 == 30);
static_assert(ARM64_REG_B31 - ARM64_REG_B0 == 31 && ARM64_REG_H31 - ARM64_REG_H0 == 31 &&
              ARM64_REG_S31 - ARM64_REG_S0 == 31 && ARM64_REG_D31 - ARM64_REG_D0 == 31 &&
              ARM64_REG_Q31 - ARM64_REG_Q0 == 31 && ARM64_REG_V31 - ARM64_REG_V0 == 31);

constexpr std::uint16_t dwarf_fp = 29;
constexpr std::uint16_t dwarf_sp = 31;

unsigned from(unsigned reg, unsigned first) {
    return reg - first;
}

// The DWARF number (AAPCS64 DWARF supplement, section 4.1: x0-x30 are 0-30,
// sp 31, v0-v31 64-95) of a register or of any view of it (w19 is x19, d8,
// s8, h8, b8 and q8 are v8); nullopt for others (xzr, nzcv, system registers).
std::optional<std::uint16_t> dwarf_number(unsigned reg) {
    auto in = [reg](unsigned first, unsigned last) { return reg >= first && reg <= last; };
    if (in(ARM64_REG_X0, ARM64_REG_X28)) return from(reg, ARM64_REG_X0);
    if (in(ARM64_REG_W0, ARM64_REG_W30)) return from(reg, ARM64_REG_W0);
    if (reg == ARM64_REG_X29) return 29;
    if (reg == ARM64_REG_X30) return 30;
    if (reg == ARM64_REG_SP || reg == ARM64_REG_WSP) return dwarf_sp;
    for (const auto& [first, last] : std::array<std::array<unsigned, 2>, 6>{{
             {ARM64_REG_B0, ARM64_REG_B31},
             {ARM64_REG_H0, ARM64_REG_H31},
             {ARM64_REG_S0, ARM64_REG_S31},
             {ARM64_REG_D0, ARM64_REG_D31},
             {ARM64_REG_Q0, ARM64_REG_Q31},
             {ARM64_REG_V0, ARM64_REG_V31},
         }})
        if (in(first, last)) return static_cast<std::uint16_t>(64 + from(reg, first));
    return std::nullopt;
}

// Bytes a register operand moves to or from memory.
std::uint32_t size_of(unsigned reg) {
    auto in = [reg](unsigned first, unsigned last) { return reg >= first && reg <= last; };
    if (in(ARM64_REG_X0, ARM64_REG_X28) || reg == ARM64_REG_X29 || reg == ARM64_REG_X30 ||
        reg == ARM64_REG_XZR || reg == ARM64_REG_SP || in(ARM64_REG_D0, ARM64_REG_D31))
        return 8;
    if (in(ARM64_REG_W0, ARM64_REG_W30) || reg == ARM64_REG_WZR || in(ARM64_REG_S0, ARM64_REG_S31))
        return 4;
    if (in(ARM64_REG_H0, ARM64_REG_H31)) return 2;
    if (in(ARM64_REG_B0, ARM64_REG_B31)) return 1;
    return 16; // q and v registers, and any other: the widest
}

// A whole 8-byte register: x19-x28 themselves, and d8-d15 (the part of
// v8-v15 AAPCS64 section 6.1.2 preserves).
bool whole(unsigned reg) {
    return (reg >= ARM64_REG_X0 && reg <= ARM64_REG_X28) ||
           (reg >= ARM64_REG_D0 && reg <= ARM64_REG_D31);
}

bool starts_with(std::string_view s, std::string_view prefix) {
    return s.substr(0, prefix.size()) == prefix;
}

// Loads that write no memory: `ld...` but the LSE atomics (ldadd, ldclr,
// ldeor, ldset, ldsmax, ldsmin, ldumax, ldumin), which also store.
bool plain_load(std::string_view m) {
    if (!starts_with(m, "ld")) return false;
    for (std::string_view atomic : {"ldadd", "ldclr", "ldeor", "ldset", "ldsm", "ldum"})
        if (starts_with(m, atomic)) return false;
    return true;
}

// A load or store that moves whole registers to consecutive 8-byte slots:
// the forms compilers save and restore callee-saved registers with.
bool register_transfer(std::string_view m) {
    return m == "str" || m == "stp" || m == "stur" || m == "stnp" || m == "ldr" || m == "ldp" ||
           m == "ldur" || m == "ldnp";
}

// A structure load (Arm ARM C7.2: LD1-LD4 of multiple structures, of a
// single structure's lane, and replicating: LD1R-LD4R), which writes every
// register of its list. Capstone 4 marks some of them read only (the third
// of `ld1 {v8.2d-v11.2d}, [x0], #64`, the second of an `ld3` lane load).
bool structure_load(std::string_view m) {
    return m.size() >= 3 && m.size() <= 4 && m[0] == 'l' && m[1] == 'd' && m[2] >= '1' &&
           m[2] <= '4' && (m.size() == 3 || m[3] == 'r');
}

bool is_compare(unsigned id) {
    switch (id) {
    case ARM64_INS_CMP:
    case ARM64_INS_CMN:
    case ARM64_INS_TST:
    case ARM64_INS_CCMP:
    case ARM64_INS_CCMN:
    case ARM64_INS_FCMP:
    case ARM64_INS_FCMPE:
    case ARM64_INS_FCCMP:
    case ARM64_INS_FCCMPE:
        return true;
    default:
        return false;
    }
}

class Reducer {
  public:
    Reducer(csh h, std::span<const std::uint16_t> tracked) : h_(h), tracked_(tracked) {}

    void reduce(const cs_insn& insn, Code& code) const {
        const cs_arm64& a = insn.detail->arm64;
        const std::string_view mnemonic(insn.mnemonic);
        Instruction out;
        out.address = insn.address;
        out.size = static_cast<std::uint8_t>(insn.size);
        out.padding = insn.id == ARM64_INS_NOP;
        const bool branch = flow(insn, a, out);
        const bool store = memory(a, mnemonic, out);
        std::array<RegisterAccess, 2> saves{};
        std::array<RegisterAccess, 2> loads{};
        std::size_t nsaves = 0;
        std::size_t nloads = 0;
        if (register_transfer(mnemonic)) {
            // Consecutive 8-byte slots from the memory operand, in operand order.
            std::int64_t disp = memory_disp(a);
            for (std::uint8_t i = 0; i < a.op_count && i < 2; ++i) {
                const cs_arm64_op& op = a.operands[i];
                if (op.type != ARM64_OP_REG) break;
                const int t = whole(op.reg) ? tracked_index(op.reg) : -1;
                if (t >= 0) {
                    const RegisterAccess access{static_cast<std::uint8_t>(t), disp};
                    if (store)
                        saves[nsaves++] = access;
                    else
                        loads[nloads++] = access;
                }
                disp += size_of(op.reg);
            }
        }
        writes(insn, a, store, branch, std::span(loads.data(), nloads), out);
        code.add(out, std::span(saves.data(), nsaves), std::span(loads.data(), nloads));
    }

  private:
    csh h_;
    std::span<const std::uint16_t> tracked_;

    int tracked_index(unsigned reg) const {
        return detail::tracked_index(tracked_, dwarf_number(reg));
    }

    static const cs_arm64_op* memory_operand(const cs_arm64& a) {
        for (std::uint8_t i = 0; i < a.op_count; ++i)
            if (a.operands[i].type == ARM64_OP_MEM) return &a.operands[i];
        return nullptr;
    }

    // A post-indexed access (`ldp x29, x30, [sp], #16`) uses the base as it
    // is, then adds the trailing immediate; a pre-indexed one (`[sp, #-16]!`)
    // uses base + disp and writes that back. Both Capstone 4 and 5 give the
    // post-index as an immediate operand after the memory operand.
    static std::optional<std::int64_t> post_index(const cs_arm64& a) {
        if (!a.writeback || a.op_count < 2) return std::nullopt;
        const cs_arm64_op& last = a.operands[a.op_count - 1];
        const cs_arm64_op& before = a.operands[a.op_count - 2];
        if (before.type != ARM64_OP_MEM || last.type != ARM64_OP_IMM) return std::nullopt;
        return last.imm;
    }

    static std::int64_t memory_disp(const cs_arm64& a) {
        const cs_arm64_op* m = memory_operand(a);
        if (m == nullptr || post_index(a)) return 0;
        return m->mem.disp;
    }

    static Base base_of(const arm64_op_mem& m) {
        const auto b = dwarf_number(m.base);
        if (b != dwarf_sp && b != dwarf_fp) return Base::Other;
        if (m.index != ARM64_REG_INVALID) return Base::Stack;
        return b == dwarf_sp ? Base::Sp : Base::Fp;
    }

    // Control flow; returns whether the instruction is a branch (its
    // register operands are read, not written).
    bool flow(const cs_insn& insn, const cs_arm64& a, Instruction& out) const {
        const auto imm_target = [&a]() -> std::optional<std::uint64_t> {
            if (a.op_count == 0 || a.operands[a.op_count - 1].type != ARM64_OP_IMM)
                return std::nullopt;
            return static_cast<std::uint64_t>(a.operands[a.op_count - 1].imm);
        };
        switch (insn.id) {
        case ARM64_INS_RET:
        case ARM64_INS_ERET:
            out.flow = Flow::Stop;
            out.returns = true;
            return true;
        case ARM64_INS_BRK:
        case ARM64_INS_HLT:
            // __builtin_trap() and the like: nothing follows.
            out.flow = Flow::Stop;
            return true;
        case ARM64_INS_BL:
            out.flow = Flow::Call;
            if (auto t = imm_target()) {
                out.direct_call = true;
                out.target = *t;
            }
            return true;
        case ARM64_INS_BLR:
            out.flow = Flow::Call;
            return true;
        case ARM64_INS_BR:
            out.flow = Flow::Indirect;
            return true;
        case ARM64_INS_B: {
            const auto t = imm_target();
            const bool conditional =
                a.cc != ARM64_CC_INVALID && a.cc != ARM64_CC_AL && a.cc != ARM64_CC_NV;
            if (!t) {
                out.flow = Flow::Indirect;
            } else {
                out.flow = conditional ? Flow::Branch : Flow::Jump;
                out.target = *t;
            }
            return true;
        }
        case ARM64_INS_CBZ:
        case ARM64_INS_CBNZ:
        case ARM64_INS_TBZ:
        case ARM64_INS_TBNZ:
            if (auto t = imm_target()) {
                out.flow = Flow::Branch;
                out.target = *t;
            }
            return true;
        default:
            break;
        }
        // Returns, calls and jumps with no id above (retaa, blraa, braa: the
        // pointer-authenticating forms decode in Capstone 5 only): by group.
        // A jump of unknown kind ends the path, as an indirect jump does.
        if (cs_insn_group(h_, &insn, ARM64_GRP_RET)) {
            out.flow = Flow::Stop;
            out.returns = true;
            return true;
        }
        if (cs_insn_group(h_, &insn, ARM64_GRP_CALL)) {
            out.flow = Flow::Call;
            return true;
        }
        if (cs_insn_group(h_, &insn, ARM64_GRP_JUMP)) {
            out.flow = Flow::Indirect;
            return true;
        }
        return false;
    }

    // The memory written, and the SP/FP effect of a writeback; returns
    // whether the instruction stores.
    static bool memory(const cs_arm64& a, std::string_view mnemonic, Instruction& out) {
        const cs_arm64_op* m = memory_operand(a);
        if (m == nullptr) return false;
        const Base base = base_of(m->mem);
        const auto post = post_index(a);
        const bool loads = plain_load(mnemonic);
        const bool prefetch = starts_with(mnemonic, "prf");
        if (loads) out.load_base = base;
        if (!loads && !prefetch) {
            std::uint32_t size = 0;
            for (std::uint8_t i = 0; i < a.op_count; ++i)
                if (a.operands[i].type == ARM64_OP_REG) size += size_of(a.operands[i].reg);
            out.store_base = base;
            out.store_disp = post ? 0 : m->mem.disp;
            out.store_size = size == 0 ? 16 : size;
        }
        if (a.writeback) {
            const std::int64_t delta = post ? *post : m->mem.disp;
            if (base == Base::Sp) {
                out.sp = SpEffect::Add;
                out.sp_delta = delta;
            } else if (base == Base::Fp) {
                out.fp = FpEffect::Unknown;
            }
        }
        return !loads && !prefetch;
    }

    // add/sub sp, sp, #imm{, lsl #12}; add/sub sp, x29, #imm; mov sp, x29;
    // add/sub x29, sp, #imm; mov x29, sp; sub sp, sp, xN (alloca: SP
    // lowered where xN holds less than 2^32, State::narrow).
    static void stack_registers(const cs_insn& insn, const cs_arm64& a, Instruction& out) {
        if (insn.id == ARM64_INS_SUB && a.op_count == 3 && a.operands[0].type == ARM64_OP_REG &&
            a.operands[1].type == ARM64_OP_REG && a.operands[2].type == ARM64_OP_REG &&
            dwarf_number(a.operands[0].reg) == dwarf_sp &&
            dwarf_number(a.operands[1].reg) == dwarf_sp) {
            const cs_arm64_op& amount = a.operands[2];
            const auto n = dwarf_number(amount.reg);
            const bool plain = (amount.ext == ARM64_EXT_INVALID || amount.ext == ARM64_EXT_UXTX) &&
                               (amount.shift.type == ARM64_SFT_INVALID || amount.shift.value == 0);
            if (n && plain && amount.reg >= ARM64_REG_X0 && amount.reg <= ARM64_REG_X28) {
                out.sp = SpEffect::Lower;
                out.sp_delta = *n;
                return;
            }
        }
        if (a.op_count < 2 || a.operands[0].type != ARM64_OP_REG ||
            a.operands[1].type != ARM64_OP_REG)
            return;
        const auto dst = dwarf_number(a.operands[0].reg);
        const auto src = dwarf_number(a.operands[1].reg);
        if ((dst != dwarf_sp && dst != dwarf_fp) || (src != dwarf_sp && src != dwarf_fp)) return;
        std::int64_t delta = 0;
        if (insn.id == ARM64_INS_MOV && a.op_count == 2) {
            delta = 0;
        } else if ((insn.id == ARM64_INS_ADD || insn.id == ARM64_INS_SUB) && a.op_count == 3 &&
                   a.operands[2].type == ARM64_OP_IMM) {
            const cs_arm64_op& imm = a.operands[2];
            if (imm.shift.type != ARM64_SFT_INVALID &&
                !(imm.shift.type == ARM64_SFT_LSL && imm.shift.value <= 12))
                return;
            const unsigned shift = imm.shift.type == ARM64_SFT_LSL ? imm.shift.value : 0;
            if (imm.imm < 0 || imm.imm >= (std::int64_t{1} << 24)) return;
            delta = imm.imm * (std::int64_t{1} << shift);
            if (insn.id == ARM64_INS_SUB) delta = -delta;
        } else {
            return;
        }
        set_stack_register(out, dst == dwarf_sp, src == dwarf_sp, delta);
    }

    void writes(const cs_insn& insn, const cs_arm64& a, bool store, bool branch,
                std::span<const RegisterAccess> loads, Instruction& out) const {
        stack_registers(insn, a, out);
        std::uint32_t loaded = 0;
        for (const auto& l : loads)
            loaded |= 1U << l.index;
        auto written = [&](unsigned reg) {
            const auto d = dwarf_number(reg);
            if (!d) return;
            if (*d < 16) out.gpr_written = static_cast<std::uint16_t>(out.gpr_written | 1U << *d);
            if (*d == dwarf_sp) {
                if (out.sp == SpEffect::None) out.sp = SpEffect::Unknown;
            } else if (*d == dwarf_fp) {
                if (out.fp == FpEffect::None) out.fp = FpEffect::Unknown;
            }
            const int t = tracked_index(reg);
            if (t >= 0 && (loaded & (1U << t)) == 0) out.clobbered |= 1U << t;
        };
        cs_regs read{};
        cs_regs written_list{};
        std::uint8_t nread = 0;
        std::uint8_t nwritten = 0;
        if (cs_regs_access(h_, &insn, read, &nread, written_list, &nwritten) != CS_ERR_OK) {
            out.gpr_written = 0xffff;
            out.clobbered = ~std::uint32_t{0} & ~loaded;
            if (out.sp == SpEffect::None) out.sp = SpEffect::Unknown;
            if (out.fp == FpEffect::None) out.fp = FpEffect::Unknown;
            return;
        }
        const bool compare = is_compare(insn.id);
        if (!compare)
            for (std::uint8_t i = 0; i < nwritten; ++i)
                written(written_list[i]);
        const bool loads_list = structure_load(insn.mnemonic);
        for (std::uint8_t i = 0; i < a.op_count; ++i) {
            const cs_arm64_op& op = a.operands[i];
            if (op.type != ARM64_OP_REG) continue;
            const bool destination = i == 0 && !store && !branch && !compare;
            const bool listed = loads_list && op.reg >= ARM64_REG_V0 && op.reg <= ARM64_REG_V31;
            if (op.access == 0 || destination || listed) written(op.reg);
        }
        // x0-x15 (State::narrow's bits) left below 2^32: a W destination,
        // whose write zeroes the upper half (Arm ARM, "Registers in AArch64
        // state"), an AND with a mask below 2^32, or such a constant.
        if (a.op_count >= 1 && a.operands[0].type == ARM64_OP_REG && !store && !branch &&
            !compare) {
            const unsigned dst = a.operands[0].reg;
            const bool w = dst >= ARM64_REG_W0 && dst <= ARM64_REG_W15;
            const auto below_2_32 = [](const cs_arm64_op& op) {
                return op.type == ARM64_OP_IMM && op.imm >= 0 && op.imm <= 0xffffffffLL &&
                       (op.shift.type == ARM64_SFT_INVALID || op.shift.value == 0);
            };
            const bool x = dst >= ARM64_REG_X0 && dst <= ARM64_REG_X15;
            const bool masked =
                x && insn.id == ARM64_INS_AND && a.op_count == 3 && below_2_32(a.operands[2]);
            // mov x13, #0x1580; sub sp, sp, x13: a large frame's size.
            const bool constant = x && (insn.id == ARM64_INS_MOV || insn.id == ARM64_INS_MOVZ) &&
                                  a.op_count == 2 && below_2_32(a.operands[1]);
            const auto d = dwarf_number(dst);
            if ((w || masked || constant) && d && *d < 16 &&
                ((unsigned{out.gpr_written} >> *d) & 1U) != 0)
                out.gpr_narrowed = static_cast<std::uint16_t>(1U << *d);
        }
        // A writeback to any other base register.
        if (a.writeback)
            if (const cs_arm64_op* m = memory_operand(a)) written(m->mem.base);
    }
};

} // namespace

bool decode_aarch64(ByteOrder order, std::uint64_t start, std::span<const std::uint8_t> code,
                    std::span<const std::uint16_t> tracked, Code& out, DecodeMemo* memo) {
    thread_local CapstoneHandle little(CS_ARCH_ARM64, CS_MODE_LITTLE_ENDIAN);
    thread_local CapstoneHandle big(CS_ARCH_ARM64, CS_MODE_BIG_ENDIAN);
    const CapstoneHandle& handle = order == ByteOrder::Big ? big : little;
    // stp x29, x30, [sp, #-16]!; mov x29, sp; ret, in each byte order.
    static constexpr std::array<std::uint8_t, 12> sample_little = {
        0xfd, 0x7b, 0xbf, 0xa9, 0xfd, 0x03, 0x00, 0x91, 0xc0, 0x03, 0x5f, 0xd6};
    static constexpr std::array<std::uint8_t, 12> sample_big = {0xa9, 0xbf, 0x7b, 0xfd, 0x91, 0x00,
                                                                0x03, 0xfd, 0xd6, 0x5f, 0x03, 0xc0};
    static std::once_flag warmed_little;
    static std::once_flag warmed_big;
    if (order == ByteOrder::Big)
        warm_up(handle, warmed_big, sample_big);
    else
        warm_up(handle, warmed_little, sample_little);
    const Reducer reducer(handle.get(), tracked);
    // What the reduction reads of an instruction besides its bytes is its
    // address, for a branch's target (an ADR's or ADRP's result is only a
    // register written): the memo holds AArch64 instructions as it holds
    // x86-64 ones.
    return decode_each_remembered(
        handle, start, code, memo,
        order == ByteOrder::Big ? MemoDecoder::AArch64Big : MemoDecoder::AArch64Little, tracked,
        out, [&](const cs_insn& insn) { reducer.reduce(insn, out); });
}

} // namespace sfunwind::callee_saved::detail

// SPDX-License-Identifier: MIT
// The few Power ISA instruction forms the frame analysis needs (Power ISA
// v3.1 book I, section 1.6 "Instruction Formats"). Field names follow the
// ISA: bit 0 is the most significant bit of the 32-bit word.
//
// Why not Capstone (as callee_saved/ does for x86-64): the analysis must
// know, for every instruction of a function, which GPRs it may write, and
// Capstone cannot decode instructions GCC and glibc emit. Capstone 4.0.2
// (Debian 12) has no Power ISA 2.07 direct moves, which ELFv2 code (POWER8
// at least) uses throughout: 0x7c030166 `mtvsrd vs0,r3`, 0x7c080067
// `mfvsrd r8,vs0`, and no `lwarx` with the EH hint (0x7d00f829); treated as
// "may write any GPR", they make 2954 of the 151655 ppc64le fixture rows
// differ from the CFI instead of 292. Capstone 5.0 decodes those but not
// `scv 0` (0x44000001, ISA 3.0), which glibc 2.36's system calls use: 10
// more differing rows per fixture. Both also decode `bc 20,BI,target`
// (branch always) as `bdnz`, and give PowerPC operands no access flags, so
// what an instruction writes would come from tables of mnemonics here
// anyway. Measured with both versions on tests/fixtures/ppc64 (issue 12).
#pragma once

#include <cstdint>

namespace sfunwind::ppc64::isa {

struct Insn {
    std::uint32_t word = 0;

    unsigned opcode() const { return word >> 26; }
    unsigned rt() const { return (word >> 21) & 31U; } // also RS, BO, FRT
    unsigned ra() const { return (word >> 16) & 31U; } // also BI
    unsigned rb() const { return (word >> 11) & 31U; }
    unsigned xo_x() const { return (word >> 1) & 0x3ffU; } // X/XL/XFX-form extended opcode
    unsigned xo_ds() const { return word & 3U; }           // DS-form extended opcode
    bool lk() const { return (word & 1U) != 0; }
    bool aa() const { return (word & 2U) != 0; }
    std::int32_t d() const { return static_cast<std::int16_t>(word & 0xffffU); }
    std::int32_t ds() const { return static_cast<std::int16_t>(word & 0xfffcU); }
    // I-form LI || 0b00 and B-form BD || 0b00, sign-extended.
    std::int32_t li() const {
        const std::uint32_t v = word & 0x03fffffcU;
        return (v & 0x02000000U) != 0 ? static_cast<std::int32_t>(v | 0xfc000000U)
                                      : static_cast<std::int32_t>(v);
    }
    std::int32_t bd() const { return static_cast<std::int16_t>(word & 0xfffcU); }
    // The SPR number of mfspr/mtspr: the field holds its two 5-bit halves swapped.
    unsigned spr() const { return ((word >> 16) & 31U) | (((word >> 11) & 31U) << 5); }
};

// Primary opcodes (Power ISA appendix "Opcode Maps").
inline constexpr unsigned op_bc = 16, op_b = 18, op_xl = 19, op_addi = 14, op_x = 31, op_ld = 58,
                          op_std = 62;
// Extended opcodes.
inline constexpr unsigned xo_bclr = 16, xo_bcctr = 528, xo_mfspr = 339, xo_mtspr = 467, xo_or = 444,
                          xo_stdux = 181;
inline constexpr unsigned spr_lr = 8;

// BO values with bit 0 (the "ignore CR") and bit 2 ("do not decrement
// CTR") set branch always (Power ISA 2.4, figure 40).
inline bool branches_always(unsigned bo) {
    return (bo & 0x14U) == 0x14U;
}

// Whether the instruction may write GPR `r`. Exact for the forms the frame
// analysis relies on (loads, arithmetic and logical immediates, moves,
// stores with update); conservative (true) for anything it does not know,
// because the analysis only loses precision when it forgets a register.
inline constexpr std::uint32_t nop_word = 0x60000000;    // ori r0,r0,0: the preferred no-op
inline constexpr std::uint32_t nop_r2_word = 0x60420000; // ori r2,r2,0: GCC's alignment filler

inline bool may_write_gpr(const Insn& i, unsigned r) {
    if (i.word == nop_word) return false;
    switch (i.opcode()) {
    case 17:
        // sc and scv: the Linux system call ABI (powerpc/syscall64-abi)
        // clobbers r0 and r3-r12 (r3: the result).
        return r == 0 || (r >= 3 && r <= 12);
    case 4:
        // VMX: a vector result, but for the VX forms that move a count or an
        // element to GPR RT: vclzlsbb/vctzlsbb (xo 1538), vextractbm and its
        // kin (1602), vextu[bhw][lr]x (1549, 1613, 1677, 1805, 1869, 1933).
        switch (i.word & 0x7FFU) {
        case 1538:
        case 1602:
        case 1549:
        case 1613:
        case 1677:
        case 1805:
        case 1869:
        case 1933:
            return i.rt() == r;
        default:
            return false;
        }
    case 16:
    case 18:
    case 19: // branches, CR logic: no GPR written
    case 10:
    case 11: // cmpli, cmpi
    case 36:
    case 38:
    case 44:
    case 52:
    case 54:
    case 47: // stw stb sth stfs stfd stmw
    case 48:
    case 50: // lfs lfd: write FPRs
    case 59:
    case 63:
    case 60: // FP and VSX arithmetic
        return false;
    case 37:
    case 39:
    case 45:
    case 53:
    case 55: // stores with update write RA
    case 49:
    case 51: // lfsu lfdu
        return i.ra() == r;
    case op_std:
        return i.xo_ds() == 1 && i.ra() == r; // std / stdu
    case 32:
    case 34:
    case 40:
    case 42:
    case 7:
    case 8:
    case 12:
    case 13:
    case op_addi:
    case 15:
        return i.rt() == r; // lwz lbz lhz lha mulli subfic addic addic. addi addis
    case 33:
    case 35:
    case 41:
    case 43: // lwzu lbzu lhzu lhau
        return i.rt() == r || i.ra() == r;
    case 46:
        return i.rt() <= r; // lmw rt..r31
    case op_ld:
        return i.rt() == r || (i.xo_ds() == 1 && i.ra() == r); // ld ldu lwa
    case 20:
    case 21:
    case 23:
    case 24:
    case 25:
    case 26:
    case 27:
    case 28:
    case 29:
    case 30:
        return i.ra() == r; // rotates and logical immediates write RA
    case op_x:
        switch (i.xo_x()) {
        // No GPR written: cmp cmpl mtspr mtcrf sync eieio dcbf dcbst dcbt
        // dcbz; indexed stores without update, stwcx. stdcx.; mtvsr* (write
        // a VSR); VMX/VSX loads and stores.
        case 0:
        case 32:
        case 467:
        case 144:
        case 598:
        case 854:
        case 86:
        case 54:
        case 278:
        case 1014:
        case 149:
        case 151:
        case 215:
        case 407:
        case 663:
        case 727:
        case 983:
        case 231:
        case 150:
        case 214:
        case 660:
        case 662:
        case 918:
        case 179:
        case 211:
        case 243:
        case 403:
        case 435:
        case 103:
        case 268:
        case 588:
        case 780:
        case 844:
        case 12:
        case 524:
        case 396:
        case 716:
        case 908:
        case 972:
        case 140:
        case 652:
            return false;
        // Write RA only: indexed stores with update; mfvsrd mfvsrwz mfvsrld.
        case xo_stdux:
        case 183:
        case 247:
        case 439:
        case 695:
        case 759:
        case 51:
        case 115:
        case 307:
        // Logical and shift ops write RA; RS and RB are sources.
        case 28:
        case 60:
        case 124:
        case 284:
        case 316:
        case 412:
        case 444:
        case 476: // and andc nor eqv xor orc or nand
        case 24:
        case 27:
        case 536:
        case 539:
        case 792:
        case 794:
        case 824:
        case 826:
        case 827: // shifts
        case 890:
        case 891:
        case 922:
        case 954:
        case 986:
        case 26:
        case 58:
        case 122:
        case 378:
        case 506:
            return i.ra() == r;
        // Write RT only: mfcr, mfspr, mftb, indexed loads, XO-form arithmetic.
        case 19:
        case 339:
        case 371:
        case 21:
        case 23:
        case 87:
        case 279:
        case 341:
        case 343:
        case 532:
        case 534:
        case 790:
        case 8:
        case 9:
        case 10:
        case 11:
        case 40:
        case 73:
        case 75:
        case 104:
        case 136:
        case 138:
        case 200:
        case 202:
        case 232:
        case 234:
        case 233:
        case 235:
        case 266:
        case 457:
        case 459:
        case 489:
        case 491:
            return i.rt() == r;
        default: // indexed loads with update (ldux, lwzux, ...) and anything unlisted
            return i.rt() == r || i.ra() == r;
        }
    default:
        return true;
    }
}

} // namespace sfunwind::ppc64::isa

// SPDX-License-Identifier: MIT
// s390x (z/Architecture) instructions reduced for the callee-saved analysis
// (instruction.hpp), decoded with Capstone 4 or 5. Both give the same
// register numbers, operand lists and mnemonics for the code compilers emit,
// but neither says which register operands an instruction writes (SystemZ
// has no access flags in Capstone 4), so writes are decided here by
// instruction class, from the mnemonic:
//
//  - The first register operand is written (the z/Architecture destination,
//    Principles of Operation chapter 5 "Instruction Formats"), except for
//    stores, compares, tests and branches, which write none.
//  - Instructions that write an even/odd register pair (mlgr, dlgr, dsgr,
//    sldl, flogr, lpq, cdsg, ...) clobber both registers of it, those that
//    update several operands (mvcle, clst, srst, cksm, the crypto and
//    conversion instructions, ...) clobber every register operand and its
//    pair, and lm/lmg write the whole range r1-r3.
//  - Extended (128-bit) floating-point results occupy an FPR pair (f0/f2,
//    f8/f10, ...): an FPR written by an instruction with an `x` in its
//    mnemonic clobbers both.
//  - Capstone's implicit write lists are added.
//
// A missed write would give a wrong "same value"; an extra one costs
// coverage only, so anything not known to leave a register alone writes it.
#include "capstone_decoding.hpp"
#include "instruction.hpp"

#include <algorithm>
#include <array>
#include <cstdint>
#include <initializer_list>
#include <limits>
#include <optional>
#include <string_view>

namespace sfunwind::callee_saved::detail {
namespace {

// Capstone numbers r0-r15 and f0-f15 in one run each, in both versions.
static_assert(SYSZ_REG_15 - SYSZ_REG_0 == 15 && SYSZ_REG_F15 - SYSZ_REG_F0 == 15);
#if CS_API_MAJOR >= 5
static_assert(SYSZ_REG_V31 - SYSZ_REG_V0 == 31);
#endif

// s390x ELF ABI supplement, "Register usage": r15 is the stack pointer, r11
// the frame pointer GCC uses, r14 the return address.
constexpr std::uint16_t dwarf_sp = 15;
constexpr std::uint16_t dwarf_fp = 11;
constexpr std::uint16_t dwarf_ra = 14;

// s390x ELF ABI supplement, "Stack Frame": a caller provides a 160-byte
// register save area at its SP, which every callee may write.
constexpr std::uint32_t register_save_area = 160;

// A store whose size is not known: everything from its address up.
constexpr std::uint32_t unknown_size = std::numeric_limits<std::uint32_t>::max();

// The DWARF number of a register (s390x ELF ABI supplement, "DWARF register
// number mapping": r0-r15 are 0-15, and 16-31 are f0, f2, f4, f6, f1, f3, f5,
// f7, f8, f10, f12, f14, f9, f11, f13, f15); the vector registers v0-v15
// (Capstone 5) contain f0-f15 as their leftmost 64 bits (Principles of
// Operation, "Vector Registers"), so a write to one is a write to the FPR.
std::optional<std::uint16_t> dwarf_number(unsigned reg) {
    static constexpr std::array<std::uint16_t, 16> fpr = {16, 20, 17, 21, 18, 22, 19, 23,
                                                          24, 28, 25, 29, 26, 30, 27, 31};
    if (reg >= SYSZ_REG_0 && reg <= SYSZ_REG_15)
        return static_cast<std::uint16_t>(reg - SYSZ_REG_0);
    if (reg >= SYSZ_REG_F0 && reg <= SYSZ_REG_F15) return fpr[reg - SYSZ_REG_F0];
#if CS_API_MAJOR >= 5
    if (reg >= SYSZ_REG_V0 && reg <= SYSZ_REG_V15) return fpr[reg - SYSZ_REG_V0];
#endif
    return std::nullopt;
}

bool is_gpr(unsigned reg) {
    return reg >= SYSZ_REG_0 && reg <= SYSZ_REG_15;
}
bool is_fpr(unsigned reg) {
    return reg >= SYSZ_REG_F0 && reg <= SYSZ_REG_F15;
}

bool starts_with(std::string_view s, std::string_view prefix) {
    return s.substr(0, prefix.size()) == prefix;
}

bool one_of(std::string_view m, std::initializer_list<std::string_view> list) {
    for (std::string_view s : list)
        if (m == s) return true;
    return false;
}

// The branch conditions of the extended mnemonics (Principles of Operation,
// appendix B "Branch-Condition Mnemonics"), as in jne, bner, jgnhe, cgrjh.
bool is_condition(std::string_view c) {
    return one_of(c, {"o", "h", "p",   "nle", "l",  "m",  "nhe", "lh", "ne", "nz",
                      "e", "z", "nlh", "he",  "nl", "nm", "le",  "nh", "np", "no"});
}

// Stores: the register operands are sources. `st...` covers st, stg, sty,
// std, stdy, ste, stey, stc, sth, strv*, stm*, stoc*, stfh, stpq, stam,
// stck...; none of them writes a general or floating-point register.
// Only with a memory operand: vstrc and vstrs (vector string range compare)
// write their first operand.
bool is_register_store(std::string_view m, bool has_memory) {
    return has_memory && (starts_with(m, "st") || starts_with(m, "vst") || starts_with(m, "vsce") ||
                          m == "ntstg");
}

// Compares and tests: they set the condition code only. Conversions start
// with `c` too (cdlgbr, cfdbr write their first operand), so this is a list.
bool is_compare(std::string_view m) {
    return one_of(m, {"c",    "cg",    "cgr",    "cgf",   "cgfr",   "cgfi",   "cfi",    "cgh",
                      "cghi", "chi",   "ch",     "chy",   "chsi",   "cghsi",  "chhsi",  "cr",
                      "cy",   "cl",    "clg",    "clgr",  "clgf",   "clgfr",  "clgfi",  "clfi",
                      "clr",  "cli",   "cliy",   "clc",   "clhhsi", "clfhsi", "clghsi", "cly",
                      "clm",  "clmy",  "clmh",   "cgrl",  "cgfrl",  "crl",    "chrl",   "cghrl",
                      "clrl", "clgrl", "clgfrl", "clhrl", "clghrl", "chf",    "clhf",   "chhr",
                      "chlr", "clhhr", "clhlr",  "cih",   "clih",   "cdbr",   "cdb",    "cebr",
                      "ceb",  "cxbr",  "kdbr",   "kebr",  "kxbr",   "kdb",    "keb",    "tm",
                      "tmy",  "tmll",  "tmlh",   "tmhl",  "tmhh",   "tml",    "tmh",    "tcdb",
                      "tceb", "tcxb",  "tp"});
}

// Compare and branch (cgrj, clij, ... with a condition): a compare with a
// relative target; the register-target forms (cgrb, clib, ...) jump through
// memory. Both write no register.
enum class CompareBranch : std::uint8_t { No, Relative, Indirect };
CompareBranch compare_branch(std::string_view m) {
    for (std::string_view base : {"cgrj", "crj", "clgrj", "clrj", "cgij", "cij", "clgij", "clij"})
        if (starts_with(m, base) && is_condition(m.substr(base.size())))
            return CompareBranch::Relative;
    for (std::string_view base : {"cgrb", "crb", "clgrb", "clrb", "cgib", "cib", "clgib", "clib"})
        if (starts_with(m, base) && is_condition(m.substr(base.size())))
            return CompareBranch::Indirect;
    return CompareBranch::No;
}

// Compare and trap (crt, cgit, clgt, ... with a condition): no register write.
bool is_compare_trap(std::string_view m) {
    for (std::string_view base :
         {"crt", "cgrt", "cit", "cgit", "clrt", "clgrt", "clfit", "clgit", "clt", "clgt"})
        if (starts_with(m, base) && is_condition(m.substr(base.size()))) return true;
    return false;
}

// Instructions whose first register operand names an even/odd pair they
// write (Principles of Operation: multiply and divide into a pair, double
// shifts, flogr's count and remainder, quadword loads, compare double and swap).
bool writes_first_pair(std::string_view m) {
    return one_of(m, {"mlgr", "mlg",  "mlr",  "ml",   "mr",   "m",    "mfy",  "mg",
                      "mgrk", "dlgr", "dlg",  "dlr",  "dl",   "dsgr", "dsg",  "dsgfr",
                      "dsgf", "dr",   "d",    "sldl", "srdl", "slda", "srda", "flogr",
                      "lpq",  "cds",  "cdsy", "cdsg", "lpd",  "lpdg", "tre"});
}

// Instructions that update several single register operands (string
// searches and moves advance both addresses; compare and swap reloads r1,
// branch on index adds r3 to r1; ...): every register operand counts as
// written.
bool writes_operands(std::string_view m) {
    return one_of(m, {"clst", "mvst", "srst", "srstu", "cs", "csy", "csg", "bxh", "bxle", "bxhg",
                      "bxleg", "brxh", "brxle", "brxhg", "brxlg", "lptea", "ectg"});
}

// Instructions that update several register operands that are even/odd
// pairs, or registers the operands only imply: every register operand and
// its pair count as written.
bool writes_all_pairs(std::string_view m) {
    return one_of(m, {"mvcl",  "clcl", "mvcle", "clcle",  "mvclu",   "clclu", "cuse",  "cksm",
                      "cmpsc", "trte", "trtre", "troo",   "trot",    "trto",  "trtt",  "cu12",
                      "cu14",  "cu21", "cu24",  "cu41",   "cu42",    "cuutf", "cutfu", "km",
                      "kmc",   "kmf",  "kmo",   "kmctr",  "kma",     "kimd",  "klmd",  "kmac",
                      "kdsa",  "pcc",  "prno",  "ppno",   "pckmo",   "kmcs",  "sortl", "dfltcc",
                      "nnpa",  "plo",  "csst",  "tbegin", "tbeginc", "lmd"});
}

// Load multiple: r1 through r3, wrapping from r15 to r0 (lm, lmy, lmg, lmh;
// vlm for vector registers).
bool is_load_multiple(std::string_view m) {
    return one_of(m, {"lm", "lmy", "lmg", "lmh", "vlm"});
}

// Bytes a store instruction writes at its memory operand, for one register
// (store multiple: per register); unknown_size where it is not known.
std::uint32_t store_size(std::string_view m) {
    if (one_of(m, {"stg", "std", "stdy", "strvg", "stmg", "ntstg", "stgrl", "csg", "agsi", "algsi",
                   "mvghi"}) ||
        starts_with(m, "stocg"))
        return 8;
    if (one_of(m, {"st", "sty", "ste", "stey", "strv", "stm", "stmy", "stmh", "stfh", "stam",
                   "stamy", "strl", "cs", "csy", "asi", "alsi", "mvhi"}) ||
        starts_with(m, "stoc"))
        return 4;
    if (one_of(m, {"sth", "sthy", "strvh", "sthh", "sthrl", "mvhhi"})) return 2;
    if (one_of(m, {"stc", "stcy", "stch", "mvi", "mviy", "ni", "niy", "oi", "oiy", "xi", "xiy"}))
        return 1;
    if (one_of(m, {"stpq", "cdsg"})) return 16;
    return unknown_size;
}

// Instructions whose first operand is memory they read only.
bool reads_first_memory(std::string_view m) {
    return is_compare(m) || one_of(m, {"trt", "trtr", "pfd", "pfdrl", "cvd", "cvdy", "cvdg"});
}

// Interlocked load-and-op (laa, lang, ...): a load that also stores.
bool is_interlocked(std::string_view m) {
    return one_of(m, {"laa", "laag", "laal", "laalg", "lan", "lang", "lao", "laog", "lax", "laxg"});
}

// The registers r1 through r3 of a store or load multiple, in slot order.
std::array<unsigned, 16> register_range(unsigned first, unsigned last, unsigned base,
                                        std::size_t& count) {
    std::array<unsigned, 16> out{};
    count = 0;
    for (unsigned r = first - base;; r = (r + 1) % 16) {
        out[count++] = base + r;
        if (r == last - base || count == 16) break;
    }
    return out;
}

// General registers that hold SP + a constant in the straight-line code a
// function starts with: GCC saves f8-f15 through one (`lgr %r14,%r15; aghi
// %r14,-64; std %f8,0(%r14)`), after moving SP. Offsets are from the SP at
// entry; a store through such a register is a store relative to SP. Only
// until the first instruction that does not fall through, and before `end`:
// decode_s390x() sets it to the first address a jump or branch enters that
// code at (the copies hold only on the straight line from the entry).
struct SpCopies {
    bool active = true;
    std::uint64_t end = std::numeric_limits<std::uint64_t>::max();
    std::int64_t sp = 0; // SP before the instruction, from the entry SP
    std::array<std::optional<std::int64_t>, 16> reg{};
    std::optional<std::uint64_t> last_use; // the last instruction a copy placed
};

class Reducer {
  public:
    explicit Reducer(std::span<const std::uint16_t> tracked) : tracked_(tracked) {}

    // Returns false at an instruction the linear decode must end at.
    // `copies` (null: none) follows the registers that copy SP.
    bool reduce(const cs_insn& insn, Code& code, SpCopies* copies) const {
        const cs_sysz& z = insn.detail->sysz;
        const std::string_view m(insn.mnemonic);
        // ex and exrl run another instruction, changed by a register: what
        // it writes is not known here. Like bytes Capstone cannot decode,
        // they end the linear decode (what follows is unknown).
        if (m == "ex" || m == "exrl") return false;
        Instruction out;
        out.address = insn.address;
        out.size = static_cast<std::uint8_t>(insn.size);
        const bool branch = flow(m, z, out);
        const cs_sysz_op* mem = memory_operand(z);
        const auto [base, disp0] =
            mem != nullptr ? place(mem->mem, copies, insn.address) : Placed{Base::None, 0};
        std::array<RegisterAccess, 16> saves{};
        std::array<RegisterAccess, 16> loads{};
        std::size_t nsaves = 0;
        std::size_t nloads = 0;
        const bool store = memory(m, z, mem, base, disp0, out);
        if (out.flow == Flow::Call && out.store_base == Base::None) {
            // The callee may write the register save area above SP (s390x
            // ELF ABI supplement, "Stack Frame"), not only below it.
            out.store_base = Base::Sp;
            out.store_disp = 0;
            out.store_size = register_save_area;
        }
        if (mem != nullptr && !branch) {
            // Whole 8-byte registers to or from consecutive slots: stg/lg,
            // std/ld (f8-f15 are 8 bytes), stmg/lmg.
            const bool multiple = m == "stmg" || m == "lmg";
            const bool single = one_of(m, {"stg", "std", "stdy", "lg", "ld", "ldy"});
            if ((multiple || single) && z.op_count >= 2 && z.operands[0].type == SYSZ_OP_REG) {
                std::size_t count = 1;
                std::array<unsigned, 16> regs{z.operands[0].reg};
                if (multiple) {
                    if (z.operands[1].type != SYSZ_OP_REG || !is_gpr(z.operands[0].reg) ||
                        !is_gpr(z.operands[1].reg))
                        count = 0;
                    else
                        regs =
                            register_range(z.operands[0].reg, z.operands[1].reg, SYSZ_REG_0, count);
                }
                std::int64_t disp = disp0;
                for (std::size_t i = 0; i < count; ++i, disp += 8) {
                    const int t = tracked_index(regs[i]);
                    if (t < 0) continue;
                    const RegisterAccess access{static_cast<std::uint8_t>(t), disp};
                    if (store)
                        saves[nsaves++] = access;
                    else
                        loads[nloads++] = access;
                }
                if (!store) out.load_base = base;
            }
        }
        const std::uint16_t gprs =
            writes(insn, m, z, store, branch, std::span(loads.data(), nloads), out);
        if (copies != nullptr) follow_copies(m, z, gprs, out, *copies);
        code.add(out, std::span(saves.data(), nsaves), std::span(loads.data(), nloads));
        return true;
    }

  private:
    std::span<const std::uint16_t> tracked_;

    int tracked_index(unsigned reg) const {
        return detail::tracked_index(tracked_, dwarf_number(reg));
    }

    struct Placed {
        Base base;
        std::int64_t disp;
    };

    // A memory operand's base: SP + disp where a register copying SP is its
    // only address register, else base_of().
    static Placed place(const sysz_op_mem& mem, SpCopies* copies, std::uint64_t address) {
        if (copies != nullptr && copies->active && address < copies->end && is_gpr(mem.base) &&
            mem.base != SYSZ_REG_0 && (mem.index == SYSZ_REG_INVALID || mem.index == SYSZ_REG_0)) {
            const auto& copy = copies->reg[mem.base - SYSZ_REG_0];
            if (copy) {
                copies->last_use = address;
                return {Base::Sp, *copy - copies->sp + mem.disp};
            }
        }
        return {base_of(mem), mem.disp};
    }

    // After an instruction: which registers copy SP, and SP itself.
    static void follow_copies(std::string_view m, const cs_sysz& z, std::uint16_t gprs,
                              const Instruction& out, SpCopies& copies) {
        if (!copies.active) return;
        // The new copy, from the registers before the instruction.
        std::optional<unsigned> dst;
        std::optional<std::int64_t> value;
        auto copy_of = [&copies](unsigned reg) -> std::optional<std::int64_t> {
            if (reg == SYSZ_REG_15) return copies.sp;
            if (!is_gpr(reg) || reg == SYSZ_REG_0) return std::nullopt;
            return copies.reg[reg - SYSZ_REG_0];
        };
        if (z.op_count >= 2 && z.operands[0].type == SYSZ_OP_REG && is_gpr(z.operands[0].reg)) {
            dst = z.operands[0].reg;
            const cs_sysz_op& second = z.operands[1];
            if (m == "lgr" && z.op_count == 2 && second.type == SYSZ_OP_REG) {
                value = copy_of(second.reg);
            } else if ((m == "la" || m == "lay") && z.op_count == 2 && second.type == SYSZ_OP_MEM &&
                       (second.mem.index == SYSZ_REG_INVALID || second.mem.index == SYSZ_REG_0)) {
                if (auto b = copy_of(second.mem.base)) value = *b + second.mem.disp;
            } else if ((m == "aghi" || m == "agfi") && z.op_count == 2 &&
                       second.type == SYSZ_OP_IMM) {
                if (auto b = copy_of(*dst)) value = *b + second.imm;
            } else if (m == "aghik" && z.op_count == 3 && second.type == SYSZ_OP_REG &&
                       z.operands[2].type == SYSZ_OP_IMM) {
                if (auto b = copy_of(second.reg)) value = *b + z.operands[2].imm;
            }
        }
        for (unsigned r = 0; r < 16; ++r)
            if ((gprs & (1U << r)) != 0) copies.reg[r].reset();
        // SP and FP are followed by the analysis itself.
        if (dst && value && *dst != SYSZ_REG_15 && *dst != SYSZ_REG_11)
            copies.reg[*dst - SYSZ_REG_0] = value;
        if (out.sp == SpEffect::Add)
            copies.sp += out.sp_delta;
        else if (out.sp != SpEffect::None)
            copies.active = false;
        if (out.flow != Flow::Next) copies.active = false;
    }

    static const cs_sysz_op* memory_operand(const cs_sysz& z) {
        for (std::uint8_t i = 0; i < z.op_count && i < 6; ++i)
            if (z.operands[i].type == SYSZ_OP_MEM) return &z.operands[i];
        return nullptr;
    }

    // Base and index: register 0 in either means none (Principles of
    // Operation, "Address Generation"); Capstone gives 0 or SYSZ_REG_0.
    static Base base_of(const sysz_op_mem& mem) {
        auto reg = [](unsigned r) -> std::optional<std::uint16_t> {
            if (r == SYSZ_REG_INVALID || r == SYSZ_REG_0) return std::nullopt;
            return dwarf_number(r);
        };
        const auto b = reg(mem.base);
        const auto x = reg(mem.index);
        const bool b_stack = b == dwarf_sp || b == dwarf_fp;
        const bool x_stack = x == dwarf_sp || x == dwarf_fp;
        if (b && x) return b_stack || x_stack ? Base::Stack : Base::Other;
        const auto only = b ? b : x;
        if (only == dwarf_sp) return Base::Sp;
        if (only == dwarf_fp) return Base::Fp;
        return Base::Other;
    }

    static std::optional<std::uint64_t> imm_target(const cs_sysz& z) {
        if (z.op_count == 0 || z.operands[z.op_count - 1].type != SYSZ_OP_IMM) return std::nullopt;
        return static_cast<std::uint64_t>(z.operands[z.op_count - 1].imm);
    }

    // Control flow; returns whether the instruction is a branch, call or
    // return (whose register operands, but a call's return-address register
    // and a count's, are read only).
    static bool flow(std::string_view m, const cs_sysz& z, Instruction& out) {
        // Relative jumps: j, jg (always), j<cond>, jg<cond>, brc/brcl with a
        // mask, jnop (never).
        auto relative = [&](bool conditional) {
            const auto t = imm_target(z);
            if (!t) {
                out.flow = Flow::Indirect;
                return;
            }
            out.flow = conditional ? Flow::Branch : Flow::Jump;
            out.target = *t;
        };
        if (m == "j" || m == "jg") {
            relative(false);
            return true;
        }
        if (m == "jnop" || m == "jgnop" || m == "nop" || m == "nopr") {
            out.padding = true;
            return true;
        }
        if (starts_with(m, "jg") && is_condition(m.substr(2))) {
            relative(true);
            return true;
        }
        if (starts_with(m, "j") && is_condition(m.substr(1))) {
            relative(true);
            return true;
        }
        if (m == "brc" || m == "brcl") {
            // brc M, target: M = 15 always, 0 never.
            const std::int64_t mask =
                z.op_count >= 1 && z.operands[0].type == SYSZ_OP_IMM ? z.operands[0].imm : -1;
            if (mask == 0) {
                out.padding = true;
            } else {
                relative(mask != 15);
            }
            return true;
        }
        // Branch on count and on index: r1 counts (writes() sees the write).
        if (one_of(m, {"brct", "brctg", "brcth", "brxh", "brxle", "brxhg", "brxlg"})) {
            relative(true);
            return true;
        }
        if (one_of(m, {"bct", "bctg", "bctr", "bctgr", "bxh", "bxle", "bxhg", "bxleg"})) {
            // bctr r1, 0 only counts; any other form may jump through a register.
            const bool no_target = (m == "bctr" || m == "bctgr") && z.op_count >= 2 &&
                                   z.operands[1].type == SYSZ_OP_REG &&
                                   z.operands[1].reg == SYSZ_REG_0;
            if (!no_target) out.flow = Flow::Indirect;
            return true;
        }
        switch (compare_branch(m)) {
        case CompareBranch::Relative:
            relative(true);
            return true;
        case CompareBranch::Indirect:
            out.flow = Flow::Indirect;
            return true;
        case CompareBranch::No:
            break;
        }
        // Calls: the return address goes to r1 (r14 by the ABI).
        if (one_of(m, {"brasl", "bras"})) {
            out.flow = Flow::Call;
            if (auto t = imm_target(z)) {
                out.direct_call = true;
                out.target = *t;
            }
            return true;
        }
        if (one_of(m, {"basr", "bas", "balr", "bal", "bassm", "bsm"})) {
            // basr r1, 0 (bsm too) only loads the address: no call.
            const bool no_target = z.op_count >= 2 && z.operands[1].type == SYSZ_OP_REG &&
                                   z.operands[1].reg == SYSZ_REG_0;
            if (!no_target) out.flow = Flow::Call;
            return true;
        }
        // Register branches: br r (always), b<cond>r r, bcr M, r. Through r14
        // they return (the ABI's return address register); through another
        // register they are an indirect jump or tail call.
        std::optional<bool> conditional;
        unsigned reg = SYSZ_REG_INVALID;
        if (m == "br" && z.op_count >= 1 && z.operands[0].type == SYSZ_OP_REG) {
            conditional = false;
            reg = z.operands[0].reg;
        } else if (m.size() >= 3 && m.front() == 'b' && m.back() == 'r' &&
                   is_condition(m.substr(1, m.size() - 2)) && z.op_count >= 1 &&
                   z.operands[0].type == SYSZ_OP_REG) {
            conditional = true;
            reg = z.operands[0].reg;
        } else if (m == "bcr") {
            const std::int64_t mask =
                z.op_count >= 1 && z.operands[0].type == SYSZ_OP_IMM ? z.operands[0].imm : -1;
            if (z.op_count >= 2 && z.operands[1].type == SYSZ_OP_REG) reg = z.operands[1].reg;
            // bcr 0, r and bcr M, r0 never branch (nopr; bcr 14/15, 0 serialise).
            if (mask == 0 || reg == SYSZ_REG_0) {
                out.padding = mask == 0;
                return true;
            }
            conditional = mask != 15;
        }
        if (conditional) {
            if (dwarf_number(reg) == dwarf_ra) {
                // A conditional return: the path goes on where it does not.
                if (!*conditional) {
                    out.flow = Flow::Stop;
                    out.returns = true;
                }
            } else {
                out.flow = Flow::Indirect;
            }
            return true;
        }
        // Memory-target branches: b d(x,b), b<cond> d(x,b), bc M, d(x,b).
        if (m == "b" || m == "bc" ||
            (m.size() >= 2 && m.front() == 'b' && is_condition(m.substr(1)))) {
            out.flow = Flow::Indirect;
            return true;
        }
        // Loading a PSW: nothing follows.
        if (one_of(m, {"lpsw", "lpswe", "lpswey"})) {
            out.flow = Flow::Stop;
            return true;
        }
        return false;
    }

    // The memory written; returns whether the instruction stores.
    static bool memory(std::string_view m, const cs_sysz& z, const cs_sysz_op* mem, Base base,
                       std::int64_t disp, Instruction& out) {
        if (mem == nullptr) return false;
        if (m == "la" || m == "lay" || m == "larl") return false; // addresses only
        const bool first = z.op_count >= 1 && &z.operands[0] == mem;
        bool store = false;
        std::uint32_t size = unknown_size;
        if (is_register_store(m, true)) {
            store = true;
            size = store_size(m);
            // Store multiple: one slot per register of r1-r3.
            if (one_of(m, {"stmg", "stm", "stmy", "stmh", "stam", "stamy"}) && z.op_count >= 2 &&
                z.operands[0].type == SYSZ_OP_REG && z.operands[1].type == SYSZ_OP_REG) {
                const unsigned a = z.operands[0].reg;
                const unsigned b = z.operands[1].reg;
                const unsigned n = is_gpr(a) && is_gpr(b) ? (b - a + 16) % 16 + 1 : 16;
                size = size * n;
            }
        } else if (is_interlocked(m) || one_of(m, {"cs", "csy", "csg", "cds", "cdsy", "cdsg"})) {
            store = true;
            size = store_size(m);
        } else if (first && !reads_first_memory(m)) {
            // Storage-to-storage and storage-immediate forms (mvc, xc, mvi,
            // mvghi, asi, ni, ...) write their first operand: SS lengths from
            // Capstone, the others by mnemonic.
            store = true;
            size =
                mem->mem.length != 0 ? static_cast<std::uint32_t>(mem->mem.length) : store_size(m);
        }
        if (store) {
            out.store_base = base;
            out.store_disp = disp;
            out.store_size = size;
        }
        return store;
    }

    // aghi/agfi %r15, imm; la/lay %r15, d(%r15 or %r11); lgr %r15, %r11;
    // the same forms with r11 from r15; aghik %r15/%r11, %r15/%r11, imm.
    static void stack_registers(std::string_view m, const cs_sysz& z, Instruction& out) {
        if (z.op_count < 2 || z.operands[0].type != SYSZ_OP_REG) return;
        const auto dst = dwarf_number(z.operands[0].reg);
        if (dst != dwarf_sp && dst != dwarf_fp) return;
        std::optional<std::uint16_t> src;
        std::int64_t delta = 0;
        const cs_sysz_op& second = z.operands[1];
        if ((m == "aghi" || m == "agfi") && z.op_count == 2 && second.type == SYSZ_OP_IMM) {
            src = dst;
            delta = second.imm;
        } else if ((m == "algfi" || m == "slgfi") && z.op_count == 2 &&
                   second.type == SYSZ_OP_IMM && second.imm >= 0 &&
                   second.imm <= std::int64_t{0xffffffff}) {
            src = dst;
            delta = m == "algfi" ? second.imm : -second.imm;
        } else if ((m == "la" || m == "lay") && z.op_count == 2 && second.type == SYSZ_OP_MEM) {
            const Base b = base_of(second.mem);
            if (b == Base::Sp) src = dwarf_sp;
            if (b == Base::Fp) src = dwarf_fp;
            delta = second.mem.disp;
        } else if (m == "lgr" && z.op_count == 2 && second.type == SYSZ_OP_REG) {
            src = dwarf_number(second.reg);
        } else if (m == "aghik" && z.op_count == 3 && second.type == SYSZ_OP_REG &&
                   z.operands[2].type == SYSZ_OP_IMM) {
            src = dwarf_number(second.reg);
            delta = z.operands[2].imm;
        }
        if (src != dwarf_sp && src != dwarf_fp) return;
        set_stack_register(out, dst == dwarf_sp, src == dwarf_sp, delta);
    }

    // Records the writes in `out`; returns the general registers written
    // (bit n: rn).
    std::uint16_t writes(const cs_insn& insn, std::string_view m, const cs_sysz& z, bool store,
                         bool branch, std::span<const RegisterAccess> loads,
                         Instruction& out) const {
        std::uint16_t gprs = 0;
        stack_registers(m, z, out);
        std::uint32_t loaded = 0;
        for (const auto& l : loads)
            loaded |= 1U << l.index;
        auto written = [&](unsigned reg) {
            if (is_gpr(reg)) gprs |= static_cast<std::uint16_t>(1U << (reg - SYSZ_REG_0));
            const auto d = dwarf_number(reg);
            if (!d) return;
            if (*d < 64) out.written |= std::uint64_t{1} << *d;
            if (*d == dwarf_sp) {
                if (out.sp == SpEffect::None) out.sp = SpEffect::Unknown;
            } else if (*d == dwarf_fp) {
                if (out.fp == FpEffect::None) out.fp = FpEffect::Unknown;
            }
            const int t = tracked_index(reg);
            if (t >= 0 && (loaded & (1U << t)) == 0) out.clobbered |= 1U << t;
        };
        // A register and the other of its pair: r(n ^ 1) for general
        // registers, f(n ^ 2) for floating-point ones (f0/f2, f1/f3, ...).
        auto written_pair = [&](unsigned reg) {
            written(reg);
            if (is_gpr(reg)) written(SYSZ_REG_0 + ((reg - SYSZ_REG_0) ^ 1U));
            if (is_fpr(reg)) written(SYSZ_REG_F0 + ((reg - SYSZ_REG_F0) ^ 2U));
        };
        // Implicit writes Capstone knows of.
        for (std::uint8_t i = 0; i < insn.detail->regs_write_count; ++i)
            written(insn.detail->regs_write[i]);

        // Branch and link writes the return address to r1 whether it
        // branches or not (basr %r13,0 loads a base register).
        const bool links =
            one_of(m, {"brasl", "bras", "basr", "bas", "balr", "bal", "bassm", "bsm"});
        const bool counts = one_of(m, {"brct", "brctg", "brcth", "bct", "bctg", "bctr", "bctgr"});
        if (writes_all_pairs(m) || writes_operands(m)) {
            const bool pairs = writes_all_pairs(m);
            for (std::uint8_t i = 0; i < z.op_count && i < 6; ++i) {
                if (z.operands[i].type != SYSZ_OP_REG) continue;
                if (pairs)
                    written_pair(z.operands[i].reg);
                else
                    written(z.operands[i].reg);
            }
            return gprs;
        }
        if (is_load_multiple(m) && z.op_count >= 2 && z.operands[0].type == SYSZ_OP_REG &&
            z.operands[1].type == SYSZ_OP_REG) {
            const unsigned a = z.operands[0].reg;
            const unsigned b = z.operands[1].reg;
            if (is_gpr(a) && is_gpr(b)) {
                std::size_t count = 0;
                const auto regs = register_range(a, b, SYSZ_REG_0, count);
                for (std::size_t i = 0; i < count; ++i)
                    written(regs[i]);
                return gprs;
            }
#if CS_API_MAJOR >= 5
            if (a >= SYSZ_REG_V0 && a <= SYSZ_REG_V31 && b >= SYSZ_REG_V0 && b <= SYSZ_REG_V31) {
                for (unsigned r = a; r <= b; ++r)
                    written(r);
                // vlm wraps from v31 to v0.
                if (b < a) out.clobbered = ~std::uint32_t{0} & ~loaded;
                out.written = ~std::uint64_t{0};
                return gprs;
            }
#endif
            // Access registers (lam) and anything else: every register.
            out.clobbered = ~std::uint32_t{0} & ~loaded;
            out.written = ~std::uint64_t{0};
            return 0xffff;
        }
        // Stores, compares, tests and branches write no register operand,
        // but a call's return-address register and a count.
        const bool none = (store && !is_interlocked(m) && m != "cs" && m != "csy" && m != "csg" &&
                           m != "cds" && m != "cdsy" && m != "cdsg") ||
                          is_compare(m) || is_compare_trap(m) ||
                          compare_branch(m) != CompareBranch::No || (branch && !links && !counts) ||
                          m == "pfd" || m == "pfdrl";
        if (none) return gprs;
        const cs_sysz_op* first = nullptr;
        for (std::uint8_t i = 0; i < z.op_count && i < 6; ++i)
            if (z.operands[i].type == SYSZ_OP_REG) {
                first = &z.operands[i];
                break;
            }
        if (first == nullptr) return gprs;
        // ldgr, lgdr, lgr and ldr copy a whole 8-byte register.
        if (one_of(m, {"ldgr", "lgdr", "lgr", "ldr"}) && z.op_count == 2 &&
            z.operands[1].type == SYSZ_OP_REG) {
            const auto to = dwarf_number(first->reg);
            const auto from = dwarf_number(z.operands[1].reg);
            if (to && from && &z.operands[0] == first) {
                out.copies = true;
                out.copy_to = *to;
                out.copy_from = *from;
            }
        }
        const bool extended_fp = is_fpr(first->reg) && m.find('x') != std::string_view::npos;
        if (writes_first_pair(m) || extended_fp)
            written_pair(first->reg);
        else
            written(first->reg);
        return gprs;
    }
};

// Capstone 4.0.2 decodes no BRANCH ON CONDITION of the RX form (opcode
// 0x47): neither `nop` (bc 0, the 4-byte alignment filler) nor `b
// 0(%r4,%r2)`, GCC's jump through a switch table; Capstone 5 does. Its format
// is fixed (z/Architecture Principles of Operation, "BRANCH ON CONDITION":
// 0x47, M1 in bits 8-11, X2, B2, D2) and it writes no register, so it is
// read here, as the Capstone 5 path reads it (reduce): mask 0 never branches
// (padding), any other mask jumps to a computed address (Flow::Indirect).
std::size_t branch_on_condition(std::uint64_t address, std::span<const std::uint8_t> rest,
                                Code& out) {
    if (rest.size() < 4 || rest[0] != 0x47) return 0;
    Instruction in;
    in.address = address;
    in.size = 4;
    if ((rest[1] >> 4) == 0)
        in.padding = true;
    else
        in.flow = Flow::Indirect;
    out.add(in, {}, {});
    return 4;
}

} // namespace

bool decode_s390x(std::uint64_t start, std::span<const std::uint8_t> code,
                  std::span<const std::uint16_t> tracked, Code& out) {
    thread_local CapstoneHandle handle(CS_ARCH_SYSZ, CS_MODE_BIG_ENDIAN);
    // stmg %r6,%r15,48(%r15); br %r14.
    static constexpr std::array<std::uint8_t, 8> sample = {0xeb, 0x6f, 0xf0, 0x30,
                                                           0x00, 0x24, 0x07, 0xfe};
    static std::once_flag warmed;
    warm_up(handle, warmed, sample);
    const Reducer reducer(tracked);
    const std::size_t first = out.instructions.size();
    const std::size_t first_access = out.accesses.size();
    auto run = [&](SpCopies* copies) {
        return decode_each(
            handle, start, code,
            [&](const cs_insn& insn) { return reducer.reduce(insn, out, copies); },
            [&](std::uint64_t address, std::span<const std::uint8_t> rest) {
                return branch_on_condition(address, rest, out);
            });
    };
    SpCopies copies;
    if (!run(&copies)) return false;
    if (!copies.last_use) return true;
    // A jump or branch into the straight line after its start: what the
    // copies hold from there on depends on the path. Decoded again with the
    // copies ended there.
    std::uint64_t entered = std::numeric_limits<std::uint64_t>::max();
    for (std::size_t k = first; k < out.instructions.size(); ++k) {
        const Instruction& in = out.instructions[k];
        if ((in.flow == Flow::Jump || in.flow == Flow::Branch) && in.target > start)
            entered = std::min(entered, in.target);
    }
    if (entered <= *copies.last_use) {
        out.instructions.resize(first);
        out.accesses.resize(first_access);
        SpCopies until;
        until.end = entered;
        run(&until);
    }
    return true;
}

} // namespace sfunwind::callee_saved::detail

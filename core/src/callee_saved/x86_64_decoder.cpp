// SPDX-License-Identifier: MIT
#include "capstone_decoding.hpp"
#include "decode_memo.hpp"
#include "instruction.hpp"
#include "x86_64_form.hpp"
#include "x86_64_form_memo.hpp"

#include <algorithm>
#include <array>
#include <memory>
#include <optional>

namespace sfunwind::callee_saved::detail {

bool is_full(unsigned reg) {
    switch (reg) {
    case X86_REG_RAX:
    case X86_REG_RDX:
    case X86_REG_RCX:
    case X86_REG_RBX:
    case X86_REG_RSI:
    case X86_REG_RDI:
    case X86_REG_RBP:
    case X86_REG_RSP:
    case X86_REG_R8:
    case X86_REG_R9:
    case X86_REG_R10:
    case X86_REG_R11:
    case X86_REG_R12:
    case X86_REG_R13:
    case X86_REG_R14:
    case X86_REG_R15:
        return true;
    default:
        return false;
    }
}

namespace {

constexpr std::uint16_t dwarf_rbp = 6;
constexpr std::uint16_t dwarf_rsp = 7;
constexpr std::uint16_t all_gprs = 0xffff;

// An instruction's saves and loads (x86-64 moves one register at most).
struct Accesses {
    std::optional<RegisterAccess> save;
    std::optional<RegisterAccess> load;
};

class Reducer {
  public:
    explicit Reducer(std::span<const std::uint16_t> tracked) : tracked_(tracked) {}

    void reduce(const X86Form& x, std::uint64_t address, Code& code) const {
        Instruction out;
        Accesses a;
        out.address = address;
        out.size = x.size;
        out.padding = x.id == X86_INS_NOP || x.id == X86_INS_INT3;
        out.gpr_written = x.regs_known ? x.written : all_gprs;
        flow(x, out);
        switch (x.id) {
        case X86_INS_PUSH:
            push(x, out, a);
            break;
        case X86_INS_POP:
            pop(x, out, a);
            break;
        case X86_INS_LEAVE:
            // rsp = rbp; pop rbp.
            out.sp = SpEffect::FromFp;
            out.sp_delta = 8;
            out.fp = FpEffect::Unknown;
            break;
        case X86_INS_CALL:
            out.store_base = Base::Sp;
            out.store_disp = -8;
            out.store_size = 8;
            break;
        default:
            general(x, out, a);
            break;
        }
        code.add(out,
                 a.save ? std::span<const RegisterAccess>(&*a.save, 1)
                        : std::span<const RegisterAccess>{},
                 a.load ? std::span<const RegisterAccess>(&*a.load, 1)
                        : std::span<const RegisterAccess>{});
    }

  private:
    std::span<const std::uint16_t> tracked_;

    int tracked_index(unsigned reg) const {
        return detail::tracked_index(tracked_, dwarf_gpr(reg));
    }

    static Base base_of(const X86Operand& m) {
        if (m.segment != X86_REG_INVALID) return Base::Other; // fs:/gs: (TLS)
        const auto b = dwarf_gpr(m.reg);
        if (b == dwarf_rsp || b == dwarf_rbp) {
            if (m.index != X86_REG_INVALID) return Base::Stack;
            return b == dwarf_rsp ? Base::Sp : Base::Fp;
        }
        if (m.reg == X86_REG_INVALID && m.index == X86_REG_INVALID) return Base::Other; // absolute
        if (m.reg == X86_REG_RIP) return Base::Other;
        if (!b && m.reg != X86_REG_INVALID) return Base::Other;
        // An index register scaled over rsp/rbp (no base) or a plain base.
        const auto i = dwarf_gpr(m.index);
        if (i == dwarf_rsp || i == dwarf_rbp) return Base::Stack;
        return Base::Other;
    }

    static void flow(const X86Form& x, Instruction& out) {
        // int3 is a breakpoint that returns (a debugger's, or SIGTRAP's
        // handler) to the next instruction; as padding it follows a ret or
        // jump, and is not reached that way.
        if (x.ret || x.id == X86_INS_UD2 || x.id == X86_INS_HLT || x.id == X86_INS_UD0) {
            out.flow = Flow::Stop;
            out.returns = x.ret;
            return;
        }
        if (x.call) {
            out.flow = Flow::Call;
            if (x.op_count == 1 && x.operands[0].type == X86_OP_IMM) {
                out.direct_call = true;
                out.target = static_cast<std::uint64_t>(x.operands[0].value);
            }
            return;
        }
        if (!x.jump) return;
        const bool direct = x.op_count == 1 && x.operands[0].type == X86_OP_IMM;
        const bool unconditional = x.id == X86_INS_JMP || x.id == X86_INS_LJMP;
        if (!direct) {
            out.flow = unconditional ? Flow::Indirect : Flow::Next;
            return;
        }
        out.target = static_cast<std::uint64_t>(x.operands[0].value);
        out.flow = unconditional ? Flow::Jump : Flow::Branch;
    }

    void push(const X86Form& x, Instruction& out, Accesses& a) const {
        out.sp = SpEffect::Add;
        out.sp_delta = -8;
        out.store_base = Base::Sp;
        out.store_disp = -8;
        out.store_size = 8;
        if (x.op_count == 1 && x.operands[0].type == X86_OP_REG && is_full(x.operands[0].reg)) {
            const int t = tracked_index(x.operands[0].reg);
            if (t >= 0) a.save = RegisterAccess{static_cast<std::uint8_t>(t), -8};
        }
        if (x.op_count == 1 && x.operands[0].type == X86_OP_REG && x.operands[0].size != 8) {
            out.sp_delta = -static_cast<std::int64_t>(x.operands[0].size);
            out.store_disp = out.sp_delta;
            out.store_size = x.operands[0].size;
        }
    }

    void pop(const X86Form& x, Instruction& out, Accesses& a) const {
        out.sp = SpEffect::Add;
        out.sp_delta = 8;
        if (x.op_count != 1) {
            out.sp = SpEffect::Unknown;
            return;
        }
        const X86Operand& op = x.operands[0];
        if (op.type == X86_OP_REG) {
            const auto d = dwarf_gpr(op.reg);
            if (d == dwarf_rsp) {
                out.sp = SpEffect::Unknown;
                return;
            }
            if (d == dwarf_rbp) out.fp = FpEffect::Unknown;
            const int t = tracked_index(op.reg);
            if (t >= 0) {
                a.load = RegisterAccess{static_cast<std::uint8_t>(t), 0};
                out.load_base = Base::Sp;
            }
            if (op.size != 8) out.sp_delta = op.size;
        } else if (op.type == X86_OP_MEM) {
            // pop m64: the store goes where the operand says (after the SP
            // change, by the ISA; a frame slot here is beyond what compilers do).
            out.store_base = base_of(op) == Base::Other ? Base::Other : Base::Stack;
            out.store_size = 8;
        }
    }

    void general(const X86Form& x, Instruction& out, Accesses& a) const {
        // `lock or qword ptr [rsp], 0` (a memory barrier) and its kin write
        // the value the memory already holds.
        const bool keeps_value = (x.id == X86_INS_OR || x.id == X86_INS_ADD ||
                                  x.id == X86_INS_SUB || x.id == X86_INS_XOR) &&
                                 x.op_count == 2 && x.operands[1].type == X86_OP_IMM &&
                                 x.operands[1].value == 0;
        // Memory written, and whole-register saves and loads.
        for (std::uint8_t i = 0; i < x.op_count && !keeps_value; ++i) {
            const X86Operand& op = x.operands[i];
            if (op.type != X86_OP_MEM) continue;
            // lea and nop compute an address and touch no memory.
            if (x.id == X86_INS_LEA || x.id == X86_INS_NOP) continue;
            // Capstone 4 gives some memory operands no access flags: a
            // write is assumed then.
            const bool writes = (op.access & CS_AC_WRITE) != 0 || op.access == 0;
            if (!writes) continue;
            out.store_base = base_of(op);
            out.store_disp = op.value;
            out.store_size = op.size != 0 ? op.size : 64;
        }
        if (x.id == X86_INS_MOV && x.op_count == 2) {
            const X86Operand& dst = x.operands[0];
            const X86Operand& src = x.operands[1];
            if (dst.type == X86_OP_MEM && src.type == X86_OP_REG && is_full(src.reg)) {
                const int t = tracked_index(src.reg);
                if (t >= 0) a.save = RegisterAccess{static_cast<std::uint8_t>(t), out.store_disp};
            }
            if (dst.type == X86_OP_REG && src.type == X86_OP_MEM && is_full(dst.reg)) {
                const int t = tracked_index(dst.reg);
                const Base b = base_of(src);
                if (t >= 0) {
                    a.load = RegisterAccess{static_cast<std::uint8_t>(t), src.value};
                    out.load_base = b;
                }
            }
        }
        stack_pointer(x, out);
        out.gpr_narrowed = narrowed(x);

        if (!x.regs_known) {
            // Nothing known of what it writes: every register and both
            // stack registers are lost.
            out.clobbered = ~std::uint32_t{0};
            if (out.sp == SpEffect::None) out.sp = SpEffect::Unknown;
            out.fp = FpEffect::Unknown;
            return;
        }
        for (std::uint16_t d = 0; d < 16; ++d) {
            if ((x.written & (1U << d)) == 0) continue;
            if (d == dwarf_rsp) {
                if (out.sp == SpEffect::None) out.sp = SpEffect::Unknown;
            } else if (d == dwarf_rbp) {
                if (out.fp == FpEffect::None) out.fp = FpEffect::Unknown;
            }
            const int t = detail::tracked_index(tracked_, d);
            if (t >= 0 && !(a.load && static_cast<int>(a.load->index) == t))
                out.clobbered |= 1U << t;
        }
    }

    // The register an instruction leaves below 2^32: its destination, a
    // 32-bit register that the write zero-extends (SDM vol. 1, section
    // 3.4.1.1), or any register ANDed with a mask below 2^32 or set to such
    // a constant. Only instructions that always write it: bsf and bsr leave
    // it as it was where their source is 0, and a shift by 0 is left out.
    static std::uint16_t narrowed(const X86Form& x) {
        if (!x.regs_known || x.op_count == 0) return 0;
        const X86Operand& dst = x.operands[0];
        if (dst.type != X86_OP_REG || (dst.access & CS_AC_WRITE) == 0) return 0;
        const auto d = dwarf_gpr(dst.reg);
        if (!d || (x.written & (1U << *d)) == 0) return 0;
        const auto bit = static_cast<std::uint16_t>(1U << *d);
        if (dst.size == 8)
            return (x.id == X86_INS_AND || x.id == X86_INS_MOV || x.id == X86_INS_MOVABS) &&
                           x.op_count == 2 && x.operands[1].type == X86_OP_IMM &&
                           x.operands[1].value >= 0 && x.operands[1].value <= 0xffffffffLL
                       ? bit
                       : 0;
        if (dst.size != 4) return 0;
        switch (x.id) {
        case X86_INS_MOV:
        case X86_INS_MOVZX:
        case X86_INS_MOVSX:
        case X86_INS_AND:
        case X86_INS_OR:
        case X86_INS_XOR:
        case X86_INS_ADD:
        case X86_INS_SUB:
        case X86_INS_LEA:
        case X86_INS_NEG:
        case X86_INS_NOT:
        case X86_INS_INC:
        case X86_INS_DEC:
        case X86_INS_IMUL:
            return bit;
        default:
            return 0;
        }
    }

    // sub/add rsp, imm; and rsp, imm; sub rsp, r64; lea rsp, [rsp/rbp + d];
    // mov rsp, rbp; mov rbp, rsp; lea rbp, [rsp + d].
    static void stack_pointer(const X86Form& x, Instruction& out) {
        if (x.op_count != 2 || x.operands[0].type != X86_OP_REG) return;
        const auto dst = dwarf_gpr(x.operands[0].reg);
        if (!is_full(x.operands[0].reg) || (dst != dwarf_rsp && dst != dwarf_rbp)) return;
        const X86Operand& src = x.operands[1];
        if (dst == dwarf_rsp) {
            if ((x.id == X86_INS_SUB || x.id == X86_INS_ADD) && src.type == X86_OP_IMM) {
                out.sp = SpEffect::Add;
                out.sp_delta = x.id == X86_INS_SUB ? -src.value : src.value;
            } else if (x.id == X86_INS_AND && src.type == X86_OP_IMM) {
                out.sp = SpEffect::Lower;
                out.sp_delta = -1;
            } else if (x.id == X86_INS_SUB && src.type == X86_OP_REG && is_full(src.reg)) {
                // alloca and variable-length arrays: rsp -= n.
                out.sp = SpEffect::Lower;
                out.sp_delta = *dwarf_gpr(src.reg);
            } else if (x.id == X86_INS_LEA && src.type == X86_OP_MEM &&
                       src.index == X86_REG_INVALID && src.segment == X86_REG_INVALID) {
                if (src.reg == X86_REG_RSP) {
                    out.sp = SpEffect::Add;
                    out.sp_delta = src.value;
                } else if (src.reg == X86_REG_RBP) {
                    out.sp = SpEffect::FromFp;
                    out.sp_delta = src.value;
                }
            } else if (x.id == X86_INS_MOV && src.type == X86_OP_REG && src.reg == X86_REG_RBP) {
                out.sp = SpEffect::FromFp;
                out.sp_delta = 0;
            }
            return;
        }
        if (x.id == X86_INS_MOV && src.type == X86_OP_REG && src.reg == X86_REG_RSP) {
            out.fp = FpEffect::FromSp;
            out.fp_delta = 0;
        } else if (x.id == X86_INS_LEA && src.type == X86_OP_MEM && src.reg == X86_REG_RSP &&
                   src.index == X86_REG_INVALID && src.segment == X86_REG_INVALID) {
            out.fp = FpEffect::FromSp;
            out.fp_delta = src.value;
        }
    }
};

} // namespace

X86Form x86_form(csh handle, const cs_insn& insn) {
    X86Form f;
    f.id = static_cast<std::uint16_t>(insn.id);
    f.size = static_cast<std::uint8_t>(insn.size);
    // The groups read once (cs_insn_group searches them per group asked).
    const cs_detail& d = *insn.detail;
    for (std::uint8_t i = 0; i < d.groups_count && i < sizeof d.groups; ++i) {
        f.jump = f.jump || d.groups[i] == X86_GRP_JUMP;
        f.call = f.call || d.groups[i] == X86_GRP_CALL;
        f.ret = f.ret || d.groups[i] == X86_GRP_RET || d.groups[i] == X86_GRP_IRET;
    }
    const cs_x86& x = d.x86;
    f.op_count = std::min<std::uint8_t>(x.op_count, static_cast<std::uint8_t>(f.operands.size()));
    for (std::uint8_t i = 0; i < f.op_count; ++i) {
        const cs_x86_op& op = x.operands[i];
        X86Operand& o = f.operands[i];
        o.type = static_cast<std::uint8_t>(op.type);
        o.size = op.size;
        o.access = op.access;
        if (op.type == X86_OP_REG) {
            o.reg = static_cast<std::uint16_t>(op.reg);
            f.other_registers = f.other_registers || !dwarf_gpr(op.reg);
        } else if (op.type == X86_OP_IMM) {
            o.value = op.imm;
        } else if (op.type == X86_OP_MEM) {
            o.reg = static_cast<std::uint16_t>(op.mem.base);
            o.index = static_cast<std::uint16_t>(op.mem.index);
            o.segment = static_cast<std::uint16_t>(op.mem.segment);
            o.scale = static_cast<std::uint8_t>(op.mem.scale);
            o.value = op.mem.disp;
            const auto general = [](x86_reg r) {
                return r == X86_REG_INVALID || r == X86_REG_RIP || dwarf_gpr(r).has_value();
            };
            f.other_registers =
                f.other_registers || !general(op.mem.base) || !general(op.mem.index);
        }
    }
    cs_regs read{};
    cs_regs written{};
    std::uint8_t nread = 0;
    std::uint8_t nwritten = 0;
    f.regs_known = cs_regs_access(handle, &insn, read, &nread, written, &nwritten) == CS_ERR_OK;
    if (f.regs_known)
        for (std::uint8_t i = 0; i < nwritten; ++i)
            if (const auto dwarf = dwarf_gpr(written[i]))
                f.written = static_cast<std::uint16_t>(f.written | 1U << *dwarf);
    return f;
}

void reduce_x86_64(const X86Form& form, std::uint64_t address,
                   std::span<const std::uint16_t> tracked, Code& out) {
    Reducer(tracked).reduce(form, address, out);
}

namespace {

// The calling thread's x86-64 handle, warmed up (warm_up()).
const CapstoneHandle& x86_64_handle() {
    thread_local CapstoneHandle handle(CS_ARCH_X86, CS_MODE_64);
    // add eax, 1; push rbx; mov rbp, rsp; ret (an accumulator form: the
    // register list Capstone sorts at its first use).
    static constexpr std::array<std::uint8_t, 10> sample = {0x05, 0x01, 0x00, 0x00, 0x00,
                                                            0x53, 0x48, 0x89, 0xe5, 0xc3};
    static std::once_flag warmed;
    warm_up(handle, warmed, sample);
    return handle;
}

} // namespace

std::optional<X86Form> x86_form_at(std::uint64_t address, std::span<const std::uint8_t> bytes) {
    const CapstoneHandle& handle = x86_64_handle();
    if (!handle.open()) return std::nullopt;
    const CapstoneInsn insn(cs_malloc(handle.get()));
    const std::uint8_t* p = bytes.data();
    std::size_t left = bytes.size();
    if (!insn || !cs_disasm_iter(handle.get(), &p, &left, &address, insn.get()))
        return std::nullopt;
    return x86_form(handle.get(), *insn);
}

bool decode_x86_64(std::uint64_t start, std::span<const std::uint8_t> code,
                   std::span<const std::uint16_t> tracked, Code& out, DecodeMemo* memo) {
    const CapstoneHandle& handle = x86_64_handle();
    const Reducer reducer(tracked);
    if (!memo)
        return decode_each(handle, start, code, [&](const cs_insn& insn) {
            reducer.reduce(x86_form(handle.get(), insn), insn.address, out);
        });
    memo->track(MemoDecoder::X86_64, tracked);
    X86FormMemo& forms = memo->x86_forms();
    // The forms' probes, decoded with a cs_insn of their own, made at the
    // first probe (most functions learn no new form).
    CapstoneInsn probe_insn;
    const X86FormMemo::Decode probe = [&](std::span<const std::uint8_t> bytes,
                                          std::uint64_t address) -> std::optional<X86Form> {
        if (!probe_insn) probe_insn.reset(cs_malloc(handle.get()));
        const std::uint8_t* p = bytes.data();
        std::size_t left = bytes.size();
        if (!probe_insn || !cs_disasm_iter(handle.get(), &p, &left, &address, probe_insn.get()))
            return std::nullopt;
        return x86_form(handle.get(), *probe_insn);
    };
    X86Form form;
    return decode_each(
        handle, start, code,
        [&](const cs_insn& insn) {
            const X86Form decoded = x86_form(handle.get(), insn);
            reducer.reduce(decoded, insn.address, out);
            const std::span<const std::uint8_t> encoding(insn.bytes, insn.size);
            memo->remember(encoding, out);
            forms.learn(insn, decoded, probe);
        },
        no_bytes,
        [&](std::uint64_t address, std::span<const std::uint8_t> rest) -> std::size_t {
            if (const std::size_t n = memo->find(address, rest, out)) return n;
            if (!forms.find(address, rest, form)) return 0;
            // Not remembered as an encoding: those a form gives are most
            // often a module's only ones (calls, RIP-relative operands), and
            // would push out those that repeat.
            reducer.reduce(form, address, out);
            return form.size;
        });
}

} // namespace sfunwind::callee_saved::detail

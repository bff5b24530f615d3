// SPDX-License-Identifier: MIT
// DWARF operations to Row rules, by evaluating them symbolically: each stack
// entry is "base + offset" (base: nothing, the CFA, or a register), read
// through memory at most once. Expressions that stay in that form map onto
// Row rules; any other operation makes the rule unrepresentable. The
// evaluation is a single pass over at most nops operations (branches are
// refused), so hostile CFI cannot make it loop.
#include "dwarf_rules.hpp"

#include <cstdint>
#include <cstdio>
#include <dwarf.h>
#include <limits>
#include <optional>
#include <vector>

namespace sfunwind::cfi::detail {
namespace {

struct Value {
    enum class Base : std::uint8_t { None, Cfa, Reg };
    Base base = Base::None;
    std::uint64_t reg = 0;
    std::uint64_t offset = 0; // DWARF arithmetic is modulo 2^64 on a 64-bit target
    bool deref = false;       // the value is *(base + offset)
};

struct Result {
    Value top;
    bool is_value = false;    // ended with DW_OP_stack_value: a value, not an address
    bool in_register = false; // a register location (DW_OP_regN/regx): top.reg holds it
};

bool in_range(std::uint64_t lo, std::uint64_t hi, unsigned atom) {
    return atom >= lo && atom <= hi;
}

// Why evaluation stopped, or the result.
struct Evaluation {
    std::optional<Result> result;
    std::string why;
};

Evaluation evaluate(const Dwarf_Op* ops, std::size_t nops) {
    Evaluation e;
    std::vector<Value> stack;
    stack.reserve(nops);
    auto fail = [&](std::string why) {
        e.why = std::move(why);
        return e;
    };
    for (std::size_t i = 0; i < nops; ++i) {
        const Dwarf_Op& op = ops[i];
        const unsigned atom = op.atom;
        if (in_range(DW_OP_reg0, DW_OP_reg31, atom) || atom == DW_OP_regx) {
            // A register location describes the whole result (DWARF 5 section 2.6.1.1.3).
            if (nops != 1 && !(nops == 2 && i == 1 && ops[0].atom == DW_OP_call_frame_cfa))
                return fail("a register location inside a longer expression");
            Result r;
            r.in_register = true;
            r.top.base = Value::Base::Reg;
            r.top.reg = atom == DW_OP_regx ? op.number : atom - unsigned{DW_OP_reg0};
            e.result = r;
            return e;
        }
        if (in_range(DW_OP_lit0, DW_OP_lit31, atom)) {
            stack.push_back({Value::Base::None, 0, atom - unsigned{DW_OP_lit0}, false});
        } else if (atom == DW_OP_const1u || atom == DW_OP_const2u || atom == DW_OP_const4u ||
                   atom == DW_OP_const8u || atom == DW_OP_constu || atom == DW_OP_const1s ||
                   atom == DW_OP_const2s || atom == DW_OP_const4s || atom == DW_OP_const8s ||
                   atom == DW_OP_consts) {
            // libdw stores signed constants sign-extended in the 64-bit number.
            stack.push_back({Value::Base::None, 0, op.number, false});
        } else if (in_range(DW_OP_breg0, DW_OP_breg31, atom)) {
            stack.push_back({Value::Base::Reg, atom - unsigned{DW_OP_breg0}, op.number, false});
        } else if (atom == DW_OP_bregx) {
            stack.push_back({Value::Base::Reg, op.number, op.number2, false});
        } else if (atom == DW_OP_call_frame_cfa) {
            stack.push_back({Value::Base::Cfa, 0, 0, false});
        } else if (atom == DW_OP_plus_uconst) {
            if (stack.empty() || stack.back().deref)
                return fail("DW_OP_plus_uconst on a loaded value");
            stack.back().offset += op.number;
        } else if (atom == DW_OP_plus || atom == DW_OP_minus) {
            if (stack.size() < 2) return fail("stack underflow");
            const Value b = stack.back();
            stack.pop_back();
            Value& a = stack.back();
            if (b.base == Value::Base::None && !b.deref && !a.deref) {
                a.offset = atom == DW_OP_plus ? a.offset + b.offset : a.offset - b.offset;
            } else if (atom == DW_OP_plus && a.base == Value::Base::None && !a.deref && !b.deref) {
                const std::uint64_t k = a.offset;
                a = b;
                a.offset += k;
            } else {
                return fail("arithmetic on two register or loaded values");
            }
        } else if (atom == DW_OP_deref) {
            if (stack.empty() || stack.back().deref || stack.back().base == Value::Base::None)
                return fail("DW_OP_deref of a constant or loaded value");
            stack.back().deref = true;
        } else if (atom == DW_OP_stack_value) {
            if (i + 1 != nops) return fail("DW_OP_stack_value before the end");
            if (stack.empty()) return fail("stack underflow");
            Result r;
            r.top = stack.back();
            r.is_value = true;
            e.result = r;
            return e;
        } else if (atom == DW_OP_nop) {
            continue;
        } else {
            return fail("an operation SFrame has no counterpart for");
        }
    }
    if (stack.empty()) return fail("empty expression");
    Result r;
    r.top = stack.back();
    e.result = r;
    return e;
}

std::optional<std::int32_t> as_offset(std::uint64_t v) {
    const auto s = static_cast<std::int64_t>(v);
    if (s < std::numeric_limits<std::int32_t>::min() ||
        s > std::numeric_limits<std::int32_t>::max())
        return std::nullopt;
    return static_cast<std::int32_t>(s);
}

std::optional<std::uint16_t> as_register(std::uint64_t v) {
    if (v > std::numeric_limits<std::uint16_t>::max()) return std::nullopt;
    return static_cast<std::uint16_t>(v);
}

const char* op_name(unsigned atom) {
    switch (atom) {
    case DW_OP_deref:
        return "DW_OP_deref";
    case DW_OP_const1u:
        return "DW_OP_const1u";
    case DW_OP_const1s:
        return "DW_OP_const1s";
    case DW_OP_const2u:
        return "DW_OP_const2u";
    case DW_OP_const2s:
        return "DW_OP_const2s";
    case DW_OP_const4u:
        return "DW_OP_const4u";
    case DW_OP_const4s:
        return "DW_OP_const4s";
    case DW_OP_const8u:
        return "DW_OP_const8u";
    case DW_OP_const8s:
        return "DW_OP_const8s";
    case DW_OP_constu:
        return "DW_OP_constu";
    case DW_OP_consts:
        return "DW_OP_consts";
    case DW_OP_dup:
        return "DW_OP_dup";
    case DW_OP_drop:
        return "DW_OP_drop";
    case DW_OP_over:
        return "DW_OP_over";
    case DW_OP_pick:
        return "DW_OP_pick";
    case DW_OP_swap:
        return "DW_OP_swap";
    case DW_OP_rot:
        return "DW_OP_rot";
    case DW_OP_abs:
        return "DW_OP_abs";
    case DW_OP_and:
        return "DW_OP_and";
    case DW_OP_div:
        return "DW_OP_div";
    case DW_OP_minus:
        return "DW_OP_minus";
    case DW_OP_mod:
        return "DW_OP_mod";
    case DW_OP_mul:
        return "DW_OP_mul";
    case DW_OP_neg:
        return "DW_OP_neg";
    case DW_OP_not:
        return "DW_OP_not";
    case DW_OP_or:
        return "DW_OP_or";
    case DW_OP_plus:
        return "DW_OP_plus";
    case DW_OP_plus_uconst:
        return "DW_OP_plus_uconst";
    case DW_OP_shl:
        return "DW_OP_shl";
    case DW_OP_shr:
        return "DW_OP_shr";
    case DW_OP_shra:
        return "DW_OP_shra";
    case DW_OP_xor:
        return "DW_OP_xor";
    case DW_OP_bra:
        return "DW_OP_bra";
    case DW_OP_eq:
        return "DW_OP_eq";
    case DW_OP_ge:
        return "DW_OP_ge";
    case DW_OP_gt:
        return "DW_OP_gt";
    case DW_OP_le:
        return "DW_OP_le";
    case DW_OP_lt:
        return "DW_OP_lt";
    case DW_OP_ne:
        return "DW_OP_ne";
    case DW_OP_skip:
        return "DW_OP_skip";
    case DW_OP_regx:
        return "DW_OP_regx";
    case DW_OP_bregx:
        return "DW_OP_bregx";
    case DW_OP_deref_size:
        return "DW_OP_deref_size";
    case DW_OP_nop:
        return "DW_OP_nop";
    case DW_OP_call_frame_cfa:
        return "DW_OP_call_frame_cfa";
    case DW_OP_stack_value:
        return "DW_OP_stack_value";
    default:
        return nullptr;
    }
}

bool has_operand(unsigned atom) {
    switch (atom) {
    case DW_OP_const1u:
    case DW_OP_const1s:
    case DW_OP_const2u:
    case DW_OP_const2s:
    case DW_OP_const4u:
    case DW_OP_const4s:
    case DW_OP_const8u:
    case DW_OP_const8s:
    case DW_OP_constu:
    case DW_OP_consts:
    case DW_OP_pick:
    case DW_OP_plus_uconst:
    case DW_OP_regx:
    case DW_OP_deref_size:
        return true;
    default:
        return false;
    }
}

bool signed_operand(unsigned atom) {
    return atom == DW_OP_const1s || atom == DW_OP_const2s || atom == DW_OP_const4s ||
           atom == DW_OP_const8s || atom == DW_OP_consts || atom == DW_OP_plus_uconst;
}

std::string number(std::uint64_t v, bool is_signed) {
    char buf[32];
    if (is_signed)
        std::snprintf(buf, sizeof buf, "%lld",
                      static_cast<long long>(static_cast<std::int64_t>(v)));
    else
        std::snprintf(buf, sizeof buf, "%llu", static_cast<unsigned long long>(v));
    return buf;
}

} // namespace

std::string describe_ops(const Dwarf_Op* ops, std::size_t nops) {
    std::string out;
    for (std::size_t i = 0; i < nops; ++i) {
        const unsigned atom = ops[i].atom;
        if (i > 0) out += "; ";
        if (in_range(DW_OP_lit0, DW_OP_lit31, atom)) {
            out += "DW_OP_lit" + std::to_string(atom - unsigned{DW_OP_lit0});
        } else if (in_range(DW_OP_reg0, DW_OP_reg31, atom)) {
            out += "DW_OP_reg" + std::to_string(atom - unsigned{DW_OP_reg0});
        } else if (in_range(DW_OP_breg0, DW_OP_breg31, atom)) {
            out += "DW_OP_breg" + std::to_string(atom - unsigned{DW_OP_breg0}) + " " +
                   number(ops[i].number, true);
        } else if (atom == DW_OP_bregx) {
            out +=
                "DW_OP_bregx " + number(ops[i].number, false) + " " + number(ops[i].number2, true);
        } else if (const char* name = op_name(atom)) {
            out += name;
            if (has_operand(atom)) out += " " + number(ops[i].number, signed_operand(atom));
        } else {
            char buf[24];
            std::snprintf(buf, sizeof buf, "DW_OP_0x%02x", atom);
            out += buf;
        }
    }
    return out;
}

CfaTranslation translate_cfa(const Dwarf_Op* ops, std::size_t nops) {
    CfaTranslation t;
    auto unrepresentable = [&](const std::string& why) {
        t.state = {false, why};
        return t;
    };
    if (nops == 0 || ops == nullptr) return unrepresentable("no CFA rule (undefined CFA)");
    // The operations' text only for a rule that has no Row form.
    auto text = [&] { return describe_ops(ops, nops); };
    const Evaluation e = evaluate(ops, nops);
    if (!e.result) return unrepresentable("CFA is a DWARF expression (" + e.why + "): " + text());
    // A CFA expression computes the CFA's value (DWARF 5 section 6.4.2.2);
    // a trailing DW_OP_stack_value would be redundant but harmless.
    const Value& v = e.result->top;
    if (e.result->in_register || v.base != Value::Base::Reg)
        return unrepresentable("CFA is a DWARF expression not based on a register: " + text());
    const auto reg = as_register(v.reg);
    const auto off = as_offset(v.offset);
    if (!reg || !off) return unrepresentable("CFA register or offset out of range: " + text());
    t.rule = CfaRule{*reg, *off, v.deref};
    return t;
}

RegTranslation translate_register(const Dwarf_Op* ops, std::size_t nops) {
    RegTranslation t;
    if (nops == 0) {
        t.rule = ops == nullptr ? RegRule::same_value(RegRule::Source::Fre) : RegRule::undefined();
        return t;
    }
    auto unrepresentable = [&](const std::string& why) {
        t.state = {false, why};
        t.rule = RegRule::undefined();
        return t;
    };
    // For DW_CFA_expression and DW_CFA_val_expression libdw puts the
    // DW_OP_call_frame_cfa that DWARF 5 section 6.4.2.3 implies (the CFA is
    // pushed first) in front of the file's operations; quote only the latter.
    const bool pushed_cfa = nops > 1 && ops[0].atom == DW_OP_call_frame_cfa;
    auto text = [&] {
        return pushed_cfa ? describe_ops(ops + 1, nops - 1) : describe_ops(ops, nops);
    };
    const Evaluation e = evaluate(ops, nops);
    if (!e.result) return unrepresentable("a DWARF expression (" + e.why + "): " + text());
    const Result& r = *e.result;
    const Value& v = r.top;
    const auto off = as_offset(v.offset);
    const auto reg = as_register(v.reg);
    if (!off || !reg) return unrepresentable("register or offset out of range: " + text());
    using K = RegRule::Kind;
    if (r.in_register) {
        t.rule = RegRule{K::ValReg, *reg, 0, RegRule::Source::Fre};
        return t;
    }
    if (v.base == Value::Base::None)
        return unrepresentable("a constant address or value: " + text());
    const bool cfa = v.base == Value::Base::Cfa;
    // A location (no DW_OP_stack_value) is where the value is saved; a value
    // read through memory is the same as a location that is not.
    K kind;
    if (!r.is_value) {
        if (v.deref) return unrepresentable("a location read through memory: " + text());
        kind = cfa ? K::AtCfa : K::AtReg;
    } else {
        kind = v.deref ? (cfa ? K::AtCfa : K::AtReg) : (cfa ? K::ValCfa : K::ValReg);
    }
    t.rule = RegRule{kind, cfa ? std::uint16_t{0} : *reg, *off, RegRule::Source::Fre};
    return t;
}

} // namespace sfunwind::cfi::detail

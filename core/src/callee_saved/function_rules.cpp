// SPDX-License-Identifier: MIT
#include "sfunwind/callee_saved/function_rules.hpp"

#include "decode_memo.hpp"
#include "instruction.hpp"
#include "x86_64_switch_table.hpp"

#include <algorithm>
#include <array>
#include <limits>
#include <optional>
#include <utility>

namespace sfunwind::callee_saved {
namespace {

using detail::Base;
using detail::Code;
using detail::Flow;
using detail::FpEffect;
using detail::Instruction;
using detail::SpEffect;

// The state before an instruction executes. Offsets are CFA-relative:
// CFA = rsp + sp, CFA = rbp + fp, and a slot at CFA + slot[i]. N registers
// at most: the pass copies, meets and compares whole states, so x86-64's 5
// tracked registers take a state of 5 (136 bytes) and not of max_registers.
template <std::size_t N> struct State {
    bool reached = false;
    bool sp_known = false;
    bool fp_known = false;
    // Where the SP is not known: CFA = rsp + d with d >= sp_bound, so that
    // the SP lies at or below CFA - sp_bound (it was known, then lowered by
    // an amount not known: alloca, a stack probe loop). Stores and calls
    // below it cannot reach the slots above it.
    bool sp_bounded = false;
    // General registers known to hold less than 2^32 (bit n: DWARF register
    // n, x86-64's sixteen and AArch64's x0-x15; Instruction::gpr_narrowed),
    // which `sub rsp, r64` and `sub sp, sp, xN` lower the SP by without
    // wrapping.
    std::uint16_t narrow = 0;
    std::int64_t sp = 0;
    std::int64_t fp = 0;
    std::int64_t sp_bound = 0;
    std::uint32_t intact = 0;     // bit i: register i holds its caller's value
    std::uint32_t slot_valid = 0; // bit i: slot[i] holds it
    std::array<std::int64_t, N> slot{};
    // bit i: on some path here slot `alt[i]` holds register i's caller value
    // (and the register does on every path): where DWARF CFI rows, which
    // follow addresses and not paths, give that slot after a join.
    std::uint32_t alt_valid = 0;
    std::array<std::int64_t, N> alt{};
    // bit i: register copy[i] (a DWARF number below 64) holds register i's
    // caller value (s390x `ldgr %f2,%r10`: a leaf function keeps it in an FPR).
    std::uint32_t copy_valid = 0;
    std::array<std::uint16_t, N> copy{};

    // Member by member, as the default would, without the library calls
    // GCC makes for the arrays (memcmp was 4 % of a module's translation).
    bool operator==(const State& o) const noexcept {
        if (reached != o.reached || sp_known != o.sp_known || fp_known != o.fp_known ||
            sp_bounded != o.sp_bounded || narrow != o.narrow || sp != o.sp || fp != o.fp ||
            sp_bound != o.sp_bound || intact != o.intact || slot_valid != o.slot_valid ||
            alt_valid != o.alt_valid || copy_valid != o.copy_valid)
            return false;
        for (std::size_t i = 0; i < N; ++i)
            if (slot[i] != o.slot[i] || alt[i] != o.alt[i] || copy[i] != o.copy[i]) return false;
        return true;
    }
};

// CFA - SP where known, else the least it can be; none where unbounded.
template <std::size_t N> std::optional<std::int64_t> sp_distance(const State<N>& s) {
    if (s.sp_known) return s.sp;
    if (s.sp_bounded) return s.sp_bound;
    return std::nullopt;
}

// The facts that hold on both paths.
template <std::size_t N> State<N> meet(const State<N>& a, const State<N>& b) {
    if (!a.reached) return b;
    if (!b.reached) return a;
    State<N> m = a;
    m.sp_known = a.sp_known && b.sp_known && a.sp == b.sp;
    m.fp_known = a.fp_known && b.fp_known && a.fp == b.fp;
    // Two SPs that differ (a stack probe loop's): at most the higher one.
    const auto da = sp_distance(a);
    const auto db = sp_distance(b);
    m.sp_bounded = !m.sp_known && da && db;
    m.sp_bound = m.sp_bounded ? std::min(*da, *db) : 0;
    m.narrow = a.narrow & b.narrow;
    m.intact = a.intact & b.intact;
    m.slot_valid = 0;
    for (std::size_t i = 0; i < m.slot.size(); ++i) {
        const std::uint32_t bit = 1U << i;
        if ((a.slot_valid & bit) != 0 && (b.slot_valid & bit) != 0 && a.slot[i] == b.slot[i])
            m.slot_valid |= bit;
    }
    m.copy_valid = 0;
    for (std::size_t i = 0; i < m.copy.size(); ++i) {
        const std::uint32_t bit = 1U << i;
        if ((a.copy_valid & bit) != 0 && (b.copy_valid & bit) != 0 && a.copy[i] == b.copy[i])
            m.copy_valid |= bit;
        else
            m.copy[i] = 0;
    }
    if (!m.sp_known) m.sp = 0;
    if (!m.fp_known) m.fp = 0;
    for (std::size_t i = 0; i < m.slot.size(); ++i)
        if ((m.slot_valid & (1U << i)) == 0) m.slot[i] = 0;
    // A slot that holds the value on one path and not on the other.
    m.alt_valid = 0;
    m.alt.fill(0);
    for (std::size_t i = 0; i < m.slot.size(); ++i) {
        const std::uint32_t bit = 1U << i;
        if ((m.intact & bit) == 0) continue;
        std::optional<std::int64_t> some;
        bool conflict = false;
        for (const State<N>* p : {&a, &b}) {
            std::optional<std::int64_t> here;
            if ((p->slot_valid & bit) != 0)
                here = p->slot[i];
            else if ((p->alt_valid & bit) != 0)
                here = p->alt[i];
            if (here && some && *here != *some) conflict = true;
            if (here) some = here;
        }
        if (some && !conflict && (m.slot_valid & bit) == 0) {
            m.alt_valid |= bit;
            m.alt[i] = *some;
        }
    }
    return m;
}

// Every register's caller value lost on this path.
template <std::size_t N> void forget_registers(State<N>& s) {
    s.narrow = 0;
    s.intact = 0;
    s.slot_valid = 0;
    s.slot.fill(0);
    s.alt_valid = 0;
    s.copy_valid = 0;
    s.copy.fill(0);
}

// The instruction's SFrame row fixes what the path counted: CFA = rsp + k
// or rbp + k. A count that disagrees means the path is not understood.
template <std::size_t N> void anchor(State<N>& s, const Row& row, const Abi& abi, Stats& stats) {
    if (row.cfa.deref) return;
    // A state the row agrees with is left unwritten: the pass compares
    // states right after this, and a byte written here and read back within
    // a wider word stalls the read (no store forwarding).
    if (row.cfa.reg == abi.sp_reg) {
        if (s.sp_known && s.sp == row.cfa.offset) return;
        // An SP above the bound the path kept (rsp lowered, never raised)
        // is not understood either.
        if ((s.sp_known && s.sp != row.cfa.offset) ||
            (s.sp_bounded && row.cfa.offset < s.sp_bound)) {
            forget_registers(s);
            ++stats.anchor_conflicts;
        }
        s.sp_known = true;
        s.sp = row.cfa.offset;
        s.sp_bounded = false;
        s.sp_bound = 0;
    } else if (row.cfa.reg == abi.fp_reg) {
        if (s.fp_known && s.fp == row.cfa.offset) return;
        // A frame pointer the path never set from the SP it counted: the
        // row describes another path's frame. GCC starts a function's .cold
        // part that holds a landing pad with a nop under the entry row (no
        // landing pad may sit at offset 0, Itanium C++ ABI LSDA), and the
        // next row is the hot part's rbp-based frame, whose registers the
        // hot part may have changed.
        if ((s.fp_known && s.fp != row.cfa.offset) || (!s.fp_known && s.sp_known)) {
            forget_registers(s);
            ++stats.anchor_conflicts;
        }
        s.fp_known = true;
        s.fp = row.cfa.offset;
    }
}

// A CFA-relative address for base + disp, when the base is placed.
template <std::size_t N>
std::optional<std::int64_t> cfa_relative(const State<N>& s, Base base, std::int64_t disp) {
    if (base == Base::Sp && s.sp_known) return disp - s.sp;
    if (base == Base::Fp && s.fp_known) return disp - s.fp;
    return std::nullopt;
}

template <std::size_t N> void invalidate(State<N>& s, std::int64_t begin, std::int64_t size) {
    if ((s.slot_valid | s.alt_valid) == 0) return;
    for (std::size_t i = 0; i < s.slot.size(); ++i) {
        const std::uint32_t bit = 1U << i;
        // Slots are 8 bytes.
        if ((s.slot_valid & bit) != 0 && s.slot[i] < begin + size && begin < s.slot[i] + 8)
            s.slot_valid &= ~bit;
        if ((s.alt_valid & bit) != 0 && s.alt[i] < begin + size && begin < s.alt[i] + 8)
            s.alt_valid &= ~bit;
    }
}

// Every slot below CFA + end (end is within a few frame_limits of 0, so
// end - lowest does not overflow).
template <std::size_t N> void invalidate_below(State<N>& s, std::int64_t end) {
    constexpr std::int64_t lowest = std::numeric_limits<std::int64_t>::min() / 2;
    invalidate(s, lowest, end - lowest);
}

template <std::size_t N>
void transfer(State<N>& s, const Code& code, const Instruction& in,
              std::span<const std::uint16_t> registers, std::uint32_t call_clobbered) {
    // A whole register copied (before this instruction's writes): from a
    // tracked register holding its caller's value, the copy holds it too;
    // back from such a copy, the register holds it again.
    std::uint32_t copy_restored = 0;
    std::optional<std::size_t> copied;
    if (in.copies && in.copy_to < 64) {
        for (std::size_t i = 0; i < registers.size() && i < s.copy.size(); ++i) {
            const std::uint32_t bit = 1U << i;
            // The first copy stays (as the first slot does): CFI names it.
            if (registers[i] == in.copy_from && (s.intact & bit) != 0 && (s.copy_valid & bit) == 0)
                copied = i;
            if (registers[i] == in.copy_to && (s.copy_valid & bit) != 0 &&
                s.copy[i] == in.copy_from)
                copy_restored |= bit;
        }
    }
    // Memory written. A call's callee uses the stack below SP: every slot
    // there is gone.
    // Stores through other registers, through rbp at an offset the count
    // does not know (rbp as a pointer: the SFrame rows would anchor it where
    // it is the CFA's base), and indexed ones (arrays in the frame) are
    // taken not to reach the register save area, as the psABI frame layout
    // implies. rsp always points into the frame: a store through it at an
    // unknown offset may reach any slot.
    const bool may_reach_slots =
        in.store_base == Base::Sp || (in.store_base == Base::Fp && s.fp_known);
    if (may_reach_slots) {
        const auto at = cfa_relative(s, in.store_base, in.store_disp);
        if (at) {
            invalidate(s, *at, in.store_size);
        } else if (in.store_base == Base::Sp && s.sp_bounded) {
            // rsp <= CFA - sp_bound: the store ends below CFA - sp_bound +
            // disp + size.
            invalidate_below(s, -s.sp_bound + in.store_disp + std::int64_t{in.store_size});
        } else {
            s.slot_valid = 0;
        }
    }
    if (in.flow == Flow::Call) {
        if (const auto d = sp_distance(s)) {
            invalidate_below(s, -*d);
        } else {
            s.slot_valid = 0;
            s.alt_valid = 0;
        }
    }
    // `sub rsp, r64` lowers the SP where r64 holds less than 2^32 (its
    // value before this instruction's writes).
    const bool lowers =
        in.sp == SpEffect::Lower &&
        (in.sp_delta < 0 ||
         (in.sp_delta < 16 &&
          ((std::uint32_t{s.narrow} >> static_cast<unsigned>(in.sp_delta)) & 1U) != 0));
    // A call may leave any register the callee need not preserve above 2^32.
    s.narrow = in.flow == Flow::Call
                   ? 0
                   : static_cast<std::uint16_t>((s.narrow & ~in.gpr_written) | in.gpr_narrowed);
    // A whole register stored while it holds its caller's value: its slot.
    for (const auto& save : code.saves(in)) {
        const std::size_t i = save.index;
        const std::uint32_t bit = 1U << i;
        const auto at = cfa_relative(s, in.store_base, save.disp);
        if (at && (s.intact & bit) != 0 && (s.slot_valid & bit) == 0) {
            s.slot[i] = *at;
            s.slot_valid |= bit;
        }
    }
    // A whole register loaded: its caller's value again only from its slot.
    // (Both loads of one instruction read memory before either is written.)
    std::uint32_t restored = 0;
    std::uint32_t lost = 0;
    for (const auto& load : code.loads(in)) {
        const std::size_t i = load.index;
        const std::uint32_t bit = 1U << i;
        const auto at = cfa_relative(s, in.load_base, load.disp);
        const bool from_slot = at && (s.slot_valid & bit) != 0 && s.slot[i] == *at;
        (from_slot ? restored : lost) |= bit;
    }
    s.intact = (s.intact | restored) & ~lost;
    s.intact &= ~in.clobbered;
    if (in.flow == Flow::Call) s.intact &= ~call_clobbered;
    s.intact |= copy_restored;
    s.alt_valid &= s.intact;
    // Copies end where their register is written, and at calls (the callee
    // may write every register the ABI does not preserve).
    for (std::size_t i = 0; s.copy_valid != 0 && i < s.copy.size(); ++i) {
        const std::uint32_t bit = 1U << i;
        if ((s.copy_valid & bit) == 0) continue;
        if (in.flow == Flow::Call || (in.written >> s.copy[i] & 1U) != 0) {
            s.copy_valid &= ~bit;
            s.copy[i] = 0;
        }
    }
    if (copied) {
        s.copy_valid |= 1U << *copied;
        s.copy[*copied] = in.copy_to;
    }

    // The frame pointer, then the stack pointer (leave: rsp from the old rbp).
    const bool fp_was_known = s.fp_known;
    const std::int64_t fp_was = s.fp;
    const std::optional<std::int64_t> distance_was = sp_distance(s);
    switch (in.fp) {
    case FpEffect::None:
        break;
    case FpEffect::FromSp:
        // rbp = rsp + d: CFA = rbp + (sp - d).
        s.fp_known = s.sp_known;
        s.fp = s.sp - in.fp_delta;
        break;
    case FpEffect::Unknown:
        s.fp_known = false;
        break;
    }
    switch (in.sp) {
    case SpEffect::None:
        break;
    case SpEffect::Add:
        // rsp += d: CFA = rsp + (sp - d).
        s.sp -= in.sp_delta;
        if (s.sp_bounded) s.sp_bound -= in.sp_delta;
        break;
    case SpEffect::FromFp:
        s.sp_known = fp_was_known;
        s.sp = fp_was - in.sp_delta;
        s.sp_bounded = false;
        break;
    case SpEffect::Lower:
        // At or below where it was (a user stack lies far above 4 GiB, so
        // subtracting less than 2^32 does not wrap).
        s.sp_known = false;
        s.sp_bounded = lowers && distance_was.has_value();
        s.sp_bound = distance_was.value_or(0);
        break;
    case SpEffect::Unknown:
        s.sp_known = false;
        s.sp_bounded = false;
        break;
    }
    // Offsets beyond what a frame can be are not believed.
    constexpr std::int64_t frame_limit = std::int64_t{1} << 31;
    if (s.sp_known && (s.sp < -frame_limit || s.sp > frame_limit)) s.sp_known = false;
    if (s.fp_known && (s.fp < -frame_limit || s.fp > frame_limit)) s.fp_known = false;
    if (s.sp_known || (s.sp_bound < -frame_limit || s.sp_bound > frame_limit)) s.sp_bounded = false;
    if (!s.sp_bounded) s.sp_bound = 0;
}

// Below the stack pointer, only the ABI's red zone (Abi::red_zone; x86-64
// psABI section 3.2.2: 128 bytes) is safe from a signal handler's frame.
template <std::size_t N>
std::int32_t encode_offset(const State<N>& s, std::int64_t slot, std::int64_t red_zone) {
    if (s.sp_known && slot < -s.sp - red_zone) return FunctionRules::unknown;
    if (slot < std::numeric_limits<std::int32_t>::min() + 2 ||
        slot > std::numeric_limits<std::int32_t>::max())
        return FunctionRules::unknown;
    return static_cast<std::int32_t>(slot);
}

// The slot of register i when it still holds the caller's value, or unknown.
template <std::size_t N>
std::int32_t encode_slot(const State<N>& s, std::size_t i, std::int64_t red_zone) {
    const std::uint32_t bit = 1U << i;
    if (!s.reached || (s.slot_valid & bit) == 0) return FunctionRules::unknown;
    return encode_offset(s, s.slot[i], red_zone);
}

// The slot, or where the register holds the value on every path, a slot
// that does on some of them.
template <std::size_t N>
std::int32_t encode_second(const State<N>& s, std::size_t i, std::int64_t red_zone) {
    const std::int32_t slot = encode_slot(s, i, red_zone);
    if (slot != FunctionRules::unknown) return slot;
    const std::uint32_t bit = 1U << i;
    if (!s.reached || (s.intact & bit) == 0 || (s.alt_valid & bit) == 0)
        return FunctionRules::unknown;
    return encode_offset(s, s.alt[i], red_zone);
}

// The register that holds register i's caller value too, or unknown.
template <std::size_t N> std::int32_t encode_copy(const State<N>& s, std::size_t i) {
    if (!s.reached || (s.copy_valid & (1U << i)) == 0) return FunctionRules::unknown;
    return s.copy[i];
}

// The rule: "same value" while the register holds the caller's value (a
// fact that rests on every write to it being seen, which Capstone's access
// lists give), else its slot, else unknown.
template <std::size_t N>
std::int32_t encode_rule(const State<N>& s, std::size_t i, std::int64_t red_zone) {
    if (s.reached && (s.intact & (1U << i)) != 0) return FunctionRules::same_value;
    return encode_slot(s, i, red_zone);
}

// `s`'s register facts with the SP and FP of `here`: how code a path
// already reaches is entered from elsewhere with the stack it has.
template <std::size_t N> State<N> with_stack_of(State<N> s, const State<N>& here) {
    s.sp_known = here.sp_known;
    s.sp = here.sp;
    s.sp_bounded = here.sp_bounded;
    s.sp_bound = here.sp_bound;
    s.fp_known = here.fp_known;
    s.fp = here.fp;
    return s;
}

// The tracked registers (bit i: registers[i]) among `clobbered`.
std::uint32_t call_clobbered_mask(std::span<const std::uint16_t> registers,
                                  std::span<const std::uint16_t> clobbered) {
    std::uint32_t mask = 0;
    for (std::size_t i = 0; i < registers.size() && i < 32; ++i)
        if (std::find(clobbered.begin(), clobbered.end(), registers[i]) != clobbered.end())
            mask |= 1U << i;
    return mask;
}

// What the pass over one function's instructions reads: the decoded code,
// each instruction's SFrame row, and the function's facts.
struct Pass {
    const Abi& abi;
    const Code& decoded;
    std::span<const Row> seen;              // the rows the instructions have
    std::span<const std::uint32_t> row_of;  // per instruction: its index in `seen`, or no_row
    std::span<const std::uint32_t> offsets; // per instruction: its offset from `start`
    std::span<const std::uint8_t> bytes;    // the function's code
    std::uint64_t start = 0;
    std::uint64_t size = 0;
    const CodeFacts& facts;
    const Limits& limits;
    std::span<const std::uint16_t> registers;
    // The tracked registers (bit i: registers[i]) that calls may change
    // (CodeFacts::call_clobbered).
    std::uint32_t call_clobbered = 0;

    static constexpr std::uint32_t no_row = std::numeric_limits<std::uint32_t>::max();

    const Row* row_at(std::size_t k) const {
        return row_of[k] == no_row ? nullptr : &seen[row_of[k]];
    }
    // The instruction that starts at `pc`, if one does.
    std::optional<std::size_t> index_of(std::uint64_t pc) const {
        if (pc < start || pc - start >= size) return std::nullopt;
        const auto offset = static_cast<std::uint32_t>(pc - start);
        const auto it = std::lower_bound(offsets.begin(), offsets.end(), offset);
        if (it == offsets.end() || *it != offset) return std::nullopt;
        return static_cast<std::size_t>(it - offsets.begin());
    }
    // The instruction a jump to `pc` runs: the one that starts there, or on
    // x86-64 the one whose lock prefixes `pc` skips (glibc's `je 1f; lock;
    // 1: cmpxchg`: the same instruction without its lock prefix, which
    // writes the same registers; Intel SDM vol. 2A, LOCK). Other prefixes
    // may make other instructions of the same bytes (F3 0F B8 is popcnt).
    std::optional<std::size_t> target_of(std::uint64_t pc) const {
        if (auto k = index_of(pc)) return k;
        if (abi.arch != Arch::X86_64 || pc < start || pc - start >= size) return std::nullopt;
        const auto offset = static_cast<std::uint32_t>(pc - start);
        const auto it = std::upper_bound(offsets.begin(), offsets.end(), offset);
        if (it == offsets.begin()) return std::nullopt;
        const auto k = static_cast<std::size_t>(it - offsets.begin()) - 1;
        if (offset >= offsets[k] + decoded.instructions[k].size) return std::nullopt;
        constexpr std::uint8_t lock_prefix = 0xf0;
        for (std::uint32_t at = offsets[k]; at < offset; ++at)
            if (bytes[at] != lock_prefix) return std::nullopt;
        return k;
    }
    // Whether a jump to `pc` traps there: GCC's __builtin_trap on s390x is
    // `j .+2`, into its own second halfword, whose opcode 00 is invalid
    // (z/Architecture Principles of Operation, chapter 5: an operation
    // exception). The path ends there.
    bool traps_at(std::uint64_t pc) const {
        return abi.arch == Arch::S390x && pc >= start && pc - start < size &&
               bytes[pc - start] == 0x00;
    }
};

// The rule table the pass makes (FunctionRules' members of the same names).
struct Solution {
    std::size_t width = 0;
    std::vector<std::uint32_t> change_offsets;
    std::vector<std::int32_t> change_codes;
    std::vector<std::uint32_t> never_run;
    // A path the pass cannot follow: from the instruction at `from` to
    // `to`, where no decoded instruction starts (code after an instruction
    // Capstone cannot decode, or a jump into an instruction). Code there may
    // write any register and jump back anywhere, so no rule holds.
    std::optional<std::pair<std::uint64_t, std::uint64_t>> escape;
};

} // namespace

// What an analysis works in besides its result: every vector is sized anew
// for each function (assign, clear), and an Analyser keeps the set between
// functions, so that their memory is allocated once per thread.
struct detail::AnalysisScratch {
    Code decoded;
    std::vector<Row> seen;
    std::vector<std::uint32_t> row_of;
    std::vector<std::uint32_t> state_of;
    std::vector<std::uint32_t> work; // a ring: each instruction is queued once at a time
    std::vector<std::uint8_t> queued;
    std::vector<std::uint32_t> pad_of;
    std::vector<std::uint8_t> after_unknown_call;
    std::vector<std::uint8_t> is_seed;
    std::vector<std::uint8_t> is_label;
    // The switches whose tables were read (read_switches()): per
    // instruction, its switch or no_switch (empty: none); switch i's cases
    // are cases[case_first[i] .. case_first[i + 1]).
    std::vector<std::uint32_t> switch_of;
    std::vector<std::uint32_t> case_first;
    std::vector<std::uint32_t> cases;
    std::vector<std::uint8_t> entries;
    std::vector<std::uint8_t> is_case;
    std::vector<std::int32_t> codes;
    Solution solution;
    // The states, of solve<5>() or of solve<max_registers>().
    std::vector<State<5>> states_5;
    std::vector<State<FunctionRules::max_registers>> states_wide;

    template <std::size_t N> std::vector<State<N>>& states() {
        if constexpr (N == 5)
            return states_5;
        else
            return states_wide;
    }

    // Heap bytes held.
    std::size_t capacity_bytes() const noexcept {
        return decoded.instructions.capacity() * sizeof(Instruction) +
               decoded.accesses.capacity() * sizeof(detail::RegisterAccess) +
               seen.capacity() * sizeof(Row) +
               (row_of.capacity() + state_of.capacity() + work.capacity() + pad_of.capacity() +
                solution.change_offsets.capacity() + solution.never_run.capacity()) *
                   sizeof(std::uint32_t) +
               queued.capacity() + after_unknown_call.capacity() + is_seed.capacity() +
               is_label.capacity() + entries.capacity() + is_case.capacity() +
               (switch_of.capacity() + case_first.capacity() + cases.capacity()) *
                   sizeof(std::uint32_t) +
               (codes.capacity() + solution.change_codes.capacity()) * sizeof(std::int32_t) +
               states_5.capacity() * sizeof(State<5>) +
               states_wide.capacity() * sizeof(State<FunctionRules::max_registers>);
    }
};

namespace {

using detail::AnalysisScratch;

constexpr std::uint32_t no_switch = std::numeric_limits<std::uint32_t>::max();
constexpr std::uint32_t no_pad = std::numeric_limits<std::uint32_t>::max();

// Reads the tables of the function's x86-64 switches that can be read
// (x86_64_switch_table.hpp) into scratch.switch_of, case_first and cases;
// returns how many. `pad_of`: each call's landing pad (empty: not known).
// A switch is read only where the run before its jump holds no place the
// code may be entered at: the function's start, a branch or call target, a
// landing pad, and every table's cases (of any jump whose table reads, kept
// or not). A case inside the function where no decoded instruction starts
// (code read two ways, or a table misread) leaves every switch of the
// function unread; one outside (a `.cold` part) is no edge, as a jump out
// of the function.
std::uint32_t read_switches(const Pass& p, std::span<const std::uint32_t> pad_of,
                            AnalysisScratch& scratch) {
    scratch.switch_of.clear();
    scratch.case_first.clear();
    scratch.cases.clear();
    const std::vector<Instruction>& insns = p.decoded.instructions;
    if (p.abi.arch != Arch::X86_64 || !p.facts.read_only_data ||
        std::none_of(insns.begin(), insns.end(),
                     [](const Instruction& in) { return in.flow == Flow::Indirect; }))
        return 0;
    std::vector<std::uint8_t>& entries = scratch.entries;
    entries.assign(insns.size(), 0);
    entries[0] = 1;
    for (std::size_t k = 0; k < insns.size(); ++k) {
        const Instruction& in = insns[k];
        const bool inward = in.flow == Flow::Jump || in.flow == Flow::Branch ||
                            (in.flow == Flow::Call && in.direct_call);
        if (inward && in.target >= p.start && in.target - p.start < p.size)
            if (auto t = p.target_of(in.target)) entries[*t] = 1;
        if (!pad_of.empty() && pad_of[k] != no_pad) entries[pad_of[k]] = 1;
    }
    struct Read {
        std::size_t jump = 0;
        std::size_t first = 0;
        std::vector<std::uint32_t> cases;
    };
    std::vector<Read> read;
    for (std::size_t k = 0; k < insns.size(); ++k) {
        if (insns[k].flow != Flow::Indirect) continue;
        auto found = detail::x86_64_switch_cases(p.decoded, p.bytes, p.start, k, entries,
                                                 p.facts.read_only_data);
        if (!found) continue;
        Read r{k, found->first, {}};
        for (const std::uint64_t target : found->targets) {
            if (target < p.start || target - p.start >= p.size) continue;
            const auto t = p.target_of(target);
            if (!t) return 0;
            r.cases.push_back(static_cast<std::uint32_t>(*t));
        }
        read.push_back(std::move(r));
    }
    // A case inside another switch's run enters it past its range check.
    std::vector<std::uint8_t>& is_case = scratch.is_case;
    is_case.assign(insns.size(), 0);
    for (const Read& r : read)
        for (const std::uint32_t c : r.cases)
            is_case[c] = 1;
    std::erase_if(read, [&](const Read& r) {
        return std::any_of(is_case.begin() + static_cast<std::ptrdiff_t>(r.first) + 1,
                           is_case.begin() + static_cast<std::ptrdiff_t>(r.jump) + 1,
                           [](std::uint8_t c) { return c != 0; });
    });
    if (read.empty()) return 0;
    scratch.switch_of.assign(insns.size(), no_switch);
    for (const Read& r : read) {
        scratch.switch_of[r.jump] = static_cast<std::uint32_t>(scratch.case_first.size());
        scratch.case_first.push_back(static_cast<std::uint32_t>(scratch.cases.size()));
        scratch.cases.insert(scratch.cases.end(), r.cases.begin(), r.cases.end());
    }
    scratch.case_first.push_back(static_cast<std::uint32_t>(scratch.cases.size()));
    return static_cast<std::uint32_t>(read.size());
}

// The data-flow pass with states of N registers (N >= p.registers.size()).
// False when it takes more than the limit's visits.
template <std::size_t N> bool solve(const Pass& p, Stats& stats, AnalysisScratch& scratch) {
    Solution& out = scratch.solution;
    out.width = 0;
    out.change_offsets.clear();
    out.change_codes.clear();
    out.never_run.clear();
    out.escape.reset();
    const std::vector<Instruction>& insns = p.decoded.instructions;
    // Where decoding stopped before the function's end, the code after is
    // unseen: a path into it escapes the pass.
    const std::uint64_t decoded_end =
        insns.empty() ? p.start : insns.back().address + insns.back().size;
    const bool undecoded_tail = decoded_end < p.start + p.size;
    auto escape = [&](const Instruction& from, std::uint64_t to) {
        if (!out.escape) out.escape = std::make_pair(from.address, to);
    };
    const std::size_t nregs = p.registers.size();
    const Abi& abi = p.abi;
    const CodeFacts& facts = p.facts;
    // The state before each reached instruction: before(k), kept in
    // `states` in the order instructions are first reached (an unreached
    // one costs 4 bytes of `state_of` and no zero-filled state).
    constexpr std::uint32_t unreached = std::numeric_limits<std::uint32_t>::max();
    std::vector<std::uint32_t>& state_of = scratch.state_of;
    state_of.assign(insns.size(), unreached);
    std::vector<State<N>>& states = scratch.states<N>();
    states.clear();
    states.reserve(insns.size());
    auto reached = [&](std::size_t k) { return state_of[k] != unreached; };
    auto before = [&](std::size_t k) -> State<N>& { return states[state_of[k]]; };

    // First in, first out: a ring of one place per instruction, as an
    // instruction is queued at most once at a time.
    std::vector<std::uint32_t>& work = scratch.work;
    if (work.size() < insns.size()) work.resize(insns.size());
    std::size_t work_head = 0;
    std::size_t work_count = 0;
    std::vector<std::uint8_t>& queued = scratch.queued;
    queued.assign(insns.size(), 0);
    auto enqueue = [&](std::size_t to) {
        if (queued[to] == 0) {
            queued[to] = 1;
            std::size_t at = work_head + work_count;
            if (at >= insns.size()) at -= insns.size();
            work[at] = static_cast<std::uint32_t>(to);
            ++work_count;
        }
    };
    // `s` is reached: an unreached instruction takes it as it is (the meet
    // with an unreached state).
    auto propagate = [&](std::size_t to, const State<N>& s) {
        if (!reached(to)) {
            state_of[to] = static_cast<std::uint32_t>(states.size());
            states.push_back(s);
            enqueue(to);
            return;
        }
        State<N>& old = before(to);
        const State<N> m = meet(old, s);
        if (m == old) return;
        old = m;
        enqueue(to);
    };
    // The entry state: every register holds its caller's value, CFA = SP +
    // entry_cfa_offset(abi), where the first row says this is a function entry.
    if (!insns.empty()) {
        State<N> entry;
        entry.reached = true;
        const Row* first = p.row_at(0);
        if (first != nullptr && entry_cfa(*first, abi))
            entry.intact = (nregs >= 32 ? ~0U : (1U << nregs) - 1);
        propagate(0, entry);
    }
    // Where the function's exception table names each call's landing pad,
    // the call has an edge to it (the state after the call: the personality
    // routine enters the pad with the callee-saved registers and the SP the
    // call returned with). Otherwise any call may enter code no path
    // reaches, with its state (`body`, below). A pad that is not one of the
    // decoded instructions leaves the table unused.
    std::vector<std::uint32_t>& pad_of = scratch.pad_of;
    pad_of.clear();
    if (facts.call_sites && !insns.empty()) {
        if (const auto sites = facts.call_sites(p.start)) {
            pad_of.assign(insns.size(), no_pad);
            for (std::size_t k = 0; k < insns.size() && !pad_of.empty(); ++k) {
                const Instruction& in = insns[k];
                if (in.flow != Flow::Call || in.size == 0) continue;
                // The personality looks up the return address - 1.
                const std::uint64_t ip = in.address + in.size - 1;
                for (const CallSite& site : *sites) {
                    if (ip < site.begin || ip >= site.end) continue;
                    if (const auto t = p.index_of(site.landing_pad))
                        pad_of[k] = static_cast<std::uint32_t>(*t);
                    else if (site.landing_pad >= p.start && site.landing_pad - p.start < p.size) {
                        if (site.landing_pad >= decoded_end) escape(in, site.landing_pad);
                        pad_of.clear();
                    }
                    break;
                }
            }
        }
    }
    const bool exact_pads = !pad_of.empty();
    const bool calls_enter = facts.landing_pads && !exact_pads;
    // A switch whose table is read goes to its cases, and is not one of the
    // indirect jumps that enter code no path reaches (`body`, `tables`).
    stats.switch_tables = read_switches(p, pad_of, scratch);
    const std::vector<std::uint32_t>& switch_of = scratch.switch_of;
    const std::vector<std::uint32_t>& case_first = scratch.case_first;
    const std::vector<std::uint32_t>& cases = scratch.cases;
    // States at indirect jumps (and calls, for landing pads not known):
    // where unreached code is entered from.
    State<N> body;
    // States at indirect jumps alone, met per SP (a tail call through a
    // pointer leaves with the entry's, a switch with the body's; the last
    // one holds those whose SP is not known): a switch table's case may
    // also be reached by a branch (the range check's, to the default that
    // is also a table entry), and is then entered with both states.
    std::vector<State<N>> tables;
    const auto add_table = [&](const State<N>& s) {
        if (tables.empty()) tables.emplace_back(); // the unknown SP's
        if (!s.sp_known) {
            tables.back() = meet(tables.back(), s);
            return;
        }
        for (std::size_t i = 0; i + 1 < tables.size(); ++i)
            if (tables[i].sp == s.sp) {
                tables[i] = meet(tables[i], s);
                return;
            }
        tables.insert(tables.end() - 1, s);
    };
    auto run = [&]() -> bool {
        while (work_count != 0) {
            if (++stats.visits > p.limits.max_visits) return false;
            const std::size_t k = work[work_head];
            if (++work_head == insns.size()) work_head = 0;
            --work_count;
            queued[k] = 0;
            State<N> s = before(k);
            if (const Row* r = p.row_at(k)) anchor(s, *r, abi, stats);
            const Instruction& in = insns[k];
            const std::uint32_t read_switch = switch_of.empty() ? no_switch : switch_of[k];
            const bool unknown_jump = in.flow == Flow::Indirect && read_switch == no_switch;
            if (unknown_jump) add_table(s);
            if (unknown_jump || (calls_enter && in.flow == Flow::Call)) {
                body = meet(body, s);
                // A switch table's case, or a landing pad, may lie there.
                if (undecoded_tail) escape(in, decoded_end);
            }
            transfer(s, p.decoded, in, p.registers, p.call_clobbered);
            if (exact_pads && pad_of[k] != no_pad) propagate(pad_of[k], s);
            if (read_switch != no_switch)
                for (std::uint32_t c = case_first[read_switch]; c < case_first[read_switch + 1];
                     ++c)
                    propagate(cases[c], s);
            const bool returning_call =
                in.flow == Flow::Call &&
                !(in.direct_call && facts.never_returns && facts.never_returns(in.target));
            const bool next = in.flow == Flow::Next || in.flow == Flow::Branch || returning_call;
            if (next && k + 1 < insns.size())
                propagate(k + 1, s);
            else if (next && undecoded_tail)
                escape(in, decoded_end);
            // A jump out of the function (a tail call) has no edge here.
            if ((in.flow == Flow::Jump || in.flow == Flow::Branch) && in.target >= p.start &&
                in.target - p.start < p.size) {
                if (auto t = p.target_of(in.target))
                    propagate(*t, s);
                else if (!p.traps_at(in.target))
                    escape(in, in.target);
            }
        }
        return true;
    };
    if (!run()) return false;
    // Unreached code (switch cases, landing pads) starts from the body's
    // state, the meet over every call and indirect jump, including those of
    // the code seeded this way: repeated until the body stops weakening. Its
    // SP and FP too, where every one of them agrees (a call returns with the
    // SP it was made with); an instruction's row that disagrees makes its
    // registers unknown (anchor()).
    // The instruction after a call neither known to return nor known not to
    // is such an entry too: the call may never return (a PLT call to
    // __cxa_throw or __stack_chk_fail, which never_returns() cannot see),
    // and the compiler then places a landing pad or a switch case right
    // after it, which the fall-through alone would give the state of an
    // unrelated path. There the body's register facts are met with the
    // fall-through's, which keeps its SP and FP: the unwinder enters a
    // landing pad with the call site's SP, which the instruction's row
    // anchors. Which calls those are is asked once, before the rounds.
    std::vector<std::uint8_t>& after_unknown_call = scratch.after_unknown_call;
    after_unknown_call.clear();
    if (body.reached) {
        after_unknown_call.assign(insns.size(), 0);
        for (std::size_t k = 1; k < insns.size(); ++k) {
            const Instruction& call = insns[k - 1];
            if (call.flow != Flow::Call) continue;
            const bool known =
                call.direct_call && ((facts.returns && facts.returns(call.target)) ||
                                     (facts.never_returns && facts.never_returns(call.target)));
            if (known) continue;
            // The entry is the first instruction past the alignment padding
            // the compiler puts before a label (a nop run no path needs).
            std::size_t entry = k;
            while (entry + 1 < insns.size() && insns[entry].padding)
                ++entry;
            after_unknown_call[entry] = 1;
        }
    }
    std::vector<std::uint8_t>& is_seed = scratch.is_seed;
    is_seed.assign(insns.size(), 0);
    std::uint32_t seeds = 0;
    // Where a table's case may lie among the code paths reach: a branch
    // target whose SP is the jump's (a jump keeps the SP), or any branch
    // target where either SP is not known, entered with its own SP and FP.
    // (A case that code no branch reaches only falls into is not one: the
    // tables are not read.) The targets are listed wherever the rounds
    // below run (every indirect jump is met into the body), whatever the
    // first pass reached: the rounds may reach indirect jumps it did not.
    std::vector<std::uint8_t>& is_label = scratch.is_label;
    is_label.assign(body.reached ? insns.size() : 0, 0);
    for (std::size_t k = 0; body.reached && k < insns.size(); ++k) {
        const Instruction& in = insns[k];
        if ((in.flow == Flow::Jump || in.flow == Flow::Branch) && in.target >= p.start &&
            in.target - p.start < p.size)
            if (auto t = p.target_of(in.target)) is_label[*t] = 1;
    }
    const auto table_case = [&](std::size_t k) {
        if (tables.empty() || k == 0 || is_label[k] == 0 || !reached(k) || is_seed[k] != 0) return;
        for (const State<N>& t : tables) {
            if (!t.reached) continue;
            const State<N>& here = before(k);
            if (t.sp_known && here.sp_known && here.sp != t.sp) continue;
            propagate(k, with_stack_of(t, here));
        }
    };
    for (std::pair<State<N>, std::vector<State<N>>> used;
         body.reached && !(used.first == body && used.second == tables);) {
        used = {body, tables};
        State<N> seed = body;
        // A landing pad is entered after its call's callee ran.
        seed.narrow = 0;
        for (std::size_t k = 0; k < insns.size(); ++k) {
            // Alignment padding after a ret or jump is never run (but a
            // nop a branch reaches is), and is no seed; code a path reaches,
            // other than after a call not known to return, takes only the
            // switches' states.
            const bool first_time = !reached(k);
            const bool after_call = !first_time && after_unknown_call[k] != 0;
            if (insns[k].padding || (!first_time && is_seed[k] == 0 && !after_call)) {
                table_case(k);
                if (!run()) return false;
                continue;
            }
            if (first_time) {
                is_seed[k] = 1;
                ++seeds;
            }
            if (after_call && is_seed[k] == 0) {
                propagate(k, with_stack_of(seed, before(k)));
            } else {
                propagate(k, seed);
            }
            if (!run()) return false;
        }
    }
    stats.unreached = seeds;

    // The rule table: a change point wherever a rule changes. Register
    // copies take a third row of codes, where the code has any.
    const bool copies =
        std::any_of(insns.begin(), insns.end(), [](const Instruction& in) { return in.copies; });
    out.width = (copies ? 3 : 2) * nregs;
    std::vector<std::int32_t>& codes = scratch.codes;
    codes.assign(out.width, 0);
    // The codes are a function of the state: an instruction whose state is
    // its predecessor's has its codes.
    // Padding no path runs takes the rules of the instruction after it: a
    // nop or int3 changes no register, so a path that did run it would come
    // to that instruction with the same registers. Undefined there instead
    // would add two rule changes at each such run (a third of a big
    // program's debug file); the CFI of GCC and clang gives padding rules
    // too, those of the code before it.
    std::optional<State<N>> last;
    std::optional<std::uint32_t> padding_start; // of the never-run padding before k
    for (std::size_t k = 0; k < insns.size(); ++k) {
        if (insns[k].padding && !reached(k)) {
            out.never_run.push_back(p.offsets[k]);
            if (!padding_start) padding_start = p.offsets[k];
            if (k + 1 < insns.size()) continue; // its rules are the next instruction's
        }
        State<N> s = reached(k) ? before(k) : State<N>{};
        if (const Row* r = p.row_at(k); s.reached && r != nullptr) {
            anchor(s, *r, abi, stats);
            // A CFA on another register may be another frame's: glibc's
            // longjmp and setcontext take the jmp_buf's or ucontext's
            // (CFA = rdi, RA = rdx), whose registers are in that buffer, not
            // this function's caller's. Not known there (a DRAP prologue's
            // few CFA = r10 instructions too).
            if (!r->cfa.deref && r->cfa.reg != abi.sp_reg && r->cfa.reg != abi.fp_reg)
                s = State<N>{};
        }
        if (!last || !(*last == s)) {
            for (std::size_t i = 0; i < nregs; ++i) {
                codes[i] = encode_rule(s, i, abi.red_zone);
                codes[nregs + i] = encode_second(s, i, abi.red_zone);
                if (copies) codes[2 * nregs + i] = encode_copy(s, i);
            }
            const bool same_as_last =
                !out.change_offsets.empty() &&
                std::equal(codes.begin(), codes.end(),
                           out.change_codes.end() - static_cast<std::ptrdiff_t>(out.width));
            if (!same_as_last) {
                out.change_offsets.push_back(padding_start.value_or(p.offsets[k]));
                out.change_codes.insert(out.change_codes.end(), codes.begin(), codes.end());
            }
            last = s;
        }
        padding_start.reset();
    }
    return true;
}

} // namespace

bool supported(const Abi& abi) noexcept {
    return detail::decodable(abi) && !untracked_callee_saved(abi).empty();
}

bool entry_cfa(const Row& row, const Abi& abi) noexcept {
    return !row.cfa.deref && row.cfa.reg == abi.sp_reg && row.cfa.offset == entry_cfa_offset(abi);
}

Expected<FunctionRules> FunctionRules::analyse(const Abi& abi, std::uint64_t start,
                                               std::span<const std::uint8_t> code,
                                               const RowAt& rows, const Limits& limits,
                                               const CodeFacts& facts) {
    detail::AnalysisScratch scratch;
    return analyse(abi, start, code, rows, limits, facts, nullptr, scratch);
}

Analyser::Analyser()
    : memo_(std::make_unique<detail::DecodeMemo>()),
      scratch_(std::make_unique<detail::AnalysisScratch>()) {}
Analyser::~Analyser() = default;
Analyser::Analyser(Analyser&&) noexcept = default;
Analyser& Analyser::operator=(Analyser&&) noexcept = default;

Expected<FunctionRules> Analyser::analyse(const Abi& abi, std::uint64_t start,
                                          std::span<const std::uint8_t> code, const RowAt& rows,
                                          const Limits& limits, const CodeFacts& facts) {
    if (!scratch_) scratch_ = std::make_unique<detail::AnalysisScratch>(); // moved from
    auto out =
        FunctionRules::analyse(abi, start, code, rows, limits, facts, memo_.get(), *scratch_);
    // A function far bigger than most (a generated parser's) leaves no
    // lasting cost: past 1 MiB (about 4,000 instructions' worth) the vectors
    // are given back.
    constexpr std::size_t kept_bytes = std::size_t{1} << 20;
    if (scratch_->capacity_bytes() > kept_bytes) *scratch_ = detail::AnalysisScratch{};
    return out;
}

Expected<FunctionRules> FunctionRules::analyse(const Abi& abi, std::uint64_t start,
                                               std::span<const std::uint8_t> code,
                                               const RowAt& rows, const Limits& limits,
                                               const CodeFacts& facts, detail::DecodeMemo* memo,
                                               detail::AnalysisScratch& scratch) {
    if (!supported(abi))
        return Error(Errc::Unsupported,
                     "callee-saved registers are not recovered from " + std::string(abi.name) +
                         " code",
                     Address{start});
    // Offsets are kept in 32 bits, whatever the limit asks.
    if (code.size() > limits.max_bytes || code.size() > std::numeric_limits<std::uint32_t>::max())
        return Error(Errc::Unsupported,
                     "function at " + to_hex(start) + " has " + std::to_string(code.size()) +
                         " bytes of code, more than the analysis limit of " +
                         std::to_string(limits.max_bytes),
                     Address{start});
    FunctionRules out;
    out.start_ = start;
    out.end_ = start + code.size();
    out.order_ = abi.order;
    out.registers_ = untracked_callee_saved(abi);
    const std::size_t nregs = std::min(out.registers_.size(), max_registers);

    Code& decoded = scratch.decoded;
    decoded.instructions.clear();
    decoded.accesses.clear();
    // About 4 bytes an instruction (x86-64's mean, AArch64's size): one
    // allocation for most functions, where growing by doubling copies.
    decoded.instructions.reserve(code.size() / 4 + 1);
    if (!detail::decode(abi, start, code, out.registers_.first(nregs), decoded, memo))
        return Error(Errc::Unsupported, "Capstone cannot decode " + std::string(abi.name) + " code",
                     Address{start});
    const std::vector<Instruction>& insns = decoded.instructions;
    out.stats_.instructions = static_cast<std::uint32_t>(insns.size());
    const std::uint64_t decoded_end =
        insns.empty() ? start : insns.back().address + insns.back().size;
    out.stats_.undecoded_bytes = static_cast<std::uint32_t>(out.end_ - decoded_end);
    out.decoded_end_ = decoded_end;
    out.offsets_.reserve(insns.size());
    for (const auto& in : insns)
        out.offsets_.push_back(static_cast<std::uint32_t>(in.address - start));

    // Each instruction's row, asked once per row and not per instruction:
    // the row of a PC is the row of every PC after it up to its pc_end
    // (RowAt), so the instructions up to there share it. row_of[k] indexes
    // `seen`, or is no_row.
    constexpr std::uint32_t no_row = Pass::no_row;
    std::vector<Row>& seen = scratch.seen;
    seen.clear();
    std::vector<std::uint32_t>& row_of = scratch.row_of;
    row_of.assign(insns.size(), no_row);
    for (std::size_t k = 0; k < insns.size(); ++k) {
        const std::uint64_t pc = insns[k].address;
        if (k > 0 && row_of[k - 1] != no_row && pc > insns[k - 1].address &&
            pc < seen.back().pc_end) {
            row_of[k] = row_of[k - 1];
            continue;
        }
        auto r = rows(pc);
        if (!r) continue;
        seen.push_back(*r);
        row_of[k] = static_cast<std::uint32_t>(seen.size() - 1);
    }
    // A signal trampoline's caller is the interrupted code, whose registers
    // the kernel saved in the signal frame (SFrame v3 section 2.3, the
    // signal bit): nothing the trampoline's own code does says where.
    for (const auto& r : seen)
        if (r.signal_frame)
            return Error(Errc::Unsupported,
                         "function at " + to_hex(start) +
                             " is a signal trampoline: its caller's registers are in the signal "
                             "frame",
                         Address{start});

    const Pass pass{abi,
                    decoded,
                    seen,
                    row_of,
                    out.offsets_,
                    code,
                    start,
                    code.size(),
                    facts,
                    limits,
                    out.registers_.first(nregs),
                    call_clobbered_mask(out.registers_.first(nregs), facts.call_clobbered)};
    const bool solved = nregs <= 5 ? solve<5>(pass, out.stats_, scratch)
                                   : solve<max_registers>(pass, out.stats_, scratch);
    if (!solved)
        return Error(Errc::Unsupported,
                     "function at " + to_hex(start) + ": the analysis took more than " +
                         std::to_string(limits.max_visits) + " steps",
                     Address{start});
    // The table, in vectors of its own size.
    const Solution& solution = scratch.solution;
    if (solution.escape) {
        const auto [from, to] = *solution.escape;
        return Error(Errc::Unsupported,
                     "function at " + to_hex(start) + ": the path from " + to_hex(from) +
                         " goes to " + to_hex(to) +
                         (to >= decoded_end ? ", past the first instruction Capstone cannot "
                                              "decode (at " +
                                                  to_hex(decoded_end) + ")"
                                            : ", inside an instruction") +
                         "; code there may change any register",
                     Address{to});
    }
    out.stride_ = nregs;
    out.width_ = solution.width;
    out.change_offsets_.assign(solution.change_offsets.begin(), solution.change_offsets.end());
    out.change_codes_.assign(solution.change_codes.begin(), solution.change_codes.end());
    out.never_run_.assign(solution.never_run.begin(), solution.never_run.end());
    return out;
}

std::optional<std::size_t> FunctionRules::change_at(std::uint64_t pc) const {
    if (pc < start_ || pc >= decoded_end_ || change_offsets_.empty()) return std::nullopt;
    const auto offset = static_cast<std::uint32_t>(pc - start_);
    auto it = std::upper_bound(change_offsets_.begin(), change_offsets_.end(), offset);
    if (it == change_offsets_.begin()) return std::nullopt;
    return static_cast<std::size_t>(std::prev(it) - change_offsets_.begin());
}

void FunctionRules::at(std::uint64_t pc, std::span<RegRule> out) const {
    for (auto& r : out)
        r = RegRule::undefined();
    const auto c = change_at(pc);
    if (!c) return;
    const std::size_t n = std::min(out.size(), stride_);
    for (std::size_t i = 0; i < n; ++i) {
        const std::int32_t code = change_codes_[*c * width_ + i];
        if (code == unknown) continue;
        out[i] =
            code == same_value ? RegRule::same_value(RegRule::Source::Fre) : RegRule::at_cfa(code);
    }
}

std::optional<std::int32_t> FunctionRules::slot_at(std::uint64_t pc, std::size_t index) const {
    const auto c = change_at(pc);
    if (!c || index >= stride_) return std::nullopt;
    const std::int32_t code = change_codes_[*c * width_ + stride_ + index];
    if (code == unknown) return std::nullopt;
    return code;
}

std::optional<std::uint16_t> FunctionRules::copy_at(std::uint64_t pc, std::size_t index) const {
    const auto c = change_at(pc);
    if (!c || index >= stride_ || width_ < 3 * stride_) return std::nullopt;
    const std::int32_t code = change_codes_[*c * width_ + 2 * stride_ + index];
    if (code == unknown) return std::nullopt;
    return static_cast<std::uint16_t>(code);
}

namespace {

// Offsets from `start` as addresses.
std::vector<std::uint64_t> addresses(std::uint64_t start,
                                     const std::vector<std::uint32_t>& offsets) {
    std::vector<std::uint64_t> out;
    out.reserve(offsets.size());
    for (const std::uint32_t o : offsets)
        out.push_back(start + o);
    return out;
}

} // namespace

std::vector<std::uint64_t> FunctionRules::instruction_starts() const {
    return addresses(start_, offsets_);
}

std::vector<std::uint64_t> FunctionRules::change_starts() const {
    return addresses(start_, change_offsets_);
}

RegRule FunctionRules::at(std::uint64_t pc, std::uint16_t reg) const {
    std::array<RegRule, max_registers> rules{};
    const std::size_t n = std::min(registers_.size(), max_registers);
    at(pc, std::span<RegRule>(rules.data(), n));
    for (std::size_t i = 0; i < n; ++i)
        if (registers_[i] == reg) return rules[i];
    return RegRule::undefined();
}

std::size_t FunctionRules::memory_bytes() const noexcept {
    return (change_offsets_.capacity() + offsets_.capacity() + never_run_.capacity()) *
               sizeof(std::uint32_t) +
           change_codes_.capacity() * sizeof(std::int32_t);
}

bool FunctionRules::never_run(std::uint64_t pc) const noexcept {
    if (pc < start_ || pc - start_ >= end_ - start_) return false;
    return std::binary_search(never_run_.begin(), never_run_.end(),
                              static_cast<std::uint32_t>(pc - start_));
}

} // namespace sfunwind::callee_saved

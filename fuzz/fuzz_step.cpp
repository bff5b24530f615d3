// SPDX-License-Identifier: MIT
// Stepping with an arbitrary fake stack. The input is
//
//   0x00 u8   flags: bit 0 topmost, bit 1 the RA register is known, bit 2
//             other registers are known (RegisterSource), bit 3 no
//             stack-direction check
//   0x01 u8   backtrace frame limit (1 + value % 64)
//   0x02 u16  length of the SFrame section that follows the header
//   0x04 u32  PC: FDE selector (high 16 bits) and offset in the FDE (low 16)
//   0x08 u64  FP
//   0x10 u64  RA (the link register)
//   0x18 u64  value of any other register
//   0x20 u32  SP: offset into the stack
//   0x24      the section, then the stack bytes (mapped at stack_base)
//
// all little-endian. Stack words and the FP/RA values whose top 16 bits are
// 0xfeed stand for a code address (bits 16-31 select an FDE, bits 0-15 an
// offset from its start), those with 0xfee5 for a stack address (stack_base
// + bits 0-31): a shorthand that lets the fuzzer build multi-frame stacks
// without guessing 64-bit addresses.
//
// Properties: step() obeys its contract (an aligned CFA, a caller SP not
// below the callee's unless asked, Outermost for outermost rows); it reads
// memory only inside the window plan_reads() promises, and a WindowMemory
// over that window gives the same answer; backtrace() ends within its frame
// limit.
#include "sfunwind/sframe/section.hpp"
#include "sfunwind/unwind/backtrace.hpp"
#include "sfunwind/unwind/module_set.hpp"
#include "sfunwind/unwind/step.hpp"
#include "sfunwind/unwind/window.hpp"
#include "support.hpp"

#include <cstddef>
#include <cstdint>
#include <cstring>
#include <memory>
#include <span>
#include <vector>

using namespace sfunwind;
using fuzz::require;

namespace {

constexpr std::uint64_t section_vaddr = 0x4010e8;
constexpr std::uint64_t stack_base = 0x7ffd'0000'0000ULL;
constexpr std::size_t header_size = 0x24;
constexpr std::uint64_t code_marker = 0xfeed;
constexpr std::uint64_t stack_marker = 0xfee5;

class Decoder {
  public:
    explicit Decoder(const sframe::Section& s) : s_(s) {}
    // A code or stack address for a marked value; other values as they are.
    std::uint64_t value(std::uint64_t v) const {
        if (v >> 48 == stack_marker) return stack_base + (v & 0xffff'ffffU);
        if (v >> 48 == code_marker && s_.fde_count() != 0)
            if (auto f = s_.fde(static_cast<std::uint32_t>((v >> 16) & 0xffffU) % s_.fde_count()))
                return f->start + (v & 0xffffU);
        return v;
    }

  private:
    const sframe::Section& s_;
};

// The fake stack in the ABI's byte order, with markers resolved; records what
// step() reads.
class Stack final : public MemoryReader {
  public:
    Stack(std::span<const std::uint8_t> raw, const Decoder& d, ByteOrder order)
        : bytes_(raw.begin(), raw.end()) {
        const ByteView in(raw, ByteOrder::Little);
        for (std::size_t at = 0; at + 8 <= bytes_.size(); at += 8) {
            std::uint64_t v = 0;
            (void)in.load(at, v);
            const std::uint64_t resolved = d.value(v);
            for (unsigned i = 0; i < 8; ++i) {
                const unsigned shift = order == ByteOrder::Little ? 8 * i : 8 * (7 - i);
                bytes_[at + i] = static_cast<std::uint8_t>((resolved >> shift) & 0xffU);
            }
        }
    }
    bool read(std::uint64_t addr, std::span<std::uint8_t> out) override {
        reads_.push_back({addr, out.size()});
        const std::uint64_t rel = addr - stack_base;
        if (addr < stack_base || rel > bytes_.size() || out.size() > bytes_.size() - rel)
            return false;
        std::memcpy(out.data(), bytes_.data() + rel, out.size());
        return true;
    }
    struct Read {
        std::uint64_t addr;
        std::size_t size;
    };
    std::vector<Read> reads_;

  private:
    std::vector<std::uint8_t> bytes_;
};

class Registers final : public RegisterSource {
  public:
    explicit Registers(std::optional<std::uint64_t> v) : v_(v) {}
    std::optional<std::uint64_t> get(std::uint16_t) override { return v_; }

  private:
    std::optional<std::uint64_t> v_;
};

// The value step() uses for the window's base register, if it can know it.
std::optional<std::uint64_t> base_value(std::uint16_t reg, const Abi& abi, const FrameRegs& regs,
                                        bool topmost, std::optional<std::uint64_t> other) {
    if (reg == abi.sp_reg) return regs.sp;
    if (reg == abi.fp_reg) return regs.fp;
    if (reg == abi.ra_reg && regs.ra) return regs.ra;
    return topmost ? other : std::nullopt;
}

bool same(const Expected<StepResult>& a, const Expected<StepResult>& b) {
    if (a.has_value() != b.has_value()) return false;
    if (!a) return a.error().code() == b.error().code();
    if (a->caller.has_value() != b->caller.has_value()) return false;
    if (!a->caller) return a->end == b->end;
    return a->cfa == b->cfa && a->caller->pc == b->caller->pc && a->caller->sp == b->caller->sp &&
           a->caller->fp == b->caller->fp && a->fp_restored == b->fp_restored;
}

void check_step(const Row& row, const Abi& abi, const FrameRegs& regs, bool topmost, Stack& stack,
                Registers& extra, std::optional<std::uint64_t> other, const StepOptions& options) {
    stack.reads_.clear();
    auto r = step(row, abi, regs, topmost, stack, &extra, options);
    if (row.outermost)
        require(r && r->outermost() && r->end == StackEnd::RaUndefined,
                "an outermost row ends the stack, without an error");
    if (r && r->caller) {
        require(r->cfa % 8 == 0, "the CFA is 8-byte aligned");
        if (options.check_stack_direction && !row.signal_frame)
            require(r->caller->sp >= regs.sp, "the caller's SP is not below the callee's");
        require(r->caller->pc != 0, "a zero RA ends the stack, it is not a caller");
    }

    // The bridges' prefetch: every read inside the planned window, unless
    // the CFA is dereferenced (its RA and FP slots cannot be planned) or a
    // rule reads through a register other than the CFA's base.
    const ReadWindow w = plan_reads(row);
    const auto base = base_value(w.base_reg, abi, regs, topmost, other);
    if (!base) return;
    const std::uint64_t from = *base + static_cast<std::uint64_t>(w.offset);
    const bool plannable = !row.cfa.deref &&
                           !(row.ra.kind == RegRule::Kind::AtReg && row.ra.reg != row.cfa.reg) &&
                           !(row.fp.kind == RegRule::Kind::AtReg && row.fp.reg != row.cfa.reg);
    // Slots more than 4 GiB apart do not fit one window: the FP's then goes
    // to the fallback (window.hpp).
    auto slot = [&](const RegRule& r) -> std::optional<std::int64_t> {
        if (r.kind == RegRule::Kind::AtCfa) return std::int64_t{row.cfa.offset} + r.offset;
        if (r.kind == RegRule::Kind::AtReg && r.reg == row.cfa.reg) return std::int64_t{r.offset};
        return std::nullopt;
    };
    const auto ra_slot = slot(row.ra);
    const auto fp_slot = slot(row.fp);
    std::optional<std::uint64_t> dropped;
    if (ra_slot && fp_slot &&
        (*ra_slot > *fp_slot ? *ra_slot - *fp_slot : *fp_slot - *ra_slot) + 8 > 0xffffffffLL)
        dropped = *base + static_cast<std::uint64_t>(*fp_slot);
    if (plannable)
        for (const auto& read : stack.reads_)
            require((read.addr - from <= w.size && read.size <= w.size - (read.addr - from)) ||
                        read.addr == dropped,
                    "step() reads inside plan_reads()'s window",
                    to_hex(read.addr) + "+" + std::to_string(read.size) + " outside " +
                        to_hex(from) + "+" + std::to_string(w.size) + " for " + describe(row, abi));
    if (w.size > 4096) return;
    std::vector<std::uint8_t> window(w.size);
    if (w.size != 0 && !stack.read(from, window)) return;
    WindowMemory prefetched(from, window, &stack);
    auto again = step(row, abi, regs, topmost, prefetched, &extra, options);
    require(same(r, again), "step() through WindowMemory gives the same answer",
            describe(row, abi));
    if (plannable && !dropped)
        require(prefetched.fallback_reads() == 0, "a planned row needs no fallback reads");
}

} // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
    if (size < header_size) return 0;
    const std::span<const std::uint8_t> input(data, size);
    const ByteView h(input.first(header_size), ByteOrder::Little);
    std::uint8_t flags = 0, limit = 0;
    std::uint16_t section_len = 0;
    std::uint32_t pc_sel = 0, sp_off = 0;
    std::uint64_t fp = 0, ra = 0, other = 0;
    (void)h.load(0, flags);
    (void)h.load(1, limit);
    (void)h.load(2, section_len);
    (void)h.load(4, pc_sel);
    (void)h.load(8, fp);
    (void)h.load(16, ra);
    (void)h.load(24, other);
    (void)h.load(32, sp_off);
    const auto rest = input.subspan(header_size);
    if (section_len > rest.size()) return 0;
    auto section = sframe::Section::parse(rest.first(section_len), section_vaddr);
    if (!section) return 0;
    const sframe::Section& s = *section;
    const Abi& abi = s.abi();
    const auto stack_bytes = rest.subspan(section_len);
    const Decoder decode(s);
    Stack stack(stack_bytes, decode, abi.order);

    const bool topmost = (flags & 1U) != 0;
    const std::optional<std::uint64_t> other_value =
        (flags & 4U) != 0 ? std::optional<std::uint64_t>(other) : std::nullopt;
    Registers extra(other_value);
    StepOptions options;
    options.check_stack_direction = (flags & 8U) == 0;

    FrameRegs regs;
    regs.pc = decode.value(code_marker << 48 | std::uint64_t{pc_sel});
    regs.sp = stack_base + (stack_bytes.empty() ? 0 : sp_off % stack_bytes.size());
    regs.fp = decode.value(fp);
    if ((flags & 2U) != 0) regs.ra = decode.value(ra);

    if (auto row = s.lookup(FrameAddress::of_frame(regs.pc, topmost).lookup_address()))
        check_step(*row, abi, regs, topmost, stack, extra, other_value, options);

    // The whole walk, over a module set holding this section.
    ModuleSet modules;
    Module m;
    m.name = "fuzz";
    m.begin = 0;
    m.end = ~std::uint64_t{0};
    m.rows = std::make_shared<const RowSourceOf<sframe::Section>>(
        std::shared_ptr<const sframe::Section>(&s, [](const sframe::Section*) {}), "SFrame");
    modules.add(std::move(m));
    BacktraceOptions bo;
    bo.max_frames = 1U + limit % 64U;
    bo.step = options;
    const Backtrace bt = backtrace(modules, regs, stack, &extra, bo);
    require(!bt.frames.empty() && bt.frames.size() <= bo.max_frames,
            "backtrace() ends within its frame limit",
            std::to_string(bt.frames.size()) + " frames, limit " + std::to_string(bo.max_frames));
    require(bt.frames.front().regs.pc == regs.pc, "frame 0 is the given registers");
    return 0;
}

// SPDX-License-Identifier: MIT
// What every decoder of the callee-saved analysis does alike with Capstone:
// open a handle with details, walk the code linearly, and find a register
// among the tracked ones.
#pragma once

#include "decode_memo.hpp"
#include "instruction.hpp"

#include <capstone/capstone.h>
#include <cstdint>
#include <memory>
#include <mutex>
#include <optional>
#include <span>
#include <type_traits>
#include <utility>

namespace sfunwind::callee_saved::detail {

// A Capstone handle with instruction details on. Capstone handles are not
// shared between threads, and opening one costs more than decoding a small
// function: each decoder keeps one per thread (thread_local).
class CapstoneHandle {
  public:
    CapstoneHandle(cs_arch arch, cs_mode mode) {
        open_ = cs_open(arch, mode, &h_) == CS_ERR_OK;
        if (open_) cs_option(h_, CS_OPT_DETAIL, CS_OPT_ON);
    }
    ~CapstoneHandle() {
        if (open_) cs_close(&h_);
    }
    CapstoneHandle(const CapstoneHandle&) = delete;
    CapstoneHandle& operator=(const CapstoneHandle&) = delete;

    bool open() const noexcept { return open_; }
    csh get() const noexcept { return h_; }

  private:
    csh h_ = 0;
    bool open_ = false;
};

// A cs_insn with room for details (cs_malloc), freed with cs_free; null when
// Capstone has no memory.
struct CapstoneInsnFree {
    void operator()(cs_insn* i) const { cs_free(i, 1); }
};
using CapstoneInsn = std::unique_ptr<cs_insn, CapstoneInsnFree>;

// Decodes [start, start + code.size()) linearly, calling reduce(insn) for
// each instruction, until the end, a reduce() that returns false (one that
// returns bool: s390x's execute instructions end the decode), or bytes
// Capstone cannot decode that undecodable(address, rest) does not step over
// (it returns the bytes it consumed, 0 for none). Before each instruction,
// known(address, rest) may give it without Capstone (a DecodeMemo's find():
// the bytes it consumed, 0 for none). False when the handle is not open or
// Capstone has no memory.
template <class Reduce, class Undecodable, class Known>
bool decode_each(const CapstoneHandle& handle, std::uint64_t start,
                 std::span<const std::uint8_t> code, Reduce&& reduce, Undecodable&& undecodable,
                 Known&& known) {
    if (!handle.open()) return false;
    const CapstoneInsn insn(cs_malloc(handle.get()));
    if (!insn) return false;
    const std::uint8_t* p = code.data();
    std::size_t left = code.size();
    std::uint64_t address = start;
    while (left > 0) {
        if (const std::size_t n = known(address, std::span<const std::uint8_t>(p, left));
            n > 0 && n <= left) {
            p += n;
            left -= n;
            address += n;
            continue;
        }
        if (!cs_disasm_iter(handle.get(), &p, &left, &address, insn.get())) {
            const std::size_t skip = undecodable(address, std::span<const std::uint8_t>(p, left));
            if (skip == 0 || skip > left) break;
            p += skip;
            left -= skip;
            address += skip;
            continue;
        }
        if constexpr (std::is_same_v<decltype(reduce(*insn)), bool>) {
            if (!reduce(*insn)) break;
        } else {
            reduce(*insn);
        }
    }
    return true;
}

// An undecodable() or known() that consumes nothing.
inline constexpr auto no_bytes = [](std::uint64_t, std::span<const std::uint8_t>) {
    return std::size_t{0};
};

template <class Reduce, class Undecodable>
bool decode_each(const CapstoneHandle& handle, std::uint64_t start,
                 std::span<const std::uint8_t> code, Reduce&& reduce, Undecodable&& undecodable) {
    return decode_each(handle, start, code, std::forward<Reduce>(reduce),
                       std::forward<Undecodable>(undecodable), no_bytes);
}

template <class Reduce>
bool decode_each(const CapstoneHandle& handle, std::uint64_t start,
                 std::span<const std::uint8_t> code, Reduce&& reduce) {
    return decode_each(handle, start, code, std::forward<Reduce>(reduce), no_bytes);
}

// decode_each() through `memo`, when there is one: an encoding the memo
// holds is given without Capstone (appended to `out`), and each instruction
// Capstone decodes is remembered after reduce(insn) appended it to `out`.
template <class Reduce>
bool decode_each_remembered(const CapstoneHandle& handle, std::uint64_t start,
                            std::span<const std::uint8_t> code, DecodeMemo* memo,
                            MemoDecoder decoder, std::span<const std::uint16_t> tracked, Code& out,
                            Reduce&& reduce) {
    if (!memo) return decode_each(handle, start, code, std::forward<Reduce>(reduce));
    memo->track(decoder, tracked);
    return decode_each(
        handle, start, code,
        [&](const cs_insn& insn) {
            reduce(insn);
            memo->remember(std::span<const std::uint8_t>(insn.bytes, insn.size), out);
        },
        no_bytes,
        [&](std::uint64_t address, std::span<const std::uint8_t> rest) {
            return memo->find(address, rest, out);
        });
}

// Decodes `sample` once in the process (`once`), with details: before any
// thread's first decode returns. Capstone 4 fills some of its tables at the
// first decode that needs them, without a lock (x86: X86_insn_reg_intel
// copies its register list over the sorted one and sorts it again while
// another thread may search it); threads that decode their first
// instructions at once race on them (ThreadSanitizer). call_once orders
// that first decode before every other.
inline void warm_up(const CapstoneHandle& handle, std::once_flag& once,
                    std::span<const std::uint8_t> sample) {
    std::call_once(once, [&] { decode_each(handle, 0, sample, [](const cs_insn&) {}); });
}

// The index of DWARF register `dwarf` among the tracked ones, or -1.
inline int tracked_index(std::span<const std::uint16_t> tracked,
                         std::optional<std::uint16_t> dwarf) {
    if (!dwarf) return -1;
    for (std::size_t i = 0; i < tracked.size(); ++i)
        if (tracked[i] == *dwarf) return static_cast<int>(i);
    return -1;
}

} // namespace sfunwind::callee_saved::detail

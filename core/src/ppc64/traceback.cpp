// SPDX-License-Identifier: MIT
// Decoding one traceback table (64-bit PowerPC ELF ABI section 3.3).
#include "sfunwind/ppc64/traceback.hpp"

#include <array>
#include <cstdio>

namespace sfunwind::ppc64 {
namespace {

bool bit(std::uint8_t byte, unsigned n) {
    return ((static_cast<unsigned>(byte) >> n) & 1U) != 0;
}

// The eight mandatory bytes (3.3.1), bit 7 being the ABI's leftmost bit.
void unpack_mandatory(const std::array<std::uint8_t, 8>& b, TracebackTable& t) {
    t.version = b[0];
    t.lang = b[1];
    t.globalink = bit(b[2], 7);
    t.is_eprol = bit(b[2], 6);
    t.has_tboff = bit(b[2], 5);
    t.int_proc = bit(b[2], 4);
    t.has_ctl = bit(b[2], 3);
    t.tocless = bit(b[2], 2);
    t.fp_present = bit(b[2], 1);
    t.log_abort = bit(b[2], 0);
    t.int_handl = bit(b[3], 7);
    t.name_present = bit(b[3], 6);
    t.uses_alloca = bit(b[3], 5);
    t.cl_dis_inv = static_cast<std::uint8_t>((b[3] >> 2) & 7U);
    t.saves_cr = bit(b[3], 1);
    t.saves_lr = bit(b[3], 0);
    t.stores_bc = bit(b[4], 7);
    t.fixup = bit(b[4], 6);
    t.fp_saved = static_cast<std::uint8_t>(b[4] & 0x3fU);
    t.spare3 = static_cast<std::uint8_t>(b[5] >> 6);
    t.gpr_saved = static_cast<std::uint8_t>(b[5] & 0x3fU);
    t.fixedparms = b[6];
    t.floatparms = static_cast<std::uint8_t>(b[7] >> 1);
    t.parmsonstk = bit(b[7], 0);
}

// The checks that tell a table from a stray zero word: values the ABI does
// not define, reserved fields GCC and glibc leave zero, and save counts
// beyond the non-volatile registers.
const char* mandatory_problem(const TracebackTable& t) {
    if (t.version != 0) return "version is not 0";
    if (t.lang > static_cast<std::uint8_t>(Language::Assembly) && t.lang < 0xfb)
        return "lang is a reserved code";
    if (t.log_abort) return "log_abort (reserved) is set";
    if (t.cl_dis_inv != 0) return "cl_dis_inv (reserved) is not 0";
    if (t.spare3 != 0) return "spare3 (reserved) is not 0";
    if (t.fp_saved > max_saved_fprs) return "fp_saved exceeds the 18 non-volatile FPRs";
    if (t.gpr_saved > max_saved_gprs) return "gpr_saved exceeds the 18 non-volatile GPRs";
    return nullptr;
}

class Reader {
  public:
    Reader(ByteView code, std::uint64_t vaddr, std::uint64_t offset)
        : code_(code), vaddr_(vaddr), at_(offset) {}

    template <typename T> Expected<T> next(const char* field) {
        T v{};
        if (!code_.load(at_, v))
            return Error(Errc::Truncated,
                         std::string("traceback table field ") + field + " at " +
                             to_hex(vaddr_ + at_) + " runs past the end of the code",
                         vaddr_ + at_);
        at_ += sizeof(T);
        return v;
    }
    // Only after checking that the bytes are there.
    void skip(std::uint64_t n) { at_ += n; }
    std::uint64_t address() const { return vaddr_ + at_; }
    std::uint64_t offset() const { return at_; }

  private:
    ByteView code_;
    std::uint64_t vaddr_;
    std::uint64_t at_;
};

Error malformed(const std::string& what, std::uint64_t address) {
    return Error(Errc::Malformed, "traceback table at " + to_hex(address) + ": " + what,
                 Address{address});
}

} // namespace

std::string language_name(std::uint8_t lang) {
    static constexpr std::array<const char*, 13> names = {
        "C",     "FORTRAN", "Pascal", "Ada", "PL/1", "Basic",   "LISP",
        "COBOL", "Modula2", "C++",    "RPG", "PL.8", "Assembly"};
    if (lang < names.size()) return names[lang];
    return std::string(lang >= 0xfb ? "IBM (" : "reserved (") + to_hex(lang) + ")";
}

Expected<TracebackTable> decode_table(ByteView code, std::uint64_t code_vaddr, std::uint64_t offset,
                                      const DecodeLimits& limits) {
    const std::uint64_t address = code_vaddr + offset;
    std::uint32_t zero = 1;
    if (!code.load(offset, zero))
        return Error(Errc::Truncated,
                     "traceback table at " + to_hex(address) + " runs past the end of the code",
                     Address{address});
    if (zero != 0) return malformed("does not start with a zero word", address);
    // 3.3: "A traceback table is word-aligned."
    if (address % 4 != 0) return malformed("is not word-aligned", address);

    std::array<std::uint8_t, 8> raw{};
    if (!code.contains(offset + mandatory_offset, raw.size()))
        return Error(Errc::Truncated,
                     "traceback table at " + to_hex(address) +
                         ": mandatory fields run past the end of the code",
                     Address{address});
    for (std::size_t i = 0; i < raw.size(); ++i)
        raw[i] = code.bytes()[offset + mandatory_offset + i];

    TracebackTable t;
    t.address = address;
    unpack_mandatory(raw, t);
    if (const char* problem = mandatory_problem(t)) {
        // glibc's powerpc64le `.quad` form (see the header): accept it only
        // when the reversed bytes make a consistent table.
        TracebackTable reversed = t;
        if (code.order() == ByteOrder::Little) {
            std::array<std::uint8_t, 8> rev{};
            for (std::size_t i = 0; i < raw.size(); ++i)
                rev[i] = raw[raw.size() - 1 - i];
            unpack_mandatory(rev, reversed);
        }
        if (code.order() != ByteOrder::Little || mandatory_problem(reversed) != nullptr)
            return malformed(problem, address);
        t = reversed;
        t.mandatory_reversed = true;
    }

    // Optional fields (3.3.2), each present only under its condition, in order.
    Reader r(code, code_vaddr, offset + optional_offset);
    if (t.fixedparms != 0 || t.floatparms != 0) {
        auto v = r.next<std::uint32_t>("parminfo");
        if (!v) return std::move(v).error();
        t.parminfo = *v;
    }
    if (t.has_tboff) {
        const std::uint64_t field = r.address();
        auto v = r.next<std::uint32_t>("tb_offset");
        if (!v) return std::move(v).error();
        if (*v == 0 || *v % 4 != 0)
            return malformed("tb_offset " + to_hex(*v) + " (at " + to_hex(field) +
                                 ") is not a non-zero multiple of 4",
                             address);
        if (*v > offset)
            return malformed("tb_offset " + to_hex(*v) +
                                 " puts the function start before the code at " +
                                 to_hex(code_vaddr),
                             address);
        t.tb_offset = *v;
    }
    if (t.int_handl) {
        auto v = r.next<std::int32_t>("hand_mask");
        if (!v) return std::move(v).error();
        t.hand_mask = *v;
    }
    if (t.has_ctl) {
        auto n = r.next<std::uint32_t>("ctl_info");
        if (!n) return std::move(n).error();
        if (*n > limits.max_ctl_info)
            return malformed("ctl_info " + std::to_string(*n) + " exceeds the limit of " +
                                 std::to_string(limits.max_ctl_info) + " words",
                             address);
        t.ctl_info = *n;
        for (std::uint32_t i = 0; i < *n; ++i) {
            auto d = r.next<std::int32_t>("ctl_info_disp");
            if (!d) return std::move(d).error();
            t.ctl_info_disp.push_back(*d);
        }
    }
    if (t.name_present) {
        const std::uint64_t field = r.address();
        auto len = r.next<std::uint16_t>("name_len");
        if (!len) return std::move(len).error();
        if (*len > limits.max_name_len)
            return malformed("name_len " + std::to_string(*len) + " (at " + to_hex(field) +
                                 ") exceeds the limit of " + std::to_string(limits.max_name_len),
                             address);
        if (!code.contains(r.offset(), *len))
            return Error(Errc::Truncated,
                         "traceback table at " + to_hex(address) + ": name of " +
                             std::to_string(*len) + " bytes at " + to_hex(r.address()) +
                             " runs past the end of the code",
                         Address{address});
        std::string name;
        name.reserve(*len);
        for (std::uint32_t i = 0; i < *len; ++i) {
            const auto c = code.bytes()[r.offset() + i];
            // "The name is in seven-bit ASCII"; control characters and NUL
            // would mean this is not a name.
            if (c < 0x20 || c > 0x7e)
                return malformed("name byte " + to_hex(c) + " at " + to_hex(r.address() + i) +
                                     " is not printable 7-bit ASCII",
                                 address);
            name.push_back(static_cast<char>(c));
        }
        r.skip(*len);
        t.name = std::move(name);
    }
    if (t.uses_alloca) {
        auto reg = r.next<std::uint8_t>("alloca_reg");
        if (!reg) return std::move(reg).error();
        if (*reg > 31)
            return malformed("alloca_reg " + std::to_string(*reg) + " is not a GPR", address);
        t.alloca_reg = *reg;
    }
    t.size = static_cast<std::uint32_t>(r.offset() - offset);
    return t;
}

} // namespace sfunwind::ppc64

// SPDX-License-Identifier: MIT
// PowerPC64 traceback tables (64-bit PowerPC ELF ABI, section 3.3): the
// record a compiler puts after each function's code, marked by a zero word.
// This file decodes one table; ppc64/index.hpp finds them.
//
// Byte order: the eight bytes of mandatory fields (3.3.1) are bit fields
// numbered from the most significant bit, written byte by byte (GCC emits
// them with `.byte`), so their order is the same on big- and little-endian
// targets. The optional words and halfwords (3.3.2: parminfo, tb_offset,
// hand_mask, ctl_info, ctl_info_disp, name_len) are target-endian.
//
// glibc's assembly routines write the mandatory fields as one `.quad`, which
// on powerpc64le stores them byte-reversed. decode_table() accepts that form
// when the ABI order does not validate and the reversed one does, and says so
// in TracebackTable::mandatory_reversed.
#pragma once

#include "sfunwind/bytes.hpp"
#include "sfunwind/error.hpp"

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace sfunwind::ppc64 {

// The `lang` codes of section 3.3.1 (0xd-0xfa reserved, 0xfb-0xff IBM).
enum class Language : std::uint8_t {
    C = 0,
    Fortran = 1,
    Pascal = 2,
    Ada = 3,
    Pl1 = 4,
    Basic = 5,
    Lisp = 6,
    Cobol = 7,
    Modula2 = 8,
    Cxx = 9,
    Rpg = 10,
    Pl8 = 11,
    Assembly = 12,
};

// "C", "C++", "Assembly", ... or "reserved (0x20)" / "IBM (0xfb)".
std::string language_name(std::uint8_t lang);

// Registers the ABI makes non-volatile: r14-r31 and f14-f31 (ELFv2 ABI
// 2.2.1.1; the same sets in ELFv1). gpr_saved/fp_saved count down from 31.
inline constexpr unsigned max_saved_gprs = 18;
inline constexpr unsigned max_saved_fprs = 18;

// Save slots relative to the CFA (the caller's stack pointer), from the
// stack frame layout of both ABIs: the LR save doubleword is at offset 16 of
// the caller's frame header, the CR save word at 8; the FPR save area sits
// directly below the caller's frame, and the GPR save area below it.
inline constexpr std::int32_t lr_save_offset = 16;
inline constexpr std::int32_t cr_save_offset = 8;
inline constexpr std::int32_t gpr_save_offset(unsigned fp_saved, unsigned reg) {
    return -8 * static_cast<std::int32_t>(fp_saved) - 8 * (32 - static_cast<std::int32_t>(reg));
}

struct TracebackTable {
    std::uint64_t address = 0; // link-time address of the zero word
    std::uint32_t size = 0;    // bytes from the zero word through the last field (no padding)

    // Mandatory fields (3.3.1), in the ABI's order.
    std::uint8_t version = 0;
    std::uint8_t lang = 0;
    bool globalink = false;
    bool is_eprol = false;
    bool has_tboff = false;
    bool int_proc = false;
    bool has_ctl = false;
    bool tocless = false;
    bool fp_present = false;
    bool log_abort = false;
    bool int_handl = false;
    bool name_present = false;
    bool uses_alloca = false;
    std::uint8_t cl_dis_inv = 0; // 3 bits
    bool saves_cr = false;
    bool saves_lr = false;
    bool stores_bc = false;
    bool fixup = false;
    std::uint8_t fp_saved = 0;  // 6 bits: f(32-n)..f31
    std::uint8_t spare3 = 0;    // 2 bits
    std::uint8_t gpr_saved = 0; // 6 bits: r(32-n)..r31
    std::uint8_t fixedparms = 0;
    std::uint8_t floatparms = 0; // 7 bits
    bool parmsonstk = false;

    // Optional fields (3.3.2). hand_mask is present when int_handl is set
    // (the PowerOpen/AIX layout; the ELF ABI lists it as reserved).
    std::optional<std::uint32_t> parminfo;
    std::optional<std::uint32_t> tb_offset;
    std::optional<std::int32_t> hand_mask;
    std::optional<std::uint32_t> ctl_info;
    std::vector<std::int32_t> ctl_info_disp;
    std::optional<std::string> name;
    std::optional<std::uint8_t> alloca_reg;

    // The mandatory doubleword was stored byte-reversed (glibc's `.quad`
    // tables on powerpc64le); the fields above are the decoded values.
    bool mandatory_reversed = false;

    // The function's first instruction: the table's address minus tb_offset
    // ("the length of the function code").
    std::optional<std::uint64_t> function_start() const {
        if (!tb_offset) return std::nullopt;
        return address - *tb_offset;
    }
    // No separate stack frame: int_proc, or no back chain stored.
    bool frameless() const { return int_proc || !stores_bc; }
};

// Where the table's fields live, for dumps: offset from the zero word.
inline constexpr std::uint32_t mandatory_offset = 4;
inline constexpr std::uint32_t optional_offset = 12;

struct DecodeLimits {
    std::uint32_t max_ctl_info = 1024; // ctl_info_disp words
    std::uint32_t max_name_len = 4096;
};

// Decodes the table whose zero word is at `offset` of `code`, a view of
// executable bytes mapped at link-time address `code_vaddr`. Every field is
// bounds-checked, and the table must be consistent: version 0, a defined or
// IBM-reserved language, the reserved fields (spare3, cl_dis_inv, log_abort)
// zero, at most 18 saved GPRs and FPRs, a tb_offset that is a non-zero
// multiple of 4 and points inside `code`, a 7-bit printable name and an
// alloca register of at most 31. A zero word in code that is not a table
// fails these checks (Errc::Malformed), naming the field and its address.
Expected<TracebackTable> decode_table(ByteView code, std::uint64_t code_vaddr, std::uint64_t offset,
                                      const DecodeLimits& limits = {});

} // namespace sfunwind::ppc64

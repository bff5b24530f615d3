// SPDX-License-Identifier: MIT
// Comparing an SFrame Row with the DWARF CFI at one PC.
//
// What "equal" means:
//  - CFA: same register, offset and deref flag. A CFA the CFI gives as an
//    expression with no Row form (the x86-64 PLT's, for one) is reported as
//    an unrepresentable difference. When both rows say the RA is undefined
//    (outermost frame) the CFA is not compared: nothing is unwound through it.
//  - RA (the CIE's return-address column: rip, x30, r14, lr) and FP: same
//    kind, and same offset (and register, for AtReg/ValReg). The Row rule's
//    Source is ignored, so SFrame's x86-64 "RA fixed at CFA-8" (a header
//    value, Source::Header) equals CFI offset(-8) for rip.
//  - SameValue equals SameValue: SFrame's "u" for the FP (no data word) is
//    CFI same_value, and also CFI's unspecified rule for a callee-saved FP,
//    which libdw reports as same_value from the ABI's defaults. On AArch64
//    SFrame's "RA not saved" is CFI same_value for x30. Undefined equals
//    Undefined only.
//  - Not compared: row boundaries (SFrame may merge or split rows; a checker
//    walks the union of both tables' row starts), the signal-frame flag,
//    AArch64 RA signing (libdw does not expose DW_CFA_AARCH64_negate_ra_state),
//    and the topmost_only/pc_mask flags.
#pragma once

#include "sfunwind/abi.hpp"
#include "sfunwind/cfi/cfi_table.hpp"
#include "sfunwind/row.hpp"

#include <cstdint>
#include <string>
#include <vector>

namespace sfunwind::cfi {

struct Difference {
    enum class Part : std::uint8_t { Cfa, Ra, Fp };
    Part part = Part::Cfa;
    // The CFI rule has no Row form, so no SFrame row could match it. Not
    // necessarily a wrong SFrame row (SFrame describes PLTs with PC-mask FDEs).
    bool unrepresentable = false;
    std::string message; // "CFA: CFI rsp+16, SFrame rbp+16"
};

// The ways an SFrame Row differs from the CFI row at the same PC; empty when
// they are equal in the sense above.
std::vector<Difference> compare(const CfiRow& cfi, const Row& sframe, const Abi& abi);

} // namespace sfunwind::cfi

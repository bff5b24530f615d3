// SPDX-License-Identifier: MIT
#include "known_issues.hpp"

namespace sfunwind::check::detail {

std::string known_issue(const KnownIssueContext& context, const Row& sframe,
                        const cfi::CfiRow& cfi) {
    const Abi& abi = context.abi;
    const CfaRule& s = sframe.cfa;
    const CfaRule& c = cfi.rules.cfa;
    // GNU ld (seen in 2.44 and 2.47; bfd/elf64-x86-64.c since the change for
    // PR ld/32298) gives .plt.got a placeholder PC-mask row, CFA = SP+16,
    // over the whole stub. A .plt.got
    // stub is a single indirect `jmp *GOT(%rip)` entered by a call, so the
    // return address is all that was pushed: CFA = SP+8, as ld's own
    // .eh_frame FDE for .plt.got says (the CIE's initial rule).
    if (abi.arch == Arch::X86_64 && context.section == ".plt.got" && sframe.pc_mask &&
        cfi.cfa_state.representable && s.reg == abi.sp_reg && !s.deref && s.offset == 16 &&
        c.reg == abi.sp_reg && !c.deref && c.offset == 8)
        return "GNU ld .plt.got: the linker-made SFrame FDE says CFA=sp+16 (a placeholder row); "
               "a .plt.got stub is one jmp entered by a call, so CFA=sp+8 as its .eh_frame says";
    // GNU as (gen-sframe.c, sframe_xlate_do_restore; seen in 2.47) turns
    // `.cfi_restore %rbp` into the rule of the function's first FRE, while
    // DW_CFA_restore means the rule of the CIE's initial instructions (DWARF
    // 5 section 6.4.2.3): FP not saved. The two differ when the FDE starts
    // with the FP already saved, as in the .cold part GCC splits off a
    // function after its prologue.
    const RegRule& sf = sframe.fp;
    const RegRule& cf = cfi.rules.fp;
    const cfi::CfiRow* first = context.first_row;
    if (first != nullptr && cfi.fp_state.representable && cf.kind == RegRule::Kind::SameValue &&
        sf.kind == RegRule::Kind::AtCfa && first->rules.fp.kind == RegRule::Kind::AtCfa &&
        first->rules.fp.offset == sf.offset && s == c)
        return "GNU as .cfi_restore of the FP: gas restores the rule of the function's first row "
               "(FP at CFA" +
               std::to_string(sf.offset) +
               ", saved before the FDE starts, as in a .cold part) instead of the CIE's initial "
               "rule (FP not saved) that DW_CFA_restore means";
    return {};
}

} // namespace sfunwind::check::detail

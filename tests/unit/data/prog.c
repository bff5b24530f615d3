// SPDX-License-Identifier: MIT
// The program behind the ELF and CFI unit-test inputs (see make.sh). It calls
// nothing from libc so that it also links with -nostdlib (the big-endian
// AArch64 build has no C library to link against).

// A leaf: one CFI row (CFA = SP + 8 on x86-64) over the whole function.
__attribute__((noinline)) int leaf(int x) { return x * 3 + 1; }

// A frame-pointer prologue: CFA moves from SP to FP, FP saved at CFA-16.
__attribute__((noinline, optimize("no-omit-frame-pointer"))) int with_frame(int n) {
    volatile int buf[8];
    for (int i = 0; i < 8; ++i) buf[i] = leaf(n + i);
    return buf[n & 7];
}

// Stack realignment: gcc describes the CFA with a DWARF expression
// (DW_OP_breg6 -8; DW_OP_deref on x86-64).
__attribute__((noinline)) int realign(int n) {
    _Alignas(64) volatile int big[16];
    for (int i = 0; i < 16; ++i) big[i] = with_frame(n + i);
    return big[n & 15];
}

__attribute__((noinline)) int recurse(int n) {
    if (n <= 0) return realign(n);
    volatile int keep = recurse(n - 1);
    return keep + 1;
}

#if defined(__x86_64__)
// Rules gas cannot turn into SFrame (it skips the function, so only the CFI
// describes it): a CFA that is *(rbp - 8), as gcc's DRAP realignment writes,
// rbp given by a DW_CFA_val_expression, an RA expression that reduces to
// rsp + 8, and one that adds two registers (no Row can say that).
__asm__(".text\n"
        ".globl cfa_exprs\n"
        ".type cfa_exprs, @function\n"
        "cfa_exprs:\n"
        ".cfi_startproc\n"
        "push %rbp\n"
        ".cfi_def_cfa_offset 16\n"
        ".cfi_offset %rbp, -16\n"
        "mov %rsp, %rbp\n"
        // DW_CFA_def_cfa_expression: DW_OP_breg6 -8; DW_OP_deref
        ".cfi_escape 0x0f, 0x03, 0x76, 0x78, 0x06\n"
        "nop\n"
        // DW_CFA_val_expression rbp: DW_OP_breg7 0
        ".cfi_escape 0x16, 0x06, 0x02, 0x77, 0x00\n"
        "nop\n"
        // DW_CFA_expression rip: DW_OP_breg7 8; DW_OP_lit0; DW_OP_plus
        ".cfi_escape 0x10, 0x10, 0x04, 0x77, 0x08, 0x30, 0x22\n"
        "nop\n"
        // DW_CFA_expression rip: DW_OP_breg7 0; DW_OP_breg6 0; DW_OP_plus
        ".cfi_escape 0x10, 0x10, 0x05, 0x77, 0x00, 0x76, 0x00, 0x22\n"
        "nop\n"
        "pop %rbp\n"
        ".cfi_def_cfa %rsp, 8\n"
        ".cfi_same_value %rbp\n"
        ".cfi_offset %rip, -8\n"
        "ret\n"
        ".cfi_endproc\n"
        ".size cfa_exprs, .-cfa_exprs\n");
#endif

// An IFUNC: its symbol is STT_GNU_IFUNC.
static int impl(int x) { return x + 7; }
static int (*resolve_pick(void))(int) { return impl; }
int picked(int) __attribute__((ifunc("resolve_pick")));

int main(int argc, char** argv) {
    (void)argv;
    return recurse(argc) + picked(argc);
}

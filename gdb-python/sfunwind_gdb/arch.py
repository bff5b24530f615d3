# SPDX-License-Identifier: MIT
"""GDB's register names for the registers the unwind tables track, per
architecture."""


class ArchRegs:
    """Register names GDB uses for one architecture: the PC, the stack
    pointer, the frame pointer and the link register (None on x86-64), and
    the name of each DWARF register a v3 flexible FDE may name.

    `numbers` are GDB's register numbers for (pc, sp, fp, link), fixed by
    each architecture's register layout (`maint print registers`). Reading
    a register by number skips a search by name (about 0.5 us a read);
    Engine checks them against the names before it trusts them."""

    def __init__(self, name, pc, sp, fp, link, dwarf_names, numbers, pseudo_pc=None, no_native=None):
        self.name = name
        # Why the JIT reader cannot unwind this architecture, or None.
        self.no_native = no_native
        # GDB's "pc" when it is a pseudo register computed from `pc` (s390x:
        # from the PSW address). GDB asks an unwinder for it directly, and a
        # Python unwinder answers only for the registers it saved.
        self.pseudo_pc = pseudo_pc
        self.pc = pc
        self.sp = sp
        self.fp = fp
        self.link = link
        self.dwarf_names = dwarf_names
        self.numbers = numbers

    def dwarf_name(self, number):
        return self.dwarf_names.get(number)


_AMD64_DWARF = dict(enumerate(
    ["rax", "rdx", "rcx", "rbx", "rsi", "rdi", "rbp", "rsp",
     "r8", "r9", "r10", "r11", "r12", "r13", "r14", "r15", "rip"]))
_AARCH64_DWARF = {n: "x%d" % n for n in range(31)}
_AARCH64_DWARF[31] = "sp"
_S390X_DWARF = {n: "r%d" % n for n in range(16)}
# 64-bit PowerPC ELF ABI: r0-r31 are 0-31, LR is 65 (sfunwind's abi_ppc64).
_PPC64_DWARF = {n: "r%d" % n for n in range(32)}
_PPC64_DWARF[65] = "lr"

# GDB architecture names (gdb.Architecture.name()) -> registers.
_ARCHES = {
    "i386:x86-64": ArchRegs("i386:x86-64", "rip", "rsp", "rbp", None, _AMD64_DWARF, (16, 7, 6, None)),
    "aarch64": ArchRegs("aarch64", "pc", "sp", "x29", "x30", _AARCH64_DWARF, (32, 31, 29, 30)),
    "s390:64-bit": ArchRegs("s390:64-bit", "pswa", "r15", "r11", "r14", _S390X_DWARF, (1, 17, 13, 16),
                             pseudo_pc="pc"),
    # Big- and little-endian PowerPC64 (traceback tables): r1 is the SP, r31
    # the register the tables track as the FP (the alloca/frame-pointer
    # register GCC uses), LR the link register.
    "powerpc:common64": ArchRegs("powerpc:common64", "pc", "r1", "r31", "lr", _PPC64_DWARF, (64, 1, 31, 67),
                                 no_native="GDB's DWARF register map for PowerPC has no number for the PC, "
                                           "which a JIT reader sets registers by"),
}


def for_arch(arch_name):
    """The ArchRegs of a GDB architecture name, or None (not an SFrame ABI)."""
    return _ARCHES.get(arch_name)

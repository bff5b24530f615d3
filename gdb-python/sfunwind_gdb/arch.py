# SPDX-License-Identifier: MIT
"""GDB's register names for the registers SFrame tracks, per architecture."""


class ArchRegs:
    """Register names GDB uses for one architecture: the PC, the stack
    pointer, the frame pointer and the link register (None on x86-64), and
    the name of each DWARF register a v3 flexible FDE may name.

    `numbers` are GDB's register numbers for (pc, sp, fp, link), fixed by
    each architecture's register layout (`maint print registers`). Reading
    a register by number skips a search by name (about 0.5 us a read);
    Engine checks them against the names before it trusts them."""

    def __init__(self, name, pc, sp, fp, link, dwarf_names, numbers, pseudo_pc=None):
        self.name = name
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

# GDB architecture names (gdb.Architecture.name()) -> registers.
_ARCHES = {
    "i386:x86-64": ArchRegs("i386:x86-64", "rip", "rsp", "rbp", None, _AMD64_DWARF, (16, 7, 6, None)),
    "aarch64": ArchRegs("aarch64", "pc", "sp", "x29", "x30", _AARCH64_DWARF, (32, 31, 29, 30)),
    "s390:64-bit": ArchRegs("s390:64-bit", "pswa", "r15", "r11", "r14", _S390X_DWARF, (1, 17, 13, 16),
                             pseudo_pc="pc"),
}


def for_arch(arch_name):
    """The ArchRegs of a GDB architecture name, or None (not an SFrame ABI)."""
    return _ARCHES.get(arch_name)

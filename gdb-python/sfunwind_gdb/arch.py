# SPDX-License-Identifier: MIT
"""GDB's architectures with an SFrame ABI: which of the core's ABIs each
runs, and what only GDB knows about it. The ABI's registers (DWARF numbers,
names) and layout come from the library (native.Abi)."""


class _GdbArch:
    """What GDB names and numbers differently from the ABI: its name of the
    PC, and its register numbers for (pc, sp, fp, link), fixed by each
    architecture's register layout (`maint print registers`). Reading a
    register by number skips a search by name (about 0.5 us a read); Engine
    checks them against the names before it trusts them."""

    def __init__(self, abi, pc, numbers, pseudo_pc=None, no_native=None):
        self.abi = abi
        self.pc = pc
        self.numbers = numbers
        # GDB's "pc" when it is a pseudo register computed from `pc` (s390x:
        # from the PSW address). GDB asks an unwinder for it directly, and a
        # Python unwinder answers only for the registers it saved.
        self.pseudo_pc = pseudo_pc
        # Why the JIT reader cannot unwind this architecture, or None.
        self.no_native = no_native


# GDB architecture names (gdb.Architecture.name()) -> the core's ABI names
# (sfunwind::Abi::name; either byte order has the same registers).
_ARCHES = {
    "i386:x86-64": _GdbArch("amd64", "rip", (16, 7, 6, None)),
    "aarch64": _GdbArch("aarch64", "pc", (32, 31, 29, 30)),
    "s390:64-bit": _GdbArch("s390x", "pswa", (1, 17, 13, 16), pseudo_pc="pc"),
    # Big- and little-endian PowerPC64 (traceback tables): r1 is the SP, r31
    # the register the tables track as the FP (the alloca/frame-pointer
    # register GCC uses), LR the link register.
    "powerpc:common64": _GdbArch("ppc64", "pc", (64, 1, 31, 67),
                                 no_native="GDB's DWARF register map for PowerPC has no number for the PC, "
                                           "which a JIT reader sets registers by"),
}


class ArchRegs:
    """The registers the unwinder reads and writes on one architecture:
    GDB's names of the PC, the stack pointer, the frame pointer and the link
    register (None on x86-64), their GDB numbers, and the ABI (`abi`, a
    native.Abi: DWARF numbers, names, sp_from_cfa)."""

    def __init__(self, name, gdb_arch, abi):
        self.name = name
        self.abi = abi
        self.pc = gdb_arch.pc
        self.sp = abi.register_name(abi.sp_reg)
        self.fp = abi.register_name(abi.fp_reg)
        self.link = abi.register_name(abi.ra_reg) if abi.ra_in_register else None
        self.numbers = gdb_arch.numbers
        self.pseudo_pc = gdb_arch.pseudo_pc
        self.no_native = gdb_arch.no_native


def for_arch(lib, arch_name):
    """The ArchRegs of a GDB architecture name, or None (not an SFrame ABI)."""
    gdb_arch = _ARCHES.get(arch_name)
    if gdb_arch is None:
        return None
    return ArchRegs(arch_name, gdb_arch, lib.abi(gdb_arch.abi))

#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""libsfunwind_gdb.so through ctypes, without GDB: the C interface the
Python unwinder uses (open, place, lookup, unwind with the stack read ahead
through the read callback, the caller bookkeeping and the registers it
saves reading back) and the JIT reader's entry
point, on fixture binaries of every SFrame version, on a PowerPC64 file
unwound with its traceback tables, and on bad input.

usage: test_native_api.py --library build/.../libsfunwind_gdb.so
Prints each check; exit status 1 if any failed."""

import argparse
import ctypes
import importlib.util
import os
import struct
import subprocess

import gdb_harness as H

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.normpath(os.path.join(HERE, "..", ".."))
FIXTURES = os.path.join(ROOT, "tests", "fixtures", "bin")

spec = importlib.util.spec_from_file_location("native", os.path.join(ROOT, "gdb-python", "sfunwind_gdb", "native.py"))
native = importlib.util.module_from_spec(spec)
spec.loader.exec_module(native)

def symbols(path):
    out = subprocess.run(["nm", path], capture_output=True, text=True, check=True).stdout
    syms = {}
    for line in out.splitlines():
        parts = line.split()
        if len(parts) == 3 and parts[1] in "tT":
            syms[parts[2]] = int(parts[0], 16)
    return syms


class Stack:
    """A fake stack: 8-byte little-endian words at addresses, for the fallback reader."""

    def __init__(self):
        self.words = {}
        self.reads = []

    def read(self, addr, buf, size):
        self.reads.append((addr, size))
        data = b""
        for a in range(addr, addr + size, 8):
            if a not in self.words:
                return 0
            data += struct.pack("<Q", self.words[a])
        ctypes.memmove(buf, data[:size], size)
        return 1


class Registers:
    """The register callback: DWARF number -> value; records what was asked."""

    def __init__(self):
        self.values = {}
        self.asked = []

    def read(self, reg, out):
        self.asked.append(reg)
        if reg not in self.values:
            return 0
        out[0] = self.values[reg]
        return 1


def unwind(lib, pc, sp, fp, level):
    frame = native.Frame(pc=pc, sp=sp, fp=fp, has_sp=1, has_fp=1, level=level)
    res = native.UnwindResult()
    status = lib.unwind_raw(ctypes.addressof(frame), ctypes.addressof(res))
    return status, res


def elf_word(path, vaddr):
    """The 32-bit little-endian word at link-time `vaddr` of an ELF64 LE
    file, through its PT_LOAD program headers."""
    with open(path, "rb") as f:
        data = f.read()
    phoff, = struct.unpack_from("<Q", data, 32)
    phentsize, phnum = struct.unpack_from("<HH", data, 54)
    for i in range(phnum):
        p_type, _, p_offset, p_vaddr, _, p_filesz = struct.unpack_from("<IIQQQQ", data, phoff + i * phentsize)
        if p_type == 1 and p_vaddr <= vaddr < p_vaddr + p_filesz:
            return struct.unpack_from("<I", data, p_offset + vaddr - p_vaddr)[0]
    raise ValueError("0x%x is in no PT_LOAD of %s" % (vaddr, path))


def check_ppc64(check, lib, stack, regs):
    """A 64-bit PowerPC file without SFrame opens with its traceback tables,
    and unwinds through the same calls: the stackless leaf at frame 0 (CFA =
    r1, the RA still in LR), then its caller from a return address (CFA =
    the back chain at r1, RA in the LR save doubleword at CFA + 16)."""
    path = os.path.join(ROOT, "tests", "fixtures", "ppc64", "bin", "ppc64le", "tbtab-O2-part-static")
    module = lib.open_file(path)
    info = lib.module_info(module)
    check("ppc64le: opened with its traceback tables",
          info.table == native.TABLE_PPC64_TRACEBACK and info.kind == b"ppc64 traceback tables"
          and info.abi_name == b"ppc64le" and info.num_functions > 100 and info.num_fdes == 0
          and (info.sp_reg, info.fp_reg, info.ra_reg) == (1, 31, 65) and info.text_begin < info.text_end,
          "%s %s, %d functions" % (info.kind, info.abi_name, info.num_functions))
    lib.place(module, 0)
    syms = symbols(path)
    leaf, rec = syms["leaf"], syms["recurse"]
    check("ppc64le: module_at(leaf)", lib.module_at(leaf) == module)
    # A call in recurse: its first `bl` (primary opcode 18, LK set).
    call = next(a for a in range(rec, rec + 256, 4) if elf_word(path, a) >> 26 == 18 and elf_word(path, a) & 3 == 1)
    ret = call + 4
    sp, back_chain, caller_ret = 0x4000800230, 0x4000800250, 0x10000D94
    lib.new_stop()
    regs.values = {65: ret}  # LR
    status, res = unwind(lib, leaf + 8, sp, 0x77, 0)
    regs.values = {}
    check("ppc64le: leaf at frame 0 returns to LR",
          status == 0 and res.pc == ret and res.sp == sp and res.cfa == sp and res.fp == 0x77
          and res.func_start == leaf and res.topmost == 1 and res.fp_restored == 0,
          "status %d pc 0x%x sp 0x%x cfa 0x%x: %s" % (status, res.pc, res.sp, res.cfa, lib.last_error()))
    stack.words = {sp: back_chain, back_chain + 16: caller_ret}
    stack.reads = []
    status, res = unwind(lib, ret, sp, 0x77, 1)
    check("ppc64le: recurse from its return address: back chain, LR save doubleword",
          status == 0 and res.pc == caller_ret and res.sp == back_chain and res.cfa == back_chain
          and res.func_start == rec and res.topmost == 0,
          "status %d pc 0x%x sp 0x%x: %s; reads %s" % (status, res.pc, res.sp, lib.last_error(), stack.reads))
    row = native.Row()
    lib._lookup(ret - 1, ctypes.byref(row))
    check("ppc64le: row after the call", lib.describe(row) == "CFA=[r1+0] RA=[CFA+16] FP=same"
          and (row.pc_begin, row.pc_end) == (call, ret), lib.describe(row))
    lib.unplace(module)
    # A big-endian ELFv1 file opens the same way.
    be = lib.module_info(lib.open_file(path.replace("ppc64le", "ppc64")))
    check("ppc64: opened with its traceback tables",
          be.table == native.TABLE_PPC64_TRACEBACK and be.abi_name == b"ppc64" and be.num_functions > 100,
          "%s %s" % (be.kind, be.abi_name))


def run(args, res):
    check = res.check
    lib = native.Library(args.library)
    check("API version", lib._lib.sfunwind_gdb_api_version() == native.API_VERSION)

    # The pc-1 rule is the core's (FrameAddress): a return address is looked
    # up one byte before it, an exact pc at itself.
    check("lookup address of a return address", lib.lookup_address(0x401000, True) == 0x400FFF)
    check("lookup address of an exact pc", lib.lookup_address(0x401000, False) == 0x401000)
    check("lookup address of a zero return address", lib.lookup_address(0, True) == 0)

    # The core's comparison engine, as `sframe compare` and the GDB suites use
    # it: both walks are GDB's, so a value known on one side only differs.
    walk = [(0x401000, 0x7ff010, 0x7ff000, 0x5), (0x401100, 0x7ff030, 0x7ff010, None)]
    check("compare: equal walks", lib.compare(walk, list(walk)) == (None, ""), lib.compare(walk, list(walk)))
    other = [walk[0], (0x401100, 0x7ff038, 0x7ff010, None)]
    index, summary = lib.compare(walk, other)
    check("compare: a CFA differs at frame 1", index == 1 and summary == "CFA 0x7ff030 (SFrame) vs 0x7ff038 (GDB)",
          (index, summary))
    one_sided = [walk[0], (0x401100, 0x7ff030, 0x7ff010, 0x9)]
    index, summary = lib.compare(walk, one_sided)
    check("compare: an FP known on one side only differs", index == 1 and summary.startswith("fp unknown"),
          (index, summary))
    index, summary = lib.compare(walk[:1], walk)
    check("compare: a shorter SFrame walk differs where it ends", index == 1 and "GDB has 2" in summary,
          (index, summary))

    # Not an SFrame file: a clean NOT_FOUND with the file named.
    try:
        lib.open_file(os.path.join(FIXTURES, "..", "manifest.tsv"))
        check("open a non-ELF file fails", False)
    except native.NativeError as e:
        check("open a non-ELF file fails", "manifest.tsv" in str(e), e)
    # Garbage bytes: an error, no crash.
    try:
        lib.open_bytes(b"\xe2\xde\x03" + b"\xff" * 40, 0x1000, "garbage")
        check("open garbage bytes fails", False)
    except native.NativeError as e:
        check("open garbage bytes fails", "garbage" in str(e), e)

    # ABI facts and register names come from the core, by ABI name.
    s390x = lib.abi("s390x")
    check("ABI s390x: SP, FP, RA, sp_from_cfa",
          (s390x.sp_reg, s390x.fp_reg, s390x.ra_reg, s390x.ra_in_register, s390x.sp_from_cfa) == (15, 11, 14, True, -160))
    amd64 = lib.abi("amd64")
    check("ABI amd64: names", [amd64.register_name(n) for n in (amd64.sp_reg, amd64.fp_reg, amd64.ra_reg, 17)]
          == ["rsp", "rbp", "rip", None])
    check("ABI s390x: DWARF 17 is f2", s390x.register_name(17) == "f2", s390x.register_name(17))
    check("ABI aarch64_be: x29, sp", [lib.abi("aarch64_be").register_name(n) for n in (29, 31)] == ["x29", "sp"])
    try:
        lib.abi("aarch64-be")
        check("an unknown ABI name fails", False)
    except native.NativeError as e:
        check("an unknown ABI name fails", e.status == native.BAD_ARGUMENT, e)

    stack = Stack()
    regs = Registers()
    read_cb = native.READ_FN(stack.read)
    reg_cb = native.REG_FN(regs.read)
    lib.set_callbacks(read_cb, reg_cb)

    for writer, version in (("gas-2.40", 1), ("gas-2.44", 2), ("gas-2.47", 3), ("clang-23", 2)):
        path = os.path.join(FIXTURES, writer, "recurse-O2-nofp-static")
        module = lib.open_file(path)
        info = lib.module_info(module)
        check("%s: SFrame version" % writer, info.version == version, info.version)
        syms = symbols(path)
        lib.place(module, 0)
        leaf, rec = syms["fixture_leaf"], syms["recurse"]
        check("%s: module_at(fixture_leaf)" % writer, lib.module_at(leaf) == module)
        check("%s: .text address" % writer, lib.section_vaddr(module, ".text") is not None)

        # Frame 0 at the entry of recurse: CFA = sp + 8, RA at CFA - 8.
        row = lib.lookup(rec)
        check("%s: row at recurse's entry" % writer, lib.describe(row).startswith("CFA=rsp+8 RA=[CFA-8]"),
              lib.describe(row))
        sp, ret = 0x7FFF0000, rec + 5  # a "return address" inside recurse
        # The stack is read in aligned blocks of 4 KiB (the smallest page),
        # 16 KiB from the block that holds the byte 512 bytes below the
        # planned window (a frame's save slots lie below its CFA); where that
        # fails (the fake stack holds one word), the blocks up to the
        # window's end, then the planned window alone.
        block = 4096
        first = (sp - 512) // block * block
        fresh = [(first, 4 * block), (first, sp + block - first), (sp, 8)]
        lib.new_stop()
        stack.words = {sp: ret}
        stack.reads = []
        status, res = unwind(lib, rec, sp, 0x1234, 0)
        check("%s: unwind at entry, the stack read once" % writer,
              status == 0 and res.pc == ret and res.sp == sp + 8 and res.cfa == sp + 8 and res.fp == 0x1234
              and res.func_start == rec and res.fallback_reads == 0 and res.topmost == 1
              and stack.reads == fresh,
              "status %d pc 0x%x sp 0x%x cfa 0x%x reads %s" % (status, res.pc, res.sp, res.cfa, stack.reads))
        # A stack readable around the window: one read of 16 KiB.
        lib.new_stop()
        stack.words = {a: 0 for a in range(first, first + 4 * block, 8)}
        stack.words[sp] = ret
        stack.reads = []
        status, res = unwind(lib, rec, sp, 0x1234, 0)
        check("%s: one read of 16 KiB from the block below the window" % writer,
              status == 0 and res.pc == ret and stack.reads == [(first, 4 * block)], stack.reads)
        # The caller that step produced is served from those bytes.
        stack.reads = []
        lib.unwind_raw(ctypes.addressof(native.Frame(pc=ret, level=1)), ctypes.addressof(native.UnwindResult()))
        check("%s: the produced caller's window comes from the bytes read" % writer, stack.reads == [],
              stack.reads)
        # A frame the previous step did not produce (here frame 0 again: a
        # new walk, perhaps of another thread or inferior) reads anew.
        stack.reads = []
        status, res = unwind(lib, rec, sp, 0x1234, 0)
        check("%s: a new walk reads the stack anew" % writer,
              status == 0 and res.pc == ret and stack.reads == [(first, 4 * block)], stack.reads)
        # The top of the stack's mapping one block above the window's: the
        # read ahead fails once a stop, and later walks of the stop read
        # only up to there.
        lib.new_stop()
        stack.words = {a: 0 for a in range(first, sp + block, 8)}
        stack.words[sp] = ret
        top = [(first, 4 * block), (first, sp + block - first)]
        reads = []
        for _ in range(2):
            stack.reads = []
            status, res = unwind(lib, rec, sp, 0x1234, 0)
            reads.append((status, stack.reads))
        check("%s: at the stack's top, a failed read ahead once a stop" % writer,
              reads == [(0, top), (0, top[1:])], reads)
        lib.new_stop()
        stack.reads = []
        unwind(lib, rec, sp, 0x1234, 0)
        check("%s: a new stop reads ahead again" % writer, stack.reads == top, stack.reads)
        lib.new_stop()
        stack.words = {sp: ret}
        status, res = unwind(lib, rec, sp, 0x1234, 0)
        # GDB asks for the caller next: its SP and FP are the ones just
        # produced, not read back through the register callback.
        regs.asked = []
        frame = native.Frame(pc=ret, level=1)
        lib.unwind_raw(ctypes.addressof(frame), ctypes.addressof(res))
        check("%s: the produced caller's registers are not read back" % writer, regs.asked == [], regs.asked)
        # Another frame at that pc (another level): SP and FP are read.
        frame = native.Frame(pc=ret, level=2)
        status = lib.unwind_raw(ctypes.addressof(frame), ctypes.addressof(res))
        check("%s: other frames' SP and FP come from the register callback" % writer,
              status != 0 and regs.asked == [7, 6], "status %d, asked %s" % (status, regs.asked))
        # The JIT reader knows no levels (-1), only the frame's PC and SP:
        # a frame with the produced caller's PC and SP is that caller, and
        # its FP is not read back; another SP at that PC, or the topmost
        # frame, is another frame, whose FP is read.
        def level_unknown(frame_sp, topmost=None):
            unwind(lib, rec, sp, 0x1234, 0)
            if topmost is not None:
                lib.set_topmost(*topmost)
            regs.asked = []
            frame = native.Frame(pc=ret, sp=frame_sp, has_sp=1, level=-1)
            lib.unwind_raw(ctypes.addressof(frame), ctypes.addressof(res))
            lib.new_stop()
            return list(regs.asked)
        asked = level_unknown(sp + 8)
        check("%s: level unknown, the produced caller's FP is not read back" % writer, asked == [], asked)
        asked = level_unknown(sp + 16)
        check("%s: level unknown, another SP at the caller's PC reads the FP" % writer, asked == [6], asked)
        asked = level_unknown(sp + 8, topmost=(ret, sp + 8))
        check("%s: level unknown, the topmost frame is never a produced caller" % writer, asked == [6], asked)
        # A new objfile or target: the stack bytes and the caller's
        # registers are forgotten.
        lib.unwind_raw(ctypes.addressof(native.Frame(pc=rec, sp=sp, fp=0x1234, has_sp=1, has_fp=1, level=0)),
                       ctypes.addressof(res))
        lib.forget_stack()
        stack.reads = []
        regs.asked = []
        frame = native.Frame(pc=ret, level=1)
        lib.unwind_raw(ctypes.addressof(frame), ctypes.addressof(res))
        check("%s: forget_stack() forgets the caller's registers" % writer, regs.asked == [7, 6], regs.asked)
        status, res = unwind(lib, rec, sp, 0x1234, 0)
        check("%s: forget_stack() forgets the stack bytes" % writer, stack.reads == fresh,
              stack.reads)
        lib.new_stop()
        stack.reads = []
        status, res = unwind(lib, rec, sp, 0x1234, 0)
        check("%s: a new stop reads the stack again" % writer, status == 0 and stack.reads == fresh,
              stack.reads)
        # The caller it produced is looked up as a return address (pc - 1):
        # recurse's return address inside recurse stays in recurse.
        frow, top = native.Row(), ctypes.c_int()
        st = lib.lookup_frame_raw(ret, sp + 8, -1, ctypes.byref(frow), ctypes.byref(top))
        check("%s: produced caller is a caller" % writer, st == 0 and top.value == 0)
        # Unreadable memory: an error naming the address, not a crash.
        stack.words = {}
        lib.new_stop()
        status, res = unwind(lib, rec, sp, 0x1234, 0)
        check("%s: unreadable stack" % writer, status == native.MEMORY_UNREADABLE, lib.last_error())
        # A PC outside every module: NOT_FOUND.
        status, res = unwind(lib, 0x10, sp, 0, 0)
        check("%s: pc outside the modules" % writer, status == native.NOT_FOUND, lib.last_error())
        # Placed again elsewhere (the table is indexed when next asked): the
        # new addresses answer, the old ones no more.
        lib.place(module, 0x100000)
        lib.place(module, 0x200000)
        check("%s: a module placed again answers at its new addresses only" % writer,
              lib.module_at(leaf + 0x200000) == module and lib.module_at(leaf) == -1
              and lib.module_at(leaf + 0x100000) == -1)
        lib.unplace(module)
        check("%s: unplaced module answers nothing" % writer, lib.module_at(leaf) == -1
              and lib.module_at(leaf + 0x200000) == -1)

    check_ppc64(check, lib, stack, regs)

    # The JIT reader entry point: GDB's interface version 1, every callback set.
    init = lib._lib.gdb_init_reader
    init.restype = ctypes.POINTER(ctypes.c_void_p * 6)
    funcs = init().contents
    version = ctypes.cast(ctypes.pointer(funcs), ctypes.POINTER(ctypes.c_int)).contents.value
    check("JIT reader: interface version 1 and callbacks", version == 1 and all(funcs[i] for i in (2, 3, 4, 5)))
    check("JIT reader: GPL-compatible declaration", hasattr(lib._lib, "plugin_is_GPL_compatible"))



if __name__ == "__main__":
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--library", required=True)
    H.main(run, ap)

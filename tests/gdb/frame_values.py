# SPDX-License-Identifier: MIT
"""In GDB: every frame's callee-saved registers and variables, as JSON
(tests/gdb/run_callee_saved_tests.py, gdb_checks.record_alone). A register
GDB cannot give is null; a variable is its printed value, "<optimized out>"
when GDB has none."""

import json

import gdb

# The callee-saved registers SFrame has no rule for, by GDB architecture
# name, as GDB names them (sfunwind::untracked_callee_saved()). AArch64
# d8-d15 are the preserved low halves of v8-v15 (AAPCS64 section 6.1.2).
REGISTERS = {
    "i386:x86-64": ("rbx", "r12", "r13", "r14", "r15"),
    "aarch64": tuple("x%d" % n for n in range(19, 29)) + tuple("d%d" % n for n in range(8, 16)),
    "s390:64-bit": ("r6", "r7", "r8", "r9", "r10", "r12", "r13") + tuple("f%d" % n for n in range(8, 16)),
}


def _not_yet_initialized(sym, sal):
    """A local declared at or after the line the frame is at: its
    initializer has not run (`int r = f();` in the frame that called f), so
    its bytes are whatever the stack held, which differs from one process to
    the next. Left out: there is nothing to compare."""
    if sym.is_argument or sal is None or sal.symtab is None or sym.symtab is None or not sym.line:
        return False
    return sym.symtab.filename == sal.symtab.filename and sym.line >= sal.line > 0


def _variables(frame):
    out = {}
    try:
        block = frame.block()
    except RuntimeError:
        return out
    try:
        sal = frame.find_sal()
    except (gdb.error, RuntimeError):
        sal = None
    while block is not None:
        for sym in block:
            if not (sym.is_argument or sym.is_variable) or sym.name in out:
                continue
            if _not_yet_initialized(sym, sal):
                continue
            try:
                value = frame.read_var(sym, block)
                out[sym.name] = "<optimized out>" if value.is_optimized_out else str(value)
            except (gdb.error, RuntimeError, ValueError) as e:
                out[sym.name] = "<error: %s>" % e
        if block.function is not None:
            break
        block = block.superblock
    return out


_INTEGER_TYPES = (gdb.TYPE_CODE_INT, gdb.TYPE_CODE_PTR, gdb.TYPE_CODE_BOOL, gdb.TYPE_CODE_ENUM)
_LITTLE = []


def _little_endian():
    if not _LITTLE:
        _LITTLE.append("little" in gdb.execute("show endian", to_string=True))
    return _LITTLE[0]


def _bits(value):
    """A register's contents as an unsigned number: integer registers by
    value, the others (floating-point d8/f8, AArch64's vector unions) by
    their bytes (Value.bytes: GDB 14 and later)."""
    if value.type.strip_typedefs().code in _INTEGER_TYPES:
        return int(value) & 0xFFFFFFFFFFFFFFFF
    data = bytes(value.bytes)
    return int.from_bytes(data, "little" if _little_endian() else "big")


def _registers(frame):
    regs = {}
    for name in REGISTERS.get(frame.architecture().name(), ()):
        try:
            value = frame.read_register(name)
            regs[name] = None if value.is_optimized_out else _bits(value)
        except (gdb.error, ValueError, AttributeError):
            regs[name] = None
    return regs


def registers_by_frame(limit=64):
    """[{pc, registers}] of the current stop's frames, outward."""
    frames = []
    frame = gdb.newest_frame()
    while frame is not None and len(frames) < limit:
        frames.append({"pc": int(frame.pc()), "registers": _registers(frame)})
        try:
            frame = frame.older()
        except gdb.error:
            break
    return frames


def dump(path, limit=64):
    frames = []
    frame = gdb.newest_frame()
    while frame is not None and len(frames) < limit:
        frames.append({"pc": int(frame.pc()), "function": frame.name(), "registers": _registers(frame),
                       "variables": _variables(frame)})
        try:
            frame = frame.older()
        except gdb.error:
            break
    with open(path, "w") as f:
        json.dump(frames, f)

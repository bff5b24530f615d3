# SPDX-License-Identifier: MIT
"""In GDB: every frame's callee-saved registers and variables, as JSON
(tests/gdb/run_callee_saved_tests.py). A register GDB cannot give is null;
a variable is its printed value, "<optimized out>" when GDB has none."""

import json

import gdb

REGISTERS = ("rbx", "r12", "r13", "r14", "r15")


def _variables(frame):
    out = {}
    try:
        block = frame.block()
    except RuntimeError:
        return out
    while block is not None:
        for sym in block:
            if not (sym.is_argument or sym.is_variable) or sym.name in out:
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


def _registers(frame):
    regs = {}
    for name in REGISTERS:
        try:
            value = frame.read_register(name)
            regs[name] = None if value.is_optimized_out else int(value) & 0xFFFFFFFFFFFFFFFF
        except (gdb.error, ValueError):
            regs[name] = None
    return regs


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

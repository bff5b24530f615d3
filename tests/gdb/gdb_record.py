# SPDX-License-Identifier: MIT
"""Runs inside GDB for run_noeh_tests.py: takes a program (or a core file)
to its stop, records the backtrace as GDB shows it, and optionally probes
upper frames (info frame, up, a variable, finish) and writes a core file.
Needs nothing from sfunwind: the driver decides whether sfunwind is loaded.

Configuration: CHECK (a dict) set by the driver's session before main()."""

import re

import gdb

import gdb_harness

CHECK = {}
_FRAME_AT = re.compile(r"frame at (0x[0-9a-fA-F]+)")
_FRAME_ID_STACK = re.compile(r"stack=(0x[0-9a-fA-F]+)")
_SP = {"aarch64": "sp", "s390:64-bit": "r15"}
_FP = {"aarch64": "x29", "s390:64-bit": "r11"}


def _reg(frame, name):
    try:
        v = frame.read_register(name)
        return None if v.is_optimized_out else int(v) & 0xFFFFFFFFFFFFFFFF
    except (gdb.error, ValueError):
        return None


def _frame_id_cfa(frame):
    """The frame id's stack address (`maint print frame-id`, GDB 12+)."""
    try:
        frame.select()
        m = _FRAME_ID_STACK.search(gdb.execute("maint print frame-id", to_string=True))
    except gdb.error:
        return None
    return int(m.group(1), 16) if m else None


def frames(limit):
    out = []
    try:
        frame = gdb.newest_frame()
    except gdb.error as e:
        return out, str(e)
    arch = frame.architecture().name()
    sp_name, fp_name = _SP.get(arch, "rsp"), _FP.get(arch, "rbp")
    stop = ""
    while frame is not None and len(out) < limit:
        # Past 1024 frames neither the CFA nor the FP: both cost GDB time in
        # proportion to the level (see sfunwind_gdb.compare.walk).
        exact = len(out) < 1024
        entry = {"level": frame.level(), "pc": frame.pc(), "function": frame.name(),
                 "sp": _reg(frame, sp_name), "fp": _reg(frame, fp_name) if exact else None,
                 "cfa": _frame_id_cfa(frame) if exact else None}
        if CHECK.get("rows") and len(out) < 64:
            # The SFrame row used to unwind this frame (sfunwind loaded).
            pc = entry["pc"] if entry["level"] == 0 else entry["pc"] - 1
            try:
                entry["row"] = gdb.execute("sframe row 0x%x" % pc, to_string=True).strip()
            except gdb.error as e:
                entry["row_error"] = str(e)
        out.append(entry)
        try:
            older = frame.older()
        except gdb.error as e:
            stop = str(e)
            break
        if older is None:
            stop = gdb.frame_stop_reason_string(frame.unwind_stop_reason())
        frame = older
    gdb.newest_frame().select()
    # Deep frames: the CFA from the caller's SP (CFA = caller's SP + 160 on
    # s390x, = caller's SP elsewhere).
    offset = 160 if arch == "s390:64-bit" else 0
    for i in range(len(out) - 1):
        if out[i]["cfa"] is None and out[i + 1]["sp"] is not None:
            out[i]["cfa"] = out[i + 1]["sp"] + offset
    return out, stop


def probe_upper(level):
    """`frame LEVEL`, `info frame`, `up`: what GDB says about upper frames."""
    result = {}
    gdb.execute("frame %d" % level, to_string=True)
    text = gdb.execute("info frame", to_string=True)
    m = _FRAME_AT.search(text)
    result["info_frame_cfa"] = int(m.group(1), 16) if m else None
    result["info_frame_caller"] = "caller of frame at" in text
    gdb.execute("up", to_string=True)
    f = gdb.selected_frame()
    result["up_level"] = f.level()
    result["up_function"] = f.name()
    result["up_pc"] = f.pc()
    return result


def probe_variable(function, expression):
    """Selects the first frame of `function` and evaluates `expression`."""
    frame = gdb.newest_frame()
    while frame is not None and frame.name() != function:
        frame = frame.older()
    if frame is None:
        return {"error": "no frame of %s" % function}
    frame.select()
    try:
        return {"level": frame.level(), "value": str(gdb.parse_and_eval(expression))}
    except gdb.error as e:
        return {"level": frame.level(), "error": str(e)}


def finish_from(level):
    """`finish` out of frame LEVEL: where the program stops (frame 0)."""
    gdb.execute("frame %d" % level, to_string=True)
    try:
        gdb.execute("finish", to_string=True)
    except gdb.error as e:
        return {"error": str(e)}
    f = gdb.newest_frame()
    arch = f.architecture().name()
    return {"pc": f.pc(), "function": f.name(), "sp": _reg(f, _SP.get(arch, "rsp"))}


def record(out):
    if CHECK.get("run") is not None:
        gdb.execute("run %s" % CHECK["run"], to_string=True)
    out["frames"], out["stop"] = frames(CHECK.get("limit", 64))
    if CHECK.get("core"):
        gdb.execute("gcore %s" % CHECK["core"], to_string=True)
    if CHECK.get("variable"):
        out["variable"] = probe_variable(*CHECK["variable"])
    if CHECK.get("upper") is not None:
        out["upper"] = probe_upper(CHECK["upper"])
    if CHECK.get("finish") is not None:
        out["finish"] = finish_from(CHECK["finish"])


def main():
    gdb_harness.inside(CHECK, record, {})

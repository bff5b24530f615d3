# SPDX-License-Identifier: MIT
"""Checks that run inside GDB (run by run_gdb_tests.py and run_qemu_tests.py
through gdb_harness.Gdb.run_module).

Each scenario drives one fixture program to one or many stops and, at each,
walks the stack twice: with sfunwind (SFrame) and with GDB's own DWARF CFI
unwinder (sfunwind_gdb.compare.walk_both), then records both walks. The
driver decides what passes; this file only observes and writes JSON.

Configuration: the global CHECK (a dict) set by the driver's session:
scenario, args, setup, output path, options."""

import gdb

import frame_values
import gdb_harness
import sfunwind_gdb
from sfunwind_gdb import compare
from sfunwind_gdb import modules

CHECK = {}
RESULTS = {"stops": [], "notes": [], "error": None, "listings": None}


def compare_listings():
    """The two section listings sfunwind places modules from
    (sfunwind_gdb.modules.section_addresses): for every objfile `info files`
    lists with a placing section, `maint info sections` must give the same
    addresses. Recorded at the first stop: {"compared": objfiles, "differ":
    [what differs]}."""
    maint = modules.parse_maint_sections(gdb.execute(modules.MAINT_SECTIONS, to_string=True)) or {}
    files = modules.parse_info_files(gdb.execute("info files", to_string=True))
    compared = 0
    differ = []
    for where, want in files.items():
        compared += 1
        if maint.get(where) != want:
            differ.append("%s: `info files` %s, `maint info sections` %s" % (where, want, maint.get(where)))
    return {"compared": compared, "differ": differ}


def _note_listings():
    if RESULTS["listings"] is None:
        RESULTS["listings"] = compare_listings()


def _session():
    return sfunwind_gdb.session()


def _frames_json(records):
    return [r.as_dict() for r in records]


def record_stop(label, limit=64):
    """Walks the current stop both ways and records it."""
    s = _session()
    s.rescan()
    _note_listings()
    (sf, sstop), (cfi, cstop) = compare.walk_both(s, limit)
    entry = _entry(s, label, sf, cfi)
    entry.update(sframe_stop=sstop, cfi_stop=cstop)
    RESULTS["stops"].append(entry)
    return entry


def _entry(s, label, sf, cfi):
    """A stop's record: both walks, their first difference, its explanation
    and the SFrame rows behind it: frame d's own (its CFA) and its
    callee's (its pc, sp and fp)."""
    index = compare.first_divergence(s.lib, sf, cfi)
    rows = []
    if index is not None:
        for i in (index - 1, index):
            if 0 <= i < len(sf):
                rows.append(_row_info(s, sf[i]))
    return {
        "label": label,
        "rows": rows,
        "sframe": _frames_json(sf),
        "cfi": _frames_json(cfi),
        "divergence": index,
        "explanation": compare.explain(s, sf, cfi, index) if index is not None else [],
    }


def _row_info(s, frame):
    lookup = frame.pc if frame.level == 0 else frame.pc - 1
    try:
        row = s.lib.lookup(lookup)
        info = s.lib.module_info(row.module)
        return {"level": frame.level, "pc": lookup, "rules": s.lib.describe(row), "flags": row.flags,
                "version": info.version, "fde": row.fde_index, "fre": row.fre_index}
    except Exception as e:  # noqa: BLE001 -- recorded as is
        return {"level": frame.level, "pc": lookup, "error": str(e)}


def set_dwarf_unwinders(on):
    """GDB's DWARF unwinders on or off: GDB 13 has `maint set dwarf
    unwinders`, GDB 16 and later `maint frame-unwinder enable|disable`."""
    try:
        gdb.execute("maint set dwarf unwinders %s" % ("on" if on else "off"), to_string=True)
        return
    except gdb.error:
        pass
    gdb.execute("maint frame-unwinder %s -class DEBUGINFO" % ("enable" if on else "disable"), to_string=True)


def record_alone(label, limit=64):
    """The current stop walked four ways: GDB's CFI unwinders (the
    reference), then with GDB's DWARF unwinders off: plain GDB (its
    heuristics), sfunwind's Python path and its native path. The binary
    keeps its CFI, so the stop and addresses are the same in every walk."""
    s = _session()
    s.rescan()
    _note_listings()
    saved = s.path
    walks = {}
    # Each walk's callee-saved registers, frame by frame (frame_values);
    # "sframe_off": the Python path with `sframe callee-saved off`.
    registers = {}
    try:
        s.set_path("off")
        walks["cfi"] = compare.walk(s.lib, limit)
        registers["cfi"] = frame_values.registers_by_frame(limit)
        set_dwarf_unwinders(False)
        for path, name in (("off", "plain"), ("python", "sframe"), ("native", "native")):
            s.set_path(path)
            walks[name] = compare.walk(s.lib, limit)
            registers[name] = frame_values.registers_by_frame(limit)
        s.set_path("python")
        gdb.execute("sframe callee-saved off", to_string=True)
        registers["sframe_off"] = frame_values.registers_by_frame(limit)
    finally:
        gdb.execute("sframe callee-saved on", to_string=True)
        set_dwarf_unwinders(True)
        s.set_path(saved)
    entry = _entry(s, label, walks["sframe"][0], walks["cfi"][0])
    entry.update(native=_frames_json(walks["native"][0]), plain=_frames_json(walks["plain"][0]),
                 sframe_stop=walks["sframe"][1], cfi_stop=walks["cfi"][1], registers=registers)
    RESULTS["stops"].append(entry)
    return entry


def _run(args):
    gdb.execute("run %s" % args, to_string=True)


def _pc():
    return gdb.newest_frame().pc()


def sweep(label, start_function, max_steps, limit=32, stop_function=None):
    """Stops at the first instruction of start_function, then steps one
    instruction at a time until that call returns (or max_steps), recording
    every stop: prologues, bodies, calls, epilogues of everything it runs."""
    gdb.execute("tbreak *%s" % start_function, to_string=True)
    _run(CHECK.get("args", "none"))
    frame = gdb.newest_frame()
    caller_sp = int(frame.read_register(_sp_name())) + _ret_slot()
    steps = 0
    while steps < max_steps:
        record_stop("%s+%d" % (label, steps), limit)
        try:
            gdb.execute("stepi", to_string=True)
        except gdb.error as e:
            RESULTS["notes"].append("%s: stepi stopped: %s" % (label, e))
            break
        steps += 1
        if not gdb.selected_inferior().pid:
            break
        f = gdb.newest_frame()
        sp = int(f.read_register(_sp_name()))
        if sp >= caller_sp and f.name() != start_function:
            record_stop("%s+%d (returned)" % (label, steps), limit)
            break
        if stop_function is not None and f.name() == stop_function:
            break
    RESULTS["notes"].append("%s: %d instructions stepped" % (label, steps))


def _sp_name():
    arch = gdb.newest_frame().architecture().name()
    return {"aarch64": "sp", "s390:64-bit": "r15"}.get(arch, "rsp")


def _ret_slot():
    """Bytes the call pushed: on x86-64 the caller's SP is 8 above the
    callee's at entry; AArch64 and s390x push nothing."""
    arch = gdb.newest_frame().architecture().name()
    return 8 if arch == "i386:x86-64" else 0


# -- scenarios ------------------------------------------------------------------


def scenario_stop():
    """The program's own stop (trap, abort, raise, segv: CHECK['args'])."""
    _run(CHECK.get("args", ""))
    record_stop("stop %s" % CHECK.get("args", ""), CHECK.get("limit", 64))


def scenario_breaks():
    """Breakpoints at function entries (frame 0 at an FDE's first byte) and
    on the instruction after the prologue, with the program's `none` mode."""
    # Symbolic, so that GDB moves them when a PIE is relocated at `run`.
    for name in CHECK["functions"]:
        gdb.execute("break *%s" % name, to_string=True)
    for spec in CHECK.get("linespecs", []):
        gdb.execute("break %s" % spec, to_string=True)
    _run(CHECK.get("args", "none"))
    seen = 0
    while gdb.selected_inferior().pid and seen < CHECK.get("max_stops", 40):
        f = gdb.newest_frame()
        record_stop("break %s" % (f.name() or hex(f.pc())), CHECK.get("limit", 64))
        seen += 1
        try:
            gdb.execute("continue", to_string=True)
        except gdb.error:
            break


def scenario_sweep():
    for spec in CHECK["sweeps"]:
        sweep(spec["label"], spec["function"], spec.get("max_steps", 400), CHECK.get("limit", 32))
        if gdb.selected_inferior().pid:
            gdb.execute("kill", to_string=True)


def scenario_remote():
    """A program under a gdbstub (qemu-user): connect, run to its stop."""
    gdb.execute("target remote %s" % CHECK["remote"], to_string=True)
    gdb.execute("continue", to_string=True)
    record_alone("remote stop %s" % CHECK.get("args", ""), CHECK.get("limit", 64))


SCENARIOS = {
    "remote": scenario_remote,
    "stop": scenario_stop,
    "breaks": scenario_breaks,
    "sweep": scenario_sweep,
}


def main():
    def counters(results):
        c = _session().engine.counters
        results["counters"] = {"frames": c.frames, "failures": c.failures, "last_failure": c.last_failure}

    gdb_harness.inside(CHECK, lambda results: SCENARIOS[CHECK["scenario"]](), RESULTS, counters)

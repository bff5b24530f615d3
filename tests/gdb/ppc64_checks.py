# SPDX-License-Identifier: MIT
"""Runs inside gdb-multiarch for run_ppc64_tests.py, attached to
`qemu-ppc64[le] -g PORT` running a traceback-table fixture
(tests/fixtures/ppc64): takes the program to its stops and walks each one
twice:

  - "cfi": GDB's own unwinders with its DWARF unwinders on (the reference:
    the fixtures keep .eh_frame), sfunwind off;
  - "tb": GDB's DWARF unwinders off, sfunwind's Python path on: frames in
    the fixture are unwound from its traceback tables.

Around the "tb" walk the Python path's counters are read, so the driver
can tell how many frames sfunwind unwound (rather than GDB's rs6000
prologue analyser, which would claim any frame sfunwind declined). At the
SIGSEGV stop the walk of GDB without DWARF and without sfunwind ("plain")
is recorded too, for the report only.

Modes (CHECK["mode"]): "segv" continues to the SIGSEGV in leaf's body;
"step" breaks at main's first instruction and records every stop of stepi
until main has returned. Nothing is judged here: the driver compares.

Configuration: CHECK (a dict) set before main(): binary, remote, mode,
output, limit, max_steps."""

import gdb

import gdb_harness
import sfunwind_gdb
from sfunwind_gdb import compare
from gdb_checks import set_dwarf_unwinders

CHECK = {}


def _session():
    return sfunwind_gdb.session()


def _counters():
    c = _session().engine.counters
    return {"frames": c.frames, "outermost": c.outermost, "failures": c.failures}


def _walk(path, dwarf):
    """One walk of the current stop: (frames as dicts, stop reason,
    counter deltas of the Python path)."""
    s = _session()
    set_dwarf_unwinders(dwarf)
    s.set_path(path)  # also drops GDB's frame cache
    before = _counters()
    frames, stop = compare.walk(s.lib, CHECK.get("limit", 64))
    after = _counters()
    delta = {k: after[k] - before[k] for k in after}
    if delta["failures"]:
        delta["last_failure"] = s.engine.counters.last_failure
    return [f.as_dict() for f in frames], stop, delta


def record(label, plain=False):
    entry = {"label": label}
    try:
        entry["tb"], entry["tb_stop"], entry["tb_counters"] = _walk("python", False)
        if plain:
            entry["plain"], entry["plain_stop"], _ = _walk("off", False)
        entry["cfi"], entry["cfi_stop"], _ = _walk("off", True)
    finally:
        set_dwarf_unwinders(True)
    return entry


def _sframe(command):
    try:
        return {"command": command, "output": gdb.execute(command, to_string=True)}
    except gdb.error as e:
        return {"command": command, "error": str(e)}


def _commands(results):
    """What `sframe status` and `sframe row` print at the SIGSEGV stop: the
    leaf's row at its pc, its caller's at the return address - 1."""
    frame = gdb.newest_frame()
    results["leaf_symbol"] = gdb.execute("info symbol $pc", to_string=True).strip()
    caller = frame.older()
    out = [_sframe("sframe status"), _sframe("sframe row $pc")]
    if caller is not None:
        results["caller_symbol"] = gdb.execute("info symbol 0x%x" % (caller.pc() - 1), to_string=True).strip()
        out.append(_sframe("sframe row 0x%x" % (caller.pc() - 1)))
    out.append(_sframe("sframe enable native"))
    results["commands"] = out


def _main_returned(frame):
    names = []
    while frame is not None:
        names.append(frame.name())
        frame = frame.older()
    return "main" not in names


def run_segv(results):
    gdb.execute("continue", to_string=True)
    s = _session()
    s.set_path("python")
    _commands(results)
    results["stops"].append(record("segv", plain=True))


def run_step(results):
    main = int(gdb.parse_and_eval("(long)&main")) & 0xFFFFFFFFFFFFFFFF
    gdb.execute("break *0x%x" % main, to_string=True)
    gdb.execute("continue", to_string=True)
    gdb.execute("delete", to_string=True)
    for i in range(CHECK.get("max_steps", 4000)):
        results["stops"].append(record("stepi %d" % i))
        # Stepping is judged with GDB's own unwinders only: `stepi` does
        # not depend on which unwinder the test is checking.
        _session().set_path("off")
        if i > 0 and _main_returned(gdb.newest_frame()):
            results["notes"].append("main returned after %d instructions" % i)
            return
        try:
            gdb.execute("stepi", to_string=True)
        except gdb.error as e:
            results["notes"].append("stepi stopped: %s" % e)
            return
    results["notes"].append("step limit reached")


def _run(results):
    # The whole stack, through __libc_start_main to the PC 0 that
    # _start left in the LR save slot.
    gdb.execute("set backtrace past-main on")
    gdb.execute("set backtrace past-entry on")
    gdb.execute("file %s" % CHECK["binary"], to_string=True)
    gdb.execute("target remote %s" % CHECK["remote"], to_string=True)
    _session().rescan()
    {"segv": run_segv, "step": run_step}[CHECK["mode"]](results)


def main():
    gdb_harness.inside(CHECK, _run, {"stops": [], "notes": []},
                       lambda results: results.update(counters=_counters()))

#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""Upper frames keep their registers: the callee-saved registers sfunwind
recovers from the functions' code (sfunwind/callee_saved/), in GDB, against
the CFI build of the same program at the same stop.

For each x86-64 `-noeh` fixture that runs here (and a -noeh copy, made
here, of each -g fixture, whose variables GDB can print), at its stop:
  A  the CFI build under plain GDB: the reference;
  C  the -noeh copy with sfunwind (Python path), callee-saved on;
  O  the same with `sframe callee-saved off`;
  N  the same on the native path (JIT reader).
Checks, in every upper frame both walks have at the same pc: rbx and r12-r15
in C and N are either <not saved> or the value A has (never another one);
every variable C prints (not optimized out) prints as in A; locals declared
at or after their frame's line are left out (tests/gdb/frame_values.py:
their initializer has not run). Counted: the
registers recovered, and the variables shown as optimized out in A, C and O.
C must show no more optimized-out variables and no fewer registers than O,
and recover registers in every -g program's upper frames.

GDB with CFI reads registers the CFI does not mention as unchanged, the
caller-saved ones (rdi, ...) included; a variable it prints from one of
those is counted, not required: sfunwind gives no value it cannot prove.

usage: run_callee_saved_tests.py --gdb GDB --loader BUILD/gdb-python/sfunwind.py
                                 --runs host|chroot [--writer W ...]
Exit status: 0 when every check passed."""

import json
import os
import shutil
import subprocess
import tempfile

import gdb_harness as H

FIXTURES = H.FIXTURES
OPTIMIZED_OUT = "<optimized out>"


def values(g, program, sfunwind, extra=(), set_args="trap"):
    """frame_values.dump() at the program's stop, or {"error": why}."""
    with tempfile.TemporaryDirectory() as tmp:
        out = os.path.join(tmp, "frames.json")
        commands = list(extra) + ["handle SIGUSR1 nostop noprint pass", "run",
                                  "python import sys; sys.path.insert(0, %r)" % H.HERE,
                                  "python import frame_values; frame_values.dump(%r)" % out, "kill"]
        proc, error = g.run(commands, [program], sfunwind, set_args)
        if error is not None:
            return {"error": error}
        if not os.path.exists(out):
            return {"error": "GDB wrote no frames (exit %d): %s" % (proc.returncode, proc.stderr[-1500:])}
        with open(out) as f:
            return {"frames": json.load(f)}


def shown(value):
    return value is not None and OPTIMIZED_OUT not in value and not value.startswith("<error")


def compare(ref, got):
    """(wrong registers, recovered, wrong variables, optimized-out count of
    got, of ref) over the upper frames both walks have at the same pc."""
    wrong_regs, recovered, wrong_vars = [], 0, []
    out_got = out_ref = 0
    for i in range(1, min(len(ref), len(got))):
        a, c = ref[i], got[i]
        if a["pc"] != c["pc"]:
            break
        for reg, v in c["registers"].items():
            if v is None:
                continue
            recovered += 1
            # A value the register still has in frame 0 is run-dependent (a
            # pid, an address in the environment): the CFI build's walk must
            # then also have its own frame 0's value there.
            want = a["registers"].get(reg)
            if v == got[0]["registers"].get(reg) and want == ref[0]["registers"].get(reg):
                continue
            if v != want:
                wrong_regs.append("#%d %s %s: 0x%x, CFI build %s" % (i, c["function"], reg, v,
                                                                     a["registers"].get(reg)))
        for name, v in c["variables"].items():
            want = a["variables"].get(name)
            out_got += not shown(v)
            out_ref += not shown(want)
            if shown(v) and v != want:
                wrong_vars.append("#%d %s %s = %s, CFI build %s" % (i, c["function"], name, v, want))
    return wrong_regs, recovered, wrong_vars, out_got, out_ref


def stage(tmp, name, cfi, noeh):
    """Copies of both builds at paths of the same length (their stacks then
    line up, and addresses compare exactly)."""
    cdir, ndir = os.path.join(tmp, "c"), os.path.join(tmp, "n")
    for d in (cdir, ndir):
        shutil.rmtree(d, ignore_errors=True)
        os.makedirs(d)
    cprog, nprog = os.path.join(cdir, name), os.path.join(ndir, name)
    shutil.copy2(cfi, cprog)
    if noeh is None:
        subprocess.run(["objcopy", "--remove-section", ".eh_frame", "--remove-section", ".eh_frame_hdr",
                        "--remove-section", ".debug_frame", cfi, nprog], check=True, capture_output=True)
    else:
        shutil.copy2(noeh, nprog)
    return cprog, nprog


def test_program(g, res, tmp, label, cfi, noeh, debug_info):
    cprog, nprog = stage(tmp, os.path.basename(cfi), cfi, noeh)
    a = values(g, cprog, None)
    if a.get("error") or len(a.get("frames", [])) < 2:
        res.check("%s: CFI reference" % label, False, a.get("error") or "fewer than 2 frames")
        return
    ref = a["frames"]
    totals = {}
    for config, sfunwind, extra in (("python", "python", ()),
                                    ("off", "python", ("sframe callee-saved off",)),
                                    ("native", "native", ())):
        c = values(g, nprog, sfunwind, extra)
        if c.get("error"):
            res.check("%s (%s): GDB with sfunwind" % (label, config), False, c["error"])
            return
        wrong_regs, recovered, wrong_vars, out_got, out_ref = compare(ref, c["frames"])
        totals[config] = (recovered, out_got, out_ref)
        res.count("registers recovered (%s)" % config, recovered)
        if config == "off":
            # Registers GDB's own unwinders restore (the signal trampoline's
            # frame reads them from the signal context) are still there.
            continue
        res.check("%s (%s): upper frames' rbx, r12-r15 are the CFI build's or <not saved>" % (label, config),
                  not wrong_regs, "; ".join(wrong_regs[:5]) or "%d recovered" % recovered)
        res.check("%s (%s): every variable shown prints as in the CFI build" % (label, config),
                  not wrong_vars, "; ".join(wrong_vars[:5]) or "%d optimized out, CFI build %d" % (
                      out_got, out_ref))
    on, off = totals["python"], totals["off"]
    res.count("variables optimized out: CFI build", on[2])
    res.count("variables optimized out: sfunwind, callee-saved on", on[1])
    res.count("variables optimized out: sfunwind, callee-saved off", off[1])
    print("     %s: optimized out: CFI build %d, sfunwind %d (off: %d); registers recovered %d" % (
        label, on[2], on[1], off[1], on[0]))
    res.check("%s: no more optimized-out variables with callee-saved on than off" % label, on[1] <= off[1],
              "%d vs %d" % (on[1], off[1]))
    res.check("%s: no fewer registers recovered with callee-saved on than off" % label, on[0] >= off[0],
              "%d vs %d" % (on[0], off[0]))
    if debug_info:
        res.check("%s: registers recovered in upper frames" % label, on[0] > 0, "%d" % on[0])


def run(args, res):
    g = H.Gdb(args.gdb, args.loader, args.timeout)
    with tempfile.TemporaryDirectory() as tmp:
        for entry in H.select(args):
            path = entry["path"]
            note = entry["notes"]
            if path.endswith("-noeh") and note.startswith("copy of "):
                original = "bin/" + note[len("copy of "):].split(";")[0].strip()
                test_program(g, res, tmp, path, H.fixture(original), H.fixture(path), False)
            elif path.endswith("-g") and "cxx" not in path:
                test_program(g, res, tmp, path + " (-noeh copy made here)", H.fixture(path), None, True)


if __name__ == "__main__":
    H.main(run, H.parser(__doc__, fixtures=True))

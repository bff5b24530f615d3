#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""PowerPC64 programs without SFrame, unwound in GDB from their traceback
tables: big-endian ELFv1 (qemu-ppc64) and little-endian ELFv2
(qemu-ppc64le) fixtures (tests/fixtures/ppc64), under qemu-user's gdbstub.

At the SIGSEGV in leaf's body and at every `stepi` stop from main's first
instruction until main has returned, gdb-multiarch walks the stack with its
DWARF CFI unwinders (the reference) and with its DWARF unwinders off and
sfunwind's Python path on (ppc64_checks.py). A stop passes when:
  - both walks have the same frames, each with the same pc, CFA (the frame
    id's stack address), sp (r1) and r31;
  - sfunwind unwound the frames, not GDB's rs6000 prologue analyser (which
    claims whatever sfunwind declines): the Python path's counters show
    one unwind per frame of the walk in the fixture, the last of which may
    end the stack (the zero return address __libc_start_main saves), and no
    failure.
At the SIGSEGV stop also: frame 0 is leaf; `sframe status` lists the
fixture as "ppc64 traceback tables" with as many functions as `sfunwind
tbtab` finds tables by symbol (with --sfunwind); `sframe row` gives leaf's
function and a frameless row at the PC, its caller's LR save slot at the
return address; `sframe enable native` is refused (GDB's JIT reader
interface cannot set a PowerPC PC, see gdb-python/native/jit_reader.cpp).

usage: run_ppc64_tests.py --gdb gdb-multiarch --loader LOADER [--sfunwind CLI]
                          [--quick]
Exit status 1 if any stop or check failed, 0 otherwise."""

import json
import os
import re
import shutil
import subprocess

import gdb_harness as H
import gdbstub

FIXTURES = H.fixture("ppc64")
FIELDS = ("pc", "cfa", "sp", "fp")
DEPTH = "2"  # recurse x 3 below with_fprs: a 12-frame stack at the SIGSEGV


def fixtures():
    with open(os.path.join(FIXTURES, "manifest.tsv")) as f:
        for line in f:
            if line.startswith("#") or not line.strip():
                continue
            c = line.rstrip("\n").split("\t")
            yield c[0], c[1], c[4]  # path, arch, qemu


def run_gdb(g, binary, qemu, mode):
    arg = "segv" if mode == "segv" else "none"
    try:
        with gdbstub.started([qemu], [binary, arg, DEPTH]) as port:
            check = {"binary": binary, "remote": "127.0.0.1:%d" % port, "mode": mode, "limit": 64}
            return g.run_module("ppc64_checks", check)
    except gdbstub.StubError as e:
        return None, str(e)


def frame_text(f):
    return "%s pc 0x%x cfa %s sp %s r31 %s" % (
        f["function"] or "??", f["pc"], *("-" if f[k] is None else "0x%x" % f[k] for k in ("cfa", "sp", "fp")))


def judge_stop(stop):
    """(frames compared, frames equal, frames sfunwind unwound, problem or None)."""
    tb, cfi, counters = stop["tb"], stop["cfi"], stop["tb_counters"]
    equal = 0
    problem = None
    for i in range(max(len(tb), len(cfi))):
        if i >= len(tb) or i >= len(cfi):
            problem = "the %s walk has %d frames, the %s walk %d" % ("traceback-table", len(tb), "CFI", len(cfi))
            break
        a, b = tb[i], cfi[i]
        diff = [k for k in FIELDS if a[k] != b[k]]
        if diff:
            problem = "frame #%d differs in %s: traceback tables %s; CFI %s" % (
                i, ", ".join(diff), frame_text(a), frame_text(b))
            break
        equal += 1
    # Frames whose pc (or pc - 1) is in the fixture: each was offered to
    # sfunwind once; each was unwound, or (the last) ended the stack.
    offered = sum(1 for f in tb if f["sframe"])
    if problem is None and counters["failures"]:
        problem = "sfunwind failed on %d frames: %s" % (counters["failures"], counters.get("last_failure", ""))
    if problem is None and counters["frames"] + counters["outermost"] != offered:
        problem = "sfunwind unwound %d frames and ended the stack at %d, of %d frames in the fixture" % (
            counters["frames"], counters["outermost"], offered)
    if problem is None and (counters["frames"] == 0 or counters["outermost"] > 1):
        problem = "sfunwind unwound %d frames and ended the stack %d times" % (
            counters["frames"], counters["outermost"])
    return min(len(tb), len(cfi)), equal, counters["frames"], problem


def tbtab_tables(cli, binary):
    """How many traceback tables `sfunwind tbtab` finds by symbol."""
    out = subprocess.run([cli, "tbtab", binary], capture_output=True, text=True).stdout
    m = re.search(r"^(\d+) tables .*found by symbol", out, re.M)
    return int(m.group(1)) if m else None


def check_commands(result, arch, path, cli, binary):
    """The `sframe` commands at the SIGSEGV stop; a list of problems."""
    problems = []
    out = {c["command"]: c for c in result.get("commands", [])}
    status = out.get("sframe status", {}).get("output", "")
    m = re.search(r"%s: ppc64 traceback tables \(%s\), (\d+) functions, from file; bias 0x0, \[0x[0-9a-f]+, "
                  r"0x[0-9a-f]+\)" % (re.escape(binary), re.escape(arch)), status)
    if not m:
        problems.append("sframe status does not list the fixture's traceback tables:\n%s" % status)
    elif cli:
        tables = tbtab_tables(cli, binary)
        if tables is None or tables != int(m.group(1)):
            problems.append("sframe status counts %s functions, sfunwind tbtab %s tables" % (m.group(1), tables))
    # leaf's row at its pc: the function that `info symbol` names, whose
    # start is pc - the offset it prints; frameless at -O2 (no back chain,
    # RA still in LR), a frame of its own at -O0.
    leaf = re.match(r"leaf \+ (\d+) in section \.text", result.get("leaf_symbol", ""))
    row = out.get("sframe row $pc", {}).get("output", "")
    pc = re.match(r"0x([0-9a-f]+) in ", row)
    if not leaf or not pc:
        problems.append("no leaf symbol or row at the SIGSEGV: %r / %r" % (result.get("leaf_symbol"), row))
    else:
        start = int(pc.group(1), 16) - int(leaf.group(1))
        rules = r"CFA=r1\+0 RA=same FP=same" if "-O2-" in path else r"CFA=\[r1\+0\] RA=same"
        if not re.search(r"ppc64 traceback tables: function 0x%x, \d+ bytes\n  run \d+: \[0x[0-9a-f]+, "
                         r"0x[0-9a-f]+\)\n  %s" % (start, rules), row):
            problems.append("sframe row $pc: expected function 0x%x and %s:\n%s" % (start, rules, row))
    caller = [c for k, c in out.items() if k.startswith("sframe row 0x")]
    if not caller or not re.search(r"CFA=\[r1\+0\] RA=\[CFA\+16\]", caller[0].get("output", "")) \
            or "recurse" not in result.get("caller_symbol", ""):
        problems.append("sframe row at recurse's return address - 1: %s (%s)" % (
            caller[0] if caller else None, result.get("caller_symbol")))
    native = out.get("sframe enable native", {})
    if "no native path on powerpc:common64" not in native.get("error", ""):
        problems.append("sframe enable native was not refused: %s" % native)
    return problems


def run(args, res):
    if shutil.which(args.gdb) is None:
        res.check("%s found" % args.gdb, False)
        return
    g = H.Gdb(args.gdb, args.loader, args.timeout)
    for path, arch, qemu in fixtures():
        if args.quick and "-O2-part-" not in path:
            continue
        binary = os.path.join(FIXTURES, path)
        for mode in ("segv", "step"):
            name = "%-8s %-5s %s" % (arch, mode, os.path.basename(path))
            if shutil.which(qemu) is None:
                res.check(name, False, "%s not found" % qemu)
                continue
            result, error = run_gdb(g, binary, qemu, mode)
            if error is None and not result["stops"]:
                error = "no stop recorded"
            if error is None and mode == "step" and "main returned" not in " ".join(result["notes"]):
                error = "main did not return: %s" % result["notes"]
            if error is not None:
                res.check(name, False, error)
                continue
            if args.save:
                os.makedirs(args.save, exist_ok=True)
                with open(os.path.join(args.save, "%s-%s-%s.json" % (arch, os.path.basename(path), mode)), "w") as f:
                    json.dump(result, f)
            problems = []
            frames = equal = ours = leaf = 0
            for stop in result["stops"]:
                n, e, o, problem = judge_stop(stop)
                frames += n
                equal += e
                ours += o
                leaf += bool(stop["tb"]) and stop["tb"][0]["function"] == "leaf"
                if problem:
                    problems.append("%s: %s" % (stop["label"], problem))
            if mode == "segv":
                stop = result["stops"][0]
                if [f["function"] for f in stop["cfi"][:2]] != ["leaf", "recurse"]:
                    problems.append("the SIGSEGV is not in leaf called by recurse: %s" % (
                        [f["function"] for f in stop["cfi"]]))
                problems += check_commands(result, arch, path, args.sfunwind, binary)
                plain = stop.get("plain", [])
                plain_note = "; GDB without DWARF or sfunwind: %s" % (
                    "equal" if [[f[k] for k in FIELDS] for f in plain] == [[f[k] for k in FIELDS] for f in stop["cfi"]]
                    else "%d frames, different" % len(plain))
            else:
                plain_note = ""
            stops = len(result["stops"])
            for key, n in (("stops", stops), ("frames", frames), ("equal", equal), ("ours", ours)):
                res.count(key, n)
            res.check(name, not problems, "%d stops (%d in leaf), %d frames compared, %d equal (pc, CFA, sp, r31), "
                      "%d unwound by sfunwind%s" % (stops, leaf, frames, equal, ours, plain_note))
            for p in problems[:10]:
                print("     %s" % p)
            if len(problems) > 10:
                print("     ... %d more" % (len(problems) - 10))
    t = res.stats
    print("%d runs, %d failed; %d stops, %d frames compared, %d equal, %d unwound by sfunwind" % (
        res.checks, res.failed, t.get("stops", 0), t.get("frames", 0), t.get("equal", 0), t.get("ours", 0)))


if __name__ == "__main__":
    ap = H.parser(__doc__, gdb="gdb-multiarch", runs=False, timeout=1200)
    ap.add_argument("--sfunwind", help="the sfunwind CLI, to check the function count of `sframe status`")
    ap.add_argument("--quick", action="store_true", help="only the -O2-part fixtures")
    ap.add_argument("--save", metavar="DIR", help="also write each run's walks to DIR/<arch>-<fixture>-<mode>.json")
    H.main(run, ap)

#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""Live tests of sfunwind's GDB unwinder against GDB's own DWARF CFI unwind.

For each fixture program that runs here (tests/fixtures/manifest.tsv) and
each scenario (the program's own stop, abort(), a deep recursion,
breakpoints at function entries, every instruction of a call chain by
stepi, a signal handler, PLT calls into a shared library), GDB walks every
stop twice, with SFrame and with CFI (gdb_checks.py); this script compares
the walks frame by frame (pc, CFA, sp, fp).

A frame counts as "from SFrame" when the frame below it (its callee) is in
a module with SFrame: its registers, and the callee's CFA, were then
computed from SFrame in the SFrame walk. Frames in objfiles without SFrame
(glibc, ld.so) are GDB's own in both walks: compared, but counted apart.
A stop passes when the walks are equal; a difference fails the test unless
it matches a known SFrame limit (KNOWN_LIMITS), which is then named.

usage: run_gdb_tests.py --gdb GDB --loader BUILD/gdb-python/sfunwind.py
                        --runs host|chroot [--writer W ...] [--quick]
Exit status: 0 when every stop passed, 1 otherwise."""

import argparse
import json
import os
import subprocess
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "common"))
from fixtures import manifest, runs_here  # noqa: E402
FIXTURES = os.path.normpath(os.path.join(HERE, "..", "fixtures"))

RECURSE_FUNCS = ["fixture_leaf", "recurse", "level_3", "level_2", "level_1"]


def program_kind(path):
    base = os.path.basename(os.path.dirname(path)) if path.endswith("/plt") else os.path.basename(path)
    return base.split("-")[0]


def scenarios(entry, quick):
    """The scenario configurations (gdb_checks.CHECK) for one program."""
    path = entry["path"]
    kind = program_kind(path)
    noeh = path.endswith("-noeh") or "-noeh/" in path
    if noeh:
        return []  # SFrame-only binaries: run_noeh_tests.py
    out = []
    optimized = "-O2" in entry["flags"]
    if kind == "recurse":
        out.append({"scenario": "stop", "args": "trap"})
        out.append({"scenario": "stop", "args": "abort"})
        out.append({"scenario": "stop", "args": "trap 200", "limit": 300})
        out.append({"scenario": "breaks", "args": "none", "functions": RECURSE_FUNCS})
        if not quick and optimized:
            out.append({"scenario": "sweep", "args": "none",
                        "sweeps": [{"label": "level_1", "function": "level_1", "max_steps": 700}]})
    elif kind == "deep10000":
        out.append({"scenario": "stop", "args": "trap", "limit": 10020})
    elif kind == "sighandler":
        setup = ["handle SIGUSR1 nostop noprint pass"]
        out.append({"scenario": "stop", "args": "trap", "setup": setup})
        out.append({"scenario": "stop", "args": "trap altstack", "setup": setup})
        out.append({"scenario": "breaks", "args": "none", "setup": setup,
                    "functions": ["fixture_leaf", "handler_level_1", "on_signal", "send_signal_to_self"]})
        if not quick:
            out.append({"scenario": "sweep", "args": "none", "setup": setup,
                        "sweeps": [{"label": "on_signal", "function": "on_signal", "max_steps": 400}]})
    elif kind == "plt":
        # Bound at start: the PLT jumps straight to the library (no ld.so
        # resolver in the sweep, which has no SFrame and thousands of steps).
        setup = ["set environment LD_BIND_NOW=1"]
        out.append({"scenario": "stop", "args": "trap", "setup": setup})
        out.append({"scenario": "stop", "args": "abort", "setup": setup})
        out.append({"scenario": "breaks", "args": "none", "setup": setup,
                    "functions": ["fixture_leaf", "exe_callback", "call_into_lib"],
                    "linespecs": ["lib_entry@plt", "lib_level_1", "lib_level_2"]})
        if not quick:
            out.append({"scenario": "sweep", "args": "none", "setup": setup,
                        "sweeps": [{"label": "call_into_lib", "function": "call_into_lib", "max_steps": 500}]})
    elif kind == "noreturn":
        out.append({"scenario": "stop", "args": "trap"})
        out.append({"scenario": "stop", "args": "abort"})
        out.append({"scenario": "breaks", "args": "none", "functions": ["fixture_leaf", "fatal_path", "level_2"]})
    elif kind == "realign":
        out.append({"scenario": "stop", "args": "trap"})
        if not quick:
            out.append({"scenario": "sweep", "args": "none",
                        "sweeps": [{"label": "level_1", "function": "level_1", "max_steps": 400}]})
    elif kind == "cxx_exceptions":
        out.append({"scenario": "stop", "args": "trap"})
        out.append({"scenario": "stop", "args": "trap catch"})
    return out


# Differences that are SFrame's limits, not sfunwind's bugs: (name,
# predicate over (stop, index of the first differing frame)). None is known
# on these fixtures: SFrame v1's PC-mask FDEs (GNU ld 2.40's .plt), which
# store no repeat block size, are read per 16-byte PLT entry like v2's
# (core/src/sframe/layout_v1.cpp), and every PLT stop must match the CFI.
KNOWN_LIMITS = []


def evaluate(stop):
    """(frames compared, frames from SFrame, equal frames, equal from SFrame,
    failure message or None)."""
    sf, cfi = stop["sframe"], stop["cfi"]
    n = min(len(sf), len(cfi))
    fields = ("pc", "cfa", "sp", "fp")
    compared = from_sframe = equal = equal_sframe = 0
    for i in range(n):
        a, b = sf[i], cfi[i]
        attributed = i > 0 and sf[i - 1]["sframe"] or a["sframe"]
        same = all(a[f] == b[f] for f in fields)
        compared += 1
        equal += same
        if attributed:
            from_sframe += 1
            equal_sframe += same
    failure = None
    if stop["divergence"] is not None:
        for name, predicate in KNOWN_LIMITS:
            if predicate(stop, stop["divergence"]):
                stop["limit"] = name
                break
        else:
            failure = "; ".join(stop["explanation"]) or "walks differ at frame %d" % stop["divergence"]
    return compared, from_sframe, equal, equal_sframe, failure


def run_gdb(gdb, loader, program, check, timeout, checker="gdb_checks"):
    """Runs GDB with sfunwind loaded and the `checker` module (gdb_checks,
    or ppc64_checks) on `program` (None: the checker connects to a remote
    target); returns (the checker's JSON result, None) or (None, error)."""
    with tempfile.TemporaryDirectory() as tmp:
        out = os.path.join(tmp, "result.json")
        check = dict(check, output=out)
        script = os.path.join(tmp, "check.gdb")
        with open(script, "w") as f:
            f.write("set pagination off\nset confirm off\n")
            f.write("source %s\n" % loader)
            f.write("python import sys; sys.path.insert(0, %r)\n" % HERE)
            f.write("python import json, {0}; {0}.CHECK = json.loads(%r); {0}.main()\n".format(checker)
                    % json.dumps(check))
            f.write("kill\n")
        try:
            proc = subprocess.run([gdb, "-nx", "-q", "-batch", "-x", script] + ([program] if program else []),
                                  capture_output=True,
                                  text=True, timeout=timeout, stdin=subprocess.DEVNULL)
        except subprocess.TimeoutExpired:
            return None, "GDB timed out after %d s" % timeout
        if not os.path.exists(out):
            return None, "GDB wrote no result (exit %d): %s" % (proc.returncode, proc.stderr[-2000:])
        with open(out) as f:
            return json.load(f), None


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--gdb", default="gdb")
    ap.add_argument("--loader", required=True)
    ap.add_argument("--runs", choices=("host", "chroot"), default="host")
    ap.add_argument("--writer", action="append", help="only these writers (default: all)")
    ap.add_argument("--program", action="append", help="only programs whose path contains this")
    ap.add_argument("--quick", action="store_true", help="no stepi sweeps")
    ap.add_argument("--timeout", type=int, default=600)
    ap.add_argument("--verbose", action="store_true")
    args = ap.parse_args()
    loader = os.path.abspath(args.loader)

    totals = {"stops": 0, "frames": 0, "from_sframe": 0, "equal": 0, "equal_sframe": 0}
    failures = []
    for entry in manifest():
        if not runs_here(entry, args.runs):
            continue
        if args.writer and entry["writer"] not in args.writer:
            continue
        if args.program and not any(p in entry["path"] for p in args.program):
            continue
        program = os.path.join(FIXTURES, entry["path"])
        for check in scenarios(entry, args.quick):
            name = "%s %s %s" % (entry["path"], check["scenario"], check.get("args", ""))
            result, error = run_gdb(args.gdb, loader, program, check, args.timeout)
            if error is None and result.get("error"):
                error = "in GDB: " + result["error"]
            if error is None and not result["stops"]:
                error = "no stop was recorded"
            if error is None and result["counters"]["frames"] == 0:
                error = "the SFrame walk never used SFrame"
            if error is not None:
                failures.append("%s: %s" % (name, error))
                print("FAIL %s: %s" % (name, error))
                continue
            stats = [0, 0, 0, 0]
            bad = []
            limits = set()
            for stop in result["stops"]:
                c, s, e, es, failure = evaluate(stop)
                for i, v in enumerate((c, s, e, es)):
                    stats[i] += v
                if failure:
                    bad.append("%s: %s" % (stop["label"], failure))
                if stop.get("limit"):
                    limits.add(stop["limit"])
            totals["stops"] += len(result["stops"])
            totals["frames"] += stats[0]
            totals["from_sframe"] += stats[1]
            totals["equal"] += stats[2]
            totals["equal_sframe"] += stats[3]
            status = "FAIL" if bad else "ok  "
            print("%s %s: %d stops, %d frames (%d from SFrame), %d equal (%d from SFrame)%s" % (
                status, name, len(result["stops"]), stats[0], stats[1], stats[2], stats[3],
                "; SFrame limits: " + ", ".join(sorted(limits)) if limits else ""))
            for note in result.get("notes", []):
                if args.verbose:
                    print("     note: %s" % note)
            for b in bad[:5]:
                print("     %s" % b)
            if bad:
                failures.append("%s: %d stops differ" % (name, len(bad)))
    print("total: %d stops, %d frames compared (%d from SFrame), %d equal (%d from SFrame)" % (
        totals["stops"], totals["frames"], totals["from_sframe"], totals["equal"], totals["equal_sframe"]))
    if totals["stops"] == 0:
        print("FAIL: nothing was tested")
        return 1
    if failures:
        print("%d failures" % len(failures))
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())

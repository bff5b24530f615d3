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
One line per program and scenario, the totals, then "N passed, M failed"
(gdb_harness). Exit status: 0 when every stop passed, 1 otherwise."""

import os

import gdb_harness as H

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


def run(args, res):
    g = H.Gdb(args.gdb, args.loader, args.timeout)
    for entry in H.select(args):
        program = H.fixture(entry["path"])
        for check in scenarios(entry, args.quick):
            name = "%s %s %s" % (entry["path"], check["scenario"], check.get("args", ""))
            result, error = g.run_module("gdb_checks", check, [program])
            if error is None and not result["stops"]:
                error = "no stop was recorded"
            if error is None and result["counters"]["frames"] == 0:
                error = "the SFrame walk never used SFrame"
            if error is None:
                error = H.listings_problem(result)
            if error is not None:
                res.check(name, False, error)
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
            for key, n in zip(("stops", "frames", "from_sframe", "equal", "equal_sframe"),
                              [len(result["stops"])] + stats):
                res.count(key, n)
            res.check(name, not bad, "%d stops, %d frames (%d from SFrame), %d equal (%d from SFrame)%s%s" % (
                len(result["stops"]), stats[0], stats[1], stats[2], stats[3],
                "; SFrame limits: " + ", ".join(sorted(limits)) if limits else "",
                "; %d stops differ" % len(bad) if bad else ""))
            if args.verbose:
                for note in result.get("notes", []):
                    print("     note: %s" % note)
            for b in bad[:5]:
                print("     %s" % b)
    t = res.stats
    print("total: %d stops, %d frames compared (%d from SFrame), %d equal (%d from SFrame)" % (
        t.get("stops", 0), t.get("frames", 0), t.get("from_sframe", 0), t.get("equal", 0), t.get("equal_sframe", 0)))


if __name__ == "__main__":
    ap = H.parser(__doc__, fixtures=True)
    ap.add_argument("--quick", action="store_true", help="no stepi sweeps")
    H.main(run, ap)

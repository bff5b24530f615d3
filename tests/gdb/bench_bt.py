#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""Benchmark: `bt` over a 10,000-frame recursion (the deep10000 fixture),
unwound by GDB's own DWARF unwinder, by sfunwind's Python unwinder and by
sfunwind's JIT reader (native path), in one GDB session at one stop.

Each measured `bt` is its own top-level GDB command, after
`maint flush register-cache` (which drops GDB's frame cache), and with
--flush-dcache `maint flush dcache` too (GDB's stack cache, which a resume
empties: the first `bt` at a stop reads the stack anew); the modes are
interleaved round by round so that machine load affects them alike, and the
median of each is reported. GDB's output goes to /dev/null.

usage: bench_bt.py --gdb gdb --loader build/default/gdb-python/sfunwind.py
                   [--program tests/fixtures/bin/gas-2.40/deep10000-O2-nofp]
                   [--rounds 7] [--repeat 1] [--flush-dcache] [--json out.json]
Exit status 0 when the measurements completed (the targets are reported,
not enforced: timings depend on the machine)."""

import json
import os
import statistics
import subprocess
import sys
import tempfile

import gdb_harness as H

MODES = ("dwarf", "python", "native", "python-off", "native-off")
# The -off modes: the callee-saved registers not recovered (sframe
# callee-saved off), to show what recovering them costs per frame.
SWITCH = {
    "dwarf": ["sframe disable"],
    "python": ["sframe enable python", "sframe callee-saved on"],
    "native": ["sframe enable native", "sframe callee-saved on"],
    "python-off": ["sframe enable python", "sframe callee-saved off"],
    "native-off": ["sframe enable native", "sframe callee-saved off"],
}


def commands(rounds, out_json, repeat=1, flush_dcache=False):
    """The session after the preamble and the loader (gdb_harness.Gdb)."""
    flush = ["maint flush register-cache"] + (["maint flush dcache"] if flush_dcache else [])
    lines = [
        "run",
        "python import time, json",
        "python T = {}",
        "python F = {}",
        # Warm GDB's symbol and DWARF caches once in each mode first.
    ]
    for mode in MODES:
        lines += SWITCH[mode] + flush + ["bt"]
    for _ in range(rounds):
        for mode in MODES:
            lines += SWITCH[mode] + flush + ["python t0 = time.perf_counter()"]
            # A short stack's bt takes about a millisecond: a sample is
            # `repeat` of them, each after its own flush, so the clock and
            # the command's own cost do not dominate.
            for k in range(repeat):
                if k:
                    lines += flush
                lines.append("bt")
            lines.append("python T.setdefault(%r, []).append((time.perf_counter() - t0) / %d)" % (mode, repeat))
    # How many frames each mode saw (the same, or the comparison is void).
    # And how many of them each SFrame path unwound itself (its counters in
    # `sframe status`), so a path that silently declined is not timed as if
    # it had worked.
    lines.append("python import re")
    lines.append("python U = {}")
    for mode in MODES:
        lines += SWITCH[mode] + flush + [
            "python s0 = gdb.execute('sframe status', to_string=True)",
            "python F[%r] = len(gdb.execute('bt', to_string=True).splitlines())" % mode,
            "python s1 = gdb.execute('sframe status', to_string=True)",
            "python U[%r] = [int(re.search(p, s1).group(1)) - int(re.search(p, s0).group(1)) for p in "
            "(r'python path: (\\d+) frames', r'native path [^:]*: (\\d+) frames')]" % mode,
        ]
    lines.append("python open(%r, 'w').write(json.dumps({'times': T, 'frames': F, 'unwound': U}))" % out_json)
    lines.append("kill")
    return lines


def main():
    ap = H.parser(__doc__, runs=False, timeout=1800)
    ap.add_argument("--program", default=H.fixture("bin", "gas-2.40", "deep10000-O2-nofp"))
    ap.add_argument("--rounds", type=int, default=7)
    ap.add_argument("--repeat", type=int, default=1,
                    help="bt commands per timed sample (each after a flush); the time is per bt")
    ap.add_argument("--flush-dcache", action="store_true",
                    help="flush GDB's stack cache before each bt too, as a resume does")
    ap.add_argument("--json")
    args = ap.parse_args()
    g = H.Gdb(args.gdb, args.loader, args.timeout)
    version = g.version()
    with tempfile.TemporaryDirectory() as tmp:
        out_json = os.path.join(tmp, "times.json")
        proc, error = g.run(commands(args.rounds, out_json, args.repeat, args.flush_dcache), [os.path.abspath(args.program)],
                            stdout=subprocess.DEVNULL)
        if error is not None or not os.path.exists(out_json):
            sys.stderr.write(error or proc.stderr)
            print("FAIL: GDB did not finish the benchmark")
            return 1
        with open(out_json) as f:
            data = json.load(f)
    times, frames = data["times"], data["frames"]
    med = {m: statistics.median(times[m]) for m in MODES}
    print("%s, %s, %d rounds of %d bt%s" % (version, os.path.relpath(args.program), args.rounds, args.repeat,
                                            ", stack cache flushed" if args.flush_dcache else ""))
    for m in MODES:
        print("  %-10s bt: median %.4f s (min %.4f, max %.4f), %d frames" % (
            m, med[m], min(times[m]), max(times[m]), frames[m]))
    print("  python / dwarf = %.2f (target <= 0.7)" % (med["python"] / med["dwarf"]))
    print("  native / dwarf = %.2f (target <= 0.5)" % (med["native"] / med["dwarf"]))
    for path in ("python", "native"):
        print("  %s: callee-saved registers cost %.2f us per frame (%.2f with them, %.2f without, x dwarf)" % (
            path, 1e6 * (med[path] - med[path + "-off"]) / frames[path], med[path] / med["dwarf"],
            med[path + "-off"] / med["dwarf"]))
    unwound = data["unwound"]
    for m in MODES:
        print("  %-10s frames unwound by sfunwind: python path %d, native path %d" % (m, *unwound[m]))
    # The DWARF run must owe nothing to sfunwind; each SFrame run must have
    # unwound all but the outermost frames (_start and its caller) itself.
    expect = {"dwarf": (0, 0), "python": (frames["python"] - 3, 0), "native": (0, frames["native"] - 3),
              "python-off": (frames["python"] - 3, 0), "native-off": (0, frames["native"] - 3)}
    bad = [m for m in MODES if any(abs(u - e) > 3 for u, e in zip(unwound[m], expect[m]))]
    if bad:
        print("FAIL: frames not unwound by the path being timed: %s" % ", ".join(bad))
        return 1
    if len(set(frames.values())) != 1:
        print("FAIL: the modes saw different numbers of frames: %s" % frames)
        return 1
    if args.json:
        json.dump({"gdb": version, "median": med, "times": times, "frames": frames}, open(args.json, "w"), indent=1)
    return 0


if __name__ == "__main__":
    sys.exit(main())

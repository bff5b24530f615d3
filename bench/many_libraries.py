#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""Time to the first backtrace in a program of many shared libraries, a
frame in each (tests/gdb/src/many_libraries.py): GDB with sfunwind (Python
path, native path) on the SFrame-only build against the same GDB on the CFI
build, live (`run`, `bt`) and from a core, in one run, printed as ratios
(median of alternating rounds; the backtraces' function names checked
equal). GDB loads the libraries one new_objfile event after another, so
what sfunwind does per objfile is paid once per library.

usage: many_libraries.py --gdb gdb --loader BUILD/gdb-python/sfunwind.py
                         [--libraries 300] [--rounds 5] [--cc cc]"""

import argparse
import os
import shutil
import statistics
import subprocess
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "big_program"))
sys.path.insert(0, os.path.join(HERE, "..", "tests", "gdb", "src"))
import first_bt  # noqa: E402  (run_wait4, frames)
import many_libraries  # noqa: E402


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--gdb", default="gdb")
    ap.add_argument("--loader", required=True)
    ap.add_argument("--libraries", type=int, default=300)
    ap.add_argument("--rounds", type=int, default=5)
    ap.add_argument("--cc", default=shutil.which("cc") or "gcc")
    args = ap.parse_args()
    with tempfile.TemporaryDirectory() as work:
        cfi, sframe = many_libraries.build(args.cc, work, args.libraries)
        core = {}
        for name, program in (("cfi", cfi), ("sframe", sframe)):
            core[name] = os.path.join(work, name + ".core")
            subprocess.run([args.gdb, "-nx", "-batch", "-ex", "run", "-ex", "gcore " + core[name], program],
                           capture_output=True, timeout=600)
        base = [args.gdb, "-nx", "-batch", "-ex", "set pagination off"]
        print("%d shared libraries, GDB: %s" % (args.libraries, first_bt.version("gdb", args.gdb)))
        print("%-7s %-5s %10s %10s %7s  %s" % ("path", "case", "CFI s", "SFrame s", "ratio", "frames"))
        for path in ("python", "native"):
            # -iex: loaded before the program and core, as GDB loads an
            # installed sfunwind (its system gdbinit).
            load = ["-iex", "source " + args.loader, "-iex", "sframe enable " + path]
            for case, cfi_cmd, sf_cmd in (
                    ("live", base + ["-ex", "run", "-ex", "bt", "-ex", "kill", cfi],
                     base + load + ["-ex", "run", "-ex", "bt", "-ex", "kill", sframe]),
                    ("core", base + [cfi, core["cfi"], "-ex", "bt"],
                     base + load + [sframe, core["sframe"], "-ex", "bt"])):
                times = {"cfi": [], "sframe": []}
                text = {}
                for _ in range(args.rounds):
                    for name, cmd in (("cfi", cfi_cmd), ("sframe", sf_cmd)):
                        seconds, _, output = first_bt.run_wait4(cmd)
                        if seconds is not None:
                            times[name].append(seconds)
                            text[name] = output
                if not times["cfi"] or not times["sframe"]:
                    print("%-7s %-5s timed out" % (path, case))
                    continue
                a, b = statistics.median(times["cfi"]), statistics.median(times["sframe"])
                fa, fb = first_bt.frames(text["cfi"]), first_bt.frames(text["sframe"])
                same = "%d equal" % len(fa) if fa == fb and fa else "DIFFERS (%d vs %d)" % (len(fa), len(fb))
                print("%-7s %-5s %10.2f %10.2f %7.2f  %s" % (path, case, a, b, b / a, same))


if __name__ == "__main__":
    main()

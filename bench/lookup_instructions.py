#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""Instructions per Section::lookup, counted by Callgrind: a figure that
does not move with the machine's load, unlike the timings of
bench/run_all.sh (a lookup that stays in cache is bound by its instruction
count as much as by its loads; README, Performance).

Runs sfunwind_bench_lookup's `lookup/<case>` benchmark (one lookup per
iteration, at the case's random PCs) under `valgrind --tool=callgrind`,
then reads from Callgrind's output the calls that bm_lookup made to
Section::lookup and their inclusive instruction count.

usage: bench/lookup_instructions.py [--bench build/speed/bench/sfunwind_bench_lookup]
                                    [CASE ...]   (default: "sqlite3-gas-2.47 v3")
Needs valgrind (Debian: apt-get install valgrind) and a Release build with
SFUNWIND_BUILD_BENCHMARKS=ON (bench/run_all.sh makes build/speed)."""

import argparse
import os
import re
import shutil
import subprocess
import sys
import tempfile

LOOKUP = "sfunwind::sframe::Section::lookup(unsigned long) const"


def calls_to_lookup(path):
    """(calls, inclusive instructions) of bm_lookup's calls to LOOKUP.
    Callgrind's format: `fn=`/`cfn=` name a function (compressed as `(id)
    name` the first time, `(id)` after), `calls=N ...` starts a call whose
    cost is on the next line (`position Ir`)."""
    names = {}
    calls = cost = 0
    fn = cfn = None
    pending = None
    with open(path, encoding="utf-8", errors="replace") as f:
        for line in f:
            m = re.match(r"^(c?fn)=\((\d+)\)(?: (.*))?$", line.rstrip("\n"))
            if m:
                kind, ident, name = m.groups()
                if name is not None:
                    names[ident] = name
                name = names.get(ident, "")
                if kind == "fn":
                    fn = name
                else:
                    cfn = name
                continue
            if line.startswith("calls="):
                pending = int(line.split("=", 1)[1].split()[0])
                continue
            if pending is not None:
                if fn is not None and "bm_lookup" in fn and cfn == LOOKUP:
                    calls += pending
                    cost += int(line.split()[1])
                pending = None
    return calls, cost


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--bench", default="build/speed/bench/sfunwind_bench_lookup")
    parser.add_argument("cases", nargs="*", default=["sqlite3-gas-2.47 v3"])
    args = parser.parse_args()
    if shutil.which("valgrind") is None:
        sys.exit("lookup_instructions: valgrind is not installed (apt-get install valgrind)")
    if not os.access(args.bench, os.X_OK):
        sys.exit(f"lookup_instructions: {args.bench} is not built "
                 "(cmake --build build/speed --target sfunwind_bench_lookup)")
    status = 0
    for case in args.cases:
        with tempfile.TemporaryDirectory() as tmp:
            out = os.path.join(tmp, "callgrind.out")
            run = subprocess.run(
                ["valgrind", "--tool=callgrind", f"--callgrind-out-file={out}",
                 "--compress-strings=yes", args.bench,
                 f"--benchmark_filter=^lookup/{case.replace('.', '[.]')}$", "--benchmark_min_time=0.01"],
                stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
            if run.returncode != 0 or not os.path.exists(out):
                print(run.stdout[-2000:], file=sys.stderr)
                sys.exit(f"lookup_instructions: the benchmark failed for {case!r}")
            calls, cost = calls_to_lookup(out)
        if calls == 0:
            print(f"{case}: no call from bm_lookup to Section::lookup found "
                  "(no such case, or the names changed)", file=sys.stderr)
            status = 1
            continue
        print(f"{case}: {cost / calls:.0f} instructions per lookup ({calls} lookups, Callgrind)")
    return status


if __name__ == "__main__":
    sys.exit(main())

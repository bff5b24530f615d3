#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""Time to the first backtrace in a program of many shared libraries, a
frame in each (tests/common/many_libraries.py): GDB with sfunwind (Python
path, native path) on the SFrame-only build against the same GDB on the CFI
build, live (`run`, `bt`), from a core and under gdbserver, and a whole
`bt` in one session against GDB's DWARF unwinder (tests/gdb/bench_bt.py);
LLDB with the plugin against the
same LLDB, live, with the plugin's debug files made before (warm) and with
an empty cache (cold: every library's file made then); in one run, printed
as ratios with the peak RSS (median time of alternating rounds, largest
RSS; the backtraces' function names checked equal). The debuggers load the
libraries one after another, so what sfunwind does per library is paid
that many times.

usage: many_libraries.py [--gdb gdb --loader BUILD/gdb-python/sfunwind.py [--gdbserver gdbserver]]
                         [--lldb lldb-19 --lldb-plugin BUILD/plugin/libsfunwind_lldb.so]
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
sys.path.insert(0, os.path.join(HERE, "..", "tests", "common"))
import first_bt  # noqa: E402  (run_wait4, frames)
import many_libraries  # noqa: E402


def measure(label, case, cfi_cmd, sf_cmd, rounds, env=None, before_sframe=None):
    """One row: medians, ratio, peak RSS, and whether the frames agree."""
    times = {"cfi": [], "sframe": []}
    rss = {"cfi": 0.0, "sframe": 0.0}
    text = {}
    for _ in range(rounds):
        for name, cmd in (("cfi", cfi_cmd), ("sframe", sf_cmd)):
            if name == "sframe" and before_sframe is not None:
                before_sframe()
            seconds, mb, output = first_bt.run_wait4(cmd, env=env)
            if seconds is not None:
                times[name].append(seconds)
                rss[name] = max(rss[name], mb)
                text[name] = output
    if not times["cfi"] or not times["sframe"]:
        print("%-14s %-9s timed out" % (label, case))
        return
    a, b = statistics.median(times["cfi"]), statistics.median(times["sframe"])
    fa, fb = first_bt.frames(text["cfi"]), first_bt.frames(text["sframe"])
    same = "%d equal" % len(fa) if fa == fb and fa else "DIFFERS (%d vs %d)" % (len(fa), len(fb))
    print("%-14s %-9s %8.2f %8.2f %6.2f %8.1f %8.1f %6.2f  %s" % (label, case, a, b, b / a, rss["cfi"], rss["sframe"],
                                                               rss["sframe"] / rss["cfi"], same))


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--gdb")
    ap.add_argument("--loader")
    ap.add_argument("--gdbserver", help="for the remote rows (default: the one on PATH)")
    ap.add_argument("--lldb")
    ap.add_argument("--lldb-plugin")
    ap.add_argument("--libraries", type=int, default=300)
    ap.add_argument("--rounds", type=int, default=5)
    ap.add_argument("--cc", default=shutil.which("cc") or "gcc")
    args = ap.parse_args()
    with tempfile.TemporaryDirectory() as work:
        cfi, sframe = many_libraries.build(args.cc, work, args.libraries)
        print("%d shared libraries; time in s, peak RSS in MB" % args.libraries)
        print("%-14s %-9s %8s %8s %6s %8s %8s %6s  %s" % ("", "case", "CFI", "SFrame", "ratio", "CFI", "SFrame",
                                                         "ratio", "frames"))
        if args.gdb and args.loader:
            core = {}
            for name, program in (("cfi", cfi), ("sframe", sframe)):
                core[name] = os.path.join(work, name + ".core")
                subprocess.run([args.gdb, "-nx", "-batch", "-ex", "run", "-ex", "gcore " + core[name], program],
                               capture_output=True, timeout=600)
            base = [args.gdb, "-nx", "-batch", "-ex", "set pagination off"]
            gdbserver = args.gdbserver or shutil.which("gdbserver")
            if gdbserver is None:
                print("no gdbserver: the remote rows are left out (scripts/setup-host.sh installs it)")
            gdb_name = first_bt.version("gdb", args.gdb)
            for path in ("python", "native"):
                # -iex: loaded before the program and core, as GDB loads an
                # installed sfunwind (its system gdbinit).
                load = ["-iex", "source " + args.loader, "-iex", "sframe enable " + path]
                label = "%s %s" % (gdb_name, path)
                measure(label, "live", base + ["-ex", "run", "-ex", "bt", "-ex", "kill", cfi],
                        base + load + ["-ex", "run", "-ex", "bt", "-ex", "kill", sframe], args.rounds)
                measure(label, "core", base + [cfi, core["cfi"], "-ex", "bt"],
                        base + load + [sframe, core["sframe"], "-ex", "bt"], args.rounds)
                if gdbserver:
                    # The libraries are "target:" files: sfunwind reads
                    # their SFrame from the target's memory.
                    def remote(program):
                        return ["-ex", "target remote | %s - %s" % (gdbserver, program), "-ex", "continue",
                                "-ex", "bt", "-ex", "kill", program]
                    measure(label, "gdbserver", base + remote(cfi), base + load + remote(sframe), args.rounds)
            # A whole `bt` of the stop, a frame in each library, in one GDB
            # session: GDB's DWARF unwinder against each sfunwind path
            # (tests/gdb/bench_bt.py). The CFI build was assembled with
            # --gsframe too, so its files serve both.
            walk = subprocess.run([sys.executable, os.path.join(HERE, "..", "tests", "gdb", "bench_bt.py"),
                                   "--gdb", args.gdb, "--loader", args.loader, "--program", cfi,
                                   "--rounds", str(args.rounds)], capture_output=True, text=True, timeout=1800)
            print("whole bt, %s:" % gdb_name)
            print("".join("  " + line + "\n" for line in walk.stdout.splitlines()), end="")
            if walk.returncode != 0:
                sys.stderr.write(walk.stderr)
                sys.exit("many_libraries: the walk benchmark failed")
        if args.lldb and args.lldb_plugin:
            cache = os.path.join(work, "lldb-cache")
            # LLDB's debuginfod client keeps copies of what the plugin's
            # responder served: its own cache, emptied with the plugin's
            # (first_bt.py says why).
            debuginfod_cache = os.path.join(work, "llvm-debuginfod")
            env = dict(os.environ, SFUNWIND_LLDB_CACHE=cache, DEBUGINFOD_CACHE_PATH=debuginfod_cache)
            env.pop("DEBUGINFOD_URLS", None)

            def empty_caches():
                for d in (cache, debuginfod_cache):
                    shutil.rmtree(d, ignore_errors=True)
            # -b stops at the signal: `bt` is a -k (after a crash) command.
            base = [args.lldb, "-b", "--no-lldbinit"]
            run = ["-o", "process launch", "-k", "bt", "-k", "kill"]
            plain = base + ["-o", "file " + cfi] + run
            plugin = base + ["-o", "plugin load " + args.lldb_plugin, "-o", "file " + sframe] + run
            label = first_bt.version("lldb", args.lldb)
            measure(label, "cold", plain, plugin, args.rounds, env,
                    before_sframe=empty_caches)
            measure(label, "warm", plain, plugin, args.rounds, env)


if __name__ == "__main__":
    main()

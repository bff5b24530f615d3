#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""Time to the first backtrace, and peak memory, on the big program
(bench/big_program/make.sh): each debugger with sfunwind on the
SFrame-only build against the same debugger on the CFI-only build, at the
same stop, in one run, printed as ratios (sfunwind / CFI: below 1.00 is
faster or smaller).

For each debugger found (GDB: --gdb, LLDB: --lldb):
  core   `gdb -batch PROG CORE -ex bt` / `lldb -b -o 'target create PROG
         -c CORE' -o bt`, on a core written at the program's stop (gcore);
  live   `gdb -batch -ex run -ex bt PROG` / lldb `process launch` + `bt`;
  cold   (LLDB) core with the plugin's debug-file cache emptied before each
         run: the first debug of the program, its translation included
         (the other LLDB cases share one cache, under --work).
Each case runs --rounds times alternately (CFI, SFrame, CFI, ...); the
table shows the median wall time and the largest peak RSS (wait4's
ru_maxrss of the debugger process). The frames of both backtraces, all of
them, must be the same (function names and count), or the row says
DIFFERS.

usage: first_bt.py --dir /var/cache/sfunwind/big-program --gdb gdb
                   --gdb-loader BUILD/gdb-python/sfunwind.py
                   [--lldb lldb-23 --lldb-plugin BUILD/plugin/libsfunwind_lldb.so]
                   [--rounds 3] [--work DIR]"""

import argparse
import os
import re
import shutil
import statistics
import subprocess
import sys
import tempfile
import threading
import time

# A `bt` line of GDB ("#3  0x... in f_001_00002 ()") or LLDB ("frame #3:
# 0x... big`f_001_00002 + 20"): the frame number and the function.
FRAME = re.compile(r"^\s*(?:\*\s*)?(?:frame )?#(\d+):?\s+(?:0x[0-9a-f]+ in |0x[0-9a-f]+ )?"
                   r"(?:[\w.+-]+`)?([A-Za-z_][\w.@]*)")


def run_wait4(cmd, env=None, timeout=900):
    """(seconds, peak RSS in MB, output): the process's own ru_maxrss.
    The wait blocks, so the time is the process's own to the microsecond (a
    polling wait would add up to its period: 5 ms is 2-4 % of a GDB run);
    a timer kills the process at the timeout."""
    with tempfile.TemporaryFile() as out:
        t0 = time.monotonic()
        proc = subprocess.Popen(cmd, stdout=out, stderr=subprocess.STDOUT, env=env, stdin=subprocess.DEVNULL)
        timer = threading.Timer(timeout, proc.kill)
        timer.start()
        try:
            _, status, usage = os.wait4(proc.pid, 0)
        finally:
            timer.cancel()
        elapsed = time.monotonic() - t0
        proc.returncode = os.waitstatus_to_exitcode(status)
        out.seek(0)
        output = out.read().decode(errors="replace")
        if elapsed >= timeout:
            return None, None, output + "\n(timed out)"
        return elapsed, usage.ru_maxrss / 1024.0, output


def frames(text):
    """Function names of a `bt`, outward."""
    names = []
    for line in text.splitlines():
        m = FRAME.match(line)
        if m and int(m.group(1)) == len(names):
            names.append(m.group(2).split("@")[0])
    return names


def make_core(gdb, program, core):
    subprocess.run([gdb, "-nx", "-batch", "-ex", "set pagination off", "-ex", "run", "-ex", "gcore " + core,
                    "-ex", "kill", program], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, timeout=600)
    return os.path.exists(core)


def version(debugger, program):
    """'GDB 13.1' or 'LLDB 19.1.7': the debugger's own --version."""
    try:
        text = subprocess.run([program, "--version"], capture_output=True, text=True, timeout=60).stdout
    except OSError:
        return debugger
    m = re.search(r"(?:GNU gdb|lldb version) (?:\([^)]*\) )?(\d+(?:\.\d+)*)", text)
    return ("GDB " if debugger == "gdb" else "LLDB ") + m.group(1) if m else debugger


def cases(args, work):
    """(debugger, mode, cfi command, sframe command) for each case."""
    out = []
    cfi = os.path.join(args.dir, args.twins + "cfi", "big")
    sf = os.path.join(args.dir, args.twins + "sframe", "big")
    if args.gdb and shutil.which(args.gdb):
        cores = {}
        for name, prog in (("cfi", cfi), ("sframe", sf)):
            core = os.path.join(work, "big-%s%s.core" % (args.twins, name))
            if not os.path.exists(core) and not make_core(args.gdb, prog, core):
                sys.exit("first_bt: gcore of %s failed" % prog)
            cores[name] = core
        base = [args.gdb, "-nx", "-batch", "-ex", "set pagination off"]
        load = ["-ex", "source " + args.gdb_loader]
        out.append(("gdb", "core", base + [cfi, cores["cfi"], "-ex", "bt"],
                    base + load + [sf, cores["sframe"], "-ex", "bt"]))
        out.append(("gdb", "live", base + ["-ex", "run", "-ex", "bt", "-ex", "kill", cfi],
                    base + load + ["-ex", "run", "-ex", "bt", "-ex", "kill", sf]))
    if args.lldb and shutil.which(args.lldb):
        core_of = {n: os.path.join(work, "big-%s%s.core" % (args.twins, n)) for n in ("cfi", "sframe")}
        pre = ["-o", "settings set target.parallel-module-load false"] if args.lldb_parallel_off else []
        load = ["-o", "plugin load " + args.lldb_plugin]
        if all(os.path.exists(c) for c in core_of.values()):
            # cold: the plugin's debug-file cache empty, as at the first
            # debug of a program (translation included); core: warm.
            out.append(("lldb", "cold",
                        [args.lldb, "-b", "--no-lldbinit"] + pre + ["-o", "target create %s -c %s" % (cfi, core_of["cfi"]), "-o", "bt"],
                        [args.lldb, "-b", "--no-lldbinit"] + pre + load
                        + ["-o", "target create %s -c %s" % (sf, core_of["sframe"]), "-o", "bt"]))
            out.append(("lldb", "core",
                        [args.lldb, "-b", "--no-lldbinit"] + pre + ["-o", "target create %s -c %s" % (cfi, core_of["cfi"]), "-o", "bt"],
                        [args.lldb, "-b", "--no-lldbinit"] + pre + load
                        + ["-o", "target create %s -c %s" % (sf, core_of["sframe"]), "-o", "bt"]))
        out.append(("lldb", "live",
                    # -b stops at the signal: `bt` is a -k (after a crash) command.
                    [args.lldb, "-b", "--no-lldbinit"] + pre + ["-o", "process launch", "-k", "bt", "-k", "kill", cfi],
                    [args.lldb, "-b", "--no-lldbinit"] + pre + load + ["-o", "process launch", "-k", "bt", "-k", "kill", sf]))
    return out


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--dir", default="/var/cache/sfunwind/big-program")
    ap.add_argument("--gdb")
    ap.add_argument("--gdb-loader")
    ap.add_argument("--lldb")
    ap.add_argument("--lldb-plugin")
    ap.add_argument("--lldb-parallel-off", action="store_true",
                    help="settings set target.parallel-module-load false (LLDB 21-23 deadlock)")
    ap.add_argument("--twins", default="", choices=["", "host-"],
                    help="host-: the twins linked to run on the bookworm host (host-cfi/, host-sframe/)")
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--work")
    args = ap.parse_args()
    work = args.work or os.path.join(args.dir, "bench")
    os.makedirs(work, exist_ok=True)
    print("%-12s %-5s %10s %10s %7s %10s %10s %7s  %s" % ("", "", "CFI s", "SFrame s", "ratio", "CFI MB",
                                                       "SFrame MB", "ratio", "frames"))
    names = {"gdb": version("gdb", args.gdb) if args.gdb else "",
             "lldb": version("lldb", args.lldb) if args.lldb else ""}
    for debugger, mode, cfi_cmd, sf_cmd in cases(args, work):
        times = {"cfi": [], "sframe": []}
        rss = {"cfi": 0.0, "sframe": 0.0}
        text = {}
        for _ in range(args.rounds):
            for name, cmd in (("cfi", cfi_cmd), ("sframe", sf_cmd)):
                # LLDB's debuginfod client keeps copies of what the plugin's
                # responder served, and the twins share build-ids: in the
                # user's cache, such copies would reach runs they do not
                # belong to (the CFI build's, with a debuginfod server set;
                # a cold one's, as a warm file). Each run gets its own.
                env = dict(os.environ, SFUNWIND_LLDB_CACHE=os.path.join(work, "lldb-cache"),
                           DEBUGINFOD_CACHE_PATH=os.path.join(work, "llvm-debuginfod"))
                env.pop("DEBUGINFOD_URLS", None)
                if mode == "cold":
                    shutil.rmtree(env["SFUNWIND_LLDB_CACHE"], ignore_errors=True)
                    shutil.rmtree(env["DEBUGINFOD_CACHE_PATH"], ignore_errors=True)
                seconds, mb, output = run_wait4(cmd, env=env)
                if seconds is None:
                    print("%s %s %s: %s" % (debugger, mode, name, output[-400:]))
                    continue
                times[name].append(seconds)
                rss[name] = max(rss[name], mb)
                text[name] = output
        if not times["cfi"] or not times["sframe"]:
            continue
        a, b = statistics.median(times["cfi"]), statistics.median(times["sframe"])
        # Every frame: _start of the SFrame-only twin has neither CFI
        # (removed with .eh_frame) nor SFrame (crt1 is not assembled with
        # --gsframe); the plugin's debug file ends the stack there.
        fa, fb = frames(text["cfi"]), frames(text["sframe"])
        same = "%d equal" % len(fa) if fa == fb and fa else "DIFFERS (%d vs %d)" % (len(fa), len(fb))
        print("%-12s %-5s %10.2f %10.2f %7.2f %10.1f %10.1f %7.2f  %s" % (names[debugger], mode, a, b, b / a, rss["cfi"],
                                                                      rss["sframe"], rss["sframe"] / rss["cfi"], same))
        if fa != fb and os.environ.get("FIRST_BT_VERBOSE"):
            print(text["cfi"][-2000:])
            print(text["sframe"][-2000:])


if __name__ == "__main__":
    main()

#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""aarch64 and s390x fixtures under qemu-user's gdbstub, unwound from SFrame
alone: at each program's stop, GDB walks the stack with its DWARF CFI
unwinders (the reference), then with its DWARF unwinders switched off:
sfunwind's Python path and native path must give the same frames (pc, CFA,
sp, fp). Plain GDB without DWARF is reported alongside. The gdbstub has no
/proc: sfunwind finds the load addresses from `info files`.

AArch64 return-address signing (recurse-O2-nofp-pac-static) runs with
`-cpu max` when the qemu here can sign and GDB can strip (sid's qemu 11
and GDB 18: --pac); bookworm's qemu 7.2 signs where GDB 13 cannot strip,
so there it is left out.

usage: run_qemu_tests.py --gdb gdb-multiarch --loader LOADER [--pac]
Exit status 1 if any stop differs, 0 otherwise."""

import argparse
import os
import shutil
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
FIXTURES = os.path.normpath(os.path.join(HERE, "..", "fixtures"))
sys.path.insert(0, HERE)
sys.path.insert(0, os.path.join(HERE, "..", "common"))
import gdbstub  # noqa: E402
from run_gdb_tests import evaluate, run_gdb  # noqa: E402

QEMU = {"aarch64": "qemu-aarch64", "s390x": "qemu-s390x"}


def fixtures(pac):
    with open(os.path.join(FIXTURES, "manifest.tsv")) as f:
        for line in f:
            if line.startswith("#") or not line.strip():
                continue
            c = line.rstrip("\n").split("\t")
            path, arch = c[0], c[3]
            if arch not in QEMU:
                continue
            if "-pac" in path and not pac:
                continue
            yield path, arch


def run_one(gdb, loader, path, arch, pac, timeout):
    program = os.path.join(FIXTURES, path)
    qemu = [QEMU[arch]] + (["-cpu", "max"] if "-pac" in path else [])
    mode = "trap"
    try:
        with gdbstub.started(qemu, [program, mode], timeout=20) as port:
            setup = ["handle SIGUSR1 nostop noprint pass"] if "sighandler" in path else []
            check = {"scenario": "remote", "remote": "127.0.0.1:%d" % port, "args": mode, "setup": setup,
                     "limit": 64}
            return run_gdb(gdb, loader, program, check, timeout)
    except gdbstub.StubError as e:
        return None, str(e)


def same(a, b):
    keys = ("pc", "cfa", "sp", "fp")
    return len(a) == len(b) and all(all(x[k] == y[k] for k in keys) for x, y in zip(a, b))


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--gdb", default="gdb-multiarch")
    ap.add_argument("--loader", required=True)
    ap.add_argument("--pac", action="store_true", help="also the PAuth fixture (qemu -cpu max)")
    ap.add_argument("--timeout", type=int, default=300)
    args = ap.parse_args()
    if shutil.which(args.gdb) is None:
        print("FAIL: %s not found" % args.gdb)
        return 1
    loader = os.path.abspath(args.loader)
    failures = 0
    tested = 0
    for path, arch in fixtures(args.pac):
        if shutil.which(QEMU[arch]) is None:
            print("FAIL %s: %s not found" % (path, QEMU[arch]))
            failures += 1
            continue
        result, error = run_one(args.gdb, loader, path, arch, args.pac, args.timeout)
        if error is None and result.get("error"):
            error = "in GDB: " + result["error"]
        if error is None and not result["stops"]:
            error = "no stop recorded"
        if error is not None:
            print("FAIL %s: %s" % (path, error))
            failures += 1
            continue
        stop = result["stops"][0]
        tested += 1
        compared, from_sframe, equal, _, failure = evaluate(stop)
        native_ok = same(stop["native"], stop["cfi"])
        plain_ok = same(stop["plain"], stop["cfi"])
        frames = " > ".join(f["function"] or "??" for f in stop["sframe"])
        ok = failure is None and native_ok and result["counters"]["frames"] > 0
        print("%s %s: %d frames, %d from SFrame, %d equal to CFI; native path %s; plain GDB without DWARF %s"
              % ("ok  " if ok else "FAIL", path, compared, from_sframe, equal,
                 "equal" if native_ok else "DIFFERS", "equal" if plain_ok else "wrong"))
        print("     %s" % frames)
        if failure:
            print("     %s" % failure)
        failures += not ok
    print("%d programs, %d failed" % (tested, failures))
    return 1 if failures or tested == 0 else 0


if __name__ == "__main__":
    sys.exit(main())

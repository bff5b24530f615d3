#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""aarch64 and s390x fixtures under qemu-user's gdbstub, unwound from SFrame
alone: at each program's stop, GDB walks the stack with its DWARF CFI
unwinders (the reference), then with its DWARF unwinders switched off:
sfunwind's Python path and native path must give the same frames (pc, CFA,
sp, fp). Plain GDB without DWARF is reported alongside. The gdbstub has no
/proc: sfunwind finds the load addresses in GDB's section listing
(sfunwind_gdb.modules.section_addresses), compared here with `info files`.

The callee-saved registers too (AArch64 x19-x28, d8-d15; s390x r6-r10,
r12, r13, f8-f15): in every upper frame at the same pc in both walks,
each register sfunwind gives (Python and native paths) must be the value
GDB's CFI unwinder gives, or <not saved>; never another. Each program must
recover some, and more than with `sframe callee-saved off`.

AArch64 return-address signing (recurse-O2-nofp-pac-static) runs with
`-cpu max` when the qemu here can sign and GDB can strip (sid's qemu 11
and GDB 18: --pac); bookworm's qemu 7.2 signs where GDB 13 cannot strip,
so there it is left out.

usage: run_qemu_tests.py --gdb gdb-multiarch --loader LOADER [--pac]
Exit status 1 if any stop differs, 0 otherwise."""

import shutil

import gdb_harness as H
import gdbstub
from run_gdb_tests import evaluate

QEMU = {"aarch64": "qemu-aarch64", "s390x": "qemu-s390x"}


def fixtures(pac):
    for entry in H.manifest():
        path, arch = entry["path"], entry["arch"]
        if arch not in QEMU:
            continue
        if "-pac" in path and not pac:
            continue
        yield path, arch


def run_one(g, path, arch):
    program = H.fixture(path)
    qemu = [QEMU[arch]] + (["-cpu", "max"] if "-pac" in path else [])
    mode = "trap"
    try:
        with gdbstub.started(qemu, [program, mode], timeout=20) as port:
            setup = ["handle SIGUSR1 nostop noprint pass"] if "sighandler" in path else []
            check = {"scenario": "remote", "remote": "127.0.0.1:%d" % port, "args": mode, "setup": setup,
                     "limit": 64}
            return g.run_module("gdb_checks", check, [program])
    except gdbstub.StubError as e:
        return None, str(e)


def same(a, b):
    keys = ("pc", "cfa", "sp", "fp")
    return len(a) == len(b) and all(all(x[k] == y[k] for k in keys) for x, y in zip(a, b))


def compare_registers(stop):
    """(recovered by the Python path, by the native path, with callee-saved
    off, registers the CFI walk gives in upper frames, [wrong ones])."""
    regs = stop["registers"]
    cfi = regs["cfi"]
    counts = {"sframe": 0, "native": 0, "sframe_off": 0}
    reference = 0
    wrong = []
    for walk in counts:
        for level, frame in enumerate(regs[walk]):
            if level == 0 or level >= len(cfi) or frame["pc"] != cfi[level]["pc"]:
                continue
            for name, value in frame["registers"].items():
                want = cfi[level]["registers"].get(name)
                if walk == "sframe" and want is not None:
                    reference += 1
                if value is None:
                    continue
                counts[walk] += 1
                if value != want:
                    wrong.append("%s frame %d %s: %#x, CFI %s" % (walk, level, name, value,
                                                                 "none" if want is None else "%#x" % want))
    return counts["sframe"], counts["native"], counts["sframe_off"], reference, wrong


def run(args, res):
    if shutil.which(args.gdb) is None:
        res.check("%s found" % args.gdb, False)
        return
    g = H.Gdb(args.gdb, args.loader, args.timeout)
    for path, arch in fixtures(args.pac):
        if shutil.which(QEMU[arch]) is None:
            res.check(path, False, "%s not found" % QEMU[arch])
            continue
        result, error = run_one(g, path, arch)
        if error is None and not result["stops"]:
            error = "no stop recorded"
        if error is None:
            error = H.listings_problem(result)
        if error is not None:
            res.check(path, False, error)
            continue
        stop = result["stops"][0]
        res.count("programs")
        compared, from_sframe, equal, _, failure = evaluate(stop)
        native_ok = same(stop["native"], stop["cfi"])
        plain_ok = same(stop["plain"], stop["cfi"])
        frames = " > ".join(f["function"] or "??" for f in stop["sframe"])
        ok = failure is None and native_ok and result["counters"]["frames"] > 0
        res.check(path, ok, "%d frames, %d from SFrame, %d equal to CFI; native path %s; plain GDB without DWARF %s"
                  % (compared, from_sframe, equal, "equal" if native_ok else "DIFFERS", "equal" if plain_ok else "wrong"))
        print("     %s" % frames)
        if failure:
            print("     %s" % failure)
        python, native, off, reference, wrong = compare_registers(stop)
        res.count("registers recovered", python)
        res.count("registers wrong", len(wrong))
        res.check(path + " callee-saved registers", not wrong and python > off and native > off,
                  "upper frames: %d recovered (native path %d, callee-saved off %d) of %d CFI gives; %d wrong%s"
                  % (python, native, off, reference, len(wrong), (": " + "; ".join(wrong[:4])) if wrong else ""))
    print("%d programs, %d failed; callee-saved registers in upper frames: %d recovered, %d wrong"
          % (res.stats.get("programs", 0), res.failed, res.stats.get("registers recovered", 0),
             res.stats.get("registers wrong", 0)))


if __name__ == "__main__":
    ap = H.parser(__doc__, gdb="gdb-multiarch", runs=False, timeout=300)
    ap.add_argument("--pac", action="store_true", help="also the PAuth fixture (qemu -cpu max)")
    H.main(run, ap)

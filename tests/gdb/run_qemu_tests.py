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
import json
import os
import shutil
import socket
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
FIXTURES = os.path.normpath(os.path.join(HERE, "..", "fixtures"))
sys.path.insert(0, HERE)
from run_gdb_tests import evaluate  # noqa: E402

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


def free_port():
    s = socket.socket()
    s.bind(("127.0.0.1", 0))
    port = s.getsockname()[1]
    s.close()
    return port


def listening(port):
    """Whether a socket listens on `port`, from /proc/net/tcp*: the stub
    takes one connection, so it must not be probed by connecting."""
    for table in ("/proc/net/tcp", "/proc/net/tcp6"):
        try:
            with open(table) as f:
                next(f)
                for line in f:
                    fields = line.split()
                    if int(fields[1].rsplit(":", 1)[1], 16) == port and fields[3] == "0A":
                        return True
        except OSError:
            continue
    return False


def run_one(gdb, loader, path, arch, pac, timeout):
    program = os.path.join(FIXTURES, path)
    port = free_port()
    qemu = [QEMU[arch], "-g", str(port)]
    if "-pac" in path:
        qemu += ["-cpu", "max"]
    mode = "trap"
    stub = subprocess.Popen(qemu + [program, mode], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        deadline = time.time() + 20
        while not listening(port):
            if stub.poll() is not None or time.time() > deadline:
                return None, "qemu did not start listening on port %d" % port
            time.sleep(0.05)
        with tempfile.TemporaryDirectory() as tmp:
            out = os.path.join(tmp, "result.json")
            setup = ["handle SIGUSR1 nostop noprint pass"] if "sighandler" in path else []
            check = {"scenario": "remote", "remote": "127.0.0.1:%d" % port, "args": mode, "setup": setup,
                     "output": out, "limit": 64}
            script = os.path.join(tmp, "check.gdb")
            with open(script, "w") as f:
                f.write("set pagination off\nset confirm off\n")
                f.write("source %s\n" % loader)
                f.write("python import sys; sys.path.insert(0, %r)\n" % HERE)
                f.write("python import json, gdb_checks; gdb_checks.CHECK = json.loads(%r); gdb_checks.main()\n"
                        % json.dumps(check))
                f.write("kill\n")
            try:
                proc = subprocess.run([gdb, "-nx", "-q", "-batch", "-x", script, program], capture_output=True,
                                      text=True, timeout=timeout, stdin=subprocess.DEVNULL)
            except subprocess.TimeoutExpired:
                return None, "GDB timed out"
            if not os.path.exists(out):
                return None, "GDB wrote no result: %s" % proc.stderr[-1500:]
            with open(out) as f:
                return json.load(f), None
    finally:
        if stub.poll() is None:
            stub.kill()
        stub.wait()


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

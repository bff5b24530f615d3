#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""The plugin on aarch64 and s390x fixtures under qemu-user's gdbstub.

Each static cross fixture (gas 2.40 and 2.47 for aarch64, PAuth included;
gas 2.47 for s390x, big-endian) is started with `qemu-ARCH -g PORT`, LLDB
connects with gdb-remote and continues to the fixture's stop (aarch64: brk
#0, s390x: a NULL store). `sframe bt` must give the fixture's call chain and
`sframe compare` must find LLDB's frames equal where both have them, or name
the SFrame limit where the walk ends (static glibc has no FDEs), and the
callee-saved registers recovered in upper frames equal to LLDB's.

usage: test_qemu.py --plugin libsfunwind_lldb.so --lldb lldb-23 [--work DIR] [-v]
"""

import os
import shutil
import socket
import subprocess
import time

import lldb_harness as H

RECURSE = ["fixture_leaf"] + ["recurse"] * 6 + ["level_3", "level_2", "level_1", "main"]
SIGNAL = ["fixture_leaf", "handler_level_1", "on_signal"]


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def listening(port):
    """Whether something listens on the TCP port (read from /proc, so the
    one-connection stub is not touched)."""
    want = ":%04X" % port
    for table in ("/proc/net/tcp", "/proc/net/tcp6"):
        try:
            with open(table) as f:
                for line in f.readlines()[1:]:
                    cols = line.split()
                    if cols[1].endswith(want) and cols[3] == "0A":
                        return True
        except OSError:
            pass
    return False


def run_one(s, res, label, qemu, path, chain, extra_settings=()):
    port = free_port()
    cpu = ["-cpu", "max"] if "aarch64" in qemu else []
    proc = subprocess.Popen([qemu] + cpu + ["-g", str(port), path], stdout=subprocess.DEVNULL,
                            stderr=subprocess.DEVNULL)
    try:
        deadline = time.time() + 10
        while not listening(port) and time.time() < deadline:
            time.sleep(0.02)
        if not res.check(label + ": qemu's gdbstub listens", listening(port)):
            return
        for line in extra_settings:
            s.cmd(line)
        target = s.create(path)
        try:
            err = s.lldb.SBError()
            process = target.ConnectRemote(s.debugger.GetListener(), "connect://127.0.0.1:%d" % port,
                                           "gdb-remote", err)
            if not res.check(label + ": gdb-remote connected", process.IsValid() and err.Success(),
                             err.GetCString() or ""):
                return
            process.Continue()
            thread = process.GetSelectedThread()
            if "sighandler" in path and "SIGUSR1" in (thread.GetStopDescription(100) or ""):
                process.Continue()  # SIGUSR1 first
                thread = process.GetSelectedThread()
            res.check(label + ": stopped by a signal", thread.GetStopReason() == s.lldb.eStopReasonSignal,
                      "stop reason %d" % thread.GetStopReason())
            bt = s.json_cmd("sframe bt --json")
            names = [f["function"].split("+")[0] for f in bt["frames"]]
            res.check(label + ": sframe bt gives the call chain", names[:len(chain)] == chain,
                      "got %s" % names)
            allowed = H.KNOWN_END_LIMITS | {"outermost"}
            if "s390x/sighandler" in label:
                # LLDB does not unwind s390x's signal trampoline (on the
                # stack, under qemu): its frames end at on_signal, SFrame's
                # one later, where no module covers the trampoline.
                allowed = allowed | {"reference-ended"}
            data = H.compare_stop(s, res, label + ": sframe compare", allowed_limits=allowed)
            # The callee-saved registers the analysis recovers (AArch64
            # x19-x28, d8-d15; s390x r6-r10, r12, r13, f8-f15) against
            # LLDB's CFI values: compare_stop fails on a wrong one; some
            # must be compared in every recurse program's upper frames.
            regs = (data or {}).get("callee_saved") or {}
            if "recurse" in label:
                res.check(label + ": callee-saved registers compared with LLDB's",
                          regs.get("compared", 0) > 0 and regs.get("equal", 0) > 0,
                          "%s" % {k: regs.get(k) for k in ("compared", "equal", "unknown", "wrong")}
                          if regs else (data or {}).get("callee_saved_withheld", "no callee_saved in the JSON"))
            ok, out, err = s.cmd("sframe show-unwind -n fixture_leaf")
            res.check(label + ": show-unwind", ok and "row[0]" in out, out + err)
            process.Kill()
        finally:
            s.delete(target)
    finally:
        proc.kill()
        proc.wait()


def run(args, work, res):
    H.use_cache(work, "qemu")
    s = H.Session(args.plugin, work)
    print("LLDB: " + s.version)
    # Signed return addresses: LLDB must know how many bits hold the address.
    pac = ["settings set target.process.virtual-addressable-bits 48"]
    cases = []
    for writer in ("gas-2.40-aarch64", "gas-2.47-aarch64"):
        for prog, chain in (("recurse-O2-nofp-static", RECURSE), ("recurse-O2-fp-static", RECURSE),
                            ("sighandler-O2-nofp-static", SIGNAL)):
            cases.append(("%s/%s" % (writer, prog), "qemu-aarch64", H.fixture(writer, prog), chain, pac))
    cases.append(("gas-2.47-aarch64/recurse-O2-nofp-pac-static", "qemu-aarch64",
                  H.fixture("gas-2.47-aarch64", "recurse-O2-nofp-pac-static"), RECURSE, pac))
    for prog, chain in (("recurse-O2-nofp-static", RECURSE), ("recurse-O2-fp-static", RECURSE),
                        ("sighandler-O2-nofp-static", SIGNAL)):
        cases.append(("gas-2.47-s390x/" + prog, "qemu-s390x", H.fixture("gas-2.47-s390x", prog), chain, ()))
    for label, qemu, path, chain, settings in cases:
        if args.only and args.only not in label:
            continue
        if not res.check(label + ": " + qemu + " is installed", shutil.which(qemu) is not None):
            continue
        run_one(s, res, label, qemu, path, chain, settings)


if __name__ == "__main__":
    H.main(run)

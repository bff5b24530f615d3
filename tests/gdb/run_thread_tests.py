#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""Threads that share a call site: each thread's walk is its own.

tests/gdb/src/threads.c is built here with the toolchain at hand (`cc`
with `-Wa,--gsframe`), and an SFrame-only copy made with objcopy. The main
thread stops at a breakpoint below call_through(); the worker waits in libc
(GDB's own unwinders take that frame) below the same call site. After the
main thread's frame 0 was unwound again (`maint flush register-cache`,
`frame`), the worker's backtrace is taken, then the main thread's; each must
equal what plain GDB shows on the CFI build, with the Python path and with
the native path. (With Debian 12's glibc the worker's frame 1 is
call_through, with the level and PC of the caller the main thread's step
produced: taking one for the other gave the worker the main thread's
stack. sid's glibc waits a few frames deeper.)

usage: run_thread_tests.py --gdb GDB --loader LOADER [--runs host|chroot] [--cc cc]"""

import os
import re
import subprocess
import tempfile

import gdb_harness as H

SOURCE = os.path.join(H.HERE, "src", "threads.c")
SESSION = ["break stop_here", "run", "maint flush register-cache", "frame",
           "thread 2", "echo @@worker\\n", "bt", "thread 1", "echo @@main\\n", "bt"]


def build(cc, work):
    """(CFI build, SFrame-only copy) of threads.c, or raises with the
    compiler's or objcopy's output."""
    program = os.path.join(work, "threads")
    noeh = program + "-noeh"
    for cmd in ([cc, "-O2", "-fomit-frame-pointer", "-pthread", "-Wa,--gsframe", "-o", program, SOURCE],
                ["objcopy", "--remove-section", ".eh_frame", "--remove-section", ".eh_frame_hdr", program, noeh]):
        p = subprocess.run(cmd, capture_output=True, text=True)
        if p.returncode != 0:
            raise RuntimeError("%s: %s" % (" ".join(cmd), p.stdout + p.stderr))
    return program, noeh


def backtraces(text):
    """{"worker": [(pc, function)], "main": [...]} from the session's output."""
    return {name: H.first_backtrace(lines) for name, lines in H.marked(text).items()}


def run(args, res):
    cc = H.c_compiler(args, res)
    if cc is None:
        return
    g = H.Gdb(args.gdb, args.loader, args.timeout)
    with tempfile.TemporaryDirectory() as work:
        program, noeh = build(cc, work)
        proc, error = g.run(SESSION, [program], sfunwind=None)
        res.check("reference: the CFI build's session ran", proc is not None, error)
        if proc is None:
            return
        want = backtraces(proc.stdout)
        worker = [f for _, f in want.get("worker", [])]
        at = worker.index("call_through") if "call_through" in worker else 0
        res.check("reference: the worker waits in libc below call_through, below worker",
                  at > 0 and worker[at:at + 2] == ["call_through", "worker"], proc.stdout)
        res.check("reference: the main thread stops below call_through, below main",
                  [f for _, f in want.get("main", [])][:3] == ["stop_here", "call_through", "main"], proc.stdout)
        for path in ("python", "native"):
            proc, error = g.run(SESSION + ["sframe status"], [noeh], sfunwind=path)
            res.check("%s path: the SFrame-only session ran" % path, proc is not None, error)
            if proc is None:
                continue
            got = backtraces(proc.stdout)
            for thread in ("worker", "main"):
                res.check("%s path: the %s thread's backtrace equals the CFI build's (%d frames)"
                          % (path, thread, len(want.get(thread, []))),
                          got.get(thread) == want.get(thread),
                          "got %s\nwant %s\n%s" % (got.get(thread), want.get(thread), proc.stdout + proc.stderr))
            m = re.search(r"%s path[^:]*: (\d+) frames unwound" % path, proc.stdout)
            res.check("%s path: sfunwind unwound frames" % path, m is not None and int(m.group(1)) > 0,
                      proc.stdout)


if __name__ == "__main__":
    ap = H.parser(__doc__)  # --runs: the program is built here, for either
    ap.add_argument("--cc", help="the C compiler (default: cc)")
    H.main(run, ap, ok_detail=False)  # the details are sessions: shown for failures

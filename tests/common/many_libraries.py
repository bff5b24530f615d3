# SPDX-License-Identifier: MIT
"""Writes and builds a program of N shared libraries, a frame in each: main
calls f1 in lib1.so, fK calls fK+1 in libK+1.so (not a tail call), and fN
raises SIGTRAP. Two builds: with CFI (`.eh_frame`) and SFrame, and an
SFrame-only copy of every file (objcopy), whose program finds its own
copies of the libraries (run path). Used by tests/gdb/run_many_libraries_tests.py,
bench/many_libraries.py and tests/lldb/test_many_libraries.py."""

import concurrent.futures
import os
import subprocess

CFLAGS = ["-O2", "-fno-optimize-sibling-calls", "-Wa,--gsframe"]


def _run(cmd):
    p = subprocess.run(cmd, capture_output=True, text=True)
    if p.returncode != 0:
        raise RuntimeError("%s: %s" % (" ".join(cmd), p.stdout + p.stderr))


def _library_source(k, n):
    if k == n:
        return "#include <signal.h>\nint f%d(int x) { raise(SIGTRAP); return x + 1; }\n" % k
    return "int f%d(int);\nint f%d(int x) { return f%d(x + %d) * 3 + 1; }\n" % (k + 1, k, k + 1, k)


def build(cc, work, n, jobs=2):
    """(CFI build's program, SFrame-only program) under work/cfi and
    work/sframe; raises RuntimeError with the tool's output on failure."""
    cfi = os.path.join(work, "cfi")
    sframe = os.path.join(work, "sframe")
    os.makedirs(cfi, exist_ok=True)
    os.makedirs(sframe, exist_ok=True)

    def library(k):
        source = os.path.join(work, "l%d.c" % k)
        with open(source, "w") as f:
            f.write(_library_source(k, n))
        lib = os.path.join(cfi, "lib%d.so" % k)
        _run([cc] + CFLAGS + ["-fPIC", "-shared", "-o", lib, source])
        _run(["objcopy", "--remove-section", ".eh_frame", "--remove-section", ".eh_frame_hdr", lib,
              os.path.join(sframe, "lib%d.so" % k)])

    with concurrent.futures.ThreadPoolExecutor(max_workers=jobs) as pool:
        list(pool.map(library, range(1, n + 1)))
    main = os.path.join(work, "main.c")
    with open(main, "w") as f:
        f.write("int f1(int);\nint main(void) { return f1(0) & 1; }\n")
    libs = ["-l%d" % k for k in range(1, n + 1)]
    for where in (cfi, sframe):
        _run([cc] + CFLAGS + ["-o", os.path.join(where, "main"), main, "-L" + where] + libs
             + ["-Wl,-rpath," + where])
    program = os.path.join(sframe, "main")
    _run(["objcopy", "--remove-section", ".eh_frame", "--remove-section", ".eh_frame_hdr", program])
    return os.path.join(cfi, "main"), program

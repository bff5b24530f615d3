#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""A program of many shared libraries: every frame in its own library.

tests/common/many_libraries.py writes a program whose main calls f1 in
lib1.so, f1 calls f2 in lib2.so, ... down to fN, which raises SIGTRAP; it is
built here with the toolchain at hand (`cc` with `-Wa,--gsframe`), and an
SFrame-only copy of every file is made with objcopy. GDB loads the libraries
one new_objfile event after another: each frame's backtrace, with the Python
path and with the native path, live and from a core, must equal what plain
GDB shows on the CFI build, and sfunwind must have read the load addresses
(a listing of every library's sections) a few times, not once
per library (which made GDB's start quadratic in the libraries: 15 s for
300 of them). The same under gdbserver, where the libraries are "target:"
files whose SFrame is read from the target's memory.

usage: run_many_libraries_tests.py --gdb GDB --loader LOADER [--libraries N] [--cc cc]"""

import os
import re
import shutil
import signal
import subprocess
import sys
import tempfile

import gdb_harness as H

sys.path.insert(0, os.path.join(H.HERE, "..", "common"))
import many_libraries  # noqa: E402

# At most this many section listings in a session: the start, a frame
# after the libraries came, the status command itself.
MAX_LISTINGS = 6


def backtrace(text):
    """[(pc or None, function)] of the first backtrace in text."""
    return H.first_backtrace(text.splitlines())


def session_equal(g, res, label, commands, gdb_args, path, want):
    """Runs an SFrame-only session on `path` and checks its first backtrace
    against `want`; the finished process, or None when it did not run."""
    proc, error = g.run(commands, gdb_args, sfunwind=path)
    res.check("%s: the SFrame-only session ran" % label, proc is not None, error)
    if proc is None:
        return None
    got = backtrace(proc.stdout)
    res.check("%s: the backtrace equals the CFI build's (%d frames)" % (label, len(want)),
              got == want, "got %s\nwant %s\n%s" % (got, want, proc.stdout[-3000:] + proc.stderr))
    return proc


def run(args, res):
    g = H.Gdb(args.gdb, args.loader, args.timeout)
    cc = H.c_compiler(args, res)
    if cc is None:
        return
    with tempfile.TemporaryDirectory() as work:
        program, noeh = many_libraries.build(cc, work, args.libraries)
        proc, error = g.run(["run", "bt"], [program], sfunwind=None)
        res.check("reference: the CFI build's session ran", proc is not None, error)
        if proc is None:
            return
        want = backtrace(proc.stdout)
        names = [f for _, f in want]
        chain = ["f%d" % k for k in range(args.libraries, 0, -1)] + ["main"]
        res.check("reference: %d frames end with f%d ... f1, main" % (len(want), args.libraries),
                  names[-len(chain):] == chain, proc.stdout[-3000:])
        core = os.path.join(work, "core")
        subprocess.run([args.gdb, "-nx", "-batch", "-ex", "run", "-ex", "gcore " + core, noeh],
                       capture_output=True, timeout=args.timeout)
        res.check("a core of the SFrame-only program was written", os.path.exists(core))
        # Cores stopped at a breakpoint in fN: frame 0 is in a module with
        # SFrame, which the JIT reader declines before the modules are placed.
        at = {}
        for name, prog in (("cfi", program), ("sframe", noeh)):
            at[name] = os.path.join(work, "core-at-f%d-%s" % (args.libraries, name))
            subprocess.run([args.gdb, "-nx", "-batch", "-ex", "set breakpoint pending on", "-ex",
                            "break f%d" % args.libraries, "-ex", "run", "-ex", "gcore " + at[name], prog],
                           capture_output=True, timeout=args.timeout)
        res.check("cores at a breakpoint in f%d were written" % args.libraries,
                  all(os.path.exists(c) for c in at.values()))
        for path in ("python", "native"):
            # The core is loaded after sfunwind (as when installed, from
            # GDB's system gdbinit), so that its libraries come as events.
            for what, session, gdb_args in (("live", ["run", "bt", "sframe status"], [noeh]),
                                            ("core", ["file " + noeh, "core-file " + core, "bt",
                                                      "sframe status"], [])):
                if what == "core" and not os.path.exists(core):
                    continue
                label = "%s path, %s" % (path, what)
                proc = session_equal(g, res, label, session, gdb_args, path, want)
                if proc is None:
                    continue
                m = re.search(r"%s path[^:]*: (\d+) frames unwound" % path, proc.stdout)
                res.check("%s: sfunwind unwound the %d library frames" % (label, args.libraries),
                          m is not None and int(m.group(1)) >= args.libraries, proc.stdout[-2000:])
                m = re.search(r"section listings read (\d+) times", proc.stdout)
                res.check("%s: the load addresses were listed at most %d times for %d libraries (%s)"
                          % (label, MAX_LISTINGS, args.libraries, m.group(1) if m else "no count"),
                          m is not None and int(m.group(1)) <= MAX_LISTINGS, proc.stdout[-2000:])

        if all(os.path.exists(c) for c in at.values()):
            check_at_breakpoint(g, res, args.libraries, program, noeh, at)
        check_remote(g, res, args, program, noeh)


def check_at_breakpoint(g, res, n, program, noeh, at):
    """Frame 0 in fN: on the native path the Python unwinder places the
    modules and unwinds that frame, the JIT reader the others."""
    proc, error = g.run(["bt"], [program, at["cfi"]], sfunwind=None)
    res.check("reference at f%d: the CFI build's core session ran" % n, proc is not None, error)
    if proc is None:
        return
    want = backtrace(proc.stdout)
    res.check("reference at f%d: %d frames from f%d to main" % (n, len(want), n),
              [f for _, f in want][:1] == ["f%d" % n] and [f for _, f in want][-1:] == ["main"],
              proc.stdout[-3000:])
    for path in ("python", "native"):
        label = "%s path, core at f%d" % (path, n)
        proc = session_equal(g, res, label, ["file " + noeh, "core-file " + at["sframe"], "bt", "sframe status"],
                             [], path, want)
        if proc is None:
            continue
        counts = {p: int(c) for p, c in re.findall(r"^(python|native) path[^:]*: (\d+) frames unwound",
                                                    proc.stdout, re.M)}
        # f1 ... fN and main.
        expect = {"python": n + 1, "native": 0} if path == "python" else {"python": 1, "native": n}
        res.check("%s: frames unwound per path %s%s"
                  % (label, expect, " (frame 0 by Python: the JIT reader declined it before the modules"
                     " were placed)" if path == "native" else ""),
                  counts == expect, proc.stdout[-2000:])


def stop_gdbservers(program):
    """Ends the gdbserver processes still serving `program`. Seen here: when
    GDB died (the bug check_remote_claim tests), its gdbserver went on
    running on a core, its pipe closed."""
    for pid in os.listdir("/proc"):
        if not pid.isdigit():
            continue
        try:
            with open("/proc/%s/cmdline" % pid, "rb") as f:
                argv = f.read().split(b"\0")
        except OSError:
            continue
        if os.path.basename(argv[0]) == b"gdbserver" and os.fsencode(program) in argv:
            try:
                os.kill(int(pid), signal.SIGKILL)
            except OSError:
                pass


def check_remote(g, res, args, program, noeh):
    """The program under gdbserver: GDB names its libraries "target:..."
    and sfunwind reads their .sframe from the target's memory, where it
    finds them in the section listing. They are opened together when the modules
    are placed: opened as each loaded, they took a listing each."""
    gdbserver = args.gdbserver or shutil.which("gdbserver")
    res.check("gdbserver is installed (scripts/setup-host.sh, the sid chroot)", gdbserver is not None)
    if gdbserver is None:
        return
    n = args.libraries

    def remote(prog):
        return ["target remote | %s - %s" % (gdbserver, prog), "continue", "bt"]

    proc, error = g.run(remote(program), [program], sfunwind=None)
    stop_gdbservers(program)
    res.check("remote reference: the CFI build's session under gdbserver ran", proc is not None, error)
    if proc is None:
        return
    want = backtrace(proc.stdout)
    res.check("remote reference: %d frames from f%d to main" % (len(want), n),
              ("f%d" % n) in [f for _, f in want] and [f for _, f in want][-1:] == ["main"],
              proc.stdout[-3000:] + proc.stderr[-2000:])
    for path in ("python", "native"):
        label = "%s path, under gdbserver" % path
        proc = session_equal(g, res, label, remote(noeh) + ["sframe status"], [noeh], path, want)
        stop_gdbservers(noeh)
        if proc is None:
            continue
        from_target = re.findall(r"^  target:\S+: .*, from target memory; bias", proc.stdout, re.M)
        res.check("%s: the %d libraries' SFrame was read from the target's memory (%d)"
                  % (label, n, len(from_target)), len(from_target) == n, proc.stdout[-3000:])
        m = re.search(r"%s path[^:]*: (\d+) frames unwound" % path, proc.stdout)
        res.check("%s: sfunwind unwound the %d library frames" % (label, n),
                  m is not None and int(m.group(1)) >= n, proc.stdout[-2000:])
        m = re.search(r"section listings read (\d+) times", proc.stdout)
        res.check("%s: the load addresses were listed at most %d times for %d libraries (%s)"
                  % (label, MAX_LISTINGS, n, m.group(1) if m else "no count"),
                  m is not None and int(m.group(1)) <= MAX_LISTINGS, proc.stdout[-2000:])
    check_remote_claim(g, res, remote, noeh, want)


def check_remote_claim(g, res, remote, noeh, want):
    """lib1.so's section header claims a 1 TiB .sframe (the program loads by
    its program headers, unchanged). Read from the target at that size, it
    made GDB allocate 1 TiB and end the session ("virtual memory
    exhausted"): the library is refused with the size in the error, and
    every other library's frame is unwound. Last: lib1.so is patched in
    place."""
    lib1 = os.path.join(os.path.dirname(noeh), "lib1.so")
    patch = os.path.join(H.HERE, "..", "fixtures", "patch_sframe.py")
    subprocess.run([sys.executable, patch, lib1, lib1 + ".claim", "claim", str(1 << 40)], check=True)
    os.replace(lib1 + ".claim", lib1)
    label = "python path, under gdbserver, lib1.so claiming a 1 TiB .sframe"
    proc, error = g.run(remote(noeh) + ["sframe status"], [noeh], sfunwind="python")
    stop_gdbservers(noeh)
    res.check("%s: the session ran to its end" % label,
              proc is not None and proc.returncode == 0 and "internal-error" not in proc.stdout + proc.stderr,
              error or (proc.stdout[-2000:] + proc.stderr[-2000:]))
    if proc is None:
        return
    refused = re.search(r"^  target:\S+/lib1\.so: SFrame not usable: \.sframe at 0x[0-9a-f]+ is %d bytes"
                        % (1 << 40), proc.stdout, re.M)
    res.check("%s: sframe status refuses lib1.so, naming the size" % label, refused is not None,
              proc.stdout[-2000:])
    got = backtrace(proc.stdout)
    upto_f2 = [f for _, f in want].index("f2") + 1
    res.check("%s: the frames down to f2 equal the CFI build's (%d)" % (label, upto_f2),
              got[:upto_f2] == want[:upto_f2], "got %s\nwant %s" % (got[:upto_f2], want[:upto_f2]))


if __name__ == "__main__":
    ap = H.parser(__doc__)  # --runs: the program is built here, for either
    ap.add_argument("--cc", help="the C compiler (default: cc)")
    ap.add_argument("--libraries", type=int, default=120, help="how many shared libraries (default 120)")
    ap.add_argument("--gdbserver", help="gdbserver for the remote sessions (default: the one on PATH)")
    H.main(run, ap, ok_detail=False)  # the details are sessions: shown for failures

#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""Two inferiors, two programs at the same addresses: each inferior's
frames are unwound with its own program's SFrame.

GDB runs PIE programs at one load address (address space randomization
off), so two inferiors' programs overlap, and a frame's PC alone does not
say which program it is in. Each session runs program A in inferior 1 and
program B in inferior 2 (add-inferior), takes B's backtrace, switches back
to inferior 1 and takes A's; then, in the same session and at the same
stops, GDB's own DWARF unwinder (`sframe disable`) takes both again (the
fixtures have .eh_frame and .sframe): the backtraces must be equal, and
sfunwind must have unwound frames. A placement made for one program space
and used for another made A's frames from B's rows (wrong callers, made-up
frames). The native path is suspended while there are two inferiors (the
JIT reader is told no program space), which `sframe status` says; after
remove-inferiors it unwinds again, and A's backtrace is checked once more.

usage: run_inferior_tests.py --gdb GDB --loader LOADER [--runs host|chroot]"""

import re

import gdb_harness as H

# (A, B): pairs whose programs' FDEs overlap where the other's frames are.
PAIRS = [("recurse-O2-nofp", "noreturn-O2-nofp"),
         ("noreturn-O2-nofp", "cxx_exceptions-O2-nofp"),
         ("plt-O2-nofp/plt", "sighandler-O2-nofp"),
         ("deep10000-O2-nofp", "plt-O2-nofp/plt")]
DEPTH = 8


def session(program_b, path):
    bt = "bt %d" % DEPTH
    cmds = ["run", "add-inferior -exec %s" % program_b, "inferior 2", "run",
            "echo @@B\\n", bt, "inferior 1", "echo @@A\\n", bt, "echo @@status\\n", "sframe status",
            "sframe disable", "echo @@A-cfi\\n", bt, "inferior 2", "echo @@B-cfi\\n", bt]
    if path == "native":
        # Back to one inferior: the native path resumes.
        cmds += ["kill", "inferior 1", "remove-inferiors 2", "sframe enable native",
                 "echo @@status-one\\n", "sframe status", "echo @@A-one\\n", bt, "echo @@status-after\\n",
                 "sframe status"]
    return cmds


def unwound(lines, path):
    m = re.search(r"^%s path[^:]*: (\d+) frames unwound" % path, "\n".join(lines), re.M)
    return int(m.group(1)) if m else -1


def run(args, res):
    g = H.Gdb(args.gdb, args.loader, args.timeout)
    fixtures = "gas-2.40" if args.runs == "host" else "gas-2.47"
    for a, b in PAIRS:
        program_a = H.fixture("bin", fixtures, a)
        program_b = H.fixture("bin", fixtures, b)
        for path in ("python", "native"):
            label = "%s path, %s then %s" % (path, a, b)
            proc, error = g.run(session(program_b, path), [program_a], sfunwind=path)
            res.check("%s: the session ran" % label, proc is not None, error)
            if proc is None:
                continue
            out = H.marked(proc.stdout)
            detail = proc.stdout[-4000:] + proc.stderr[-2000:]
            for name in ("B", "A"):
                got, want = H.first_backtrace(out.get(name, [])), H.first_backtrace(out.get(name + "-cfi", []))
                res.check("%s: inferior %s's backtrace equals GDB's DWARF unwinder's (%d frames)"
                          % (label, name, len(want)), len(want) >= 3 and got == want,
                          "got %s\nwant %s\n%s" % (got, want, detail))
            status = out.get("status", [])
            # With two inferiors the Python unwinder does the work on both paths.
            res.check("%s: sfunwind's Python unwinder unwound the frames" % label,
                      unwound(status, "python") >= 2 * 2, "\n".join(status))
            res.check("%s: `sframe status` says B's program is not placed for inferior 1" % label,
                      re.search(r"^  \S*%s: .*not placed \(loaded by another inferior's program"
                                % re.escape(b.split("/")[-1]), "\n".join(status), re.M) is not None,
                      "\n".join(status))
            suspended = any("suspended while there is more than one inferior" in line for line in status)
            res.check("%s: `sframe status` says the native path is %s" % (
                label, "suspended" if path == "native" else "not suspended"),
                suspended == (path == "native"), "\n".join(status))
            if path == "native":
                one = out.get("status-one", [])
                res.check("%s: with one inferior again, the native path is not suspended" % label,
                          not any("suspended" in line for line in one) and unwound(one, "native") >= 0,
                          "\n".join(one))
                got, want = H.first_backtrace(out.get("A-one", [])), H.first_backtrace(out.get("A-cfi", []))
                res.check("%s: the native path's backtrace of inferior 1 equals GDB's DWARF unwinder's" % label,
                          len(want) >= 3 and got == want, "got %s\nwant %s\n%s" % (got, want, detail))
                res.check("%s: the native path unwound them" % label,
                          unwound(out.get("status-after", []), "native") > unwound(one, "native"),
                          "\n".join(out.get("status-after", [])))


if __name__ == "__main__":
    H.main(run, H.parser(__doc__), ok_detail=False)

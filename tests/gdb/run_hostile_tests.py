#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""Live hostile stacks in GDB with sfunwind loaded (tests/fixtures/src/hostile.c).

For each hostile program (gas 2.40 SFrame v1 and gas 2.47 v3, -fp and -nofp,
static) and each mode (ra: return address overwritten, cycle: a frame that is
its own caller, sp: RSP unmapped, huge: a 64 MiB frame), GDB stops at the
int3 and, with the Python path, the native path and GDB alone:
  - `bt` ends within MAX_FRAMES frames and MAX_SECONDS, either in main or
    with GDB's "Backtrace stopped: <reason>" (the reason each mode must give
    is in MODES), and lists the same frames as GDB alone;
  - the next commands work (`info registers rip`, `frame 0`, `sframe status`,
    `sframe compare`), and `sframe status` counts what sfunwind did.
The corrupt-section copy (-badsframe, .sframe header with 0x10000 FDEs) must
be reported once in `sframe status` (before and after run and every bt),
unwound by GDB's own unwinders on both paths with the frames of GDB alone,
and never counted as unwound by SFrame. The damaged-FDE copy (-badfre,
level_2's FDE points at FREs past the section) must give GDB's own frames
too, with every other frame unwound by SFrame and the failure reported with
the FDE and the pc.

usage: run_hostile_tests.py --gdb GDB --loader LOADER [--runs host|chroot]
Exit status 1 if any check failed (a GDB that hangs past the time limit or
dies is a failure)."""

import os
import re

import gdb_harness as H

FIXTURES = H.fixture("bin")
MAX_FRAMES = 64
MAX_SECONDS = 10.0

# mode -> (regex the end of every bt must match, functions the bt must start with)
MODES = {
    # Frame 1's PC is the garbage; GDB's heuristic unwinder carries on through
    # the stack words and reaches main by the frame-pointer chain, or stops.
    "ra": (r"(#\d+ .* in main \(\)|Backtrace stopped: .+)$", ["hostile_leaf", "0x4141414141414141"]),
    "cycle": (r"Backtrace stopped: previous frame identical to this frame \(corrupt stack\?\)$", ["hostile_leaf"]),
    "sp": (r"Backtrace stopped: Cannot access memory at address 0x10$", ["hostile_leaf"]),
    # A legal 64 MiB frame: its CFA is readable, the walk is complete.
    "huge": (r"#3 .* in main \(\)$", ["hostile_leaf", "level_2", "level_1", "main"]),
}

def frames(bt):
    """[(level, pc or None, function)] of a `bt` output."""
    rows = []
    for m in re.finditer(r"^#(\d+) +(?:(0x[0-9a-f]+) in )?(\S+)", bt, re.M):
        rows.append((int(m.group(1)), m.group(2), m.group(3)))
    return rows


def names(rows):
    return [pc if fn == "??" else fn for _, pc, fn in rows]


def session(c, g, label, program, args, cmds):
    """Runs cmds in one GDB on program (`set args` args); their results, or
    None when the session failed or did not run every command (checked)."""
    results = g.commands(program, cmds, set_args=args)
    if not c.check("%s: GDB session ended normally" % label, not isinstance(results, str), str(results)):
        return None
    if not c.check("%s: every command ran" % label, len(results) == len(cmds)):
        return None
    return results


def step_ok(c, label, r, want=None):
    cmd, out, err, secs = r
    ok = err is None and secs < MAX_SECONDS and (want is None or re.search(want, out, re.S | re.M) is not None)
    return c.check("%s: `%s` works (%.2f s)" % (label, cmd, secs), ok,
                   err or out.strip().replace("\n", " | ")[:300])


PATH_STEPS = ["bt", "info registers rip", "frame 0", "sframe status", "sframe compare", "bt", "sframe status"]


def check_mode(c, g, program, mode):
    label = "%s %s" % (os.path.relpath(program, FIXTURES), mode)
    cmds = ["run", "print $_siginfo.si_signo", "info symbol $pc"]
    for path in ("python", "native"):
        cmds += ["sframe enable " + path] + PATH_STEPS
    cmds += ["sframe disable", "bt", "info registers rip"]
    results = session(c, g, label, program, mode, cmds)
    if results is None:
        return
    signo, where = results[1], results[2]
    c.check("%s: stopped by SIGTRAP in hostile_leaf" % label,
            re.search(r"= 5$", signo[1].strip()) is not None and where[1].startswith("hostile_leaf"),
            "%s %s %s" % (signo[1:3], where[1:3], results[0][1:3]))
    end_re, start = MODES[mode]
    reference = frames(results[-2][1])
    c.check("%s: GDB alone: bt starts %s" % (label, start), names(reference)[:len(start)] == start,
            str(names(reference)))
    c.check("%s: GDB alone: bt ends with a reason or in main" % label,
            re.search(end_re, results[-2][1].strip()) is not None, results[-2][1][-200:])
    i = 3
    for path in ("python", "native"):
        tag = "%s [%s]" % (label, path)
        step_ok(c, tag, results[i])
        group = results[i + 1:i + 1 + len(PATH_STEPS)]
        i += 1 + len(PATH_STEPS)
        for r in (group[0], group[5]):
            cmd, out, err, secs = r
            rows = frames(out)
            c.check("%s: bt ends within %d frames and %.0f s (%d frames, %.2f s)" % (
                tag, MAX_FRAMES, MAX_SECONDS, len(rows), secs), err is None and 0 < len(rows) <= MAX_FRAMES
                    and secs < MAX_SECONDS, str(err))
            last = out.strip().splitlines()[-1] if out.strip() else ""
            c.check("%s: bt ends with %r" % (tag, last), re.search(end_re, out.strip()) is not None, last)
            # ra: past the garbage PC, GDB's heuristic unwinder guesses SP
            # from stack words; where a guess lands in a function with an
            # FDE, SFrame carries on (to main) while GDB alone stops with
            # "frame did not save the PC": only the frames up to the garbage
            # are GDB's.
            same = rows[:2] == reference[:2] if mode == "ra" else rows == reference
            c.check("%s: bt frames are GDB's own" % tag, same,
                    "%s, GDB alone %s" % (names(rows), names(reference)))
        step_ok(c, tag, group[1], r"rip +0x[0-9a-f]+")
        step_ok(c, tag, group[2], r"#0 .*hostile_leaf")
        step_ok(c, tag, group[3], r"active path: %s" % path)
        # compare walks both unwinders over a broken stack: it may report a
        # difference, but must answer, in time, without an error.
        step_ok(c, tag, group[4], r"SFrame|CFI|walk")
        status = group[6][1]
        counters = {"python": r"python path: (\d+) frames unwound, (\d+) ended the stack, (\d+) failures",
                    "native": r"native path \(JIT reader loaded\): (\d+) frames unwound, (\d+) declined, "
                              r"(\d+) failures"}[path]
        m = re.search(counters, status)
        if c.check("%s: sframe status has the %s counters" % (tag, path), m is not None, status):
            unwound = int(m.group(1))
            # hostile_leaf's own FDE unwinds frame 0 in every mode (its CFA
            # rule is readable); in sp mode the return address is not.
            c.check("%s: sfunwind unwound frames (%d)" % (tag, unwound), unwound > 0 or mode == "sp", status)
            if mode == "sp":
                c.check("%s: the unreadable return address is counted as a failure" % tag,
                        int(m.group(3)) > 0, status)
    step_ok(c, label + " [off]", results[-1], r"rip +0x[0-9a-f]+")


def own_walks(c, label, results, alone, walks):
    """GDB alone (the bt of results[alone]) unwinds to main, and the bt of
    each (index, path) in walks is that walk. Returns GDB alone's frames."""
    reference = frames(results[alone][1])
    c.check("%s: GDB alone unwinds to main" % label,
            names(reference) == ["hostile_leaf", "level_2", "level_1", "main"], str(names(reference)))
    for idx, path in walks:
        cmd, out, err, secs = results[idx]
        c.check("%s [%s]: bt is GDB's own walk" % (label, path), err is None and frames(out) == reference,
                "%s %s" % (err, names(frames(out))))
    return reference


def check_corrupt(c, g, program):
    label = os.path.relpath(program, FIXTURES)
    name = os.path.basename(program)
    cmds = ["sframe status", "run", "sframe status", "bt", "bt", "sframe status",
            "sframe enable native", "bt", "frame 1", "info symbol $pc", "sframe status", "sframe enable python",
            "sframe disable", "bt", "sframe status"]
    results = session(c, g, label, program, "huge", cmds)
    if results is None:
        return
    own_walks(c, label, results, 13, ((3, "python"), (4, "python"), (7, "native")))
    for idx in (0, 2, 5, 10, 14):
        cmd, out, err, _ = results[idx]
        n = len(re.findall(r"^ *\S*%s: SFrame not usable: .*65536 FDEs" % re.escape(name), out, re.M))
        mentions = len([line for line in out.splitlines() if name in line])
        c.check("%s: `sframe status` #%d reports the corrupt .sframe once (%d)" % (label, idx, n),
                err is None and n == 1 and mentions == 1, err or out)
    step_ok(c, label + " [native]", results[8])
    step_ok(c, label + " [native]", results[9], r"^level_2 ")
    for idx, path in ((5, "python"), (10, "native")):
        out = results[idx][1]
        counter = r"python path: 0 frames unwound" if path == "python" else r"native path .*: 0 frames unwound"
        c.check("%s [%s]: no frame counted as unwound by SFrame" % (label, path),
                re.search(counter, out) is not None, out)


def check_damaged_fde(c, g, program):
    """The -badfre copy: one FDE (level_2's) points at FREs past the end of
    the section, the header and the other FDEs are sound. SFrame unwinds
    the other frames, level_2's falls back to GDB's own unwinder, the
    failure is reported with the FDE, and the backtrace is GDB's own."""
    label = os.path.relpath(program, FIXTURES)
    name = os.path.basename(program)
    cmds = ["run", "bt", "sframe status", "sframe enable native", "bt", "sframe status", "frame 2",
            "info symbol $pc", "sframe disable", "bt"]
    results = session(c, g, label, program, "huge", cmds)
    if results is None:
        return
    reference = own_walks(c, label, results, 9, ((1, "python"), (4, "native")))
    # hostile_leaf, level_1 and main by SFrame; level_2's FDE fails.
    for idx, counter in ((2, r"python path: 3 frames unwound, \d+ ended the stack, 1 failures"),
                         (5, r"native path [^:]*: 3 frames unwound, 1 declined, 1 failures")):
        out = results[idx][1]
        modules = [line for line in out.splitlines() if line.startswith("  ") and name + ": SFrame v" in line]
        failure = re.search(r"last failure: \S*%s: FDE 2: .*FRE sub-section.* \(at (0x[0-9a-f]+)\)$" %
                            re.escape(name), out, re.M)
        # The pc looked up for a caller frame is its return address - 1.
        at_level_2 = failure is not None and reference[1][1] is not None and \
            int(failure.group(1), 16) == int(reference[1][1], 16) - 1
        c.check("%s: `sframe status` #%d lists the module once, counts 3 frames by SFrame and names the "
                "damaged FDE and level_2's pc" % (label, idx),
                len(modules) == 1 and re.search(counter, out) is not None and at_level_2, out)
    step_ok(c, label + " [native]", results[6])
    step_ok(c, label + " [native]", results[7], r"^level_1 ")


def run(args, c):
    g = H.Gdb(args.gdb, args.loader, args.timeout)
    for writer in ("gas-2.40", "gas-2.47"):
        for variant in ("O2-fp", "O2-nofp"):
            program = os.path.join(FIXTURES, writer, "hostile-%s-static" % variant)
            for mode in MODES:
                if args.only and args.only not in "%s %s" % (program, mode):
                    continue
                check_mode(c, g, program, mode)
        program = os.path.join(FIXTURES, writer, "hostile-O2-nofp-static-badsframe")
        if not args.only or args.only in program:
            check_corrupt(c, g, program)
        program = os.path.join(FIXTURES, writer, "hostile-O2-nofp-static-badfre")
        if not args.only or args.only in program:
            check_damaged_fde(c, g, program)


if __name__ == "__main__":
    ap = H.parser(__doc__, timeout=120)
    ap.add_argument("--only", default=None, help="only modes or programs whose label contains this")
    H.main(run, ap, ok_detail=False)

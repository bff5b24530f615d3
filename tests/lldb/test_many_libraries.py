#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""LLDB on a program of many shared libraries, a frame in each.

tests/common/many_libraries.py builds (with the host's cc and
`-Wa,--gsframe`) a program whose main calls f1 in lib1.so, f1 calls f2 in
lib2.so, ... down to fN, which raises SIGTRAP, and an SFrame-only copy of
every file. The reference is plain LLDB on the CFI build, at the same stop.
With the plugin and an empty cache, the ordinary flow (`target create`,
`process launch`) must give LLDB's own frames the reference's functions,
PCs and CFAs (from frame 0's), every library's debug file must have been made, and the
cache must have been listed (to apply its size limit) a few times, not
once per file.

usage: test_many_libraries.py --plugin PLUGIN --lldb lldb-19 [--work DIR] [-v]
"""

import os
import shutil
import sys

import lldb_harness as h

sys.path.insert(0, os.path.join(h.REPO, "tests", "common"))
import many_libraries  # noqa: E402

LIBRARIES = 120
# The first file generated lists the cache; the others add to its count
# (a limit of 1 GiB is far off).
MAX_LISTINGS = 2
# Modules a stop lists again: those without SFrame (libc, ld.so, the vdso),
# which are never settled.
MAX_UNSETTLED = 8


def stop_frames(session, target, launch):
    """(function, pc, CFA - frame 0's CFA) of every concrete frame at the
    SIGTRAP, or raises. The CFAs are taken from frame 0's: the two runs'
    stacks start at other addresses (their environments differ)."""
    process = launch(target)
    thread = process.GetSelectedThread()
    sigtrap = 5
    if thread.GetStopReason() != session.lldb.eStopReasonSignal or thread.GetStopReasonDataAtIndex(0) != sigtrap:
        raise RuntimeError("not stopped by SIGTRAP: " + h.stop_description(thread))
    frames = h.frames_of(thread, limit=None)
    return [(f.function, f.pc, f.cfa - frames[0].cfa) for f in frames]


def first_difference(got, want):
    for i, (a, b) in enumerate(zip(got, want)):
        if a != b:
            return "frame %d: got %s, want %s" % (i, a, b)
    return "%d frames, want %d: the extra ones %s" % (len(got), len(want), (got[len(want):] or want[len(got):])[:4])


def run(args, work, res):
    cc = shutil.which("cc") or shutil.which("gcc")
    if not res.check("a C compiler is at hand", cc is not None, "no cc or gcc on PATH"):
        return
    cfi, noeh = many_libraries.build(cc, os.path.join(work, "many-libraries"), LIBRARIES)
    plain = h.Session(None, work)
    target = plain.create(cfi)
    try:
        want = stop_frames(plain, target, lambda t: plain.launch(t, []))
    finally:
        plain.delete(target)
    chain = ["f%d" % k for k in range(LIBRARIES, 0, -1)] + ["main"]
    names = [f for f, _, _ in want]
    if not res.check("reference: the CFI build's frames include f%d ... f1, main" % LIBRARIES,
                     any(names[i:i + len(chain)] == chain for i in range(len(names))), str(names)):
        return

    h.use_cache(work, "many-libraries")
    s = h.Session(args.plugin, work)
    target = s.create_by_command(noeh)
    try:
        got = stop_frames(s, target, s.launch_by_command)
        res.check("plugin, cold cache: LLDB's frames equal the CFI build's (function, pc, CFA from frame 0's; %d frames)"
                  % len(want), got == want, first_difference(got, want))
        status = s.json_cmd("sframe status --json")
        with_file = [m for m in status["modules"] if m.get("debug_file")]
        res.check("plugin: a debug file for each of the %d libraries and the program" % LIBRARIES,
                  len(with_file) >= LIBRARIES + 1,
                  "%d modules with a debug file" % len(with_file))
        listings = status.get("cache_listings")
        res.check("plugin: the cache was listed at most %d times for %d files (%s)"
                  % (MAX_LISTINGS, LIBRARIES + 1, listings),
                  listings is not None and 1 <= listings <= MAX_LISTINGS, str(listings))
        # Later stops: the stop hook finds every module using its file and
        # checks no stamp again (each check hashes a module's .sframe).
        checks = status.get("stamp_checks")
        # `target create` checked each module's stamp; the first stop's
        # generation and examination found the same files (not a check each).
        res.check("plugin: one stamp check per module up to the first stop (%s for %d modules)"
                  % (checks, LIBRARIES + 1),
                  checks is not None and checks < 2 * (LIBRARIES + 1), str(checks))
        listed = status.get("listed_modules")
        for _ in range(3):
            s.cmd("thread step-inst")
        later = s.json_cmd("sframe status --json")
        after = later.get("stamp_checks")
        res.check("plugin: 3 more stops check no debug file's stamp again (%s, then %s)" % (checks, after),
                  checks is not None and checks >= LIBRARIES + 1 and after == checks, "%s -> %s" % (checks, after))
        # Nor list the settled modules again (their sections, through LLDB's
        # SB API, for each): only those without SFrame (libc, ld.so, the
        # vdso) are, a few a stop.
        listed_after = later.get("listed_modules")
        res.check("plugin: the first stop listed every module (%s for %d), 3 more stops at most %d more (%s)"
                  % (listed, LIBRARIES + 1, 3 * MAX_UNSETTLED, listed_after),
                  listed is not None and listed_after is not None and listed >= LIBRARIES + 1
                  and listed_after - listed <= 3 * MAX_UNSETTLED, "%s -> %s" % (listed, listed_after))
    finally:
        s.delete(target)


if __name__ == "__main__":
    h.main(run)

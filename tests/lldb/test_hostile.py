#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""Live hostile stacks in LLDB with the plugin loaded (tests/fixtures/src/hostile.c).

For the hostile programs (gas 2.40 SFrame v1 and gas 2.47 v3, -fp and -nofp,
static) in each mode (ra: return address overwritten, cycle: a frame that is
its own caller, sp: RSP unmapped, huge: a 64 MiB frame), at the int3 stop:
  - LLDB's `bt` and `sframe bt` end within MAX_FRAMES frames and MAX_SECONDS;
    `sframe bt --json` says why its walk ended (MODES: the stop code each
    mode must give, or a complete walk to main);
  - the session stays usable: `register read rip`, `frame select 0`,
    `sframe status` and a second `sframe bt` work afterwards.
The corrupt-section copy (-badsframe, .sframe header with 0x10000 FDEs) is
listed once in `sframe status`, without SFrame and with the reason, before
and after the stop and every bt; LLDB's own `bt` still reaches main and
`sframe bt` fails with a message, not a crash. The damaged-FDE copy
(-badfre, level_2's FDE points at FREs past the section) is translated but
for that FDE, which `sframe status` names; LLDB's own bt reaches main, and
`sframe bt` stops at level_2 with the FDE's error.

usage: test_hostile.py --plugin libsfunwind_lldb.so --lldb lldb-19 [--work DIR] [-v] [--only TEXT]
"""

import os
import re
import time

import lldb_harness as H

MAX_FRAMES = 64
MAX_SECONDS = 10.0
SIGTRAP = 5

# mode -> (regex on "stop_code: stop" of `sframe bt --json`, the functions
# LLDB's and SFrame's walks start with)
MODES = {
    "ra": (r"^not found: no module with SFrame covers 0x4141414141414141$", ["hostile_leaf"]),
    "cycle": (r"^bad frame: no progress: frame at pc 0x[0-9a-f]+ sp 0x[0-9a-f]+ repeats$", ["hostile_leaf"]),
    "sp": (r"^memory unreadable: cannot read the return address at 0x10\b", ["hostile_leaf"]),
    # A legal 64 MiB frame: the walk goes on to main, then ends in static
    # glibc's __libc_start_call_main, which has no FDE (Debian builds glibc
    # without --gsframe).
    "huge": (r"^not found: hostile-\S+: no FDE covers 0x[0-9a-f]+$", ["hostile_leaf", "level_2", "level_1", "main"]),
}


def timed(s, line):
    t = time.monotonic()
    ok, out, err = s.cmd(line)
    return ok, out, err, time.monotonic() - t


def lldb_frames(out):
    """[(level, function or the PC)] of LLDB's `bt` output."""
    rows = []
    for m in re.finditer(r"^\s*\*?\s*frame #(\d+): (0x[0-9a-f]+)(?: \S+`(\S+?)(?:\s|\+|$))?", out, re.M):
        rows.append((m.group(1), m.group(3) or m.group(2)))
    return rows


def check_mode(s, res, path, mode):
    label = "%s %s" % (os.path.relpath(path, H.fixture()), mode)
    want_stop, start = MODES[mode]
    target = s.create(path)
    try:
        process = s.launch(target, [mode])
        thread = process.GetSelectedThread()
        signo = thread.GetStopReasonDataAtIndex(0) if thread.GetStopReasonDataCount() else None
        res.check("%s: stopped by SIGTRAP in hostile_leaf" % label,
                  process.GetState() == s.lldb.eStateStopped and signo == SIGTRAP
                  and thread.GetFrameAtIndex(0).GetFunctionName() == "hostile_leaf",
                  "state %s, signal %s, %s" % (process.GetState(), signo, H.stop_description(thread)))
        for round_ in (1, 2):
            tag = "%s (#%d)" % (label, round_)
            ok, out, err, secs = timed(s, "bt")
            frames = lldb_frames(out)
            res.check("%s: LLDB bt ends within %d frames and %.0f s (%d frames, %.2f s)" % (
                tag, MAX_FRAMES, MAX_SECONDS, len(frames), secs),
                ok and 0 < len(frames) <= MAX_FRAMES and secs < MAX_SECONDS, err or out[-300:])
            names = [f[1] for f in frames]
            res.check("%s: LLDB bt starts %s" % (tag, start), names[:len(start)] == start, str(names))
            t = time.monotonic()
            try:
                walk = s.json_cmd("sframe bt --json")
            except RuntimeError as e:
                res.check("%s: sframe bt --json works" % tag, False, str(e))
                continue
            secs = time.monotonic() - t
            thread_walk = walk["threads"][0] if "threads" in walk else walk
            n = thread_walk["frame_count"]
            res.check("%s: sframe bt ends within %d frames and %.0f s (%d frames, %.2f s)" % (
                tag, MAX_FRAMES, MAX_SECONDS, n, secs), 0 < n <= MAX_FRAMES and secs < MAX_SECONDS)
            why = "%s: %s" % (thread_walk["stop_code"], thread_walk["stop"])
            ok = not thread_walk["complete"] and re.search(want_stop, why) is not None
            res.check("%s: sframe bt ends with %r" % (tag, why), ok, why)
            sf_names = [f["function"].split("+")[0].split("(")[0] for f in thread_walk["frames"]]
            res.check("%s: sframe bt starts %s" % (tag, start), sf_names[:len(start)] == start, str(sf_names))
            ok, out, err, secs = timed(s, "sframe bt")
            res.check("%s: sframe bt prints the reason" % tag,
                      ok and ("stopped: " + thread_walk["stop"]) in out, out[-300:] + err)
            for line, want in (("register read rip", r"rip = 0x[0-9a-f]+"), ("frame select 0", r"hostile_leaf"),
                               ("sframe status", r"hostile-O2-\S+-static")):
                ok, out, err, secs = timed(s, line)
                res.check("%s: `%s` works (%.2f s)" % (tag, line, secs),
                          ok and re.search(want, out) is not None and secs < MAX_SECONDS, out[-300:] + err)
    finally:
        s.delete(target)


def corrupt_reported_once(s, res, label, name):
    status = s.json_cmd("sframe status --json")
    mods = [m for m in status["modules"] if m["name"] == name]
    ok = len(mods) == 1 and mods[0]["sframe"] is None and "65536 FDEs" in mods[0].get("problem", "")
    res.check("%s: sframe status --json lists the module once, without SFrame, with the reason" % label, ok,
              str(mods))
    ok_, out, err = s.cmd("sframe status")
    lines = [ln for ln in out.splitlines() if ln.startswith(name + " ")]
    res.check("%s: sframe status prints the module once with the reason" % label,
              ok_ and len(lines) == 1 and re.search(r"SFrame: none \(.*65536 FDEs", out) is not None, out + err)


def own_bt_reaches_main(s, res, tag):
    ok, out, err, secs = timed(s, "bt")
    names = [f[1] for f in lldb_frames(out)]
    res.check("%s: LLDB's own bt reaches main (%.2f s)" % (tag, secs),
              ok and names[:4] == ["hostile_leaf", "level_2", "level_1", "main"] and secs < MAX_SECONDS,
              str(names) + err)


def check_corrupt(s, res, path):
    label = os.path.relpath(path, H.fixture())
    name = os.path.basename(path)
    target = s.create(path)
    try:
        corrupt_reported_once(s, res, label + " before run", name)
        process = s.launch(target, ["huge"])
        res.check("%s: stopped" % label, process.GetState() == s.lldb.eStateStopped)
        corrupt_reported_once(s, res, label + " at the stop", name)
        for round_ in (1, 2):
            tag = "%s (#%d)" % (label, round_)
            own_bt_reaches_main(s, res, tag)
            ok, out, err, secs = timed(s, "sframe bt")
            res.check("%s: sframe bt answers with a reason (%.2f s)" % (tag, secs),
                      secs < MAX_SECONDS and re.search(r"SFrame|sframe|no-module", out + err) is not None,
                      out[-300:] + err)
            corrupt_reported_once(s, res, tag + " after bt", name)
        ok, out, err = s.cmd("register read rip")
        res.check("%s: register read rip works" % label, ok and "rip = 0x" in out, out + err)
    finally:
        s.delete(target)


def check_damaged_fde(s, res, path):
    """The -badfre copy: level_2's FDE points at FREs past the section, the
    rest is sound. `sframe cover` translates the other FDEs and says which
    one it could not; LLDB's own bt reaches main; `sframe bt` steps
    hostile_leaf and stops at level_2 with the FDE's error, showing no row
    for that frame."""
    label = os.path.relpath(path, H.fixture())
    name = os.path.basename(path)
    target = s.create(path)
    try:
        ok, out, err = s.cmd("sframe cover")
        res.check("%s: sframe cover" % label, ok, err)
        process = s.launch(target, ["huge"])
        res.check("%s: stopped" % label, process.GetState() == s.lldb.eStateStopped)
        status = s.json_cmd("sframe status --json")
        mods = [m for m in status["modules"] if m["name"] == name]
        tr = mods[0].get("translation", {}) if len(mods) == 1 else {}
        res.check("%s: sframe status --json lists the module once, with SFrame, one FDE not translated "
                  "and why" % label,
                  len(mods) == 1 and mods[0]["sframe"] is not None and tr.get("skipped_fdes") == 1 and
                  tr.get("functions") == mods[0]["sframe"]["fdes"] - 1 and
                  re.search(r"^FDE 2: .*FRE sub-section", tr.get("first_skipped", "")) is not None, str(mods))
        ok, out, err = s.cmd("sframe status")
        res.check("%s: sframe status names the FDE it could not translate, once" % label,
                  ok and len(re.findall(r"^  not translated: 1 SFrame FDE\(s\), the first: FDE 2: .*FRE sub-section",
                                        out, re.M)) == 1, out + err)
        own_bt_reaches_main(s, res, label)
        ok, out, err, secs = timed(s, "sframe bt")
        frames = re.findall(r"^  #(\d+) +pc=(0x[0-9a-f]+)", out, re.M)
        rows = re.findall(r"^ +row: ", out, re.M)
        res.check("%s: sframe bt steps hostile_leaf, stops at level_2 with the FDE's error, no row there "
                  "(%.2f s)" % (label, secs),
                  ok and len(frames) == 2 and len(rows) == 1 and secs < MAX_SECONDS and
                  re.search(r"^stopped: %s: FDE 2: .*FRE sub-section" % re.escape(name), out, re.M) is not None,
                  out[-600:] + err)
        ok, out, err = s.cmd("register read rip")
        res.check("%s: register read rip works" % label, ok and "rip = 0x" in out, out + err)
    finally:
        s.delete(target)


def run(args, work, res):
    H.use_cache(work, "hostile")
    s = H.Session(args.plugin, work)
    print("LLDB: " + s.version)
    for writer in ("gas-2.40", "gas-2.47"):
        for variant in ("O2-fp", "O2-nofp"):
            path = H.fixture(writer, "hostile-%s-static" % variant)
            for mode in MODES:
                if args.only and args.only not in "%s %s" % (path, mode):
                    continue
                check_mode(s, res, path, mode)
        path = H.fixture(writer, "hostile-O2-nofp-static-badsframe")
        if not args.only or args.only in path:
            check_corrupt(s, res, path)
        path = H.fixture(writer, "hostile-O2-nofp-static-badfre")
        if not args.only or args.only in path:
            check_damaged_fde(s, res, path)


if __name__ == "__main__":
    H.main(run)

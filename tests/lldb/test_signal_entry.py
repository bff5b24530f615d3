#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""LLDB: the frame a signal interrupted is named at its precise PC.

tests/common/sig_entry.c is interrupted by SIGUSR1 exactly on the first byte
of at_entry(), right after before(); its handler then faults. Built static,
with an SFrame v3 section converted from its CFI (`sfunwind convert`, the CLI
of the same build tree as the plugin), so that glibc's __restore_rt has a
signal-frame FDE and `sframe bt` walks through it. The frame after the signal
frame must be at_entry+0 (looked up at its PC), not before+N (at PC - 1), and
`sframe compare` must agree with LLDB's own unwind frame by frame.

usage: test_signal_entry.py --plugin PLUGIN --lldb lldb-19 [--work DIR] [-v]
"""

import os
import subprocess

import lldb_harness as h


def build(work, plugin):
    """sig-entry with its converted SFrame section, or an error text."""
    cli = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(plugin))), "cli", "sfunwind")
    if not os.access(cli, os.X_OK):
        return None, "no sfunwind CLI beside the plugin's build (%s)" % cli
    src = os.path.join(h.REPO, "tests", "common", "sig_entry.c")
    plain, section, prog = (os.path.join(work, n) for n in ("sig-entry.cfi", "sig-entry.sframe", "sig-entry"))
    for cmd in (["gcc", "-O2", "-static", "-o", plain, src],
                [cli, "convert", plain, "-o", section],
                ["objcopy", "--add-section", ".sframe=" + section, "--set-section-flags",
                 ".sframe=alloc,readonly", plain, prog]):
        p = subprocess.run(cmd, capture_output=True, text=True)
        if p.returncode != 0:
            return None, "%s: %s" % (" ".join(cmd), p.stderr.strip())
    return prog, None


def run(args, work, res):
    prog, err = build(work, args.plugin)
    if not res.check("sig-entry: built with a converted SFrame section", prog is not None, err or ""):
        return
    s = h.Session(args.plugin, work)
    target = s.create(prog)
    try:
        ok, _, err = s.cmd("process handle -s false -p true -n false SIGUSR1", target)
        res.check("sig-entry: SIGUSR1 passed on", ok, err)
        process = s.launch(target, [])
        thread = process.GetSelectedThread()
        sigsegv = 11
        res.check("sig-entry: stopped by SIGSEGV in the handler",
                  thread.GetStopReason() == s.lldb.eStopReasonSignal
                  and thread.GetStopReasonDataAtIndex(0) == sigsegv, h.stop_description(thread))
        data = s.json_cmd("sframe bt --json")
        names = [f["function"] for f in data["frames"]]
        res.check("sig-entry: sframe bt reaches the outermost frame", data["complete"], data["stop"])
        res.check("sig-entry: frame 0 is the handler", names[:1] and names[0].startswith("on_usr1+"), str(names))
        rows = [f["row"] for f in data["frames"]]
        res.check("sig-entry: frame 1 is stepped by a signal-frame row",
                  len(rows) > 1 and rows[1].split(" (FDE")[0].endswith(" signal"), str(rows[:2]))
        res.check("sig-entry: the interrupted frame is at_entry, not before+N",
                  len(names) > 2 and names[2] == "at_entry", str(names))
        res.check("sig-entry: then main", len(names) > 3 and names[3].startswith("main+"), str(names))
        h.compare_stop(s, res, "sig-entry: sframe compare", expect_functions=["on_usr1"])
    finally:
        s.delete(target)


if __name__ == "__main__":
    h.main(run)

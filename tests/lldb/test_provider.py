#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""Frame-provider mode (`sframe provider on`, LLDB 22 and later).

On LLDB 22+: at the trap stop of an SFrame-only program, with the provider
on, LLDB's frames (SBThread, as `bt` and `frame select` use them) are the
SFrame walk's: same count, same PCs, frame 0 LLDB's own; `frame select`
works; `sframe compare` and `--with-registers` are refused (they would read
register contexts of provider frames, which crash LLDB 23.1.4); `off`
restores LLDB's own frames. Only PCs and symbols of provider frames are
read here, never their registers or variables.
On LLDB 19: `sframe provider on` is refused with the reason.

usage: test_provider.py --plugin libsfunwind_lldb.so --lldb lldb-23 [--work DIR] [-v]
"""

import re

import lldb_harness as H


def run(args, work, res):
    H.use_cache(work, "provider")
    s = H.Session(args.plugin, work)
    major = int(re.search(r"version (\d+)", s.version).group(1))
    print("LLDB: " + s.version)
    target = s.create(H.fixture("gas-2.40", "recurse-O2-nofp-noeh"))
    try:
        s.cmd("sframe cover --off")  # LLDB's own frames stay without the generated CFI
        process = s.launch(target, [])
        if major < 22:
            ok, _, err = s.cmd("sframe provider on")
            res.check("LLDB %d: provider mode refused" % major, not ok and "LLDB 22 or newer" in err, err)
            return
        walk = s.json_cmd("sframe bt --json")
        want = [f["pc"] for f in walk["frames"]]
        ok, _, err = s.cmd("sframe provider on --with-registers")
        res.check("--with-registers refused on LLDB %d" % major, not ok and "use-after-free" in err, err)
        ok, out, err = s.cmd("sframe provider on")
        res.check("provider on", ok, out + err)
        thread = process.GetSelectedThread()
        pcs = []
        for i in range(len(want) + 4):
            f = thread.GetFrameAtIndex(i)
            if not f.IsValid():
                break
            pcs.append(f.GetPC())
        res.check("provider frames are the SFrame walk's (%d frames)" % len(want), pcs == want,
                  "LLDB %s, SFrame %s" % ([hex(p) for p in pcs], [hex(p) for p in want]))
        names = [thread.GetFrameAtIndex(i).GetSymbol().GetName() for i in range(len(pcs))]
        res.check("provider frames are symbolized", names[:2] == ["fixture_leaf", "recurse"], repr(names))
        ok, out, err = s.cmd("frame select 8")
        res.check("frame select on a provider frame", ok and "level_2" in out, out + err)
        ok, _, err = s.cmd("sframe compare")
        res.check("sframe compare refused while the provider is on", not ok and "provider" in err, err)
        ok, out, _ = s.cmd("sframe provider status")
        res.check("status says on", ok and "on" in out, out)
        ok, out, err = s.cmd("sframe provider off")
        res.check("provider off", ok, out + err)
        ok, out, _ = s.cmd("sframe provider status")
        res.check("status says off", ok and "off" in out, out)
    finally:
        s.delete(target)


if __name__ == "__main__":
    H.main(run)

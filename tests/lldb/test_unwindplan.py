#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""LLDB's own unwinder on SFrame-only programs, with the plugin's generated
debug files (.debug_frame translated from .sframe).

For each host-runnable `-noeh` fixture (.eh_frame, .eh_frame_hdr and
.debug_frame removed, only .sframe left):
  - the reference is plain LLDB (no plugin) on the CFI build of the same
    program at the same stop;
  - with the plugin, LLDB's own frames (SB API: pc, and the CFA relative to
    frame 0's SP, since the two runs' stacks differ by argv's length) must be
    the reference's, frame for frame; the unwind log must show 'DWARF CFI'
    for every caller frame in the program; callee-saved registers SFrame
    cannot restore must be unavailable (never stale) in caller frames; `up`
    and `finish` must work.
With the symbol table stripped too, plain LLDB must get the backtrace wrong
(the fixtures prove the point, not the test) and the plugin must still get
it right. A -g build split into a stripped program plus a separate debug
file must keep `frame variable` working in upper frames. One fixture is
left to the plugin's event thread alone (no `sframe cover`).

usage: test_unwindplan.py --plugin libsfunwind_lldb.so --lldb lldb-19 [--work DIR] [-v]
"""

import os
import re
import shutil
import subprocess
import time

import lldb_harness as H

UNTRACKED = ["rbx", "r12", "r13", "r14", "r15"]


def frames_of(thread, limit=64):
    """(function, pc, cfa) of LLDB's concrete frames."""
    out = []
    for i in range(min(thread.GetNumFrames(), limit)):
        f = thread.GetFrameAtIndex(i)
        if f.IsInlined() or f.IsArtificial():
            continue
        sym = f.GetSymbol()
        out.append((sym.GetName() if sym.IsValid() else None, f.GetPC(), f.GetCFA(), i))
    return out


def relative(frames, sp0):
    return [(pc, cfa - sp0) for (_, pc, cfa, _) in frames]


def stop_at_trap(s, target, args):
    process = s.launch(target, args)
    thread = process.GetSelectedThread()
    while thread.GetStopReason() == s.lldb.eStopReasonSignal and thread.GetStopReasonDataAtIndex(0) == 10:
        process.Continue()  # the sighandler fixture's SIGUSR1
        thread = process.GetSelectedThread()
    return process, thread


def reference(plain, path, args):
    target = plain.create(path)
    try:
        _, thread = stop_at_trap(plain, target, args)
        sp0 = thread.GetFrameAtIndex(0).GetSP()
        return relative(frames_of(thread), sp0), frames_of(thread)
    finally:
        plain.delete(target)


def plans_from_log(path):
    """frame index -> the 'full unwind plan' LLDB used to find that frame's caller."""
    plans = {}
    if not os.path.exists(path):
        return plans
    with open(path) as f:
        for line in f:
            m = re.search(r"th\d+/fr(\d+) Using (full|fast) unwind plan '([^']*)'", line)
            if m:
                # LLDB tries a function's "fast" plan first: the frame-pointer
                # chain, for a push rbp; mov rsp,rbp prologue (its policy with
                # or without CFI); the full plan when the fast one fails.
                plans[int(m.group(1))] = m.group(3) if m.group(2) == "full" else "fast: " + m.group(3)
    return plans


def wait_for_debug_file(path, seconds=10.0):
    """Waits for the plugin's event thread to write the debug file of the
    program at `path` (without asking LLDB anything: a status query would
    make LLDB look for the program's symbols before the file exists)."""
    build_id = re.search(r"Build ID: ([0-9a-f]+)", subprocess.check_output(["readelf", "-n", path], text=True)).group(1)
    debug = os.path.join(os.environ["SFUNWIND_LLDB_CACHE"], ".build-id", build_id[:2], build_id[2:] + ".debug")
    deadline = time.time() + seconds
    while time.time() < deadline:
        if os.path.exists(debug):
            return True
        time.sleep(0.01)
    return False


def covered(s, thread, frames):
    """Indices of the frames whose function has an SFrame FDE (looked up at
    pc, or pc - 1 for a caller's return address), by `sframe show-unwind`."""
    out = set()
    for k, (name, pc, cfa, i) in enumerate(frames):
        ok, _, _ = s.cmd("sframe show-unwind -a 0x%x" % (pc if k == 0 else pc - 1))
        if ok:
            out.add(k)
    return out


def check_program(plain, s, res, work, label, cfi_path, noeh_path, args, module_name, auto=False,
                  finish=False):
    ref, ref_frames = reference(plain, cfi_path, args)
    target = s.create(noeh_path)
    try:
        if auto:
            # A warm cache (the file of an earlier session): no command.
            res.check(label + ": the debug file is in the cache", wait_for_debug_file(noeh_path), "no file")
        else:
            ok, out, err = s.cmd("sframe cover")
            res.check(label + ": sframe cover", ok, err)
        process, thread = stop_at_trap(s, target, args)
        log = os.path.join(work, label.replace("/", "_").replace(" ", "_") + ".unwind.log")
        if os.path.exists(log):
            os.remove(log)
        s.cmd("log enable -f %s lldb unwind" % log)
        frames = frames_of(thread)
        s.cmd("log disable lldb unwind")
        sp0 = thread.GetFrameAtIndex(0).GetSP()
        got = relative(frames, sp0)
        cov = covered(s, thread, frames)
        if auto:
            st = s.json_cmd("sframe status --json")
            mod = [m for m in st["modules"] if m["name"] == module_name]
            res.check(label + ": LLDB found the debug file by itself (no plugin command)",
                      mod and mod[0]["coverage"] == "in-use" and "debug-file-search-paths" in mod[0]["detail"],
                      repr(mod))
        # Frame k's pc comes from frame k-1's plan, its CFA from its own: the
        # generated CFI decides the pc where k-1 has an FDE and the CFA where
        # k has one. Past a frame without FDE, LLDB unwinds without SFrame.
        compared = 0
        bad = None
        end_note = None
        after_trap = {k + 1 for k, f in enumerate(frames)
                      if thread.GetFrameAtIndex(f[3]).GetSymbol().GetName() in ("__restore_rt",)}
        plans = plans_from_log(log)
        for k in range(max(len(ref), len(got))):
            if k >= len(ref) or k >= len(got):
                if k < len(ref) and k >= 1 and (k - 1) in cov:
                    ok_no_fde, _, _ = s.cmd("sframe show-unwind -a 0x%x" % (ref[k][0] - 1))
                    if not ok_no_fde:
                        end_note = ("frame %d (pc 0x%x) has neither an SFrame FDE nor a symbol in this file: "
                                    "LLDB shows no frame there" % (k, ref[k][0]))
                        break
                if k - 1 in cov:
                    bad = "frame %d: %s only" % (k, "reference" if k < len(ref) else "plugin")
                break
            if k in after_trap and got[k][1] != ref[k][1]:
                end_note = ("frame %d (%s) was interrupted by a signal: LLDB unwinds the signal trampoline "
                            "(frame %d, no SFrame FDE) itself and picks the interrupted frame's plan as for "
                            "frame 0 (%s), so its CFA is LLDB's, not SFrame's" %
                            (k, frames[k][0], k - 1, plans.get(k)))
                break
            if k > 0 and (k - 1) not in cov and got[k][0] != ref[k][0]:
                end_note = ("frame %d (%s) has no SFrame FDE: LLDB unwinds it without SFrame, and differs from "
                            "here on" % (k - 1, frames[k - 1][0]))
                break
            compared += 1
            if (k == 0 or (k - 1) in cov) and got[k][0] != ref[k][0]:
                bad = "frame %d pc 0x%x, reference 0x%x" % (k, got[k][0], ref[k][0])
                break
            if k in cov and got[k][1] != ref[k][1]:
                bad = "frame %d (%s) CFA sp0%+d, reference sp0%+d" % (k, frames[k][0], got[k][1], ref[k][1])
                break
        res.count("unwindplan stops")
        res.count("unwindplan frames compared", compared)
        if end_note:
            print("note %s: %s" % (label, end_note))
        res.check(label + ": LLDB's bt with the plugin matches the CFI build's (%d frames compared)" % compared,
                  bad is None and compared >= 3, bad or "too few frames")
        # Every caller frame with an FDE was unwound with the generated CFI,
        # apart from one interrupted by a signal, where LLDB picks its plan as
        # for frame 0.
        want = [k for k in sorted(cov) if k >= 1 and k not in after_trap]
        wrong = {k: plans.get(k) for k in want
                 if plans.get(k) not in ("DWARF CFI", "fast: x86_64 default unwind plan")}
        fast = [k for k in want if plans.get(k, "").startswith("fast")]
        if fast:
            print("note %s: frames %s used LLDB's frame-pointer fast path (rbp frames), as with CFI" % (label, fast))
        res.check(label + ": LLDB used 'DWARF CFI' (or its rbp fast path) for the %d caller frames with an FDE" % len(want),
                  want and not wrong, "frame -> plan: %s" % wrong)
        # Registers SFrame cannot restore are unavailable, never stale, in
        # every frame a generated plan unwound into.
        stale = []
        for k in want:
            if k + 1 >= len(frames):
                continue
            f = thread.GetFrameAtIndex(frames[k + 1][3])
            for reg in UNTRACKED:
                v = f.FindRegister(reg)
                if v.IsValid() and v.GetValue() is not None:
                    stale.append((k + 1, reg, v.GetValue()))
        res.check(label + ": rbx, r12-r15 unavailable above SFrame-unwound frames", not stale, repr(stale[:4]))
        ok, out, err = s.cmd("frame select %d" % frames[max(want)][3] if want else "frame select 0")
        res.check(label + ": frame select", ok, err)
        if finish:
            expect = thread.GetFrameAtIndex(1).GetPC()
            thread.StepOut()
            res.check(label + ": finish returns to the caller", thread.GetFrameAtIndex(0).GetPC() == expect,
                      "pc 0x%x, expected 0x%x" % (thread.GetFrameAtIndex(0).GetPC(), expect))
        return ref
    finally:
        s.delete(target)


def stripped_copy(work, path, tag):
    # LLDB shares Module objects (and the unwind plans they hold) between
    # debuggers by path: each session gets a copy of its own.
    out = os.path.join(work, os.path.basename(path) + "-stripped-" + tag)
    shutil.copy(path, out)
    subprocess.check_call(["strip", "-s", out])
    return out


def check_stripped(plain, s, res, work, label, cfi_path, noeh_path, args):
    bare = stripped_copy(work, noeh_path, "plain")
    ref, _ = reference(plain, cfi_path, args)
    # Plain LLDB, without function starts, goes wrong on this program.
    target = plain.create(bare)
    try:
        _, thread = stop_at_trap(plain, target, args)
        got = relative(frames_of(thread), thread.GetFrameAtIndex(0).GetSP())
        res.check(label + " stripped: plain LLDB's bt is wrong", got != ref,
                  "plain LLDB got the reference backtrace; the fixture no longer proves anything")
    finally:
        plain.delete(target)
    # With the plugin (a cache of its own, so the symbols come from the FDEs).
    s.cmd("sframe cover --cache-dir " + os.path.join(work, "cache-stripped"))
    bare = stripped_copy(work, noeh_path, "plugin")
    check_program(plain, s, res, work, label + " stripped", cfi_path, bare, args, os.path.basename(bare))


def check_split_debug(plain, s, res, work):
    """A -g program stripped of its DWARF and CFI, its DWARF in a separate
    debug file LLDB finds by build-id: frame variable in upper frames."""
    g = H.fixture("gas-2.40", "recurse-O2-nofp-g")
    sysdebug = os.path.join(work, "sysdebug")
    build_id = re.search(r"Build ID: ([0-9a-f]+)", subprocess.check_output(["readelf", "-n", g], text=True)).group(1)
    dbg = os.path.join(sysdebug, ".build-id", build_id[:2], build_id[2:] + ".debug")
    os.makedirs(os.path.dirname(dbg), exist_ok=True)
    subprocess.check_call(["objcopy", "--only-keep-debug", g, dbg])
    prog = os.path.join(work, "recurse-O2-nofp-g-split")
    subprocess.check_call(["objcopy", "--strip-debug", "--remove-section=.eh_frame", "--remove-section=.eh_frame_hdr",
                           "--remove-section=.debug_frame", g, prog])
    # The reference: the -g program as built.
    target = plain.create(g)
    try:
        _, thread = stop_at_trap(plain, target, [])
        ref_names = [n for (n, _, _, _) in frames_of(thread)]
        lvl2 = next(i for (n, _, _, i) in frames_of(thread) if n == "level_2")
        ref_buf = [thread.GetFrameAtIndex(lvl2).FindVariable("buf").GetChildAtIndex(k).GetValueAsUnsigned()
                   for k in range(64)]
        ref_n = thread.GetFrameAtIndex(lvl2).FindVariable("n").GetValue()
    finally:
        plain.delete(target)
    s.cmd("settings append target.debug-file-search-paths " + sysdebug)
    s.cmd("sframe cover --cache-dir " + os.path.join(work, "cache-split"))
    target = s.create(prog)
    try:
        ok, out, err = s.cmd("sframe cover")
        _, thread = stop_at_trap(s, target, [])
        frames = frames_of(thread)
        names = [n for (n, _, _, _) in frames]
        # Up to main's caller: what lies above (crt's _start, without CFI
        # here) is LLDB's own business.
        upto = ref_names.index("main") + 2 if "main" in ref_names else len(ref_names)
        res.check("split -g: LLDB's bt names the CFI build's frames up to main's caller",
                  names[:upto] == ref_names[:upto], "%s vs %s" % (names, ref_names))
        lvl2 = next((i for (n, _, _, i) in frames if n == "level_2"), None)
        if not res.check("split -g: level_2 is on the stack", lvl2 is not None, repr(names)):
            return
        f = thread.GetFrameAtIndex(lvl2)
        buf = [f.FindVariable("buf").GetChildAtIndex(k).GetValueAsUnsigned() for k in range(64)]
        res.check("split -g: frame variable buf in level_2 (frame %d)" % lvl2, buf == ref_buf and any(buf),
                  "%s vs %s" % (buf[:8], ref_buf[:8]))
        n = f.FindVariable("n")
        res.check("split -g: n in level_2 is the CFI build's value or unavailable, never another",
                  n.GetValue() in (None, ref_n), "n = %r, reference %r" % (n.GetValue(), ref_n))
        st = s.json_cmd("sframe status --json")
        mod = [m for m in st["modules"] if m["name"] == os.path.basename(prog)][0]
        res.check("split -g: the generated file was made from the separate debug file",
                  mod["coverage"] == "in-use", repr(mod))
    finally:
        s.delete(target)


def check_own_dwarf(plain, s, res, work):
    """A -g program with its CFI removed but its DWARF kept in the program.
    LLDB 23 takes a debug file for it; LLDB 19 would lose the module's load
    addresses (measured), so the plugin must leave it alone and say why."""
    g = H.fixture("gas-2.40", "recurse-O2-nofp-g")
    prog = os.path.join(work, "recurse-O2-nofp-g-noeh")
    subprocess.check_call(["objcopy", "--remove-section=.eh_frame", "--remove-section=.eh_frame_hdr",
                           "--remove-section=.debug_frame", g, prog])
    major = int(re.search(r"version (\d+)", s.version).group(1))
    target = plain.create(g)
    try:
        _, thread = stop_at_trap(plain, target, [])
        ref_names = [n for (n, _, _, _) in frames_of(thread)]
        lvl2 = next(i for (n, _, _, i) in frames_of(thread) if n == "level_2")
        ref_buf = [thread.GetFrameAtIndex(lvl2).FindVariable("buf").GetChildAtIndex(k).GetValueAsUnsigned()
                   for k in range(64)]
    finally:
        plain.delete(target)
    s.cmd("sframe cover --cache-dir " + os.path.join(work, "cache-own-dwarf"))
    target = s.create(prog)
    try:
        s.cmd("sframe cover")
        st = s.json_cmd("sframe status --json")
        mod = [m for m in st["modules"] if m["name"] == os.path.basename(prog)][0]
        if major < 23:
            res.check("own DWARF, LLDB %d: refused, with the reason" % major,
                      mod["coverage"] == "failed" and "its own DWARF" in mod["detail"], repr(mod))
            bp = target.BreakpointCreateByName("level_2")
            res.check("own DWARF, LLDB %d: the module is intact (breakpoint by name resolves)" % major,
                      bp.GetNumLocations() >= 1, "no location")
            return
        res.check("own DWARF, LLDB %d: covered" % major, mod["coverage"] == "in-use", repr(mod))
        _, thread = stop_at_trap(s, target, [])
        frames = frames_of(thread)
        names = [n for (n, _, _, _) in frames]
        upto = ref_names.index("main") + 2
        res.check("own DWARF, LLDB %d: bt names the CFI build's frames" % major, names[:upto] == ref_names[:upto],
                  "%s vs %s" % (names, ref_names))
        lvl2 = next((i for (n, _, _, i) in frames if n == "level_2"), None)
        buf = [thread.GetFrameAtIndex(lvl2).FindVariable("buf").GetChildAtIndex(k).GetValueAsUnsigned()
               for k in range(64)] if lvl2 is not None else []
        res.check("own DWARF, LLDB %d: frame variable buf in level_2" % major, buf == ref_buf and any(buf),
                  "%s vs %s" % (buf[:8], ref_buf[:8]))
    finally:
        s.delete(target)


def run(args, work, res):
    os.environ["SFUNWIND_LLDB_CACHE"] = os.path.join(work, "cache-unwindplan")
    shutil.rmtree(os.environ["SFUNWIND_LLDB_CACHE"], ignore_errors=True)
    plain = H.Session(None, work)
    s = H.Session(args.plugin, work)
    print("LLDB: " + s.version)

    programs = [
        # (label, CFI build, SFrame-only build, args, finish)
        ("gas-2.40/recurse", H.fixture("gas-2.40", "recurse-O2-nofp"), H.fixture("gas-2.40", "recurse-O2-nofp-noeh"), [], True),
        ("gas-2.40/plt", H.fixture("gas-2.40", "plt-O2-nofp", "plt"), H.fixture("gas-2.40", "plt-O2-nofp-noeh", "plt"), [], True),
        ("gas-2.40/sighandler", H.fixture("gas-2.40", "sighandler-O2-nofp"), H.fixture("gas-2.40", "sighandler-O2-nofp-noeh"), [], False),
        ("gas-2.40/noreturn", H.fixture("gas-2.40", "noreturn-O2-nofp"), H.fixture("gas-2.40", "noreturn-O2-nofp-noeh"), [], False),
        ("gas-2.40/cxx_exceptions", H.fixture("gas-2.40", "cxx_exceptions-O2-nofp"), H.fixture("gas-2.40", "cxx_exceptions-O2-nofp-noeh"), [], False),
    ]
    for writer in ("gas-2.40", "gas-2.44", "gas-2.47", "clang-23"):
        programs.append((writer + "/recurse-static", H.fixture(writer, "recurse-O2-nofp-static"),
                         H.fixture(writer, "recurse-O2-nofp-static-noeh"), [], True))
    for writer in ("gas-2.44", "gas-2.47", "clang-23"):
        programs.append((writer + "/sighandler-static", H.fixture(writer, "sighandler-O2-nofp-static"),
                         H.fixture(writer, "sighandler-O2-nofp-static-noeh"), [], False))
    if args.chroot:
        for writer in ("gas-2.44", "gas-2.47", "clang-23"):
            for prog in ("recurse", "noreturn", "cxx_exceptions", "sighandler", "realign"):
                programs.append(("%s/%s" % (writer, prog), H.fixture(writer, prog + "-O2-nofp"),
                                 H.fixture(writer, prog + "-O2-nofp-noeh"), [], prog == "recurse"))
            programs.append((writer + "/plt", H.fixture(writer, "plt-O2-nofp", "plt"),
                             H.fixture(writer, "plt-O2-nofp-noeh", "plt"), [], False))
    first = True
    for label, cfi_path, noeh_path, pargs, finish in programs:
        if args.only and args.only not in label:
            continue
        check_program(plain, s, res, work, label, cfi_path, noeh_path, pargs, os.path.basename(noeh_path),
                      finish=finish)
        if first:
            # The same program again, in a new session, with no plugin
            # command: LLDB must find the cached file through
            # target.debug-file-search-paths by itself.
            # A copy: LLDB keeps Module objects (and their plans) by path
            # for as long as anything refers to them.
            s2 = H.Session(args.plugin, work)
            again = os.path.join(work, os.path.basename(noeh_path) + "-again")
            shutil.copy(noeh_path, again)
            check_program(plain, s2, res, work, label + " warm cache", cfi_path, again, pargs,
                          os.path.basename(again), auto=True)
        first = False
    if not args.only or "stripped" in args.only:
        check_stripped(plain, s, res, work, "gas-2.40/recurse", H.fixture("gas-2.40", "recurse-O2-nofp"),
                       H.fixture("gas-2.40", "recurse-O2-nofp-noeh"), [])
        for writer in ("gas-2.47", "clang-23"):
            check_stripped(plain, s, res, work, writer + "/recurse-static", H.fixture(writer, "recurse-O2-nofp-static"),
                           H.fixture(writer, "recurse-O2-nofp-static-noeh"), [])
    if not args.only or "split" in args.only:
        check_split_debug(plain, s, res, work)
    if not args.only or "own" in args.only:
        check_own_dwarf(plain, s, res, work)


if __name__ == "__main__":
    H.main(run)

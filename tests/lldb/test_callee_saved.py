#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""LLDB's caller frames keep rbx and r12-r15 through the plugin's debug files.

SFrame has no rules for the x86-64 callee-saved registers rbx and r12-r15;
the plugin's generated .debug_frame says where each function keeps them, from
the analysis of its instructions (`sframe callee-saved on`, the default), or
leaves them undefined (`off`). For each host-runnable x86-64 `-noeh` fixture
(only .sframe left) and each `-g` fixture split into a program without CFI
and DWARF plus a separate debug file, stopped at its trap:
  - the reference is plain LLDB on the CFI build at the same stop (the
    programs are staged under paths of one length, so that the stacks start
    at the same address: LLDB turns address randomisation off);
  - in every caller frame whose callee has an SFrame FDE, each register LLDB
    shows must be the reference's value; where it is frame 0's value (run
    dependent), it must be frame 0's in the reference too;
  - every variable `frame variable` shows in those frames must be the
    reference's (locals declared at or after the frame's line are left
    out and counted: their initializer has not run);
  - in the frames whose callee LLDB unwound with the generated 'DWARF CFI'
    (its unwind log; LLDB's own plans, its rbp fast path or the plan of a
    frame interrupted by a signal, find saves themselves): with the setting
    on, registers are recovered; with it off (a file made with the other
    setting is regenerated), none is. The variables LLDB cannot show are
    counted both ways.
Then the plugin's own commands (`sframe bt --registers`, `sframe compare`),
on the same fixtures' SFrame-only builds and on tests/cli/test_bt.py's
"regs" program (its g1-g3 frames keep known seeds in rbx, r12-r15):
  - `sframe bt -r -j`: every register value shown in a frame at the same pc
    as the reference's frame is the reference's value (where it is frame 0's
    value, which may be run dependent, it must be frame 0's in the reference
    too), some come from save slots (not frame 0's value), and g1-g3 show
    their seeds;
  - `sframe compare -j` in a plugin session whose modules LLDB loaded
    without the plugin's debug files (LLDB unwinds by the build's own CFI):
    0 registers differ, some are equal;
  - with `sframe callee-saved off` neither command recovers any.

usage: test_callee_saved.py --plugin libsfunwind_lldb.so --lldb lldb-19 [--work DIR] [--chroot] [-v]
"""

import os
import re
import shutil
import subprocess

import sys

import lldb_harness as H
import test_unwindplan as U

sys.path.insert(0, os.path.join(H.REPO, "tests", "cli"))
import test_bt as CLI  # noqa: E402  the "regs" program's source and seeds

REGISTERS = ["rbx", "r12", "r13", "r14", "r15"]
# The -noeh fixtures compared (the CFI build is the name without -noeh).
NOEH = ["recurse-O2-nofp", "sighandler-O2-nofp", "noreturn-O2-nofp", "cxx_exceptions-O2-nofp",
        "realign-O2-nofp", "plt-O2-nofp/plt"]
STATIC_NOEH = ["recurse-O2-nofp-static", "sighandler-O2-nofp-static", "cxx_exceptions-O2-nofp-static"]
G = ["recurse-O2-nofp-g", "recurse-O0-g", "cxx_exceptions-O2-nofp-g", "cxx_exceptions-O0-g"]
# Round names of one length: the staged paths must be as long as each other.
ROUNDS = ("on", "of")
REFERENCE = "rf"


def programs(chroot):
    """(label, CFI build, SFrame-only build or None, -g build or None)."""
    out = []
    writers = ["gas-2.40"] + (["gas-2.44", "gas-2.47", "clang-23"] if chroot else [])
    for writer in writers:
        for name in NOEH:
            prog = name.split("/")
            noeh = [prog[0] + "-noeh"] + prog[1:]
            out.append((writer + "/" + name, H.fixture(writer, *prog), H.fixture(writer, *noeh), None))
        for name in G:
            out.append((writer + "/" + name, H.fixture(writer, name), None, H.fixture(writer, name)))
    for writer in ("gas-2.40", "gas-2.44", "gas-2.47", "clang-23"):
        for name in STATIC_NOEH:
            path = H.fixture(writer, name + "-noeh")
            if os.path.exists(path):
                out.append((writer + "/" + name, H.fixture(writer, name), path, None))
    return out


def stage(work, where, label, path, name):
    """A copy of the program at WORK/cs/WHERE/LABEL/NAME (with its folder for
    plt, which loads its library from there). argv[0] is on the stack: the
    programs compared get paths of one length."""
    d = os.path.join(work, "cs", where, label.replace("/", "_"))
    shutil.rmtree(d, ignore_errors=True)
    if os.path.basename(path) == "plt":
        shutil.copytree(os.path.dirname(path), d)
    else:
        os.makedirs(d)
        shutil.copy2(path, os.path.join(d, name))
    return os.path.join(d, name)


def split_g(work, where, label, g):
    """The -g program without DWARF and CFI, its DWARF in a separate debug
    file under WORK/cs/sysdebug (in the plugin session's search paths)."""
    prog = stage(work, where, label, g, os.path.basename(g))
    build_id = re.search(r"Build ID: ([0-9a-f]+)", subprocess.check_output(["readelf", "-n", g], text=True)).group(1)
    dbg = os.path.join(work, "cs", "sysdebug", ".build-id", build_id[:2], build_id[2:] + ".debug")
    os.makedirs(os.path.dirname(dbg), exist_ok=True)
    if not os.path.exists(dbg):
        subprocess.check_call(["objcopy", "--only-keep-debug", g, dbg])
    subprocess.check_call(["objcopy", "--strip-debug", "--remove-section=.eh_frame", "--remove-section=.eh_frame_hdr",
                           "--remove-section=.debug_frame", prog])
    return prog


def register(frame, name):
    v = frame.FindRegister(name)
    if not v.IsValid() or v.GetValue() is None:
        return None
    return v.GetValueAsUnsigned()


def flat(v, depth=0):
    """A variable's value as text, or None when LLDB cannot show it."""
    if not v.IsValid() or v.GetError().Fail():
        return None
    value = v.GetValue()
    n = v.GetNumChildren() if depth < 2 else 0
    if value is None and n == 0:
        return None
    parts = [value or ""]
    for i in range(min(n, 64)):
        c = flat(v.GetChildAtIndex(i), depth + 1)
        if c is None:
            return None
        parts.append(c)
    return "{" + ",".join(parts) + "}" if n else parts[0]


def initialized(frame, v):
    """False for a local declared at or after the line the frame is at: its
    initializer has not run (`int r = f();` in the frame that called f), so
    its bytes are whatever the stack held, which differs from one process to
    the next (cxx_exceptions-O0-g's Level<3>::run, where `r` was 0x57572ee9
    in one run and 0xaa3bdfc9 in the other). Nothing to compare."""
    import lldb  # the harness found it (lldb_harness.py)
    if v.GetValueType() != lldb.eValueTypeVariableLocal:
        return True
    decl = v.GetDeclaration()
    line = frame.GetLineEntry()
    if not decl.IsValid() or not line.IsValid() or decl.GetLine() == 0 or line.GetLine() == 0:
        return True
    if decl.GetFileSpec().fullpath != line.GetFileSpec().fullpath:
        return True
    return decl.GetLine() < line.GetLine()


def stop(session, path, plain=False):
    if plain:
        with session.plain_loading():
            target = session.create_by_command(path)
            _, thread = U.stop_at_trap(session, target, [], by_command=True)
    else:
        target = session.create_by_command(path)
        _, thread = U.stop_at_trap(session, target, [], by_command=True)
    return target, thread


def compare(plain, s, res, work, where, label, cfi, noeh, g, totals):
    name = os.path.basename(cfi)
    prog = split_g(work, where, label, g) if g else stage(work, where, label, noeh, name)
    ref_path = stage(work, REFERENCE, label, cfi, name)
    # The plan LLDB used in each frame: only the callee frames it unwound
    # with the generated 'DWARF CFI' decide a register (LLDB's own plans,
    # e.g. for a frame interrupted by a signal, find saves themselves).
    log = os.path.join(work, "cs", "%s-%s.unwind.log" % (where, label.replace("/", "_")))
    if os.path.exists(log):
        os.remove(log)
    s.cmd("log enable -f %s lldb unwind" % log)
    target, thread = stop(s, prog)
    rtarget = None
    try:
        pf = H.frames_of(thread)
        s.cmd("log disable lldb unwind")
        plans = U.plans_from_log(log)
        rtarget, rthread = stop(plain, ref_path, plain=True)
        rf = H.frames_of(rthread)
        cov = U.covered(s, thread, pf)
        p0 = {r: register(thread.GetFrameAtIndex(0), r) for r in REGISTERS}
        r0 = {r: register(rthread.GetFrameAtIndex(0), r) for r in REGISTERS}
        wrong = []
        recovered = unavailable = frames = 0
        shown = hidden = uninitialized = 0
        for k in range(1, min(len(pf), len(rf))):
            if pf[k].pc != rf[k].pc:
                break
            if (k - 1) not in cov:
                continue
            frames += 1
            by_cfi = plans.get(pf[k - 1].index) == "DWARF CFI"
            f = thread.GetFrameAtIndex(pf[k].index)
            rframe = rthread.GetFrameAtIndex(rf[k].index)
            for r in REGISTERS:
                got = register(f, r)
                want = register(rframe, r)
                if by_cfi:
                    unavailable += got is None
                    recovered += got is not None
                if got is None:
                    continue
                if got != want and not (got == p0[r] and want == r0[r]):
                    wrong.append("frame %d %s %s: %s, reference %s" % (k, pf[k].function, r, hex(got),
                                                                     hex(want) if want is not None else None))
            if g:
                # Paired by position: a variable may have no name (clang's
                # artificial ones), and the same program's DWARF lists them
                # in the same order.
                mine = list(f.GetVariables(True, True, False, True))
                theirs = list(rframe.GetVariables(True, True, False, True))
                if [v.GetName() for v in mine] != [v.GetName() for v in theirs]:
                    wrong.append("frame %d %s: variables %s, reference %s" % (
                        k, pf[k].function, [v.GetName() for v in mine], [v.GetName() for v in theirs]))
                    continue
                for v, rv in zip(mine, theirs):
                    if not initialized(f, v):
                        uninitialized += 1
                        continue
                    got = flat(v)
                    if got is None:
                        hidden += 1
                        continue
                    shown += 1
                    want = flat(rv)
                    if got != want:
                        wrong.append("frame %d %s variable %s = %s, reference %s" % (k, pf[k].function, v.GetName(),
                                                                                   got[:60], (want or "")[:60]))
        res.check("%s [%s]: registers and variables of %d caller frames are the CFI build's" % (label, where, frames),
                  frames > 0 and not wrong, "; ".join(wrong[:4]) or "no caller frame compared")
        totals["frames"] += frames
        totals["recovered"] += recovered
        totals["unavailable"] += unavailable
        totals["variables shown"] += shown
        totals["variables unavailable"] += hidden
        totals["variables not yet initialized"] += uninitialized
        if res.verbose:
            print("  %s [%s]: %d frames, registers %d recovered %d unavailable, variables %d shown %d unavailable"
                  " %d not yet initialized" % (label, where, frames, recovered, unavailable, shown, hidden,
                                               uninitialized))
    finally:
        if rtarget is not None:
            plain.delete(rtarget)
        s.delete(target)


# The fixtures `sframe bt -r` and `sframe compare` run on (CFI build; the
# SFrame-only build is the -noeh copy).
COMMAND_PROGRAMS = ["recurse-O2-nofp", "cxx_exceptions-O2-nofp", "realign-O2-nofp", "sighandler-O2-nofp",
                    "noreturn-O2-nofp", "plt-O2-nofp/plt"]
# Where the staged copies go: as long as REFERENCE (argv[0] is on the stack).
BT_WHERE = "bt"
COMPARE_WHERE = "cm"


def regs_programs(work):
    """tests/cli/test_bt.py's "regs" program built here with SFrame (the CFI
    build) and its copy without .eh_frame: (CFI path, SFrame-only path)."""
    d = os.path.join(work, "cs", "regs-src")
    os.makedirs(d, exist_ok=True)
    src = os.path.join(d, "regs.c")
    with open(src, "w") as f:
        f.write(CLI.REGS_C)
    cfi = os.path.join(d, "regs")
    subprocess.check_call(["gcc"] + CLI.NOFP + ["-DSEED=%#x" % CLI.SEED, "-o", cfi, src])
    noeh = cfi + "-noeh"
    subprocess.check_call(["objcopy", "--remove-section=.eh_frame", "--remove-section=.eh_frame_hdr", cfi, noeh])
    if ".sframe" not in subprocess.check_output(["readelf", "-S", "-W", noeh], text=True):
        raise RuntimeError("regs has no .sframe section (does gas support --gsframe?)")
    return cfi, noeh


def command_programs(work, chroot):
    """(label, CFI build, SFrame-only build) for the command checks."""
    out = [("regs",) + regs_programs(work)]
    writers = ["gas-2.40"] + (["gas-2.44", "gas-2.47", "clang-23"] if chroot else [])
    for writer in writers:
        for name in COMMAND_PROGRAMS:
            prog = name.split("/")
            noeh = [prog[0] + "-noeh"] + prog[1:]
            out.append((writer + "/" + name, H.fixture(writer, *prog), H.fixture(writer, *noeh)))
    return out


def seeds_of(function):
    """The seeds regs.c's g<k> keeps live across its call (test_bt.py)."""
    k = int(function[1]) - 1
    return {CLI.SEED + 5 * k + j for j in range(5)}


def bt_registers(plain, s, res, work, label, cfi, noeh, totals):
    """`sframe bt -r -j` on the SFrame-only build against plain LLDB on the
    CFI build at the same stop."""
    name = os.path.basename(cfi)
    prog = stage(work, BT_WHERE, label, noeh, name)
    ref_path = stage(work, REFERENCE, label, cfi, name)
    target, thread = stop(s, prog)
    rtarget = None
    try:
        data = s.json_cmd("sframe bt -r -j")
        rtarget, rthread = stop(plain, ref_path, plain=True)
        rf = H.frames_of(rthread, None)
        frames = data["frames"]
        wrong = []
        shown = not_saved = from_slot = compared_frames = 0
        seeds_ok = []
        top = frames[0].get("callee_saved") or {} if frames else {}
        rtop = {r: register(rthread.GetFrameAtIndex(0), r) for r in REGISTERS}
        for k in range(min(len(frames), len(rf))):
            if frames[k]["pc"] != rf[k].pc:
                break
            regs = frames[k].get("callee_saved")
            if regs is None:
                continue
            compared_frames += 1
            rframe = rthread.GetFrameAtIndex(rf[k].index)
            for r in REGISTERS:
                got = regs.get(r)
                if got is None:
                    not_saved += 1
                    continue
                shown += 1
                want = register(rframe, r)
                # A value of the thread's own that differs between the two
                # runs (a pid: sighandler kills itself) must be frame 0's on
                # both sides: passed on unchanged from frame 0 in both.
                run_dependent = got == top.get(r) and want == rtop[r]
                if got != want and not run_dependent:
                    wrong.append("frame %d %s %s: %s, reference %s" % (
                        k, frames[k]["function"], r, hex(got), hex(want) if want is not None else None))
                elif k > 0 and got != top.get(r):
                    from_slot += 1
            fn = frames[k]["function"].split("+")[0]
            if label == "regs" and fn in ("g1", "g2", "g3"):
                # Each g<k> keeps its five seeds in rbx, r12-r15 and rbp.
                have = {regs.get(r) for r in REGISTERS} | {frames[k]["fp"]}
                seeds_ok.append(seeds_of(fn) <= have)
        res.check("sframe bt -r %s: %d register values in %d frames are the CFI build's" % (label, shown,
                                                                                           compared_frames),
                  data.get("callee_saved_recovered") is True and shown > 0 and not wrong,
                  "; ".join(wrong[:4]) or "no register shown")
        if label == "regs":
            res.check("sframe bt -r regs: g1, g2 and g3 show their seeds", seeds_ok == [True] * 3,
                      str(seeds_ok))
        totals["shown"] += shown
        totals["not saved"] += not_saved
        totals["from save slots"] += from_slot
        if res.verbose:
            print("  bt -r %s: %d frames, %d shown (%d from save slots), %d not saved" % (
                label, compared_frames, shown, from_slot, not_saved))
    finally:
        if rtarget is not None:
            plain.delete(rtarget)
        s.delete(target)


def compare_registers(s, res, work, label, cfi, totals):
    """`sframe compare -j` on the CFI build, its modules loaded without the
    plugin's debug files: LLDB's values come from the build's own CFI."""
    prog = stage(work, COMPARE_WHERE, label, cfi, os.path.basename(cfi))
    # Off for the whole check, not only while LLDB loads the modules: the
    # stop hook would give LLDB the files at a later stop.
    s.cmd("sframe cover --off")
    target = None
    try:
        target, thread = stop(s, prog)
        status = s.json_cmd("sframe status -j")
        used = [(m["name"], m["detail"]) for m in status.get("modules", []) if m.get("coverage") == "in-use"]
        data = H.compare_stop(s, res, "sframe compare %s: frames and callee-saved registers agree" % label)
        c = data["callee_saved"]
        ok = c is not None and c["wrong"] == 0 and c["equal"] > 0 and not used
        res.check("sframe compare %s: %s registers equal, 0 differ, LLDB on the build's own CFI" % (
            label, c["equal"] if c else None), ok, "%s; debug files in use: %s" % (c, used))
        if c is not None:
            for k in ("compared", "equal", "unknown", "wrong"):
                totals[k] += c[k]
    finally:
        if target is not None:
            s.delete(target)
        s.cmd("sframe cover --on")


def commands_off(plain, s, res, work, label, cfi, noeh):
    """With `sframe callee-saved off`, neither command recovers a register."""
    prog = stage(work, BT_WHERE, label, noeh, os.path.basename(cfi))
    target, thread = stop(s, prog)
    try:
        bt = s.json_cmd("sframe bt -r -j")
        shown = [f for f in bt["frames"] if "callee_saved" in f]
        res.check("callee-saved off: sframe bt -r %s recovers nothing" % label,
                  bt.get("callee_saved_recovered") is False and not shown, str(shown[:2]))
        cmp = s.json_cmd("sframe compare -j")
        res.check("callee-saved off: sframe compare %s compares no register" % label,
                  cmp.get("callee_saved") is None, str(cmp.get("callee_saved")))
    finally:
        s.delete(target)


def check_commands(args, work, res, plain, s):
    ok, out, err = s.cmd("sframe callee-saved on")
    res.check("sframe callee-saved on (commands)", ok, err)
    bt = {k: 0 for k in ("shown", "not saved", "from save slots")}
    cmp = {k: 0 for k in ("compared", "equal", "unknown", "wrong")}
    for label, cfi, noeh in command_programs(work, args.chroot):
        if args.only and args.only not in label:
            continue
        if not os.path.exists(cfi):
            res.check("fixture %s exists" % label, False, cfi)
            continue
        bt_registers(plain, s, res, work, label, cfi, noeh, bt)
        compare_registers(s, res, work, label, cfi, cmp)
    for k, v in bt.items():
        res.count("sframe bt -r: registers %s" % k, v)
    for k, v in cmp.items():
        res.count("sframe compare: callee-saved registers %s" % k, v)
    print("sframe bt -r: %d register values shown, equal to the CFI build's (%d from save slots), %d not saved"
          % (bt["shown"], bt["from save slots"], bt["not saved"]))
    print("sframe compare: %d callee-saved registers compared with LLDB's: %d equal, %d unknown to SFrame, "
          "%d wrong" % (cmp["compared"], cmp["equal"], cmp["unknown"], cmp["wrong"]))
    res.check("sframe bt -r: some values read from save slots (%d)" % bt["from save slots"],
              bt["from save slots"] > 0)
    res.check("sframe compare: registers equal (%d), none wrong (%d)" % (cmp["equal"], cmp["wrong"]),
              cmp["equal"] > 0 and cmp["wrong"] == 0)
    ok, out, err = s.cmd("sframe callee-saved off")
    res.check("sframe callee-saved off (commands)", ok, err)
    label, cfi, noeh = command_programs(work, False)[0]
    commands_off(plain, s, res, work, label, cfi, noeh)
    s.cmd("sframe callee-saved on")


def run(args, work, res):
    H.use_cache(work, "callee_saved")
    plain = H.Session(None, work)
    s = H.Session(args.plugin, work)
    print("LLDB: " + s.version)
    s.cmd("settings append target.debug-file-search-paths " + os.path.join(work, "cs", "sysdebug"))
    totals = {}
    for where in ROUNDS:
        ok, out, err = s.cmd("sframe callee-saved " + ("on" if where == "on" else "off"))
        res.check("sframe callee-saved %s" % where, ok and ("on" if where == "on" else "off") in out, err)
        # LLDB's debuginfod client keeps the files the plugin's responder
        # sent, by build-id, and reuses them without asking: a round with the
        # other setting starts without them.
        shutil.rmtree(os.environ["DEBUGINFOD_CACHE_PATH"], ignore_errors=True)
        t = totals.setdefault(where, {k: 0 for k in ("frames", "recovered", "unavailable", "variables shown",
                                                    "variables unavailable", "variables not yet initialized")})
        for label, cfi, noeh, g in programs(args.chroot):
            if args.only and args.only not in label:
                continue
            if not os.path.exists(cfi):
                continue
            compare(plain, s, res, work, where, label, cfi, noeh, g, t)
        for k, v in t.items():
            res.count("callee-saved %s: %s" % (where, k), v)
    check_commands(args, work, res, plain, s)
    on, off = totals["on"], totals["of"]
    res.check("on: registers recovered in caller frames (%d)" % on["recovered"], on["recovered"] > 0)
    res.check("off: no register recovered in caller frames of SFrame-unwound callees (%d)" % off["recovered"],
              off["recovered"] == 0)
    res.check("on: no more variables unavailable than off (%d vs %d)" % (on["variables unavailable"],
                                                                         off["variables unavailable"]),
              on["variables unavailable"] <= off["variables unavailable"])


if __name__ == "__main__":
    H.main(run)

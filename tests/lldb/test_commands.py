#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""The `sframe` commands in LLDB, through the Python SB API (synchronous).

At many stops of the host-runnable fixtures (the natural trap stop, every
instruction of several functions by instruction stepping so that prologues
and epilogues are covered, a signal handler and the signal-delivery stop
before it, PLT entries stepped into a shared library), `sframe compare`
must find every frame both unwinders produce equal (pc, CFA, sp, fp) and,
where SFrame's walk ends first, name the SFrame limit that ends it (libc and
ld.so have no SFrame; static glibc code has no FDEs). The SFrame frames must
also be the call chain the fixture documents. Then `sframe show-unwind`,
`sframe dump`, `sframe status`, argument errors and a module whose SFrame
section is broken (reported once, skipped, LLDB carries on).

usage: test_commands.py --plugin libsfunwind_lldb.so --lldb lldb-19 [--work DIR] [-v]
"""

import os
import re
import shutil
import sys

import lldb_harness as H

RECURSE_CHAIN = ["fixture_leaf"] + ["recurse"] * 6 + ["level_3", "level_2", "level_1", "main"]
SIGNAL_CHAIN = ["fixture_leaf", "handler_level_1", "on_signal"]
PLT_CHAIN = ["fixture_leaf", "exe_callback", "lib_level_2", "lib_level_1", "lib_entry", "call_into_lib", "main"]
NORETURN_CHAIN = ["fixture_leaf", "fatal_path", "level_2", "level_1", "main"]


def symbol_address(target, name):
    for ctx in target.FindSymbols(name):
        sym = ctx.GetSymbol()
        if sym.GetName() == name:
            addr = sym.GetStartAddress().GetLoadAddress(target)
            if addr != 0xFFFFFFFFFFFFFFFF:
                return addr
    return None


def frame0_function(thread):
    sym = thread.GetFrameAtIndex(0).GetSymbol()
    return sym.GetName() if sym.IsValid() else None


def step_through(s, res, target, label, function, max_steps=400, step_over_calls=True, stop_when=None):
    """From the current stop at `function`'s first instruction, compares at
    every instruction until the function returns."""
    process = target.GetProcess()
    thread = process.GetSelectedThread()
    steps = 0
    while steps < max_steps:
        name = frame0_function(thread)
        if name != function or (stop_when is not None and stop_when(thread)):
            break
        pc = thread.GetFrameAtIndex(0).GetPC()
        H.compare_stop(s, res, "%s: %s at pc 0x%x (instruction %d)" % (label, function, pc, steps))
        depth = thread.GetNumFrames()
        thread.StepInstruction(False)
        if process.GetState() != s.lldb.eStateStopped:
            break
        steps += 1
        # Stepped into a callee: run to the return address (a breakpoint
        # there; LLDB's step-over would trust the unwinder under test).
        if step_over_calls and frame0_function(thread) != function and thread.GetNumFrames() > depth:
            ret = thread.GetFrameAtIndex(1).GetPC()
            bp = target.BreakpointCreateByAddress(ret)
            process.Continue()
            target.BreakpointDelete(bp.GetID())
            if process.GetState() != s.lldb.eStateStopped or thread.GetFrameAtIndex(0).GetPC() != ret:
                break
    res.check("%s: stepped through %s (%d instructions)" % (label, function, steps), steps >= 4,
              "only %d instructions" % steps)


def run_to(s, target, args, function):
    """Launches with a breakpoint at the first instruction of `function`."""
    bp = None
    process = None
    # Breakpoints by address need the module loaded: stop at entry first.
    process = s.launch(target, args, stop_at_entry=True)
    addr = symbol_address(target, function)
    if addr is None:
        # A shared library's function: continue until it is loaded.
        bp_name = target.BreakpointCreateByName(function)
        process.Continue()
        target.BreakpointDelete(bp_name.GetID())
        addr = symbol_address(target, function)
        if addr is None:
            raise RuntimeError("no symbol " + function)
    if frame0_function(process.GetSelectedThread()) != function:
        bp = target.BreakpointCreateByAddress(addr)
        process.Continue()
        # Signals on the way (the sighandler fixture's SIGUSR1) stop too.
        while (process.GetState() == s.lldb.eStateStopped and
               process.GetSelectedThread().GetStopReason() == s.lldb.eStopReasonSignal):
            process.Continue()
        target.BreakpointDelete(bp.GetID())
    thread = process.GetSelectedThread()
    if thread.GetFrameAtIndex(0).GetPC() != addr:
        raise RuntimeError("did not stop at %s (stopped at 0x%x)" % (function, thread.GetFrameAtIndex(0).GetPC()))
    return process


def trap_stop(s, res, label, path, args, chain, allowed=H.KNOWN_END_LIMITS):
    target = s.create(path)
    try:
        process = s.launch(target, args)
        thread = process.GetSelectedThread()
        if not res.check("%s: stopped by a signal" % label, thread.GetStopReason() == s.lldb.eStopReasonSignal,
                         "stop reason %d" % thread.GetStopReason()):
            return
        # SIGUSR1 of the sighandler fixture comes first: compare there too.
        if "sighandler" in path:
            sig = thread.GetStopReasonDataAtIndex(0)
            if sig == 10:  # SIGUSR1: pc after the syscall in send_signal_to_self
                H.compare_stop(s, res, label + ": SIGUSR1 delivery stop",
                               expect_functions=["send_signal_to_self", "level_2", "level_1", "main"])
                process.Continue()
                thread = process.GetSelectedThread()
        H.compare_stop(s, res, label + ": trap stop", allowed_limits=allowed, expect_functions=chain)
        bt = s.json_cmd("sframe bt --json")
        names = [f["function"].split("+")[0].split("(")[0] for f in bt["frames"]]
        res.check(label + ": sframe bt frames", names[:len(chain)] == chain, "got %s" % names)
    finally:
        s.delete(target)


def stepping(s, res, label, path, args, functions, allowed=H.KNOWN_END_LIMITS):
    for fn in functions:
        target = s.create(path)
        try:
            run_to(s, target, args, fn)
            step_through(s, res, target, label, fn)
        except RuntimeError as e:
            res.check("%s: run to %s" % (label, fn), False, str(e))
        finally:
            s.delete(target)


def plt_stepping(s, res, label, path):
    """Breakpoint on the PLT entry of lib_entry, then every instruction into
    lib_entry and through its prologue (PLT FDEs: GNU ld writes them; lld
    writes none, which is the no-fde limit)."""
    target = s.create(path)
    try:
        process = s.launch(target, ["none"], stop_at_entry=True)
        # call_into_lib's call goes through lib_entry@plt: stop at the call
        # site's target by running to call_into_lib and stepping into the call.
        bp = target.BreakpointCreateByAddress(symbol_address(target, "call_into_lib"))
        process.Continue()
        target.BreakpointDelete(bp.GetID())
        thread = process.GetSelectedThread()
        steps = 0
        in_plt = 0
        shown = False
        while steps < 80:
            name = frame0_function(thread) or "?"
            if name == "lib_level_1":
                break
            data = H.compare_stop(s, res, "%s: PLT path at %s (instruction %d)" % (label, name, steps))
            trampoline = thread.GetFrameAtIndex(0).GetSymbol().GetType() == s.lldb.eSymbolTypeTrampoline
            if trampoline and not shown and label.startswith("gas-"):
                # lib_entry's PLT entry is the fourth pltN entry: show-unwind
                # lists GNU ld's PC-mask FDE's rows once and marks frame 0's
                # (lld writes no SFrame for its PLT).
                shown = True
                ok, out, err = s.cmd("sframe show-unwind -a $pc")
                marked = [l for l in out.splitlines() if "<--" in l]
                row0 = data["sframe_frames"][0]["row"].split(" (FDE")[0]
                res.check(label + ": show-unwind in a PLT entry: rows repeat every 16 bytes, frame 0's marked",
                          ok and "PC-mask FREs" in out and "the rows repeat every 16 bytes" in out and
                          ("implied: SFrame v1 stores no size" in out) == label.startswith("gas-2.40/") and
                          len(marked) == 1 and row0 in marked[0], out + err)
            if "plt" in name or name == "lib_entry@plt" or trampoline:
                in_plt += 1
            thread.StepInstruction(False)
            steps += 1
        res.check(label + ": stepped through a PLT entry into the library", in_plt >= 1 and steps > 5,
                  "%d PLT stops, %d steps" % (in_plt, steps))
        res.check(label + ": show-unwind was tried in the PLT entry", shown == label.startswith("gas-"))
    finally:
        s.delete(target)


def check_show_unwind_and_dump(s, res, label, path, writer, name):
    target = s.create(path)
    try:
        s.launch(target, [])
        ok, out, err = s.cmd("sframe show-unwind -a $pc")
        marked = [l for l in out.splitlines() if "<--" in l]
        bt = s.json_cmd("sframe bt --json")
        row0 = bt["frames"][0]["row"].split(" (FDE")[0]
        res.check(label + ": show-unwind marks the row of frame 0", ok and len(marked) == 1 and row0 in marked[0],
                  "rows marked %s, frame 0 row %r, error %s" % (marked, row0, err))
        ok, out, err = s.cmd("sframe show-unwind -n recurse")
        rows = [l for l in out.splitlines() if l.startswith("row[")]
        res.check(label + ": show-unwind -n recurse lists rows", ok and len(rows) >= 2, out + err)
        ok, out, err = s.cmd("sframe dump")
        expected_path = os.path.join(H.FIXTURES, "expected", writer, name + ".sframe.txt")
        with open(expected_path) as f:
            expected = f.read()
        def body(text):
            i = text.find("Contents of the SFrame section")
            return [l.rstrip() for l in text[i:].splitlines() if l.strip()] if i >= 0 else []
        res.check(label + ": sframe dump matches objdump --sframe", ok and body(out) == body(expected) and body(out),
                  "first difference at line %s" % next((i for i, (a, b) in enumerate(zip(body(out), body(expected))) if a != b), "len"))
        st = s.json_cmd("sframe status --json")
        exe = [m for m in st["modules"] if m["path"].endswith("/" + name)]
        libc = [m for m in st["modules"] if m["name"].startswith("libc.so")]
        res.check(label + ": status shows the program's SFrame version",
                  len(exe) == 1 and exe[0]["sframe"] is not None and
                  "v%d" % exe[0]["sframe"]["version"] == "v" + writer_version(writer),
                  repr(exe))
        res.check(label + ": status shows libc without SFrame", not libc or libc[0]["sframe"] is None, repr(libc))
        # The cache is on a file system with flock(2): every file handed out is locked.
        res.check(label + ": status: the debug files in use are locked", st.get("unlocked_files") == "",
                  repr(st.get("unlocked_files")))
    finally:
        s.delete(target)


def writer_version(writer):
    return {"gas-2.40": "1", "gas-2.44": "2", "gas-2.47": "3", "clang-23": "2"}[writer.split("-aarch64")[0].split("-s390x")[0]]


def check_errors(s, res, work):
    """Bad arguments and a broken SFrame section never end the session."""
    target = s.create(H.fixture("gas-2.40", "recurse-O2-nofp"))
    try:
        ok, _, err = s.cmd("sframe bt")
        res.check("errors: sframe bt without a process fails cleanly", not ok and "process" in err, err)
        s.launch(target, [])
        for line in ("sframe bt -c abc", "sframe bt --bogus", "sframe show-unwind", "sframe show-unwind -a nothing",
                     "sframe dump no-such-module", "sframe compare -t 99"):
            ok, _, err = s.cmd(line)
            res.check("errors: '%s' is an error" % line, not ok and err.startswith("error: sframe"), err)
        ok, out, _ = s.cmd("sframe bt")
        res.check("errors: the session still works", ok and "fixture_leaf" in out, out)
    finally:
        s.delete(target)

    # A copy of the program whose SFrame header has a bad version byte.
    broken = os.path.join(work, "recurse-broken-sframe")
    shutil.copy(H.fixture("gas-2.40", "recurse-O2-nofp"), broken)
    import subprocess
    hdr = subprocess.check_output(["readelf", "-S", "-W", broken], text=True)
    m = re.search(r"\.sframe\s+\S+\s+[0-9a-f]+\s+([0-9a-f]+)", hdr)
    with open(broken, "r+b") as f:
        f.seek(int(m.group(1), 16) + 2)
        f.write(b"\x09")  # sfp_version 9: no such version
    target = s.create(broken)
    # The plugin's stop hook reports it at the stop, into the debugger's
    # output: capture that too.
    stop_output = os.path.join(work, "broken-stop-output.txt")
    out_file = open(stop_output, "w")
    s.debugger.SetOutputFileHandle(out_file, False)
    s.debugger.SetErrorFileHandle(out_file, False)
    try:
        s.launch(target, [])
        ok1, out1, err1 = s.cmd("sframe bt")
        ok2, out2, err2 = s.cmd("sframe bt")
        out_file.flush()
        with open(stop_output) as f:
            at_stop = f.read()
        counts = [text.count("SFrame section skipped") for text in (at_stop, out1 + err1, out2 + err2)]
        res.check("broken section: reported once", sum(counts) == 1,
                  "reported %s times (stop, first, second command): %s" % (counts, at_stop + out1 + err1))
        st = s.json_cmd("sframe status --json")
        mod = [m for m in st["modules"] if m["name"] == "recurse-broken-sframe"]
        res.check("broken section: status names the problem", mod and mod[0]["sframe"] is None and
                  "version" in mod[0]["problem"].lower(), repr(mod))
        res.check("broken section: sframe bt still answers", ok1 and ok2 and "no module with SFrame covers" in out2,
                  out2 + err2)
        ok, out, _ = s.cmd("bt")
        res.check("broken section: LLDB's bt still works", ok and "fixture_leaf" in out, out)
    finally:
        s.debugger.SetOutputFileHandle(sys.stdout, False)
        s.debugger.SetErrorFileHandle(sys.stderr, False)
        out_file.close()
        s.delete(target)


# `help sframe`: every subcommand, one line each ("      NAME -- TEXT").
SUBCOMMANDS = ("bt", "callee-saved", "compare", "cover", "dump", "provider", "show-unwind", "status")
# A bad option or argument: one error line naming the usage.
USAGE_ERRORS = [
    ("sframe bt -z", r"^error: sframe bt: unknown option '-z' \(usage: sframe bt \[-c COUNT\] .*\)\n$"),
    ("sframe bt -c x", r"^error: sframe bt: bad frame count 'x' \(see 'help sframe bt'\)\n$"),
    ("sframe status extra", r"^error: sframe status: unexpected argument 'extra' \(usage: sframe status \[-j\|--json\]\)\n$"),
    ("sframe dump a b", r"^error: sframe dump: unexpected argument 'b' \(usage: sframe dump \[MODULE\]\)\n$"),
    ("sframe cover --on --off", r"^error: sframe cover: --on or --off, not both \(usage: sframe cover .*\)\n$"),
    ("sframe callee-saved maybe", r"^error: sframe callee-saved: on, off or status, not 'maybe' "
                                  r"\(usage: sframe callee-saved \[on \| off \| status\]\)\n$"),
    ("sframe provider x", r"^error: sframe provider: on, off or status, not 'x' \(usage: sframe provider .*\)\n$"),
    # LLDB's own message (a plugin cannot change a multiword command's
    # lookup): LLDB 19's names the command, LLDB 23's also `help sframe`.
    ("sframe nosuch", r"^(error: )?(invalid command 'sframe nosuch'\.|\"nosuch\" is not a valid subcommand of "
                      r"\"sframe\"\. .*Use \"help sframe\" to find out more\.)\n$"),
]


def help_and_errors(s, res):
    ok, out, _ = s.cmd("help sframe")
    listed = re.findall(r"^ +(\S+) +-- (.*)$", out, re.M)
    lines = {name: text for name, text in listed}
    res.check("help sframe: every subcommand in one line",
              ok and sorted(lines) == sorted(SUBCOMMANDS)
              and all(re.search(r"^ +%s +-- .*\n(?! {20,}\S)" % re.escape(n), out, re.M) for n in SUBCOMMANDS), out)
    for line, pattern in USAGE_ERRORS:
        ok, out, err = s.cmd(line)
        res.check("%s: one-line usage error" % line, not ok and re.search(pattern, err) is not None, out + err)


def status_for_frames(s, res):
    """`sframe status` answers for the selected frame, and reports the vdso
    (no .sframe; LLDB's image of it ends before its section headers) as no
    SFrame, not as a problem."""
    target = s.create(H.fixture("gas-2.40", "plt-O2-nofp", "plt"))
    try:
        s.launch(target, ["trap"])
        s.cmd("sframe cover")
        ok, out, err = s.cmd("sframe status")
        res.check("status: frame 0 uses SFrame", ok and re.search(
            r"^selected frame #0 \(0x[0-9a-f]+ in fixture_leaf\): SFrame in use: plt, CFA=rsp\+\d+ RA=\[CFA-8\]"
            r".*; LLDB's unwinder: DWARF CFI translated from it", out, re.M) is not None, out + err)
        res.check("status: the vdso has no SFrame, and no problem", re.search(
            r"^\[vdso\] .*\n  SFrame: none \(no SFrame section", out, re.M) is not None
            and "section headers" not in out + err and "skipped" not in out + err, out + err)
        ok, out, err = s.cmd("sframe show-unwind")
        res.check("sframe show-unwind: one-line usage error", not ok and re.search(
            r"^error: sframe show-unwind: give exactly one of -a ADDRESS or -n NAME "
            r"\(usage: sframe show-unwind -a ADDRESS \| -n NAME\)\n$", err) is not None, out + err)
        s.cmd("frame select 2")
        ok, out, err = s.cmd("sframe status")
        res.check("status: a caller frame in the library", ok and re.search(
            r"^selected frame #2 \(0x[0-9a-f]+ in lib_level_2\): SFrame in use: libfixture_plt\.so", out, re.M)
            is not None, out + err)
        frames = [f.GetModule().GetFileSpec().GetFilename() for f in target.GetProcess().GetSelectedThread()]
        libc = [i for i, m in enumerate(frames) if m == "libc.so.6"]
        if res.check("status: a libc frame in the stack", bool(libc), repr(frames)):
            s.cmd("frame select %d" % libc[0])
            ok, out, err = s.cmd("sframe status")
            res.check("status: libc (Debian 12's has no SFrame) says why not", ok and re.search(
                r"^selected frame #%d \(0x[0-9a-f]+( in \S+)?\): no SFrame: libc\.so\.6 has none \(no SFrame section\); "
                r"LLDB's own unwind plans take it" % libc[0], out, re.M) is not None, out + err)
    finally:
        s.delete(target)


def run(args, work, res):
    H.use_cache(work, "commands")
    s = H.Session(args.plugin, work)
    print("LLDB: " + s.version)
    ok, out, _ = s.cmd("help sframe bt")
    res.check("help text for sframe bt", ok and "Backtrace of the selected thread" in out and "-c COUNT" in out, out)
    help_and_errors(s, res)
    if not args.chroot and args.only is None:
        status_for_frames(s, res)

    only = args.only
    def want(label):
        return only is None or only in label

    # The gas 2.40 dynamic builds run on the host: every program.
    for variant in ("O2-nofp", "O2-fp", "O0-g", "O2-nofp-g"):
        label = "gas-2.40/recurse-" + variant
        if want(label):
            trap_stop(s, res, label, H.fixture("gas-2.40", "recurse-" + variant), [], RECURSE_CHAIN)
            stepping(s, res, label, H.fixture("gas-2.40", "recurse-" + variant), ["none"],
                     ["fixture_leaf", "level_3", "level_2", "level_1"])
    if want("noreturn"):
        trap_stop(s, res, "gas-2.40/noreturn", H.fixture("gas-2.40", "noreturn-O2-nofp"), [], NORETURN_CHAIN)
        stepping(s, res, "gas-2.40/noreturn", H.fixture("gas-2.40", "noreturn-O2-nofp"), ["none"], ["level_2"])
    if want("realign"):
        # gas 2.40 skips uses_drap's FDE (DRAP, CFA = r10): the walk ends there.
        trap_stop(s, res, "gas-2.40/realign", H.fixture("gas-2.40", "realign-O2-nofp"), [],
                  ["fixture_leaf", "uses_drap"], allowed={"no-fde"})
        stepping(s, res, "gas-2.40/realign", H.fixture("gas-2.40", "realign-O2-nofp"), ["none"],
                 ["uses_realign", "uses_alloca"], allowed={"no-fde"})
    for variant in ("O2-nofp", "O2-fp"):
        label = "gas-2.40/sighandler-" + variant
        if want(label):
            trap_stop(s, res, label, H.fixture("gas-2.40", "sighandler-" + variant), [], SIGNAL_CHAIN)
            stepping(s, res, label, H.fixture("gas-2.40", "sighandler-" + variant), ["none"],
                     ["handler_level_1", "on_signal"])
        label = "gas-2.40/plt-" + variant
        if want(label):
            trap_stop(s, res, label, H.fixture("gas-2.40", "plt-" + variant, "plt"), [], PLT_CHAIN)
            plt_stepping(s, res, label, H.fixture("gas-2.40", "plt-" + variant, "plt"))
            stepping(s, res, label, H.fixture("gas-2.40", "plt-" + variant, "plt"), ["none"],
                     ["lib_level_2", "exe_callback"])
    for variant in ("O2-nofp", "O2-nofp-g", "O0-g"):
        label = "gas-2.40/cxx_exceptions-" + variant
        if want(label):
            trap_stop(s, res, label, H.fixture("gas-2.40", "cxx_exceptions-" + variant), [],
                      ["fixture_leaf", "Worker<int>::step", "Level<0>::run", "Level<1>::run", "Level<2>::run",
                       "Level<3>::run", "run_chain", "main"])
            trap_stop(s, res, label + " catch", H.fixture("gas-2.40", "cxx_exceptions-" + variant), ["trap", "catch"],
                      ["fixture_leaf", "catcher", "run_catch", "main"])

    # Static builds of every x86-64 writer run on the host: v1, v2, v2 with
    # PC-relative starts (clang), v3.
    for writer in ("gas-2.40", "gas-2.44", "gas-2.47", "clang-23"):
        label = writer + "/recurse-O2-nofp-static"
        if want(label):
            path = H.fixture(writer, "recurse-O2-nofp-static")
            trap_stop(s, res, label, path, [], RECURSE_CHAIN)
            stepping(s, res, label, path, ["none"], ["fixture_leaf", "level_3", "level_2"])
            check_show_unwind_and_dump(s, res, label, path, writer, "recurse-O2-nofp-static")
        if writer != "gas-2.40":
            label = writer + "/sighandler-O2-nofp-static"
            if want(label):
                trap_stop(s, res, label, H.fixture(writer, "sighandler-O2-nofp-static"), [], SIGNAL_CHAIN)
            label = writer + "/cxx_exceptions-O2-nofp-static"
            if want(label):
                trap_stop(s, res, label, H.fixture(writer, "cxx_exceptions-O2-nofp-static"), [],
                          ["fixture_leaf", "Worker<int>::step", "Level<0>::run", "Level<1>::run"])
    # Dynamic builds of the sid writers: v2 (gas 2.44), v3 with flexible
    # FDEs (gas 2.47: uses_drap's DRAP), clang's v2 with PC-relative starts
    # and lld's PLT without FDEs.
    if args.chroot:
        for writer in ("gas-2.44", "gas-2.47", "clang-23"):
            for variant in ("O2-nofp", "O2-fp", "O0-g"):
                label = "%s/recurse-%s" % (writer, variant)
                if want(label):
                    path = H.fixture(writer, "recurse-" + variant)
                    trap_stop(s, res, label, path, [], RECURSE_CHAIN)
                    stepping(s, res, label, path, ["none"], ["fixture_leaf", "level_3", "level_2"])
            label = writer + "/realign"
            if want(label):
                # gas 2.47 writes uses_drap a v3 flexible FDE (CFA = r10), so
                # the walk goes on; gas 2.44 skips it; clang needs no DRAP.
                chain = ["fixture_leaf", "uses_drap"] + (["uses_realign", "uses_alloca", "level_1", "main"]
                                                         if writer != "gas-2.44" else [])
                trap_stop(s, res, label, H.fixture(writer, "realign-O2-nofp"), [], chain,
                          allowed={"no-fde", "no-module-sframe"})
                stepping(s, res, label, H.fixture(writer, "realign-O2-nofp"), ["none"],
                         ["uses_realign", "uses_alloca"], allowed={"no-fde", "no-module-sframe"})
            label = writer + "/plt"
            if want(label):
                trap_stop(s, res, label, H.fixture(writer, "plt-O2-nofp", "plt"), [], PLT_CHAIN)
                plt_stepping(s, res, label, H.fixture(writer, "plt-O2-nofp", "plt"))
            label = writer + "/sighandler"
            if want(label):
                trap_stop(s, res, label, H.fixture(writer, "sighandler-O2-nofp"), [], SIGNAL_CHAIN)
                stepping(s, res, label, H.fixture(writer, "sighandler-O2-nofp"), ["none"], ["handler_level_1"])
            label = writer + "/noreturn"
            if want(label):
                trap_stop(s, res, label, H.fixture(writer, "noreturn-O2-nofp"), [], NORETURN_CHAIN)
            label = writer + "/cxx_exceptions"
            if want(label):
                trap_stop(s, res, label, H.fixture(writer, "cxx_exceptions-O2-nofp"), [],
                          ["fixture_leaf", "Worker<int>::step", "Level<0>::run", "Level<1>::run"])
    if want("gas-2.40/recurse-O2-nofp dump"):
        check_show_unwind_and_dump(s, res, "gas-2.40/recurse-O2-nofp", H.fixture("gas-2.40", "recurse-O2-nofp"),
                                   "gas-2.40", "recurse-O2-nofp")
    if want("errors"):
        check_errors(s, res, work)


if __name__ == "__main__":
    H.main(run)

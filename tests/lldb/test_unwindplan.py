#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""LLDB's own unwinder on SFrame-only programs, with the plugin's generated
debug files (.debug_frame translated from .sframe).

For each host-runnable `-noeh` fixture (.eh_frame, .eh_frame_hdr and
.debug_frame removed, only .sframe left):
  - the reference is plain LLDB (no plugin) on the CFI build of the same
    program at the same stop;
  - the program is loaded the ordinary way, `target create PROG` and
    `process launch` (what `file PROG` and `run` run), with no plugin
    command and a cache that has no file for it: every module with SFrame
    must be covered by the time LLDB first unwinds (found by LLDB itself, not
    added at a stop);
  - with the plugin, LLDB's own frames (SB API: pc, and the CFA relative to
    frame 0's SP; the reference is launched until its stack starts at the
    same offset modulo 64, for the frames that realign it) must be the
    reference's, frame for frame; the unwind log must show 'DWARF CFI'
    for every caller frame in the program; callee-saved registers SFrame
    cannot restore must be unavailable (never stale) in caller frames; `up`
    and `finish` must work.
With the symbol table stripped too, plain LLDB must get the backtrace wrong
(the fixtures prove the point, not the test) and the plugin must still get
it right. A -g build split into a stripped program plus a separate debug
file must keep `frame variable` working in upper frames. The first fixture
is also loaded through the SB API with `sframe cover` (the route for SB
clients), through the SB API with no command (LLDB 19: the plugin prints a
hint naming that route), and again with a warm cache. Programs built here
are attached to with `process attach`, and dlopen a library, with no plugin
command.

usage: test_unwindplan.py --plugin libsfunwind_lldb.so --lldb lldb-19 [--work DIR] [-v]
"""

import contextlib
import fcntl
import os
import re
import shutil
import tempfile
import subprocess
import time

import lldb_harness as H

UNTRACKED = ["rbx", "r12", "r13", "r14", "r15"]


def relative(frames, sp0):
    return [(pc, cfa - sp0) for (_, pc, cfa, _) in frames]


def stop_at_trap(s, target, args, by_command=False):
    process = s.launch_by_command(target) if by_command else s.launch(target, args)
    thread = process.GetSelectedThread()
    while thread.GetStopReason() == s.lldb.eStopReasonSignal and thread.GetStopReasonDataAtIndex(0) == 10:
        process.Continue()  # the sighandler fixture's SIGUSR1
        thread = process.GetSelectedThread()
    return process, thread


# The largest stack realignment in the fixtures (realign: and $-64, %rsp).
STACK_ALIGN = 64
# Launches of the reference before giving up on lining its stack up.
REFERENCE_LAUNCHES = 24


def start_stack(process):
    """The address of argc when the process started (/proc/PID/stat field
    28, startstack), or None where /proc does not say."""
    try:
        with open("/proc/%d/stat" % process.GetProcessID()) as f:
            return int(f.read().rsplit(")", 1)[1].split()[25]) or None
    except (OSError, IndexError, ValueError):
        return None


@contextlib.contextmanager
def copy_with_path_length(path, length):
    """A copy of the program `path` whose path is at least `length`
    characters long (argv[0] is on the stack, above the start of the stack).
    A program that loads a library from its own folder (plt, by its $ORIGIN
    run path) is copied with that folder."""
    if len(path) == length:
        yield path
        return
    d = tempfile.mkdtemp(prefix="ref", dir="/tmp")
    try:
        name = os.path.basename(path)
        pad = max(1, length - len(d) - 2 - len(name))
        # Folder names of at most 100 characters (NAME_MAX is 255).
        folder = os.path.join(d, *["_" * min(100, pad - k) for k in range(0, pad, 101)])
        if name == "plt":
            shutil.copytree(os.path.dirname(path), folder)
        else:
            os.makedirs(folder)
            shutil.copy2(path, folder)
        yield os.path.join(folder, name)
    finally:
        shutil.rmtree(d, ignore_errors=True)


def reference(plain, path, args, start=None, by_command=False):
    """Plain LLDB's frames of the CFI build at its stop, and the CFA of each
    relative to frame 0's SP. Frames that realign the stack have CFA - SP
    distances that depend on where the stack started, modulo STACK_ALIGN:
    with `start` (the start of the stack of the run compared with), the
    reference is launched again until its stack starts at the same offset.
    What moves it: argv[0]'s length (a copy of the program under a longer
    path; the kernel copies the path twice, argv[0] and AT_EXECFN, and
    rounds the start to 16, so the reference tries longer paths in steps of
    8), and where LLDB cannot turn address randomisation off, chance.
    The environment moves it too (`process launch` passes LLDB's, an SB
    launch none): `by_command` launches the reference the way the run
    compared with was launched. Returns (relative, frames, start
    difference modulo STACK_ALIGN; 0 when lined up or not known)."""
    diff = 0
    for attempt in range(REFERENCE_LAUNCHES):
        with copy_with_path_length(path, len(path) + 8 * attempt) as copy:
            target = plain.create(copy)
            try:
                process, thread = stop_at_trap(plain, target, args, by_command)
                frames = H.frames_of(thread)
                got = relative(frames, thread.GetFrameAtIndex(0).GetSP())
                here = start_stack(process)
                diff = (here - start) % STACK_ALIGN if start and here else 0
                if diff == 0:
                    return got, frames, 0
            finally:
                plain.delete(target)
    return got, frames, diff


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


def cached_debug_file(path, cache_dir=None):
    """Where the plugin's cache keeps the debug file of the program at
    `path` (by its build-id)."""
    build_id = re.search(r"Build ID: ([0-9a-f]+)", subprocess.check_output(["readelf", "-n", path], text=True)).group(1)
    return os.path.join(cache_dir or os.environ["SFUNWIND_LLDB_CACHE"], ".build-id", build_id[:2],
                        build_id[2:] + ".debug")


def spec_path(spec):
    """An SBFileSpec's full path, or None."""
    if not spec or not spec.GetFilename():
        return None
    return os.path.join(spec.GetDirectory() or "", spec.GetFilename())


def wait_for_debug_file(path, seconds=10.0):
    """Whether the cache holds the debug file of the program at `path`
    (looked up without asking LLDB anything)."""
    debug = cached_debug_file(path)
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


def caller_frames_off_plan(cov, plans, skip=(), allowed=("DWARF CFI",)):
    """The caller frames with an SFrame FDE (`cov`, less `skip`), and those
    of them whose plan in the unwind log is not one of `allowed`
    (frame -> plan)."""
    want = [k for k in sorted(cov) if k >= 1 and k not in skip]
    return want, {k: plans.get(k) for k in want if plans.get(k) not in allowed}


def caller_plans(s, thread, log):
    """At a stop, LLDB's unwind log (`log`) stopped: (the frames' function
    names, the caller frames with an SFrame FDE, those of them whose plan
    was not 'DWARF CFI': frame -> plan)."""
    frames = H.frames_of(thread)
    s.cmd("log disable lldb unwind")
    want, wrong = caller_frames_off_plan(covered(s, thread, frames), plans_from_log(log))
    return [f.function for f in frames], want, wrong


# How the command flow names `target create` for some programs: its alias,
# and options before the program (the plugin reads the program's path past them).
CREATE_COMMANDS = {
    "gas-2.40/cxx_exceptions": "file",
    "gas-2.40/recurse-static": "target create --no-dependents --arch x86_64 -l static",
}


def check_program(plain, s, res, work, label, cfi_path, noeh_path, args, module_name, flow="command",
                  finish=False):
    """flow: "command" (target create + process launch, no plugin command),
    "sb-cover" (SB API, then `sframe cover`), "warm" (SB API, no command,
    the file made by an earlier session)."""
    assert not args or flow != "command"
    # The unwind log from before the launch: LLDB unwinds at a stop before
    # anyone asks (LLDB 19 on its private state thread, LLDB 23 when the
    # `process launch` command prints the stop), and the plan of each frame
    # at the last stop is what counts.
    log = os.path.join(work, label.replace("/", "_").replace(" ", "_") + ".unwind.log")
    if os.path.exists(log):
        os.remove(log)
    s.cmd("log enable -f %s lldb unwind" % log)
    if flow == "command":
        target = s.create_by_command(noeh_path, command=CREATE_COMMANDS.get(label, "target create"))
    else:
        target = s.create(noeh_path)
    try:
        if flow == "warm":
            res.check(label + ": the debug file is in the cache", wait_for_debug_file(noeh_path), "no file")
        elif flow == "sb-cover":
            ok, out, err = s.cmd("sframe cover")
            res.check(label + ": sframe cover", ok, err)
        process, thread = stop_at_trap(s, target, args, by_command=flow == "command")
        frames = H.frames_of(thread)
        s.cmd("log disable lldb unwind")
        sp0 = thread.GetFrameAtIndex(0).GetSP()
        got = relative(frames, sp0)
        ref, ref_frames, misaligned = reference(plain, cfi_path, args, start_stack(process), flow == "command")
        res.check(label + ": the reference run's stack starts where this run's does (modulo %d)" % STACK_ALIGN,
                  misaligned == 0, "off by %d after %d launches" % (misaligned, REFERENCE_LAUNCHES))
        cov = covered(s, thread, frames)
        if flow == "warm":
            st = s.json_cmd("sframe status --json")
            mod = [m for m in st["modules"] if m["name"] == module_name]
            # LLDB 23 asks its debuginfod servers first, and reuses the copy
            # its debuginfod client kept from the first session.
            res.check(label + ": LLDB found the debug file by itself (no plugin command)",
                      mod and mod[0]["coverage"] == "in-use" and H.loaded_with_module(mod[0]), repr(mod))
        if flow == "command":
            # Every module with SFrame got its file when LLDB loaded it (the
            # search paths, or the plugin's debuginfod responder), none at
            # the stop by `target symbols add`, which is too late for LLDB 19.
            st = s.json_cmd("sframe status --json")
            mods = [m for m in st["modules"] if m["sframe"] is not None]
            late = [(m["name"], m["coverage"], m["detail"]) for m in mods
                    if m["coverage"] != "in-use" or not H.loaded_with_module(m)]
            res.check(label + ": ordinary flow: the %d modules with SFrame were covered as LLDB loaded them" % len(mods),
                      mods and not late, repr(late))
            res.count("ordinary-flow modules covered as loaded", len(mods) - len(late))
            # The program has no DWARF: its debug file's empty compile unit
            # makes LLDB take the DWARF symbol file, which reads the symbols
            # once (with SymbolFileSymtab, twice: elf/empty_compile_unit.hpp).
            # The plugin adds it where the file's .symtab has 300 entries or
            # more (debug_file_cache.cpp, compile_unit_min_symbols): below
            # that, the unit costs LLDB more than the second parse.
            # The file LLDB loaded: LLDB 23 asks debuginfod first, and its
            # client may hold a file served earlier for the same build-id
            # (the unstripped program's, for a stripped copy).
            debug = next((spec_path(m.GetSymbolFileSpec()) for m in
                          (target.GetModuleAtIndex(i) for i in range(target.GetNumModules()))
                          if m.GetFileSpec().GetFilename() == module_name), None) or \
                cached_debug_file(noeh_path, st["cache_dir"])
            def readelf(*argv):
                return subprocess.check_output(["readelf", "-W"] + list(argv), text=True,
                                               stderr=subprocess.DEVNULL)
            sections = readelf("-S", debug)
            symtab = re.search(r"Symbol table '\.symtab' contains (\d+) entries", readelf("-s", debug))
            symbols = int(symtab.group(1)) if symtab else 0
            has_unit = ".debug_info" in sections
            own_dwarf = ".debug_info" in readelf("-S", noeh_path)
            # .sfunwind: the file is one the plugin wrote (not the program).
            res.check(label + ": the debug file has the compile unit exactly when its .symtab has 300 entries "
                      "or more", ".sfunwind" in sections and symtab is not None and
                      (own_dwarf or has_unit == (symbols >= 300)),
                      "%s: %d entries, unit %s, own DWARF %s" % (debug, symbols, has_unit, own_dwarf))
            want = "dwarf" if has_unit else "symtab"
            ok, out, err = s.cmd("image dump symfile " + module_name)
            kind = re.search(r"SymbolFile (\S+) \(", out or "")
            res.check(label + ": LLDB reads the program's debug file with its %s symbol file" % want,
                      ok and kind is not None and kind.group(1) == want,
                      kind.group(0) if kind else (err or out)[:200])
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
        # Where the walk agreed to its end, it ends no later than the
        # reference's: the process's entry function is the outermost frame
        # (no repeated _start above it). It may end earlier, at a frame with
        # no SFrame FDE and no symbol (a stripped program's _start).
        if bad is None and end_note is None and len(got) != len(ref):
            ends = "%d frames ending %s, the reference %d ending %s" % (
                len(got), [f[0] for f in frames[-2:]], len(ref), [f[0] for f in ref_frames[-2:]])
            if len(got) > len(ref):
                bad = ends
            else:
                end_note = "LLDB ends first, at a frame without SFrame: " + ends
        res.count("unwindplan stops")
        res.count("unwindplan frames compared", compared)
        if end_note:
            print("note %s: %s" % (label, end_note))
        res.check(label + ": LLDB's bt with the plugin matches the CFI build's (%d frames compared)" % compared,
                  bad is None and compared >= 3, bad or "too few frames")
        # Every caller frame with an FDE was unwound with the generated CFI,
        # apart from one interrupted by a signal, where LLDB picks its plan as
        # for frame 0.
        want, wrong = caller_frames_off_plan(cov, plans, after_trap,
                                             ("DWARF CFI", "fast: x86_64 default unwind plan"))
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


def check_sb_hint(args, res, work, program_dir, name):
    """A target made through the SB API with no plugin command and a cold
    cache. LLDB asks for the program's debug file before the plugin knows its
    path; the responder still finds a program LLDB has mapped, which LLVM
    does for files of 16 KiB and more (measured), not for this one. So the
    file comes from the stop hook, at the first stop. LLDB 19 keeps the plans
    it made at that stop: the plugin must say so and name the command that
    avoids it. LLDB 23 takes the file for every frame: no hint. The library
    the program needs is covered as LLDB loads it."""
    s = H.Session(args.plugin, work)
    err_path = os.path.join(work, "sb-hint.err")
    err_file = open(err_path, "w")
    s.debugger.SetErrorFileHandle(err_file, False)
    copy = os.path.join(work, "sb-hint")
    shutil.rmtree(copy, ignore_errors=True)
    shutil.copytree(program_dir, copy)
    prog = os.path.join(copy, name)
    res.check("SB API, no command: the program is under 16 KiB", os.path.getsize(prog) < 16384,
              "%d bytes: LLDB maps it, and the responder finds it" % os.path.getsize(prog))
    log = os.path.join(work, "sb-hint.unwind.log")
    if os.path.exists(log):
        os.remove(log)
    s.cmd("log enable -f %s lldb unwind" % log)
    target = s.create(prog)
    try:
        _, thread = stop_at_trap(s, target, [])
        _, _, stale = caller_plans(s, thread, log)
        err_file.flush()
        with open(err_path) as f:
            text = f.read()
        hint = [l for l in text.splitlines() if "hint:" in l and (name + ":") in l]
        if s.major < 23:
            res.check("SB API, no command, LLDB %d: the stop hook prints the hint" % s.major,
                      len(hint) == 1 and "sframe cover" in hint[0] and "CreateTarget" in hint[0], repr(text))
            print("note SB API, no command, LLDB %d: frames with LLDB's earlier plans (the gap the hint names): %s"
                  % (s.major, stale))
            res.count("SB API, no command: caller frames on stale plans", len(stale))
        else:
            res.check("SB API, no command, LLDB %d: no hint, and 'DWARF CFI' for every caller frame with an FDE"
                      % s.major, not hint and not stale, "hint %r, plans %s" % (hint, stale))
        st = s.json_cmd("sframe status --json")
        mods = {m["name"]: m for m in st["modules"] if m["sframe"] is not None}
        res.check("SB API, no command: the program's file is in use after the first stop",
                  name in mods and mods[name]["coverage"] == "in-use", repr(mods.get(name)))
        lib = [m for n, m in mods.items() if n != name]
        res.check("SB API, no command: the library was covered as LLDB loaded it (the responder)",
                  lib and all(m["coverage"] == "in-use" and "responder" in m["detail"] for m in lib), repr(lib))
    finally:
        s.delete(target)


ATTACH_SOURCE = r"""
#include <unistd.h>
volatile int sink;
__attribute__((noinline)) void wait_here(int n) { for (;;) { sink += n; usleep(20000); } }
__attribute__((noinline)) void level_b(int n) { char buf[64]; buf[n & 63] = 1; wait_here(n + buf[3]); sink++; }
__attribute__((noinline)) void level_a(int n) { level_b(n * 2); sink++; }
int main(int argc, char **argv) { (void)argv; level_a(argc); return 0; }
"""


def check_attach(args, res, work):
    """`process attach -p PID` to a running SFrame-only program (built here:
    no fixture waits to be attached to), no plugin command, a cold cache:
    LLDB asks for the program's debug file while attaching, and the
    responder finds it among the files of the process LLDB now traces."""
    src = os.path.join(work, "attach.c")
    with open(src, "w") as f:
        f.write(ATTACH_SOURCE)
    full = os.path.join(work, "attach-full")
    prog = os.path.join(work, "attach-noeh")
    built = subprocess.run(["gcc", "-O2", "-fomit-frame-pointer", "-Wa,--gsframe", "-o", full, src],
                           capture_output=True, text=True)
    if not res.check("attach: the program builds with --gsframe", built.returncode == 0, built.stderr):
        return
    subprocess.check_call(["objcopy", "--remove-section=.eh_frame", "--remove-section=.eh_frame_hdr",
                           "--remove-section=.debug_frame", full, prog])
    child = subprocess.Popen([prog], cwd=work)
    s = H.Session(args.plugin, work)
    shutil.rmtree(os.path.join(work, "cache-attach"), ignore_errors=True)  # cold
    s.cmd("sframe cover --cache-dir " + os.path.join(work, "cache-attach"))
    log = os.path.join(work, "attach.unwind.log")
    if os.path.exists(log):
        os.remove(log)
    s.cmd("log enable -f %s lldb unwind" % log)
    try:
        time.sleep(0.2)  # into the loop
        ok, out, err = s.cmd("process attach -p %d" % child.pid)
        target = s.debugger.GetSelectedTarget()
        if not res.check("attach: process attach", ok and target.GetProcess().IsValid(), err):
            return
        thread = target.GetProcess().GetSelectedThread()
        names, want, wrong = caller_plans(s, thread, log)
        chain = ["wait_here", "level_b", "level_a", "main"]
        at = names.index("wait_here") if "wait_here" in names else -1
        res.check("attach: LLDB's bt has the program's frames", at >= 0 and names[at:at + 4] == chain, repr(names))
        res.check("attach: LLDB used 'DWARF CFI' for the %d caller frames with an FDE" % len(want),
                  len(want) >= 3 and not wrong, "frame -> plan: %s" % wrong)
        st = s.json_cmd("sframe status --json")
        mod = [m for m in st["modules"] if m["name"] == os.path.basename(prog)]
        res.check("attach: LLDB got the program's file as it attached (the responder)",
                  mod and mod[0]["coverage"] == "in-use" and "debuginfod responder" in mod[0]["detail"], repr(mod))
        s.cmd("process kill")
    finally:
        child.kill()
        child.wait()
        s.delete(s.debugger.GetSelectedTarget())


def check_responder(args, res, work):
    """The plugin's debuginfod server takes bad requests as normal input:
    a wrong path prefix, a request that is not HTTP, one that never ends,
    a client that goes away; it answers each and keeps serving."""
    import socket
    s = H.Session(args.plugin, work)
    url = s.json_cmd("sframe status --json")["responder"]["url"]
    m = re.match(r"http://127\.0\.0\.1:(\d+)(/.*)", url)
    if not res.check("responder: status names its URL", m is not None, repr(url)):
        return
    port, prefix = int(m.group(1)), m.group(2)

    def ask(data, close_early=False):
        c = socket.create_connection(("127.0.0.1", port), timeout=20)
        try:
            c.sendall(data)
            if close_early:
                return ""
            out = b""
            while True:
                chunk = c.recv(65536)
                if not chunk:
                    break
                out += chunk
            return out.decode("latin-1")
        finally:
            c.close()

    prog = H.fixture("gas-2.40", "recurse-O2-nofp-noeh")
    build_id = re.search(r"Build ID: ([0-9a-f]+)", subprocess.check_output(["readelf", "-n", prog], text=True)).group(1)
    # The plugin knows the file once a target names it.
    s.create_by_command(prog)
    good = "GET %s/buildid/%s/debuginfo HTTP/1.1\r\nHost: x\r\n\r\n" % (prefix, build_id)
    res.check("responder: another path prefix gets 404",
              ask(("GET /guess/buildid/%s/debuginfo HTTP/1.1\r\n\r\n" % build_id).encode()).startswith(
                  "HTTP/1.1 404"))
    res.check("responder: a request that is not HTTP gets 400", ask(b"\x00\xffhello\r\n\r\n").startswith("HTTP/1.1 400"))
    res.check("responder: an endless header gets 431", ask(b"GET /" + b"a" * 9000).startswith("HTTP/1.1 431"))
    res.check("responder: a build-id that is not hex gets 404",
              ask(("GET %s/buildid/zz%s/debuginfo HTTP/1.1\r\n\r\n" % (prefix, build_id[2:])).encode()).startswith(
                  "HTTP/1.1 404"))
    ask(good.encode(), close_early=True)
    answer = ask(good.encode())
    head, _, body = answer.partition("\r\n\r\n")
    cached = os.path.join(s.json_cmd("sframe status --json")["cache_dir"], ".build-id", build_id[:2],
                          build_id[2:] + ".debug")
    with open(cached, "rb") as f:
        want = f.read().decode("latin-1")
    res.check("responder: still serving after all that, the debug file of the cache",
              head.startswith("HTTP/1.1 200") and body == want, head)


DLOPEN_LIB = r"""
volatile int sink;
__attribute__((noinline)) void lib_leaf(int n) { char b[32]; b[n & 31] = 1; sink += b[1]; __asm__ volatile("int3"); sink++; }
__attribute__((noinline)) void lib_mid(int n) { lib_leaf(n + 1); sink++; }
__attribute__((noinline)) void lib_entry(int n) { lib_mid(n * 2); sink++; }
"""
DLOPEN_MAIN = r"""
#include <dlfcn.h>
__attribute__((noinline)) int call_it(void (*f)(int), int n) { f(n); return n + 1; }
int main(int argc, char **argv) {
  (void)argv;
  void *h = dlopen("./libdl-noeh.so", RTLD_NOW);
  if (!h) return 1;
  return call_it((void (*)(int))dlsym(h, "lib_entry"), argc) == 0;
}
"""


def check_dlopen(args, res, work):
    """A library the program dlopens (built here, under 16 KiB so that LLDB
    reads it without mapping it), a cold cache, no plugin command: LLDB asks
    for its debug file when the dynamic loader reports it, and the responder
    finds it among the files of the debugged process."""
    d = os.path.join(work, "dlopen")
    shutil.rmtree(d, ignore_errors=True)
    os.makedirs(d)
    for name, text in (("lib.c", DLOPEN_LIB), ("main.c", DLOPEN_MAIN)):
        with open(os.path.join(d, name), "w") as f:
            f.write(text)
    steps = [["gcc", "-O2", "-fomit-frame-pointer", "-Wa,--gsframe", "-fPIC", "-shared", "-o", "libdl.so", "lib.c"],
             ["objcopy", "--remove-section=.eh_frame", "--remove-section=.eh_frame_hdr", "libdl.so", "libdl-noeh.so"],
             ["gcc", "-O2", "-fomit-frame-pointer", "-Wa,--gsframe", "-o", "dlmain", "main.c", "-ldl"]]
    for step, made in zip(steps, ("libdl.so", "libdl-noeh.so", "dlmain")):
        done = subprocess.run(step, cwd=d, capture_output=True, text=True)
        if not res.check("dlopen: build " + made, done.returncode == 0, done.stderr):
            return
    lib = os.path.join(d, "libdl-noeh.so")
    res.check("dlopen: the library is under 16 KiB", os.path.getsize(lib) < 16384, str(os.path.getsize(lib)))
    s = H.Session(args.plugin, work)
    s.cmd("sframe cover --cache-dir " + os.path.join(d, "cache"))
    log = os.path.join(d, "unwind.log")
    s.cmd("log enable -f %s lldb unwind" % log)
    target = s.create_by_command(os.path.join(d, "dlmain"))
    try:
        ok, out, err = s.cmd("process launch -w " + H.quote(d), target)
        thread = target.GetProcess().GetSelectedThread()
        names, want, wrong = caller_plans(s, thread, log)
        res.check("dlopen: LLDB's bt from the library to main",
                  names[:5] == ["lib_leaf", "lib_mid", "lib_entry", "call_it", "main"], repr(names))
        res.check("dlopen: LLDB used 'DWARF CFI' for the %d caller frames with an FDE" % len(want),
                  len(want) >= 4 and not wrong, "frame -> plan: %s" % wrong)
        st = s.json_cmd("sframe status --json")
        mod = [m for m in st["modules"] if m["name"] == "libdl-noeh.so"]
        res.check("dlopen: LLDB got the library's file as the dynamic loader reported it (the responder)",
                  mod and mod[0]["coverage"] == "in-use" and "debuginfod responder" in mod[0]["detail"], repr(mod))
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
    ref, _, _ = reference(plain, cfi_path, args)
    # Plain LLDB, without function starts, goes wrong on this program.
    target = plain.create(bare)
    try:
        _, thread = stop_at_trap(plain, target, args)
        got = relative(H.frames_of(thread), thread.GetFrameAtIndex(0).GetSP())
        res.check(label + " stripped: plain LLDB's bt is wrong", got != ref,
                  "plain LLDB got the reference backtrace; the fixture no longer proves anything")
    finally:
        plain.delete(target)
    # With the plugin (a cache of its own, so the symbols come from the FDEs).
    shutil.rmtree(os.path.join(work, "cache-stripped"), ignore_errors=True)
    s.cmd("sframe cover --cache-dir " + os.path.join(work, "cache-stripped"))
    bare = stripped_copy(work, noeh_path, "plugin")
    check_program(plain, s, res, work, label + " stripped", cfi_path, bare, args, os.path.basename(bare))


def level_2_buf(thread, index):
    """The 64 bytes of level_2's `buf`, level_2 being frame `index`."""
    f = thread.GetFrameAtIndex(index)
    return [f.FindVariable("buf").GetChildAtIndex(k).GetValueAsUnsigned() for k in range(64)]


def level_2_reference(plain, g):
    """The -g program `g` as built, at its trap in plain LLDB: (frame names,
    level_2's buf, level_2's n)."""
    target = plain.create(g)
    try:
        _, thread = stop_at_trap(plain, target, [])
        frames = H.frames_of(thread)
        lvl2 = next(i for (n, _, _, i) in frames if n == "level_2")
        return ([n for (n, _, _, _) in frames], level_2_buf(thread, lvl2),
                thread.GetFrameAtIndex(lvl2).FindVariable("n").GetValue())
    finally:
        plain.delete(target)


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
    ref_names, ref_buf, ref_n = level_2_reference(plain, g)
    s.cmd("settings append target.debug-file-search-paths " + sysdebug)
    shutil.rmtree(os.path.join(work, "cache-split"), ignore_errors=True)
    s.cmd("sframe cover --cache-dir " + os.path.join(work, "cache-split"))
    # The ordinary flow: the plugin's file (the separate debug file's DWARF
    # with the SFrame-derived .debug_frame) is made before LLDB looks, and
    # its directory comes first in the search paths.
    target = s.create_by_command(prog)
    try:
        ours = os.path.join(work, "cache-split", ".build-id", build_id[:2], build_id[2:] + ".debug")
        sections = subprocess.check_output(["readelf", "-SW", ours], text=True, stderr=subprocess.DEVNULL) \
            if os.path.exists(ours) else ""
        res.check("split -g: the plugin's file keeps the DWARF's bytes, not the code's",
                  re.search(r"\.debug_info\s+PROGBITS", sections) is not None
                  and re.search(r"\.text\s+NOBITS", sections) is not None, sections or ours)
        _, thread = stop_at_trap(s, target, [], by_command=True)
        frames = H.frames_of(thread)
        names = [n for (n, _, _, _) in frames]
        # Every frame, to crt1.o's _start, which has no SFrame: the plugin's
        # file says it is the outermost frame, as its CFI does.
        res.check("split -g: LLDB's bt names the CFI build's frames, to the entry point",
                  names == ref_names, "%s vs %s" % (names, ref_names))
        lvl2 = next((i for (n, _, _, i) in frames if n == "level_2"), None)
        if not res.check("split -g: level_2 is on the stack", lvl2 is not None, repr(names)):
            return
        buf = level_2_buf(thread, lvl2)
        res.check("split -g: frame variable buf in level_2 (frame %d)" % lvl2, buf == ref_buf and any(buf),
                  "%s vs %s" % (buf[:8], ref_buf[:8]))
        n = thread.GetFrameAtIndex(lvl2).FindVariable("n")
        res.check("split -g: n in level_2 is the CFI build's value or unavailable, never another",
                  n.GetValue() in (None, ref_n), "n = %r, reference %r" % (n.GetValue(), ref_n))
        st = s.json_cmd("sframe status --json")
        mod = [m for m in st["modules"] if m["name"] == os.path.basename(prog)][0]
        res.check("split -g: LLDB got the plugin's file (made from the separate debug file) as it loaded the program",
                  mod["coverage"] == "in-use" and H.loaded_with_module(mod), repr(mod))
    finally:
        s.delete(target)


def check_cache_limit(s, res, work):
    """The cache's size limit: the least recently used files go first, never
    a file this LLDB or another process uses; and the plugin's file is a
    separate debug file, not a copy of the program (code SHT_NOBITS, far
    smaller)."""
    prog = H.fixture("gas-2.40", "recurse-O2-nofp-noeh")
    cache = os.path.join(work, "cache-limit")
    shutil.rmtree(cache, ignore_errors=True)
    s.cmd("sframe cover --cache-dir " + cache)
    build_id = re.search(r"Build ID: ([0-9a-f]+)", subprocess.check_output(["readelf", "-n", prog], text=True)).group(1)
    ours = os.path.join(cache, ".build-id", build_id[:2], build_id[2:] + ".debug")
    target = s.create_by_command(prog)
    try:
        res.check("cache limit: the program's debug file is there", os.path.exists(ours), ours)
        # The plugin holds the file it handed out (a shared flock), so that
        # no other LLDB's eviction removes it: an exclusive lock is refused.
        with open(ours, "rb") as f:
            try:
                fcntl.flock(f, fcntl.LOCK_EX | fcntl.LOCK_NB)
                held = False
            except BlockingIOError:
                held = True
        res.check("cache limit: the plugin holds its file (a shared flock on it)", held, ours)
        sections = subprocess.check_output(["readelf", "-SW", ours], text=True, stderr=subprocess.DEVNULL)
        res.check("cache limit: the debug file's .text is SHT_NOBITS",
                  re.search(r"\.text\s+NOBITS", sections) is not None, sections)
        res.check("cache limit: the debug file is under half the program's size",
                  os.path.getsize(ours) * 2 < os.path.getsize(prog),
                  "%d vs %d" % (os.path.getsize(ours), os.path.getsize(prog)))
        # Two files of another build-id, used two hours and one hour ago.
        old = []
        for i, age in ((0, 7200), (1, 3600)):
            path = os.path.join(cache, ".build-id", "ff", "%038x.debug" % i)
            os.makedirs(os.path.dirname(path), exist_ok=True)
            with open(path, "wb") as f:
                f.write(b"\0" * 100000)
            t = time.time() - age
            os.utime(path, (t, t))
            old.append(path)
        ok, out, err = s.cmd("sframe cover --cache-limit 150000")
        res.check("cache limit: the oldest file goes, the next one fits and stays",
                  ok and not os.path.exists(old[0]) and os.path.exists(old[1]) and os.path.exists(ours),
                  out + err)
        # A shared flock on a file (cache_limit.hpp's EntryHold) is another
        # process's use of it: the file stays, and the command says so.
        with open(old[1], "rb") as held:
            fcntl.flock(held, fcntl.LOCK_SH)
            ok, out, err = s.cmd("sframe cover --cache-limit 1")
            res.check("cache limit: a file another process holds stays, and is counted",
                      ok and os.path.exists(old[1]) and os.path.exists(ours)
                      and "1 file(s) over the limit left in place, in use by another process" in out,
                      out + err)
        ok, out, err = s.cmd("sframe cover --cache-limit 1")
        res.check("cache limit: at 1 byte, every file but the one in use goes",
                  ok and not os.path.exists(old[1]) and os.path.exists(ours) and "limit 1 bytes" in out,
                  out + err)
        ok, out, err = s.cmd("sframe cover --cache-limit 12Q")
        res.check("cache limit: a malformed size is refused and named",
                  not ok and "'12Q' is not a size" in err, out + err)
    finally:
        s.cmd("sframe cover --cache-limit 1G")
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
    ref_names, ref_buf, _ = level_2_reference(plain, g)
    shutil.rmtree(os.path.join(work, "cache-own-dwarf"), ignore_errors=True)
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
        frames = H.frames_of(thread)
        names = [n for (n, _, _, _) in frames]
        res.check("own DWARF, LLDB %d: bt names the CFI build's frames, to the entry point" % major,
                  names == ref_names, "%s vs %s" % (names, ref_names))
        lvl2 = next((i for (n, _, _, i) in frames if n == "level_2"), None)
        buf = level_2_buf(thread, lvl2) if lvl2 is not None else []
        res.check("own DWARF, LLDB %d: frame variable buf in level_2" % major, buf == ref_buf and any(buf),
                  "%s vs %s" % (buf[:8], ref_buf[:8]))
    finally:
        s.delete(target)


def run(args, work, res):
    H.use_cache(work, "unwindplan")
    plain = H.Session(None, work)
    s = H.Session(args.plugin, work)
    print("LLDB: " + s.version)
    # The files without the callee-saved rules, whose rbx and r12-r15 must be
    # unavailable in caller frames (the setting is the plugin's, for every
    # session); test_callee_saved.py checks them with the rules.
    s.cmd("sframe callee-saved off")

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
    if not args.only or "hint" in args.only:
        # First: the plugin must not know the program's path from an earlier
        # `target create` of a file with the same build-id.
        check_sb_hint(args, res, work, H.fixture("gas-2.40", "plt-O2-nofp-noeh"), "plt")
    first = True
    for label, cfi_path, noeh_path, pargs, finish in programs:
        if args.only and args.only not in label:
            continue
        # One program takes the route for SB API clients instead.
        flow = "sb-cover" if label == "gas-2.40/noreturn" else "command"
        check_program(plain, s, res, work, label, cfi_path, noeh_path, pargs, os.path.basename(noeh_path),
                      flow=flow, finish=finish)
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
                          os.path.basename(again), flow="warm")
        first = False
    if not args.only or "stripped" in args.only:
        check_stripped(plain, s, res, work, "gas-2.40/recurse", H.fixture("gas-2.40", "recurse-O2-nofp"),
                       H.fixture("gas-2.40", "recurse-O2-nofp-noeh"), [])
        for writer in ("gas-2.47", "clang-23"):
            check_stripped(plain, s, res, work, writer + "/recurse-static", H.fixture(writer, "recurse-O2-nofp-static"),
                           H.fixture(writer, "recurse-O2-nofp-static-noeh"), [])
    if not args.only or "responder" in args.only:
        check_responder(args, res, work)
    if not args.only or "attach" in args.only:
        check_attach(args, res, work)
    if not args.only or "dlopen" in args.only:
        check_dlopen(args, res, work)
    if not args.only or "split" in args.only:
        check_split_debug(plain, s, res, work)
    if not args.only or "own" in args.only:
        check_own_dwarf(plain, s, res, work)
    if not args.only or "limit" in args.only:
        check_cache_limit(s, res, work)


if __name__ == "__main__":
    H.main(run)

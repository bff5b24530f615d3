#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""The plugin on core dumps of SFrame-only programs.

Each `-noeh` fixture (and a copy with its symbol table stripped too) is run
under GDB to its trap and dumped with `gcore`. The reference is plain LLDB
on the same core with the CFI build of the program as the executable (the
same code and build-id, with .eh_frame): the frames of the same memory.
With the plugin, LLDB's own frames of the core must be the reference's where
SFrame covers them, `sframe bt` and `sframe compare` must work on the core,
and a second session must find the cached debug files by itself (no plugin
command) through target.debug-file-search-paths. With a cold cache the core
is loaded the ordinary way, `target create --core CORE PROG` (what `lldb -c
CORE PROG` runs), with no plugin command: LLDB unwinds frame 0 as soon as the
core is loaded and keeps the plan, so the plugin must have made the files
before (from the command's words and the core's NT_FILE note). The route for
SB API clients (CreateTarget, `sframe cover`, LoadCore) is checked too.

usage: test_cores.py --plugin libsfunwind_lldb.so --lldb lldb-19 [--work DIR] [-v]
"""

import os
import shutil
import subprocess

import lldb_harness as H


def make_core(work, program, name):
    core = os.path.join(work, name + ".core")
    if os.path.exists(core):
        os.remove(core)
    subprocess.run(["gdb", "-nx", "-batch", "-ex", "set pagination off", "-ex", "run", "-ex", "gcore " + core,
                    "--args", program], cwd=work, capture_output=True, text=True, timeout=120)
    return core if os.path.exists(core) else None


def addresses(thread):
    """(pc, cfa) of all LLDB's concrete frames: a stripped program's frames
    have other names than the CFI build's, so only addresses compare."""
    return [(f.pc, f.cfa) for f in H.frames_of(thread, limit=None)]


def agrees(got, ref, stepped):
    """LLDB's frames where SFrame decides them: the pc and CFA of every frame
    SFrame steps out of (its CFA from its own row, its pc from the row of the
    frame below) and the pc of the frame above the last of them. Past that,
    in code without SFrame (and, in a stripped program, without symbols),
    LLDB's frames are its own business."""
    if not stepped or len(got) <= max(stepped):
        return False
    if any(got[k] != ref[k] for k in stepped if k < len(ref)):
        return False
    last = max(stepped) + 1
    return last >= len(got) or last >= len(ref) or got[last][0] == ref[last][0]


def function_range(path, name):
    """(start, end) of a function symbol in a file, from nm."""
    for line in subprocess.run(["nm", "-S", path], capture_output=True, text=True).stdout.splitlines():
        parts = line.split()
        if len(parts) == 4 and parts[3] == name:
            start = int(parts[0], 16)
            return start, start + int(parts[1], 16)
    return None


def core_frames(session, exe, core):
    target = session.create(exe, core=core)
    try:
        thread = target.GetProcess().GetSelectedThread()
        return addresses(thread)
    finally:
        session.delete(target)


def check_core(plain, res, plugin_path, work, label, cfi_path, noeh_path, stripped):
    program = os.path.join(work, os.path.basename(noeh_path) + ("-stripped-core" if stripped else "-core"))
    shutil.copy(noeh_path, program)
    if stripped:
        subprocess.check_call(["strip", "-s", program])
    core = make_core(work, program, label.replace("/", "_") + ("-stripped" if stripped else ""))
    if not res.check(label + ": gcore made a core", core is not None):
        return
    # LLDB 23 replaces the executable given with the one the core names when
    # that file exists: hide it while the reference is made.
    hidden = program + ".hidden"
    os.rename(program, hidden)
    try:
        ref = core_frames(plain, cfi_path, core)
    finally:
        os.rename(hidden, program)
    if stripped:
        bare = os.path.join(work, os.path.basename(program) + "-plain")
        shutil.copy(program, bare)
        got = core_frames(plain, bare, core)
        res.check(label + " stripped core: plain LLDB's bt is wrong", got != ref, "plain LLDB got it right")

    tag = label.replace("/", "_") + ("-stripped" if stripped else "")
    suffix = " stripped" if stripped else ""
    # The SB API route, with a cold cache of its own: the program, `sframe
    # cover`, then the core.
    sb = H.Session(plugin_path, work)
    shutil.rmtree(os.path.join(work, "cache-sb-" + tag), ignore_errors=True)
    sb.cmd("sframe cover --cache-dir " + os.path.join(work, "cache-sb-" + tag))
    sb_program = program + "-sb"
    shutil.copy(program, sb_program)
    target = sb.create(sb_program)
    try:
        ok, out, err = sb.cmd("sframe cover")
        res.check(label + ": SB API: sframe cover before the core", ok and "1 of 1 modules" in out, out + err)
        got = addresses(target.LoadCore(core).GetSelectedThread())
        data = sb.json_cmd("sframe compare --json")
        stepped = [i for i, f in enumerate(data["sframe_frames"]) if f.get("row")]
        res.check(label + "%s: SB API: LLDB's bt with the plugin = the CFI build's where SFrame decides" % suffix,
                  agrees(got, ref, stepped), "got %s" % [hex(p) for p, _ in got])
    finally:
        sb.delete(target)

    # A cold cache, the ordinary flow: one command, no plugin command.
    s = H.Session(plugin_path, work)
    shutil.rmtree(os.path.join(work, "cache-" + tag), ignore_errors=True)
    s.cmd("sframe cover --cache-dir " + os.path.join(work, "cache-" + tag))
    target = s.create_by_command(program, core=core)
    try:
        st = s.json_cmd("sframe status --json")
        mods = [m for m in st["modules"] if m["sframe"] is not None]
        res.check(label + "%s core: target create --core: LLDB got the debug file as it loaded the program" % suffix,
                  len(mods) == 1 and mods[0]["coverage"] == "in-use" and H.loaded_with_module(mods[0]), repr(mods))
        thread = target.GetProcess().GetSelectedThread()
        got = addresses(thread)
        data = s.json_cmd("sframe compare --json")
        stepped = [i for i, f in enumerate(data["sframe_frames"]) if f.get("row")]
        res.count("core frames compared", len(stepped) + 1)
        res.check(label + "%s core: LLDB's bt with the plugin = the CFI build's on the %d frames SFrame decides" %
                  (suffix, len(stepped) + 1), agrees(got, ref, stepped),
                  "got %s, reference %s" % ([hex(p) for p, _ in got], [hex(p) for p, _ in ref]))
        div = data["divergence"]
        # In a stripped static program LLDB has no symbol for the C library
        # code that calls main, and may end there, before SFrame does.
        ended = div is not None and div["kind"] == "reference-ended" and stripped
        if ended:
            print("note %s stripped core: %s" % (label, div["explanation"]))
        res.check(label + "%s: sframe compare on the core agrees" % suffix, data["equal"] == len(data["matches"]) and
                  (div is None or div["limit"] in H.KNOWN_END_LIMITS or ended), repr(div))
        # main by address: a stripped program's frames are named after FDEs.
        main = function_range(cfi_path, "main")
        bt = s.json_cmd("sframe bt --json")
        res.check(label + "%s: sframe bt on the core reaches main" % suffix,
                  main is not None and any(main[0] <= f["link_pc"] < main[1] for f in bt["frames"]),
                  repr([(f["function"], f["link_pc"]) for f in bt["frames"]]))
    finally:
        s.delete(target)

    # A warm cache: a new session, no plugin command before `bt`.
    s2 = H.Session(plugin_path, work)
    s2.cmd("settings append target.debug-file-search-paths " + os.path.join(work, "cache-" + tag))
    copy = program + "-again"
    shutil.copy(program, copy)
    target = s2.create(copy, core=core)
    try:
        got = addresses(target.GetProcess().GetSelectedThread())
        res.check(label + "%s: warm cache, no command: LLDB's bt = the CFI build's where SFrame decides" % suffix,
                  agrees(got, ref, stepped), "got %s" % [hex(p) for p, _ in got])
        st = s2.json_cmd("sframe status --json")
        mods = [m for m in st["modules"] if m["sframe"] is not None]
        res.check(label + "%s: warm cache: LLDB found the debug file by itself" % suffix,
                  len(mods) == 1 and mods[0]["coverage"] == "in-use" and H.loaded_with_module(mods[0]), repr(mods))
    finally:
        s2.delete(target)


def run(args, work, res):
    H.use_cache(work, "cores")
    plain = H.Session(None, work)
    cases = [("gas-2.40/recurse", H.fixture("gas-2.40", "recurse-O2-nofp"), H.fixture("gas-2.40", "recurse-O2-nofp-noeh"))]
    for writer in ("gas-2.40", "gas-2.44", "gas-2.47", "clang-23"):
        cases.append((writer + "/recurse-static", H.fixture(writer, "recurse-O2-nofp-static"),
                      H.fixture(writer, "recurse-O2-nofp-static-noeh")))
    for label, cfi_path, noeh_path in cases:
        if args.only and args.only not in label:
            continue
        check_core(plain, res, args.plugin, work, label, cfi_path, noeh_path, stripped=False)
        check_core(plain, res, args.plugin, work, label, cfi_path, noeh_path, stripped=True)


if __name__ == "__main__":
    H.main(run)

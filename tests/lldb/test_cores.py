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
command) through target.debug-file-search-paths. With a cold cache the
program is loaded, `sframe cover` run, and the core loaded after: LLDB picks
frame 0's plan as soon as a core is loaded and keeps it.

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


def frames_of(thread):
    out = []
    for i in range(thread.GetNumFrames()):
        f = thread.GetFrameAtIndex(i)
        if f.IsInlined() or f.IsArtificial():
            continue
        out.append((f.GetPC(), f.GetCFA()))
    return out


def core_frames(session, exe, core):
    target = session.create(exe, core=core)
    try:
        thread = target.GetProcess().GetSelectedThread()
        return frames_of(thread)
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

    # A cold cache: `sframe cover` right after loading the core.
    s = H.Session(plugin_path, work)
    s.cmd("sframe cover --cache-dir " + os.path.join(work, "cache-" + label.replace("/", "_") +
                                                      ("-stripped" if stripped else "")))
    # The program first, `sframe cover`, then the core: loading a core
    # unwinds frame 0 at once, and LLDB keeps the plan it picked then.
    target = s.create(program)
    try:
        ok, out, err = s.cmd("sframe cover")
        res.check(label + ": sframe cover before the core", ok and "1 of 1 modules" in out, out + err)
        process = target.LoadCore(core)
        thread = process.GetSelectedThread()
        got = frames_of(thread)
        data = s.json_cmd("sframe compare --json")
        stepped = [i for i, f in enumerate(data["sframe_frames"]) if f.get("row")]
        # Frames SFrame steps: LLDB's pc and CFA there must be the reference's.
        n = len(stepped) + 1
        res.count("core frames compared", n)
        res.check(label + "%s core: LLDB's bt with the plugin = the CFI build's on %d frames" %
                  (" stripped" if stripped else "", n), got[:n] == ref[:n] and len(got) >= n,
                  "got %s, reference %s" % ([hex(p) for p, _ in got[:n]], [hex(p) for p, _ in ref[:n]]))
        res.check(label + ": sframe compare on the core agrees", data["equal"] == len(data["matches"]) and
                  (data["divergence"] is None or data["divergence"]["limit"] in H.KNOWN_END_LIMITS),
                  repr(data["divergence"]))
        bt = s.json_cmd("sframe bt --json")
        res.check(label + ": sframe bt on the core reaches main",
                  any(f["function"].startswith("main") for f in bt["frames"]), repr([f["function"] for f in bt["frames"]]))
    finally:
        s.delete(target)

    # A warm cache: a new session, no plugin command before `bt`.
    s2 = H.Session(plugin_path, work)
    s2.cmd("settings append target.debug-file-search-paths " + os.path.join(
        work, "cache-" + label.replace("/", "_") + ("-stripped" if stripped else "")))
    copy = program + "-again"
    shutil.copy(program, copy)
    target = s2.create(copy, core=core)
    try:
        got = frames_of(target.GetProcess().GetSelectedThread())
        res.check(label + ": warm cache, no command: LLDB's bt = the CFI build's", got[:n] == ref[:n],
                  "got %s" % [hex(p) for p, _ in got[:n]])
        mod = target.GetModuleAtIndex(0)
        sym = mod.GetSymbolFileSpec()
        res.check(label + ": warm cache: LLDB found the debug file by itself",
                  sym.IsValid() and sym.GetFilename().endswith(".debug"), str(sym))
    finally:
        s2.delete(target)


def run(args, work, res):
    os.environ["SFUNWIND_LLDB_CACHE"] = os.path.join(work, "cache-cores")
    shutil.rmtree(os.environ["SFUNWIND_LLDB_CACHE"], ignore_errors=True)
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

#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""DAP clients see SFrame stacks: lldb-dap (LLDB 19, 23) with the sfunwind
plugin, and GDB's DAP interpreter (`gdb -i=dap`, GDB 14 and later: GDB 18
in the sid chroot) with the sfunwind bridge, driven over stdio as an editor
drives them (tests/common/dap_client.py).

For each fixture whose `-noeh` copy (.eh_frame, .eh_frame_hdr and
.debug_frame removed, only .sframe left) runs here, one DAP session on the
-noeh copy with sfunwind loaded the way the README's launch.json does it,
and one on the CFI build it was copied from without sfunwind (the
reference):
    initialize, launch (stopped by the fixture's trap, a crash (SIGSEGV) or
    a function breakpoint), configurationDone, the stop, threads, stackTrace of every
    thread, scopes and variables of an upper frame, disconnect.
Checked: the same threads, and for each the same stackTrace frames (name,
line, instruction pointer), all of them, up to the first that differs only
when the frame below it has no SFrame FDE at all (asked in the session:
`sframe show-unwind -a` / `sframe row` through the `evaluate` request):
there the debugger unwinds without sfunwind, as it would anyway (crt1's
`_start` above main, a static glibc's signal trampoline; each such case is
printed as a note with both stacks). The same scopes and variables (the
Registers scope left out) in the upper frame, where a value may be
unavailable with sfunwind but never another value (printed as a note).
In the sfunwind session, that sfunwind unwound the program (`sframe
status`: LLDB: every module with SFrame covered before the launch, no
"sframe: hint"; GDB: frames unwound). The server ends the same way with
and without sfunwind. A -g build, its DWARF split into a separate debug
file, stops at a function breakpoint: its upper frame's locals (a 64-byte
array) must read as in the CFI build. One -noeh program is debugged
without sfunwind too: its stack must differ from the reference (the
fixture shows the point, not the test); with GDB, also with sfunwind
loaded from ~/.gdbinit. A program with three threads (tests/dap/threads.c,
built here with -Wa,--gsframe) stops with each thread a few calls deep.

How sfunwind is loaded (the README's launch.json):
  lldb-dap:  initCommands ["plugin load PLUGIN"] (and "settings set
             target.parallel-module-load false" on LLDB 21 and later),
             preRunCommands ["sframe cover"]
  gdb:       gdb -i=dap -iex "source LOADER", or ~/.gdbinit (GDB's DAP
             launch request has no command list)

usage: test_dap.py --lldb-dap lldb-dap-19 --plugin BUILD/plugin/libsfunwind_lldb.so --work DIR [--runs host|chroot]
       test_dap.py --gdb gdb --loader BUILD/gdb-python/sfunwind.py --work DIR [--runs host|chroot]
Exit status: 0 when every check passed (and something was checked)."""

import argparse
import json
import os
import re
import shutil
import signal
import subprocess
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.dirname(os.path.dirname(HERE))
sys.path.insert(0, os.path.join(REPO, "tests", "common"))
from dap_client import DapClient, DapError  # noqa: E402
from fixtures import FIXTURES, manifest, runs_here  # noqa: E402

# Seconds for one request's answer, and for the launch to reach its stop.
REQUEST_TIMEOUT = 30
STOP_TIMEOUT = 90
# Frames asked for per thread (the fixtures' stacks are about 15 deep).
LEVELS = 200

# (CFI build under bin/, program arguments, upper frame to read scopes and
# variables in). The -noeh copy is found by name.
CASES = [
    ("gas-2.40/recurse-O2-nofp", ["trap"], "level_2"),
    ("gas-2.40/plt-O2-nofp/plt", ["trap"], "lib_level_2"),
    ("gas-2.40/sighandler-O2-nofp", ["trap"], "on_signal"),
    ("gas-2.44/recurse-O2-nofp-static", ["trap"], "level_2"),
    ("gas-2.47/recurse-O2-nofp-static", ["trap"], "level_2"),
    ("clang-23/recurse-O2-nofp-static", ["trap"], "level_2"),
    # A crash: SIGSEGV (a store through NULL in fixture_leaf).
    ("gas-2.47/recurse-O2-nofp-static", ["segv"], "level_2"),
    ("gas-2.47/sighandler-O2-nofp-static", ["trap"], "on_signal"),
    # Linked against sid's glibc: in the chroot only.
    ("gas-2.44/recurse-O2-nofp", ["trap"], "level_2"),
    ("gas-2.47/recurse-O2-nofp", ["trap"], "level_2"),
    ("gas-2.47/plt-O2-nofp/plt", ["trap"], "lib_level_2"),
    ("clang-23/recurse-O2-nofp", ["trap"], "level_2"),
]
# Debugged without sfunwind too: its stack must come out wrong.
WITHOUT = "gas-2.47/recurse-O2-nofp-static"
# The -g build split into program + debug file, stopped by a breakpoint.
DEBUG_CASE = "gas-2.40/recurse-O2-nofp-g"


def noeh_of(path):
    """bin/W/P -> bin/W/P-noeh; bin/W/plt-V/plt -> bin/W/plt-V-noeh/plt."""
    if path.endswith("/plt"):
        return os.path.dirname(path) + "-noeh/plt"
    return path + "-noeh"


class Adapter:
    """How to start one DAP server, with or without sfunwind."""

    name = "?"
    signals_in_launch = False

    def argv(self, sfunwind, extra):
        raise NotImplementedError

    def launch_arguments(self, program, args, cwd, sfunwind, extra):
        raise NotImplementedError

    def env(self, sfunwind=None):
        return None

    def status(self, dap, program):
        """(ok, detail): whether sfunwind unwound `program` in this session,
        from its `sframe status` (the DAP evaluate request, repl context)."""
        raise NotImplementedError


def _evaluate(dap, expression):
    """The text of a repl `evaluate` (its result, or its error message)."""
    seq = dap.send_request("evaluate", {"expression": expression, "context": "repl"})
    resp = dap.response(seq, "evaluate", timeout=REQUEST_TIMEOUT)
    return (resp.get("body") or {}).get("result") or resp.get("message") or ""


class LldbDap(Adapter):
    def __init__(self, exe, plugin, work):
        self.exe = shutil.which(exe) or exe
        self.plugin = os.path.abspath(plugin)
        self.name = os.path.basename(self.exe)
        self.work = work
        out = subprocess.run([self.exe, "--version"], capture_output=True, text=True, timeout=REQUEST_TIMEOUT,
                             stdin=subprocess.DEVNULL)
        m = re.search(r"version (\d+)", out.stdout + out.stderr)
        self.major = int(m.group(1)) if m else None

    def env(self, sfunwind=None):
        env = dict(os.environ)
        # The lldb-server next to lldb-dap (Debian names it lldb-server-NN
        # on PATH, which LLDB does not look for).
        server = os.path.join(os.path.dirname(os.path.realpath(self.exe)), "lldb-server")
        if os.path.exists(server):
            env["LLDB_DEBUGSERVER_PATH"] = server
        # The plugin's debug files, LLDB 23's debuginfod cache and ~/.lldbinit:
        # this run's own.
        env["SFUNWIND_LLDB_CACHE"] = os.path.join(self.work, "lldb-cache")
        # (Sessions without the plugin get a cache of their own: LLDB 23
        # reuses what its debuginfod client kept, by build-id, and a -noeh
        # copy has its CFI build's build-id.)
        env["DEBUGINFOD_CACHE_PATH"] = os.path.join(self.work, "debuginfod-cache" + ("" if sfunwind else "-plain"))
        env["HOME"] = os.path.join(self.work, "home")
        os.makedirs(env["HOME"], exist_ok=True)
        return env

    def argv(self, sfunwind, extra):
        return [self.exe]

    def launch_arguments(self, program, args, cwd, sfunwind, extra):
        init = []
        if self.major is None or self.major >= 21:
            # LLDB 21 to 23 can deadlock loading modules in parallel (see
            # tests/lldb/lldb_harness.py); LLDB 19 has no such setting.
            init.append("settings set target.parallel-module-load false")
        if sfunwind:
            init.append("plugin load " + self.plugin)
        if extra.get("debug_dir"):
            init.append("settings append target.debug-file-search-paths " + extra["debug_dir"])
        pre = []
        if sfunwind:
            # LLDB 19's lldb-dap makes the target through the SB API, where
            # the plugin sees no `target create`: this covers the program
            # and its libraries before the launch (plugin/README.md).
            pre.append("sframe cover")
        if extra.get("pass_sigusr1"):
            pre.append("process handle SIGUSR1 --stop false --notify false --pass true")
        return {"program": program, "args": args, "cwd": cwd, "initCommands": init, "preRunCommands": pre}

    def status(self, dap, program):
        out = _evaluate(dap, "`sframe status --json")
        try:
            st = json.loads(out[out.index("{"):])
        except ValueError:
            return False, "no JSON from sframe status: %r" % out[:300]
        mods = [m for m in st.get("modules", []) if m.get("sframe") is not None]
        names = [m.get("name") for m in mods]
        if os.path.basename(program) not in names:
            return False, "%s not among the modules with SFrame: %r" % (program, names)
        # Every module with SFrame covered, and none late: the plugin says
        # "sframe: hint: ..." (an output event) when it could add a module's
        # file only at the stop, after LLDB unwound in it.
        bad = [(m.get("name"), m.get("coverage"), m.get("detail")) for m in mods if m.get("coverage") != "in-use"]
        hints = [e.get("output", "").strip() for e in dap.events("output") if "sframe: hint" in e.get("output", "")]
        return not bad and not hints, "not covered: %r; hints: %r" % (bad, hints)

    def stop_signal(self, dap, stopped):
        """The signal that stopped the program (SIGTRAP, ...), or None."""
        m = re.search(r"SIG[A-Z]+", stopped.get("description") or "")
        return m.group(0) if m else None

    def sframe_covers(self, dap, pc):
        """(False when no SFrame FDE covers `pc`, the command's text)."""
        text = _evaluate(dap, "`sframe show-unwind -a %#x" % pc)
        return "no FDE covers" not in text, text.strip().splitlines()[-1] if text.strip() else ""


class GdbDap(Adapter):
    signals_in_launch = True

    def __init__(self, exe, loader, work):
        self.work = work
        self.exe = shutil.which(exe) or exe
        self.loader = os.path.abspath(loader)
        self.name = os.path.basename(self.exe)

    def argv(self, sfunwind, extra):
        # sfunwind "gdbinit": from ~/.gdbinit (HOME set by env()), read in
        # DAP mode too; otherwise from the command line, no init file.
        argv = [self.exe, "-q"] + ([] if sfunwind == "gdbinit" else ["-nx"]) + ["-i=dap"]
        if sfunwind and sfunwind != "gdbinit":
            argv += ["-iex", "source " + self.loader]
        if extra.get("pass_sigusr1"):
            argv += ["-iex", "handle SIGUSR1 nostop noprint pass"]
        if extra.get("debug_dir"):
            argv += ["-iex", "set debug-file-directory " + extra["debug_dir"]]
        return argv

    def launch_arguments(self, program, args, cwd, sfunwind, extra):
        return {"program": program, "args": args, "cwd": cwd}

    def env(self, sfunwind=None):
        if sfunwind != "gdbinit":
            return None
        home = os.path.join(self.work, "home-gdbinit")
        os.makedirs(home, exist_ok=True)
        with open(os.path.join(home, ".gdbinit"), "w") as f:
            f.write("source %s\n" % self.loader)
        return dict(os.environ, HOME=home)

    def status(self, dap, program):
        out = _evaluate(dap, "sframe status")
        m = re.search(r"python path: (\d+) frames unwound", out)
        listed = program in out
        n = int(m.group(1)) if m else 0
        return listed and n > 0, "%s listed: %s; python path: %d frames unwound" % (program, listed, n)

    def stop_signal(self, dap, stopped):
        m = re.fullmatch(r"\s*(\d+)\s*", _evaluate(dap, "output $_siginfo.si_signo"))
        return signal.Signals(int(m.group(1))).name if m else None

    def sframe_covers(self, dap, pc):
        text = _evaluate(dap, "sframe row %#x" % pc)
        return "no module with SFrame covers" not in text, text.strip()


def frame_key(f):
    ip = f.get("instructionPointerReference")
    return (f.get("name"), f.get("line") or 0, int(ip, 16) if ip else None)


def show(frames):
    return ", ".join("%s:%s@%s" % (n, l, "%#x" % ip if ip is not None else "?") for (n, l, ip) in frames)


def read_variables(dap, ref, depth=1):
    """[(name, value, children)] of a variables reference, children one
    level deep (an array's elements). A child list the server cannot read
    (GDB: a NULL pointer's target) is [("error", its message, None)]."""
    seq = dap.send_request("variables", {"variablesReference": ref})
    resp = dap.response(seq, "variables", timeout=REQUEST_TIMEOUT)
    if not resp.get("success"):
        return [("error", resp.get("message"), None)]
    out = []
    for v in (resp.get("body") or {}).get("variables", []):
        kids = None
        if depth > 0 and v.get("variablesReference"):
            kids = read_variables(dap, v["variablesReference"], depth - 1)
        out.append((v.get("name"), v.get("value"), kids))
    return out


def session(adapter, program, args, sfunwind, upper, work, label, extra=None, reference=None):
    """One DAP session to the stop. Returns {"threads": [(name, [frame
    keys])], "scopes": {scope: variables} of the first frame named `upper`
    on the stopped thread, "upper": its index, "stopped": the event body}.
    With sfunwind also "status": (ok, detail), whether sfunwind unwound
    the program; with a `reference` session, "first_difference": for each
    thread, None or (k, whether an SFrame FDE covers frame k-1, the
    command's text): the first frame that differs, and whether frame k-1,
    from which the debugger unwound it, has SFrame at all."""
    extra = extra or {}
    log = os.path.join(work, "logs", "%s%s.log" % (label.replace("/", "_"),
                                                   ("-sfunwind" if sfunwind is True else "-" + sfunwind) if sfunwind
                                                   else ""))
    os.makedirs(os.path.dirname(log), exist_ok=True)
    if os.path.exists(log):
        os.unlink(log)
    result = {"log": log}
    try:
        return _session(adapter, program, args, sfunwind, upper, work, extra, reference, log, result)
    except DapError as e:
        raise DapError("%s (session log: %s)" % (e, log)) from None


def first_difference(ref, got):
    """The index of the first frame that differs (a missing one included),
    or None."""
    for k in range(max(len(ref), len(got))):
        if k >= len(ref) or k >= len(got) or ref[k] != got[k]:
            return k
    return None


def _session(adapter, program, args, sfunwind, upper, work, extra, reference, log, result):
    with DapClient(adapter.argv(sfunwind, extra), env=adapter.env(sfunwind), cwd=work, timeout=REQUEST_TIMEOUT,
                   log=log) as dap:
        caps = dap.request("initialize", {"clientID": "sfunwind-test", "adapterID": adapter.name,
                                          "pathFormat": "path", "linesStartAt1": True, "columnsStartAt1": True,
                                          "supportsVariableType": True, "supportsRunInTerminalRequest": False})
        if isinstance(adapter, LldbDap) and adapter.major is None:  # lldb-dap 19 has no --version
            m = re.search(r"version (\d+)", json.dumps(caps.get("__lldb", {})))
            adapter.major = int(m.group(1)) if m else None
        seq = dap.send_request("launch", adapter.launch_arguments(program, args, work, sfunwind, extra))
        dap.wait_event("initialized", timeout=STOP_TIMEOUT)
        if extra.get("breakpoint"):
            bps = dap.request("setFunctionBreakpoints", {"breakpoints": [{"name": extra["breakpoint"]}]})
            result["breakpoints"] = bps.get("breakpoints", [])
        dap.request("configurationDone")
        # As an editor does: the baseline of threads, right after
        # configurationDone. lldb-dap 21 and later answer this first
        # `threads` with the threads of the launch (one), kept from before
        # the process ran, whenever it comes; the list after the stop is the
        # next one.
        seq_threads = dap.send_request("threads")
        resp = dap.response(seq, "launch", timeout=STOP_TIMEOUT)
        if not resp.get("success"):
            raise DapError("launch failed: %s" % resp.get("message"))
        stopped = dap.wait_event("stopped", timeout=STOP_TIMEOUT)
        dap.response(seq_threads, "threads")
        result["stopped"] = stopped
        result["signal"] = adapter.stop_signal(dap, stopped) if stopped.get("reason") != "breakpoint" else None
        threads = dap.request("threads")["threads"]
        result["threads"] = []
        stop_tid = stopped.get("threadId", threads[0]["id"] if threads else None)
        stop_frames = None
        for t in threads:
            st = dap.request("stackTrace", {"threadId": t["id"], "startFrame": 0, "levels": LEVELS})
            frames = st.get("stackFrames", [])
            result["threads"].append((t.get("name"), [frame_key(f) for f in frames]))
            if t["id"] == stop_tid:
                stop_frames = frames
        # Scopes and variables of the upper frame, on the stopped thread.
        result["scopes"] = None
        result["upper"] = None
        for i, f in enumerate(stop_frames or []):
            if f.get("name") == upper:
                result["upper"] = i
                scopes = dap.request("scopes", {"frameId": f["id"]}).get("scopes", [])
                result["scopes"] = {}
                for sc in scopes:
                    if sc.get("presentationHint") == "registers" or sc.get("name") == "Registers":
                        continue
                    # By name: LLDB lists a scope's globals in no fixed order.
                    result["scopes"][sc["name"]] = sorted(read_variables(dap, sc["variablesReference"]),
                                                          key=lambda v: str(v[0]))
                break
        if sfunwind:
            result["status"] = adapter.status(dap, program)
        if reference is not None:
            result["first_difference"] = []
            for (_, rf), (_, gf) in zip(reference["threads"], result["threads"]):
                k = first_difference(rf, gf)
                if k is None or k == 0 or k > len(gf):
                    result["first_difference"].append(None if k is None else (k, True, ""))
                    continue
                # Frame k-1's pc, and the call before a return address.
                pc = gf[k - 1][2]
                covered = [adapter.sframe_covers(dap, a) for a in ([pc, pc - 1] if k > 1 else [pc])]
                result["first_difference"].append((k, any(c for c, _ in covered),
                                                   " / ".join(t for _, t in covered)))
        result["exit"] = dap.disconnect()
    return result


class Results:
    def __init__(self):
        self.passed = 0
        self.failed = 0
        self.notes = 0

    def check(self, name, ok, detail=""):
        print("%s %s%s" % ("ok  " if ok else "FAIL", name, (": " + detail) if detail and not ok else ""))
        if ok:
            self.passed += 1
        else:
            self.failed += 1
        return ok

    def note(self, text):
        self.notes += 1
        print("note " + text)


def compare(res, label, ref, got):
    """The sfunwind session's threads and upper-frame variables against the
    reference's."""
    res.check("%s: threads" % label, [n for (n, _) in got["threads"]] == [n for (n, _) in ref["threads"]],
              "%s vs %s" % ([n for (n, _) in got["threads"]], [n for (n, _) in ref["threads"]]))
    for t, ((tname, rf), (_, gf)) in enumerate(zip(ref["threads"], got["threads"])):
        diff = got["first_difference"][t]
        name = "%s: thread %d (%s) stackTrace (name, line, pc)" % (label, t + 1, tname)
        if diff is None:
            res.check("%s: all %d frames" % (name, len(rf)), len(rf) > 2, show(gf))
            continue
        k, covered, text = diff
        # A difference is the unwinder's only where frame k-1 has SFrame:
        # from a frame without (crt1's _start, static glibc's signal
        # trampoline, whose CFI went with .eh_frame), the debugger unwinds
        # without sfunwind, as it would anyway.
        ok = res.check("%s: %d frames, up to a frame without SFrame" % (name, k), not covered and k > 2,
                       "frame %d differs, and frame %d has SFrame (%s)\n  sfunwind:  %s\n  reference: %s"
                       % (k, k - 1, text, show(gf), show(rf)))
        if ok:
            res.note("%s: thread %d from frame %d on: frame %d (%s) has no SFrame FDE (%s), so the debugger "
                     "unwinds it without sfunwind: sfunwind session %s; reference %s"
                     % (label, t + 1, k, k - 1, gf[k - 1][0], text.splitlines()[0] if text else "",
                        show(gf[k:]), show(rf[k:])))
    # lldb-dap 19 aborts after it answers disconnect ("free(): invalid
    # pointer"), plugin or not: sfunwind must not change how the server ends.
    res.check("%s: the server's exit status after disconnect is the reference session's (%s)"
              % (label, got["exit"]), got["exit"] == ref["exit"], "%s vs %s" % (got["exit"], ref["exit"]))
    if ref["scopes"] is None:
        res.check("%s: the upper frame is on the reference's stack" % label, False, "not found")
        return
    unavailable, why = [], []
    same = same_variables(ref["scopes"], got["scopes"] or {}, unavailable, "", why) and got["upper"] == ref["upper"]
    res.check("%s: scopes and variables of frame %s (%s)" % (label, got["upper"], ", ".join(ref["scopes"]) or
                                                           "no scopes"), same,
              "frame %s vs %s (sfunwind vs reference): %s" % (got["upper"], ref["upper"], "; ".join(why)))
    for name, value, refvalue in unavailable:
        res.note("%s: frame %s: %s is unavailable with sfunwind (%s), %s in the reference: the debugger could not "
                 "recover the register it lives in (SFrame has no rules for callee-saved registers; see "
                 "plugin/README.md), and shows no wrong value" % (label, got["upper"], name, value, refvalue))


# How GDB and LLDB say that a value cannot be read in a frame.
UNAVAILABLE = re.compile(r"not available|unavailable|<not saved>|<optimized out>")


def same_variables(ref, got, unavailable, where="", why=None):
    """Whether two scopes dicts (or variable lists) are equal, allowing a
    value that is unavailable with sfunwind and known in the reference
    (each is appended to `unavailable`); never another value. The first
    difference is appended to `why`."""
    why = [] if why is None else why

    def differ(text):
        why.append(text)
        return False
    if isinstance(ref, dict):
        if not isinstance(got, dict) or list(ref) != list(got):
            return differ("%sscopes %s vs %s" % (where, list(got or {}), list(ref)))
        return all(same_variables(ref[k], got[k], unavailable, k + ": ", why) for k in ref)
    if ref is None or got is None:
        return ref is got or differ("%schildren %r vs %r" % (where, got, ref))
    if len(ref) != len(got):
        return differ("%s%d variables vs %d: %r vs %r" % (where, len(got), len(ref), [v[0] for v in got],
                                                          [v[0] for v in ref]))
    for (rn, rv, rk), (gn, gv, gk) in zip(ref, got):
        if rn != gn:
            return differ("%s%s vs %s" % (where, gn, rn))
        if rv != gv:
            if not (UNAVAILABLE.search(gv or "") and not UNAVAILABLE.search(rv or "")):
                return differ("%s%s = %r vs %r" % (where, gn, gv, rv))
            unavailable.append((gn, gv, rv))
        if not same_variables(rk, gk, unavailable, where + gn + ".", why):
            return False
    return True


def build_threads(work):
    """tests/dap/threads.c built with SFrame (-Wa,--gsframe), and a copy
    without .eh_frame and .eh_frame_hdr: (CFI build, SFrame-only copy).
    Both names share their first 15 characters, the threads' name."""
    cfi = os.path.join(work, "threads-O2-nofp")
    noeh = cfi + "-noeh"
    subprocess.check_call(["gcc", "-O2", "-fomit-frame-pointer", "-Wa,--gsframe", "-pthread",
                           os.path.join(HERE, "threads.c"), "-o", cfi])
    subprocess.check_call(["objcopy", "--remove-section=.eh_frame", "--remove-section=.eh_frame_hdr", cfi, noeh])
    return cfi, noeh


def split_debug(work):
    """The -g build as a program stripped of its DWARF and CFI plus a
    separate debug file under DIR/.build-id/: (program, DIR)."""
    g = os.path.join(FIXTURES, "bin", DEBUG_CASE)
    debug_dir = os.path.join(work, "debug")
    build_id = re.search(r"Build ID: ([0-9a-f]+)", subprocess.check_output(["readelf", "-n", g], text=True)).group(1)
    dbg = os.path.join(debug_dir, ".build-id", build_id[:2], build_id[2:] + ".debug")
    os.makedirs(os.path.dirname(dbg), exist_ok=True)
    subprocess.check_call(["objcopy", "--only-keep-debug", g, dbg])
    prog = os.path.join(work, os.path.basename(g) + "-split-noeh")
    subprocess.check_call(["objcopy", "--strip-debug", "--remove-section=.eh_frame",
                           "--remove-section=.eh_frame_hdr", "--remove-section=.debug_frame", g, prog])
    return prog, debug_dir


def run(args, res):
    work = os.path.abspath(args.work)
    shutil.rmtree(work, ignore_errors=True)
    os.makedirs(work)
    if args.lldb_dap:
        adapter = LldbDap(args.lldb_dap, args.plugin, work)
    else:
        adapter = GdbDap(args.gdb, args.loader, work)
    entries = {e["path"]: e for e in manifest()}
    print("adapter: %s (%s)%s" % (adapter.name, " ".join(adapter.argv(True, {})),
                                  ", LLDB %s" % adapter.major if getattr(adapter, "major", None) else ""))

    def attempt(label, fn):
        try:
            return fn()
        except (DapError, OSError, subprocess.CalledProcessError) as e:
            res.check(label, False, "%s" % e)
            return None

    for path, pargs, upper in CASES:
        if args.only and args.only not in path:
            continue
        noeh = noeh_of(path)
        entry = entries.get("bin/" + noeh)
        if entry is None or not runs_here(entry, args.runs):
            continue
        cfi_prog = os.path.join(FIXTURES, "bin", path)
        noeh_prog = os.path.join(FIXTURES, "bin", noeh)
        # Labels: the program, and the stop when it is not the trap.
        tag = "" if pargs == ["trap"] else "-" + pargs[0]
        path, noeh = path + tag, noeh + tag
        extra = {"pass_sigusr1": "sighandler" in path}
        t0 = time.monotonic()
        ref = attempt(path + ": reference session (CFI build, no sfunwind)",
                      lambda: session(adapter, cfi_prog, pargs, False, upper, work, path, extra))
        got = attempt(path + ": session on the -noeh copy with sfunwind",
                      lambda: session(adapter, noeh_prog, pargs, True, upper, work, noeh, extra, reference=ref))
        if ref is None or got is None:
            continue
        want = {"segv": "SIGSEGV"}.get(pargs[0], "SIGTRAP")
        res.check("%s: stopped by %s, as the reference" % (noeh, want), got["signal"] == ref["signal"] == want,
                  "%s vs %s" % (got["signal"], ref["signal"]))
        res.check("%s: sfunwind unwound the -noeh program (sframe status)" % noeh, got["status"][0],
                  got["status"][1])
        compare(res, noeh, ref, got)
        if path == WITHOUT:  # (the trap stop only: WITHOUT has no tag)
            plain = attempt(noeh + ": session without sfunwind",
                            lambda: session(adapter, noeh_prog, pargs, False, upper, work, noeh + "-plain", extra))
            if plain is not None:
                rf, pf = ref["threads"][0][1], plain["threads"][0][1]
                k = first_difference(rf, pf)
                main = [n for (n, _, _) in rf].index("main")
                res.check("%s: without sfunwind the stack differs from the reference below main "
                          "(the fixture shows the point)" % noeh, k is not None and k <= main, show(pf))
                print("     without sfunwind: %s" % show(pf))
            if isinstance(adapter, GdbDap):
                # The README's route for editors: ~/.gdbinit (GDB's DAP
                # launch request carries no commands).
                init = attempt(noeh + ": session with sfunwind from ~/.gdbinit",
                               lambda: session(adapter, noeh_prog, pargs, "gdbinit", upper, work, noeh, extra,
                                               reference=ref))
                if init is not None:
                    res.check("%s (sfunwind from ~/.gdbinit): sfunwind unwound the program (sframe status)" % noeh,
                              init["status"][0], init["status"][1])
                    compare(res, noeh + " (sfunwind from ~/.gdbinit)", ref, init)
        print("     %s: %.1f s" % (noeh, time.monotonic() - t0))

    # Three threads (tests/dap/threads.c, built here with this machine's
    # GNU as), all of them a few SFrame-covered calls deep at the stop.
    if not args.only or args.only in "threads":
        t0 = time.monotonic()
        cfi_prog, noeh_prog = build_threads(work)
        label = os.path.basename(noeh_prog)
        ref = attempt("threads: reference session (CFI build, no sfunwind)",
                      lambda: session(adapter, cfi_prog, [], False, "main_level_1", work, os.path.basename(cfi_prog)))
        got = attempt(label + ": session with sfunwind",
                      lambda: session(adapter, noeh_prog, [], True, "main_level_1", work, label, reference=ref))
        if ref is not None and got is not None:
            workers = [[n for (n, _, _) in frames] for (_, frames) in ref["threads"][1:]]
            res.check("%s: the reference stops with 3 threads, the workers in worker_level_2 and worker_level_1"
                      % label, len(ref["threads"]) == 3 and all("worker_level_2" in w and "worker_level_1" in w
                                                                 for w in workers), repr(workers))
            res.check("%s: sfunwind unwound the program (sframe status)" % label, got["status"][0], got["status"][1])
            compare(res, label, ref, got)
        print("     %s: %.1f s" % (label, time.monotonic() - t0))

    # The -g build, DWARF in a separate debug file, stopped by a breakpoint.
    entry = entries.get("bin/" + DEBUG_CASE)
    if entry is not None and runs_here(entry, args.runs) and (not args.only or args.only in DEBUG_CASE):
        t0 = time.monotonic()
        label = DEBUG_CASE + "-split-noeh"
        prog, debug_dir = split_debug(work)
        # (LLDB 19 puts a breakpoint on fixture_leaf in main, where the
        # DWARF of fixture_leaf.cold leads it: `recurse` it is.)
        bp = {"breakpoint": "recurse"}
        ref = attempt(DEBUG_CASE + ": reference session (breakpoint)",
                      lambda: session(adapter, os.path.join(FIXTURES, "bin", DEBUG_CASE), ["none"], False,
                                      "level_2", work, DEBUG_CASE, bp))
        got = attempt(label + ": session with sfunwind (breakpoint)",
                      lambda: session(adapter, prog, ["none"], True, "level_2", work, label,
                                      dict(bp, debug_dir=debug_dir), reference=ref))
        if ref is not None and got is not None:
            res.check("%s: stopped at the breakpoint" % label,
                      got["stopped"].get("reason") == "breakpoint" == ref["stopped"].get("reason"),
                      "%r vs %r" % (got["stopped"], ref["stopped"]))
            res.check("%s: sfunwind unwound the program (sframe status)" % label, got["status"][0],
                      got["status"][1])
            compare(res, label, ref, got)
            names = [n for (n, _, _) in ref["threads"][0][1]]
            lines = [l for (_, l, _) in ref["threads"][0][1]][:names.index("main") + 1 if "main" in names else 0]
            res.check("%s: the reference has a line for every frame of the program" % label, all(lines), repr(lines))
            # level_2's buf[64] holds 0..63 (the values GDB and LLDB
            # print for bytes 48-63: "0123456789:;<=>?"), as its elements
            # (LLDB) or as one string (GDB).
            buf = [(v, kids) for vs in (got["scopes"] or {}).values() for (n, v, kids) in vs if n == "buf"]
            content = "".join(re.sub(r"^'(.*)'$", r"\1", k[1]) for k in buf[0][1]) if buf and buf[0][1] else (
                buf[0][0] if buf else "")
            res.check("%s: level_2's buf is read in the upper frame (bytes 0 to 63)" % label,
                      "0123456789:;<=>?" in content, repr(buf)[:600])
        print("     %s: %.1f s" % (label, time.monotonic() - t0))


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0], epilog="\n".join(__doc__.splitlines()[1:]),
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--lldb-dap", help="lldb-dap to drive (lldb-dap-19, lldb-dap-23)")
    ap.add_argument("--plugin", help="BUILD/plugin/libsfunwind_lldb.so (with --lldb-dap)")
    ap.add_argument("--gdb", help="GDB to drive with -i=dap (GDB 14 or later)")
    ap.add_argument("--loader", help="BUILD/gdb-python/sfunwind.py (with --gdb)")
    ap.add_argument("--runs", choices=("host", "chroot"), default="host",
                    help="the fixtures that run here: host (bookworm) or chroot (sid)")
    ap.add_argument("--work", required=True, help="scratch directory (emptied first)")
    ap.add_argument("--only", help="only the programs whose path contains this")
    args = ap.parse_args()
    if bool(args.lldb_dap) == bool(args.gdb) or (args.lldb_dap and not args.plugin) or (args.gdb and not args.loader):
        ap.error("give --lldb-dap and --plugin, or --gdb and --loader")
    res = Results()
    t0 = time.monotonic()
    try:
        run(args, res)
    except Exception as e:  # noqa: BLE001 -- the test's own crash is a failure
        import traceback
        traceback.print_exc()
        res.check("test script ran to the end", False, repr(e))
    if res.passed + res.failed == 0:
        print("FAIL: nothing was tested")
    print("%d passed, %d failed, %d notes (%.1f s)" % (res.passed, res.failed, res.notes, time.monotonic() - t0))
    sys.exit(1 if res.failed or res.passed == 0 else 0)


if __name__ == "__main__":
    main()

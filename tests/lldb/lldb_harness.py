# SPDX-License-Identifier: MIT
"""Shared set-up for the LLDB plugin tests: drives LLDB (19 on the host, 23 in
the sid chroot) through its Python SB API, synchronously, with the sfunwind
plugin loaded.

A test script calls `main(run)`: it parses --plugin/--lldb/--work, re-runs
itself with PYTHONPATH=$(lldb -P) and LLDB_DEBUGSERVER_PATH set when `import
lldb` is not possible yet, and prints one line per check and a last line
"N passed, M failed" (exit status 1 when anything failed).
"""

import argparse
import collections
import contextlib
import json
import os
import re
import shutil
import subprocess
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.dirname(os.path.dirname(HERE))
FIXTURES = os.path.join(REPO, "tests", "fixtures")
sys.path.insert(0, os.path.join(REPO, "tests", "common"))
import watchdog  # noqa: E402

# Seconds a suite may run before the watchdog prints every thread's stack and
# ends it: ten times the slowest suite on the development machine.
WATCHDOG_SECONDS = 900


def _parse_args():
    p = argparse.ArgumentParser()
    p.add_argument("--plugin", required=True, help="path of libsfunwind_lldb.so")
    p.add_argument("--lldb", required=True, help="the lldb driver (lldb-19, lldb-23)")
    p.add_argument("--work", default=None, help="scratch directory (default: a fresh temporary one)")
    p.add_argument("-v", "--verbose", action="store_true")
    p.add_argument("--only", default=None, help="run only checks whose name contains this")
    p.add_argument("--chroot", action="store_true",
                   help="also the fixtures linked against sid's glibc (run inside the sid chroot)")
    return p.parse_args()


def _ensure_lldb_module(lldb_driver):
    # The lldb-server next to the driver (Debian names it lldb-server-NN
    # elsewhere, which LLDB does not look for).
    driver = os.path.realpath(shutil.which(lldb_driver) or lldb_driver)
    server = os.path.join(os.path.dirname(driver), "lldb-server")
    if os.path.exists(server):
        os.environ.setdefault("LLDB_DEBUGSERVER_PATH", server)
    try:
        import lldb
        # Debian's python3 has an empty /usr/lib/python3/dist-packages/lldb,
        # which imports as a namespace package without the SB API.
        if hasattr(lldb, "SBDebugger"):
            return
    except ImportError:
        pass
    if os.environ.get("SFUNWIND_LLDB_REEXEC"):
        sys.exit("cannot import lldb even with PYTHONPATH=" + os.environ.get("PYTHONPATH", ""))
    pypath = subprocess.check_output([lldb_driver, "-P"], text=True).strip()
    env = dict(os.environ)
    env["PYTHONPATH"] = pypath + (os.pathsep + env["PYTHONPATH"] if env.get("PYTHONPATH") else "")
    env["SFUNWIND_LLDB_REEXEC"] = "1"
    os.execve(sys.executable, [sys.executable] + sys.argv, env)


class Results:
    def __init__(self, verbose):
        self.passed = 0
        self.failed = 0
        self.verbose = verbose
        self.failures = []
        self.stats = {}

    def check(self, name, ok, detail=""):
        if ok:
            self.passed += 1
            if self.verbose:
                print("ok   " + name)
        else:
            self.failed += 1
            self.failures.append(name)
            print("FAIL " + name + (": " + detail if detail else ""))
        return ok

    def count(self, key, n=1):
        self.stats[key] = self.stats.get(key, 0) + n


# The sessions with the plugin loaded. The plugin acts on the whole LLDB
# process (the debug-file search paths and LLDB's debuginfod servers are
# process-wide settings), so a plain session pauses it while LLDB loads
# modules for it (see Session.plain_loading).
_plugin_sessions = []


class Session:
    """One SBDebugger with the plugin loaded, synchronous."""

    def __init__(self, plugin, work):
        import lldb
        self.lldb = lldb
        self.work = work
        self.plain = plugin is None
        self.debugger = lldb.SBDebugger.Create(False)
        self.debugger.SetAsync(False)
        # LLDB 21 to 23 load a core's (or a process's) modules on a thread
        # pool, and LLDB 23.1.4 can deadlock there: SBTarget::LoadCore waits
        # for two pool workers that each block on a mutex inside a call_once
        # (seen in test_cores.py with plain LLDB, intermittently;
        # llvm-project PRs 166480 and 213094). Every session loads modules
        # one at a time; LLDB 19 has no such setting, and says so.
        if lldb.SBDebugger.GetInternalVariableValue("target.parallel-module-load",
                                                    self.debugger.GetInstanceName()).GetSize():
            self.cmd("settings set target.parallel-module-load false")
        if plugin is not None:  # None: plain LLDB, the reference
            ok, out, err = self.cmd("plugin load " + plugin)
            if not ok:
                raise RuntimeError("plugin load failed: " + err)
            _plugin_sessions.append(self)
        self.version = lldb.SBDebugger.GetVersionString()
        self.major = int(re.search(r"version (\d+)", self.version).group(1))

    @contextlib.contextmanager
    def plain_loading(self):
        """For a plain session: `sframe cover --off` in the plugin's sessions
        while LLDB loads modules, so that the reference gets no debug file of
        the plugin's (by search path or by the debuginfod responder)."""
        paused = _plugin_sessions if self.plain else []
        for p in paused:
            p.cmd("sframe cover --off")
        try:
            yield
        finally:
            for p in paused:
                p.cmd("sframe cover --on")

    def cmd(self, line, target=None):
        lldb = self.lldb
        res = lldb.SBCommandReturnObject()
        if target is not None:
            self.debugger.GetCommandInterpreter().HandleCommand(line, lldb.SBExecutionContext(target), res, False)
        else:
            self.debugger.GetCommandInterpreter().HandleCommand(line, res)
        return res.Succeeded(), res.GetOutput() or "", res.GetError() or ""

    def json_cmd(self, line):
        ok, out, err = self.cmd(line)
        if not ok:
            raise RuntimeError(line + ": " + err)
        return json.loads(out)

    def create(self, path, core=None):
        lldb = self.lldb
        err = lldb.SBError()
        with self.plain_loading():
            target = self.debugger.CreateTarget(path, None, None, True, err)
            if not target.IsValid():
                raise RuntimeError("target create %s: %s" % (path, err.GetCString()))
            if core is not None:
                process = target.LoadCore(core)
                if not process.IsValid():
                    raise RuntimeError("cannot load core " + core)
        return target

    def create_by_command(self, path, core=None, command="target create"):
        """The ordinary flow: the `target create` command (what `file PROG`,
        `lldb PROG` and `lldb -c CORE PROG` run), no plugin command.
        `command` may add options, or be the `file` alias."""
        line = command + " " + ("--core %s " % quote(core) if core else "") + quote(path)
        ok, out, err = self.cmd(line)
        target = self.debugger.GetSelectedTarget()
        if not ok or not target.IsValid():
            raise RuntimeError(line + ": " + err)
        return target

    def launch_by_command(self, target):
        """`process launch` (what `run` runs) in the work directory."""
        ok, out, err = self.cmd("process launch -w " + quote(self.work), target)
        process = target.GetProcess()
        if not ok or not process.IsValid():
            raise RuntimeError("process launch: " + err)
        return process

    def launch(self, target, args, stop_at_entry=False):
        lldb = self.lldb
        info = lldb.SBLaunchInfo(args)
        info.SetWorkingDirectory(self.work)
        flags = info.GetLaunchFlags()
        if stop_at_entry:
            flags |= lldb.eLaunchFlagStopAtEntry
        info.SetLaunchFlags(flags)
        err = lldb.SBError()
        with self.plain_loading():
            process = target.Launch(info, err)
        if not process.IsValid() or err.Fail():
            raise RuntimeError("launch failed: " + (err.GetCString() or "?"))
        return process

    def delete(self, target):
        if target.IsValid():
            process = target.GetProcess()
            if process.IsValid() and process.GetState() not in (self.lldb.eStateExited, self.lldb.eStateDetached):
                process.Kill()
            self.debugger.DeleteTarget(target)
            # Drop the deleted target's modules from LLDB's process-wide
            # module cache: a later target must not find them (they keep
            # unwind plans, and share UUIDs with the -noeh copies).
            self.lldb.SBDebugger.MemoryPressureDetected()


def use_cache(work, name, fresh=True):
    """The plugin's debug-file cache (SFUNWIND_LLDB_CACHE) for one suite:
    WORK/cache-NAME, emptied first unless fresh=False. Returns its path."""
    path = os.path.join(work, "cache-" + name)
    os.environ["SFUNWIND_LLDB_CACHE"] = path
    if fresh:
        shutil.rmtree(path, ignore_errors=True)
    return path


def quote(path):
    """A path as one word of an LLDB command."""
    return '"' + path.replace("\\", "\\\\").replace('"', '\\"') + '"'


def fixture(*parts):
    return os.path.join(FIXTURES, "bin", *parts)


Frame = collections.namedtuple("Frame", "function pc cfa index")


def frames_of(thread, limit=64):
    """LLDB's concrete frames (inlined and artificial ones left out), among
    the first `limit` (None: all): Frame(function, pc, cfa, index), index
    being LLDB's frame index."""
    out = []
    n = thread.GetNumFrames()
    for i in range(n if limit is None else min(n, limit)):
        f = thread.GetFrameAtIndex(i)
        if f.IsInlined() or f.IsArtificial():
            continue
        sym = f.GetSymbol()
        out.append(Frame(sym.GetName() if sym.IsValid() else None, f.GetPC(), f.GetCFA(), i))
    return out


def loaded_with_module(status_module):
    """Whether LLDB got the plugin's file when it loaded the module (through
    the search paths; LLDB 23 asks its debuginfod servers, the plugin's
    responder, first), not from `target symbols add` at a stop."""
    detail = status_module["detail"]
    return "debug-file-search-paths" in detail or "debuginfod responder" in detail


def stop_description(thread):
    frame = thread.GetFrameAtIndex(0)
    name = frame.GetFunctionName() or frame.GetSymbol().GetName() or "?"
    return "%s+0x%x" % (name, frame.GetPC() - frame.GetSymbol().GetStartAddress().GetLoadAddress(thread.GetProcess().GetTarget()))


# The limits a test accepts as the explanation of where SFrame's walk ends
# before LLDB's: libc and ld.so carry no SFrame (Debian builds them without
# --gsframe), static glibc code inside a program has no FDEs.
KNOWN_END_LIMITS = {"no-module-sframe", "no-fde"}


_cfi_tables = {}


def cfi_rows(path):
    """The module's own DWARF CFI (.eh_frame and .debug_frame) as binutils
    reads it: [(begin, end, [(loc, {column: rule})])], from readelf
    --debug-dump=frames-interp. An oracle independent of LLDB and sfunwind."""
    if path in _cfi_tables:
        return _cfi_tables[path]
    fdes = []
    try:
        text = subprocess.run(["readelf", "--debug-dump=frames-interp", path], capture_output=True, text=True).stdout
    except OSError:
        text = ""
    cols = None
    for line in text.splitlines():
        m = re.search(r"FDE cie=\S+ pc=([0-9a-f]+)\.\.([0-9a-f]+)", line)
        if m:
            fdes.append((int(m.group(1), 16), int(m.group(2), 16), []))
            cols = None
            continue
        parts = line.split()
        if not parts or not fdes:
            continue
        if parts[0] == "LOC":
            cols = parts[1:]
            continue
        if cols and re.fullmatch(r"[0-9a-f]{8,16}", parts[0]) and len(parts) >= 2:
            fdes[-1][2].append((int(parts[0], 16), dict(zip(cols, parts[1:]))))
    _cfi_tables[path] = fdes
    return fdes


def cfi_cfa_at(path, link_pc):
    """The CFA rule ("rsp+16") of the module's own CFI at a link-time PC, or None."""
    for begin, end, rows in cfi_rows(path):
        if begin <= link_pc < end:
            best = None
            for loc, rules in rows:
                if loc <= link_pc:
                    best = rules.get("CFA")
            return best
    return None


def _sframe_cfa(frame):
    m = re.match(r"CFA=(\S+)", frame.get("row", ""))
    return m.group(1) if m else None


def lldb_plan_error(data, div):
    """When LLDB and SFrame disagree on a frame's CFA and the module's own CFI
    says what SFrame says, LLDB's plan is the one that is wrong: returns the
    explanation, else None."""
    k = div["frame"]
    if div["kind"] == "pc":
        k -= 1
    if div["kind"] not in ("pc", "cfa") or k < 0 or k >= len(data["sframe_frames"]):
        return None
    f = data["sframe_frames"][k]
    if not f.get("module_path") or not os.path.exists(f["module_path"]):
        return None
    want = cfi_cfa_at(f["module_path"], f["link_pc"])
    got = _sframe_cfa(f)
    if want is None or got is None or want != got:
        return None
    return ("frame %d (%s): LLDB's CFA is not the module's own CFI rule %s at link-time pc 0x%x, which SFrame "
            "also gives" % (k, f["function"], want, f["link_pc"]))


def compare_stop(s, res, name, allowed_limits=KNOWN_END_LIMITS, expect_functions=None):
    """Runs `sframe compare --json` at the current stop and checks that every
    frame both unwinders produced agrees and that the first divergence, if
    any, is SFrame's walk ending for an allowed reason. Returns the JSON."""
    data = s.json_cmd("sframe compare --json")
    matches = data["matches"]
    equal = data["equal"]
    div = data["divergence"]
    res.count("stops compared")
    res.count("frames compared", len(matches))
    res.count("frames equal", equal)
    ok = equal == len(matches)
    detail = ""
    # The recovered callee-saved registers against LLDB's (where the
    # analysis covers the ABI, `sframe callee-saved on`): a differing one
    # makes its frame unequal.
    regs = data.get("callee_saved")
    if regs is not None:
        for k in ("compared", "equal", "unknown", "wrong"):
            res.count("callee-saved registers " + k, regs[k])
    if regs is not None and regs["wrong"]:
        ok = False
        detail = "callee-saved registers differ: " + "; ".join(
            "frame %d %s SFrame 0x%x LLDB 0x%x" % (d["frame"], d["register"], d["sframe"], d["lldb"])
            for d in regs["differences"][:4])
    elif not ok:
        detail = div["explanation"] if div else "frames differ"
        lldb_wrong = lldb_plan_error(data, div) if div else None
        if lldb_wrong is not None:
            # Explained, and not by SFrame: count it and say so.
            res.count("differences explained by an LLDB plan that is not the module's CFI")
            print("note %s: %s" % (name, lldb_wrong))
            ok = True
    elif div is not None:
        if div["kind"] == "reference-ended" and "reference-ended" in allowed_limits:
            print("note %s: %s" % (name, div["explanation"]))
        elif div["kind"] != "sframe-ended" or div["limit"] not in allowed_limits:
            ok = False
            detail = "%s/%s: %s" % (div["kind"], div["limit"], div["explanation"])
    if ok and expect_functions is not None:
        names = [f["function"].split("+")[0].split("(")[0] for f in data["sframe_frames"]]
        if names[:len(expect_functions)] != expect_functions:
            ok = False
            detail = "SFrame frames %s, expected %s" % (names, expect_functions)
    res.check(name, ok, detail)
    return data


def main(run):
    args = _parse_args()
    _ensure_lldb_module(args.lldb)
    watchdog.arm(watchdog.seconds_from_env(WATCHDOG_SECONDS), os.path.basename(sys.argv[0]))
    work = args.work
    if work is None:
        import tempfile
        work = tempfile.mkdtemp(prefix="sfunwind-lldb-")
    os.makedirs(work, exist_ok=True)
    # LLDB's debuginfod client keeps what the plugin's responder sends in its
    # own cache, by build-id: one per run, so that no run sees another's.
    os.environ["DEBUGINFOD_CACHE_PATH"] = os.path.join(work, "llvm-debuginfod")
    shutil.rmtree(os.environ["DEBUGINFOD_CACHE_PATH"], ignore_errors=True)
    # No real debuginfod server: the tests must not depend on the network.
    os.environ.pop("DEBUGINFOD_URLS", None)
    res = Results(args.verbose)
    import lldb
    lldb.SBDebugger.Initialize()
    t0 = time.time()
    try:
        run(args, work, res)
    except Exception as e:  # a crash of the test itself is a failure, not a skip
        import traceback
        traceback.print_exc()
        res.check("test script ran to the end", False, repr(e))
    for k in sorted(res.stats):
        print("stat %s: %s" % (k, res.stats[k]))
    print("%d passed, %d failed (%.1f s)" % (res.passed, res.failed, time.time() - t0))
    sys.stdout.flush()
    # LLDB's static destructors can race with its threads at exit; the result
    # is printed, so leave without running them.
    os._exit(1 if res.failed else 0)

# SPDX-License-Identifier: MIT
"""Shared set-up for the GDB test suites (GDB 13 on the host, 18 in the sid
chroot), as tests/lldb/lldb_harness.py is for LLDB's.

Outside GDB (the suites' drivers):
  - parser(): the shared options (--gdb, --loader, --runs, --timeout, ...);
  - select(): the manifest's programs that run here and match
    --writer/--program;
  - Gdb: starts `gdb -nx -q -batch` sessions, with or without the sfunwind
    loader sourced (and the native path enabled), that run a list of
    commands, or one of the in-GDB modules (gdb_checks, gdb_record,
    ppc64_checks) with a configuration, and return what the session wrote;
  - Results and main(run): one line per check, the counters, and a last
    line "N passed, M failed" (exit status 1 when anything failed or
    nothing was checked).
Inside GDB (imported by a session):
  - inside(): the frame of every in-GDB module's main();
  - run_commands(): each command's output, error and time.
"""

import argparse
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
import time
import traceback

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.dirname(os.path.dirname(HERE))
FIXTURES = os.path.join(REPO, "tests", "fixtures")
for _p in (HERE, os.path.join(REPO, "tests", "common")):
    if _p not in sys.path:
        sys.path.insert(0, _p)

from fixtures import manifest, runs_here  # noqa: E402

# What every session sets first (`-batch` implies most of it; said anyway).
PREAMBLE = ("set pagination off", "set confirm off", "set width 0")


# -- outside GDB ---------------------------------------------------------------


def parser(doc, gdb="gdb", runs=True, timeout=600, fixtures=False):
    """The shared options: --gdb, --loader (BUILD/gdb-python/sfunwind.py),
    --runs host|chroot (unless runs=False), --timeout (seconds one GDB
    session may take), -v; with fixtures=True also --writer and --program."""
    ap = argparse.ArgumentParser(description=doc.splitlines()[0], epilog="\n".join(doc.splitlines()[1:]),
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--gdb", default=gdb, help="the GDB to drive (default: %(default)s)")
    ap.add_argument("--loader", required=True, help="BUILD/gdb-python/sfunwind.py")
    if runs:
        ap.add_argument("--runs", choices=("host", "chroot"), default="host",
                        help="the fixtures that run here: host (bookworm) or chroot (sid)")
    ap.add_argument("--timeout", type=int, default=timeout,
                    help="seconds one GDB session may take (default: %(default)s)")
    ap.add_argument("-v", "--verbose", action="store_true")
    if fixtures:
        ap.add_argument("--writer", action="append", help="only these writers (default: all)")
        ap.add_argument("--program", action="append", help="only programs whose path contains this")
    return ap


# A `bt` line: "#1  0x... in f7 () from /path/lib7.so"; frame 0 at the start
# of a line shows no PC.
_BT_FRAME = re.compile(r"^#(\d+)\s+(?:(0x[0-9a-f]+) in )?(\S+)")


def bt_frame(line):
    """(level, pc or None, function) of a `bt` line, or None."""
    m = _BT_FRAME.match(line.strip())
    if m is None:
        return None
    return int(m.group(1)), int(m.group(2), 16) if m.group(2) else None, m.group(3)


def first_backtrace(lines):
    """[(pc or None, function)] of the first backtrace among `lines`: frames
    #0, #1, ... in order (another command's frame line is not taken)."""
    out = []
    for line in lines:
        frame = bt_frame(line)
        if frame and frame[0] == len(out):
            out.append(frame[1:])
    return out


def marked(text):
    """{marker: [lines]}: the lines after each "@@marker" line of a session's
    output (`echo @@marker\\n` in its commands), up to the next marker."""
    out = {}
    current = None
    for line in text.splitlines():
        if line.startswith("@@"):
            current = out.setdefault(line[2:].strip(), [])
        elif current is not None:
            current.append(line)
    return out


def c_compiler(args, results):
    """The C compiler a test builds its program with (--cc, else cc or gcc),
    or None after a failed check saying there is none."""
    cc = getattr(args, "cc", None) or shutil.which("cc") or shutil.which("gcc")
    results.check("a C compiler is at hand", cc is not None, "no cc or gcc on PATH")
    return cc


def listings_problem(result):
    """None when gdb_checks compared the two section listings at its first
    stop and they agreed on every objfile; else what went wrong."""
    listings = result.get("listings")
    if not listings or listings["compared"] == 0:
        return "the section listings were not compared (no objfile in `info files`)"
    if listings["differ"]:
        return "`maint info sections` and `info files` differ: " + "; ".join(listings["differ"][:3])
    return None


def select(args):
    """The manifest's x86-64 programs that run here (args.runs) and match
    --writer and --program."""
    for entry in manifest():
        if not runs_here(entry, args.runs):
            continue
        if args.writer and entry["writer"] not in args.writer:
            continue
        if args.program and not any(p in entry["path"] for p in args.program):
            continue
        yield entry


def fixture(*parts):
    """A path under tests/fixtures."""
    return os.path.join(FIXTURES, *parts)


class Gdb:
    """Starts `gdb -nx -q -batch` sessions. sfunwind: None (plain GDB),
    "python" (the loader sourced) or "native" (and `sframe enable native`)."""

    def __init__(self, gdb, loader, timeout=600):
        self.gdb = gdb
        self.loader = os.path.abspath(loader) if loader else None
        self.timeout = timeout

    def version(self):
        """The first line of `gdb --version`."""
        return subprocess.run([self.gdb, "--version"], capture_output=True, text=True).stdout.splitlines()[0]

    def script(self, commands, sfunwind="python", set_args=None):
        """The command file of a session: the preamble, the loader, `set
        args`, then `commands`."""
        lines = list(PREAMBLE)
        if sfunwind:
            lines.append("source %s" % self.loader)
            if sfunwind == "native":
                lines.append("sframe enable native")
        if set_args is not None:
            lines.append("set args %s" % set_args)
        return "\n".join(lines + list(commands)) + "\n"

    def run(self, commands, args=(), sfunwind="python", set_args=None, timeout=None, stdout=None):
        """Runs one session over `args` (program [core]); returns (the
        finished process, None), or (None, why) when it timed out.
        stdout: subprocess.PIPE (default) or DEVNULL."""
        timeout = timeout or self.timeout
        with tempfile.TemporaryDirectory() as tmp:
            script = os.path.join(tmp, "session.gdb")
            with open(script, "w") as f:
                f.write(self.script(commands, sfunwind, set_args))
            try:
                proc = subprocess.run([self.gdb, "-nx", "-q", "-batch", "-x", script] + list(args),
                                      stdout=subprocess.PIPE if stdout is None else stdout, stderr=subprocess.PIPE,
                                      text=True, timeout=timeout, stdin=subprocess.DEVNULL)
            except subprocess.TimeoutExpired:
                return None, "GDB timed out after %d s" % timeout
        return proc, None

    def run_module(self, module, config, args=(), sfunwind="python", set_args=None, timeout=None, entry="main"):
        """Runs the in-GDB module `module` (gdb_checks, gdb_record,
        ppc64_checks; gdb_harness's run_commands) in one session: sets
        module.CHECK to `config` plus "output" (a JSON file), calls
        module.<entry>(); returns (the JSON it wrote, None) or (None, why
        there is none: no JSON, or the error it records)."""
        with tempfile.TemporaryDirectory() as tmp:
            out = os.path.join(tmp, "result.json")
            config = dict(config, output=out)
            commands = ["python import sys; sys.path.insert(0, %r)" % HERE,
                        "python import json, {0}; {0}.CHECK = json.loads(%r); {0}.{1}()".format(module, entry)
                        % json.dumps(config),
                        "kill"]
            proc, error = self.run(commands, args, sfunwind, set_args, timeout)
            if error is not None:
                return None, error
            if not os.path.exists(out):
                return None, "GDB wrote no result (exit %d): %s" % (proc.returncode, proc.stderr[-2000:])
            with open(out) as f:
                result = json.load(f)
        if result.get("error"):
            return None, "in GDB: " + result["error"]
        return result, None

    def commands(self, program, cmds, set_args=None, sfunwind="python", timeout=None):
        """Runs `cmds` one by one in one session on `program` (run_commands):
        [(command, output, error or None, seconds)], or a string saying why
        there is none (timeout, crash)."""
        result, error = self.run_module("gdb_harness", {"commands": cmds}, [program], sfunwind, set_args,
                                        timeout=timeout, entry="commands_in_gdb")
        return error if error is not None else result["steps"]


class Results:
    """Checks and counters of one suite. A check prints "ok   NAME: DETAIL"
    (the detail only with ok_detail) or "FAIL NAME: DETAIL"."""

    def __init__(self, ok_detail=True):
        self.passed = 0
        self.failed = 0
        self.ok_detail = ok_detail
        self.failures = []
        self.stats = {}

    @property
    def checks(self):
        return self.passed + self.failed

    def check(self, name, ok, detail=""):
        shown = detail != "" and detail is not None and (self.ok_detail or not ok)
        print("%s %s%s" % ("ok  " if ok else "FAIL", name, ": %s" % (detail,) if shown else ""))
        if ok:
            self.passed += 1
        else:
            self.failed += 1
            self.failures.append(name)
        return bool(ok)

    def count(self, key, n=1):
        self.stats[key] = self.stats.get(key, 0) + n


def main(run, ap, ok_detail=True):
    """Parses `ap`, calls run(args, res), prints the last line "N passed, M
    failed (T s)" and exits 1 when a check failed, when nothing was checked,
    or when run() raised (the test's own crash is a failure, not a skip)."""
    args = ap.parse_args()
    res = Results(ok_detail)
    t0 = time.time()
    try:
        run(args, res)
    except Exception as e:  # noqa: BLE001 -- a failure of its own
        traceback.print_exc()
        res.check("test script ran to the end", False, repr(e))
    if res.checks == 0:
        print("FAIL: nothing was tested")
    print("%d passed, %d failed (%.1f s)" % (res.passed, res.failed, time.time() - t0))
    sys.stdout.flush()
    sys.exit(1 if res.failed or res.checks == 0 else 0)


# -- inside GDB ----------------------------------------------------------------

CHECK = {}


def inside(check, body, results, after=None):
    """The frame of an in-GDB module's main(): the preamble, check["setup"]
    commands, body(results); an exception is recorded as results["error"]
    (with its traceback); then after(results), and results is written as
    JSON to check["output"]. `check` is the module's CHECK."""
    import gdb
    results.setdefault("error", None)
    try:
        for cmd in PREAMBLE:
            gdb.execute(cmd)
        for cmd in check.get("setup", []):
            gdb.execute(cmd, to_string=True)
        body(results)
    except Exception as e:  # noqa: BLE001 -- reported to the driver
        results["error"] = "%s\n%s" % (e, traceback.format_exc())
    if after is not None:
        after(results)
    with open(check["output"], "w") as f:
        json.dump(results, f)


def run_commands(results):
    """In GDB: each of CHECK["commands"] as results["steps"]: [command,
    output, error (None when it succeeded), seconds]."""
    import gdb
    steps = results.setdefault("steps", [])
    for cmd in CHECK["commands"]:
        t = time.monotonic()
        try:
            out, err = gdb.execute(cmd, to_string=True), None
        except gdb.error as e:
            out, err = "", str(e)
        steps.append([cmd, out, err, time.monotonic() - t])


def commands_in_gdb():
    inside(CHECK, run_commands, {})

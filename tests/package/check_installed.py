#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""The installed package, used as a new user would: plain `gdb PROG CORE` and
`lldb PROG -c CORE` on the fixtures' -noeh copies (SFrame, no .eh_frame), with
no `source`, no `plugin load` and no option that loads anything. Run by
tests/package/test_package.sh inside a throw-away root where the package is
installed.

For each -noeh fixture, at its stop (`trap`, a core written by gcore):
  ref   the CFI build it was copied from, in GDB without any init file (-nx):
        the reference frames (pc, function, sp)
  gdb   the -noeh copy in plain GDB (the system gdbinit directory loads the
        bridge): frames equal the reference; `sframe status` lists the
        program's SFrame and says SFrame unwound the selected frame
  lldb  the -noeh copy in plain LLDB (the plugin loaded from LLDB's plugin
        folder): `bt` shows the reference's pcs and functions up to main;
        `sframe status` says SFrame unwinds the selected frame and LLDB's
        unwinder has the program's SFrame-derived CFI
  off   the per-user switches: `sframe disable` in ~/.gdbinit, `sframe cover
        --off` in ~/.lldbinit; both `sframe status` answers say it is off
  plain the -noeh copy in GDB without init files (-nx): reported, so that the
        log shows what GDB does without SFrame

Both builds run from paths of the same length with the same environment, so
that their stacks line up and addresses compare exactly.

usage: check_installed.py --gdb GDB --lldb LLDB --work DIR FIXTURE-NOEH...
Exit status: 0 when every check passed."""

import argparse
import os
import re
import shutil
import subprocess
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
FIXTURES = os.path.join(os.path.dirname(HERE), "fixtures", "bin")
MAX_FRAMES = 64
# One frame per line from GDB's frame chain: what GDB's unwinders gave.
WALK = ("python exec(\"f = gdb.newest_frame()\\nn = 0\\n"
        "while f is not None and n < %d:\\n"
        "    print('FRAME %%#x %%s %%#x' %% (f.pc(), f.name(), int(f.read_register('rsp')) & (2**64 - 1)))\\n"
        "    f = f.older(); n += 1\")" % MAX_FRAMES)


class Results:
    def __init__(self):
        self.failed = 0
        self.passed = 0

    def check(self, name, ok, detail=""):
        print("%s  %s%s" % ("ok  " if ok else "FAIL", name, (": " + detail) if detail and not ok else ""))
        if ok:
            self.passed += 1
        else:
            self.failed += 1
        sys.stdout.flush()
        return ok


def run(cmd, env, timeout=300):
    p = subprocess.run(cmd, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
                       timeout=timeout, stdin=subprocess.DEVNULL)
    return p.stdout


def frames_of(text):
    frames = []
    for line in text.splitlines():
        m = re.match(r"FRAME (0x[0-9a-f]+) (\S+) (0x[0-9a-f]+)$", line.strip())
        if m:
            frames.append((int(m.group(1), 16), m.group(2), int(m.group(3), 16)))
    return frames


def lldb_frames(text):
    """(pc, function) per `bt` line: `frame #1: 0x... recurse`level_3 + 13 ...`."""
    frames = []
    for line in text.splitlines():
        m = re.search(r"frame #\d+: (0x[0-9a-f]+) [^`\s]+`([A-Za-z_][\w.]*)", line)
        if m:
            frames.append((int(m.group(1), 16), m.group(2)))
    return frames


def stage(fixture, work):
    """Copies the -noeh fixture and its CFI build to work/noeh/NAME and
    work/cfi_/NAME (paths of one length); returns both program paths."""
    rel = os.path.relpath(fixture, FIXTURES)
    plt = os.path.basename(fixture) == "plt"
    src_noeh = os.path.dirname(fixture) if plt else fixture
    src_cfi = re.sub(r"-noeh$", "", src_noeh)
    out = []
    for tag, src in (("noeh", src_noeh), ("cfi_", src_cfi)):
        dest = os.path.join(work, tag, rel.replace("/", "_"))
        if os.path.isdir(src):
            shutil.copytree(src, dest)
            out.append(os.path.join(dest, "plt"))
        else:
            os.makedirs(os.path.dirname(dest), exist_ok=True)
            shutil.copy2(src, dest)
            out.append(dest)
    return out


def make_core(gdb, program, env):
    core = program + ".core"
    text = run([gdb, "-nx", "-batch", "-ex", "run", "-ex", "gcore " + core, "--args", program, "trap"], env)
    if not os.path.exists(core):
        raise RuntimeError("no core for %s:\n%s" % (program, text))
    return core


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--gdb", default="gdb")
    ap.add_argument("--lldb", required=True)
    ap.add_argument("--work", required=True)
    ap.add_argument("fixtures", nargs="+", help="-noeh fixture paths under tests/fixtures/bin")
    a = ap.parse_args()
    r = Results()
    if os.path.exists(a.work):
        shutil.rmtree(a.work)
    home = os.path.join(a.work, "home")
    home_off = os.path.join(a.work, "home-off")
    for h in (home, home_off):
        os.makedirs(h)
    with open(os.path.join(home_off, ".gdbinit"), "w") as f:
        f.write("sframe disable\n")
    with open(os.path.join(home_off, ".lldbinit"), "w") as f:
        # Off gives back LLDB's own module loading, which in LLDB 21 to 23
        # can deadlock on a core's modules without any plugin (llvm-project
        # PRs 166480 and 213094; seen here about once in 20 runs of lldb-23
        # -c): this user switches it off as the README says. It comes after
        # `sframe cover --off`, which restores the setting the plugin found.
        # `-e`: LLDB 19 has no such setting.
        f.write("sframe cover --off\nsettings set -e target.parallel-module-load false\n")

    def env_for(h):
        return {"PATH": "/usr/sbin:/usr/bin:/sbin:/bin", "HOME": h, "LANG": "C.UTF-8", "TERM": "dumb"}

    env = env_for(home)
    for fixture in a.fixtures:
        name = fixture
        noeh, cfi = stage(os.path.join(FIXTURES, fixture), a.work)
        try:
            core_noeh = make_core(a.gdb, noeh, env)
            core_cfi = make_core(a.gdb, cfi, env)
        except (RuntimeError, subprocess.TimeoutExpired) as e:
            r.check("%s: cores" % name, False, str(e))
            continue

        ref = frames_of(run([a.gdb, "-nx", "-batch", "-ex", WALK, cfi, core_cfi], env))
        if not r.check("%s: reference (CFI build, GDB -nx) has frames" % name, len(ref) >= 4,
                       "%d frames" % len(ref)):
            continue

        # GDB as a user runs it: the system gdbinit directory loads the bridge.
        text = run([a.gdb, "-batch", "-ex", "sframe status", "-ex", WALK, "-ex", "sframe status", noeh, core_noeh],
                   env)
        got = frames_of(text)
        r.check("%s: gdb frames equal the CFI build's (%d)" % (name, len(ref)), got == ref,
                "got %s\nwant %s\n%s" % (got, ref, text))
        status = text.split("FRAME", 1)[0]
        r.check("%s: gdb sframe status lists the program's SFrame" % name,
                re.search(re.escape(noeh) + r": SFrame v\d", status) is not None, text)
        after = text.rsplit("FRAME", 1)[-1]
        m = re.search(r"python path: (\d+) frames unwound", after)
        r.check("%s: gdb unwound frames with SFrame" % name, m is not None and int(m.group(1)) > 0, after)
        r.check("%s: gdb sframe status: SFrame in use for the selected frame" % name,
                re.search(r"selected frame #0 \(.*\): SFrame in use", after) is not None, after)

        # Off for one user: `sframe disable` in ~/.gdbinit.
        text = run([a.gdb, "-batch", "-ex", WALK, "-ex", "sframe status", noeh, core_noeh], env_for(home_off))
        r.check("%s: gdb off by ~/.gdbinit" % name,
                "active path: off" in text and re.search(r"python path: 0 frames unwound", text) is not None, text)

        plain = frames_of(run([a.gdb, "-nx", "-batch", "-ex", WALK, noeh, core_noeh], env))
        print("info  %s: GDB without sfunwind: %d frames, %s the CFI build's" % (
            name, len(plain), "equal to" if plain == ref else "not"))

        # LLDB as a user runs it: the plugin comes from LLDB's plugin folder.
        text = run([a.lldb, "-b", "-o", "sframe status", "-o", "bt", noeh, "-c", core_noeh], env)
        # Up to main, where GDB's backtrace (the reference) ends. Past it,
        # _start (crt1.o, built without SFrame) has no unwind rows in the
        # -noeh copy, and LLDB repeats it.
        got = lldb_frames(text)
        mains = [i for i, (_, fn) in enumerate(got) if fn == "main"]
        got = got[:mains[0] + 1] if mains else got
        want = [(pc, fn) for pc, fn, _ in ref]
        r.check("%s: lldb bt equals the CFI build's (%d frames)" % (name, len(want)), got == want,
                "got %s\nwant %s\n%s" % (got, want, text))
        program = re.search(r"^%s \(%s\)\n  SFrame: v\d.*\n.*\n  LLDB unwind plans: DWARF CFI from " % (
            re.escape(os.path.basename(noeh)), re.escape(noeh)), text, re.M)
        r.check("%s: lldb sframe status: LLDB unwinds the program with its SFrame" % name,
                program is not None and "error:" not in text, text)
        r.check("%s: lldb sframe status: SFrame in use for the selected frame" % name,
                re.search(r"^selected frame #0 \(0x[0-9a-f]+ in fixture_leaf\): SFrame in use: %s, CFA=" % (
                    re.escape(os.path.basename(noeh))), text, re.M) is not None, text)

        text = run([a.lldb, "-b", "-o", "sframe status", noeh, "-c", core_noeh], env_for(home_off))
        # Off: LLDB is given no SFrame-derived debug file for the program.
        covered = re.search(r"^%s \(%s\)\n  SFrame: v\d.*\n.*\n  LLDB unwind plans: DWARF CFI from " % (
            re.escape(os.path.basename(noeh)), re.escape(noeh)), text, re.M)
        r.check("%s: lldb off by ~/.lldbinit" % name,
                re.search(r"^debug files: .* \(off\)", text, re.M) is not None and covered is None
                and "error:" not in text, text)
    print("%d passed, %d failed" % (r.passed, r.failed))
    return 1 if r.failed else 0


if __name__ == "__main__":
    sys.exit(main())

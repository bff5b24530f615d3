#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""SFrame alone: the fixtures' `-noeh` copies (.eh_frame, .eh_frame_hdr and
.debug_frame removed) under GDB, against the CFI build they were copied from.

For each -noeh program that runs here, at its stop:
  A  the CFI build under plain GDB: the reference backtrace;
  B  the -noeh copy under plain GDB: reported (GDB has only its heuristics);
  C  the -noeh copy with sfunwind (Python path): must equal A frame for frame
     (pc, function, sp, fp, CFA); then, in upper frames, `info frame` (the
     CFA), `up`, and `finish` out of frame 1 (must stop where A's frame 2 is);
  N  the same with the native path (JIT reader): must equal A;
  D  a core file written at C's stop (gcore), opened with sfunwind: must
     equal A; and under plain GDB (reported).
With a -g build (made here: a -noeh copy of recurse-O2-nofp-g), a local of
an upper frame (level_2's stack array, located through the frame base
DW_OP_call_frame_cfa) must print as in the CFI build; and again with that
copy's DWARF moved to a separate debug file (.gnu_debuglink), where the
program must be registered once (not from the debug file's NOBITS .sframe).

Both builds run from paths of the same length, so that their stacks (argv,
environment, auxv strings) line up and addresses compare exactly.

usage: run_noeh_tests.py --gdb GDB --loader BUILD/gdb-python/sfunwind.py
                         --runs host|chroot [--writer W ...]
Exit status: 0 when every check passed."""

import os
import shutil
import subprocess
import tempfile

import gdb_harness as H

FIXTURES = H.FIXTURES
FIELDS = ("pc", "function", "sp", "fp", "cfa")


def kind_of(path):
    name = os.path.basename(os.path.dirname(path)) if path.endswith("/plt") else os.path.basename(path)
    return name.split("-")[0]


def settings(kind):
    """(run arguments, setup commands, frame limit, finish level) per program.
    `finish` leaves a frame that returns normally: in cxx_exceptions,
    Worker::step throws (std::terminate without CFI); in noreturn,
    fatal_path never returns."""
    setup = []
    if kind == "sighandler":
        setup = ["handle SIGUSR1 nostop noprint pass"]
    limit = 10020 if kind == "deep10000" else 64
    finish = 0 if kind in ("cxx_exceptions", "noreturn") else 1
    return "trap", setup, limit, finish


def record(g, args, config, sfunwind=None):
    """gdb_record.py's result on `args` (program [core]) with `config`;
    sfunwind: None (plain GDB), "python" or "native". {"error": why} when
    GDB gave none."""
    result, error = g.run_module("gdb_record", config, args, sfunwind)
    return result if error is None else {"error": error}


def differ(ref, got, prefix=False):
    """Index and field of the first difference, or None; with `prefix`,
    only over the frames both walks have (a walk cut at a frame limit)."""
    n = min(len(ref), len(got)) if prefix else max(len(ref), len(got))
    for i in range(n):
        if i >= len(ref) or i >= len(got):
            return i, "frame count (%d vs %d)" % (len(ref), len(got))
        for f in FIELDS:
            if ref[i][f] != got[i][f]:
                return i, f
    return None


def describe(frames, i):
    if i >= len(frames):
        return "(none)"
    f = frames[i]
    return "#%d %s pc 0x%x" % (i, f["function"] or "??", f["pc"])


def stage(program_dir, names):
    """Copies files into program_dir (same basenames)."""
    os.makedirs(program_dir, exist_ok=True)
    for src in names:
        shutil.copy2(src, os.path.join(program_dir, os.path.basename(src)))


def _no_row(frame):
    error = frame.get("row_error", "")
    return "no module with SFrame" in error or "no FDE" in error or "covers" in error


def limit_for(frames, index, fields):
    """The SFrame limit that explains a difference at frame `index`, or None.
    Frames GDB unwinds itself (no SFrame row for them) lost their CFI with
    the program's (static glibc code in a -noeh copy of a static build):
    GDB then falls back to other unwinders of its own, whose frame id (the
    CFA) differs from the DWARF one. And a function the assembler wrote no
    FDE for cannot be unwound from SFrame at all."""
    if index < len(frames) and fields == ["cfa"] and _no_row(frames[index]):
        f = frames[index]
        return "%s has no SFrame and no CFI left: GDB's fallback frame id" % (f["function"] or hex(f["pc"]))
    if 0 < index <= len(frames) and _no_row(frames[index - 1]):
        f = frames[index - 1]
        if f["function"] and not f["function"].startswith("__"):
            return "no SFrame FDE for %s (the assembler skipped it: %s)" % (f["function"], f.get("row_error"))
    return None


def comparable(frames):
    """The frames with run-dependent values masked: a frame pointer equal to
    frame 0's is "FP0". Frame 0's registers are the live ones, which need
    not match between two runs (in sighandler, rbp holds the pid); frames
    that keep that FP compare by keeping it."""
    if not frames:
        return frames
    fp0 = frames[0]["fp"]
    return [dict(f, fp="FP0" if f["fp"] == fp0 else f["fp"]) for f in frames]


def check_frames(ref, got, rows_from=None):
    """(ok, detail, limits) comparing two walks frame by frame; `rows_from`
    is the walk that carries `sframe row` results (got, or an earlier one).
    Past a function without an SFrame FDE nothing is compared: GDB's
    heuristics take over there, in every configuration without CFI."""
    rows = rows_from or got
    ref, got = comparable(ref), comparable(got)
    limits = []
    for i in range(max(len(ref), len(got))):
        if i >= len(ref) or i >= len(got):
            return False, "frame count %d vs %d" % (len(ref), len(got)), limits
        fields = [f for f in FIELDS if ref[i][f] != got[i][f]]
        if not fields:
            continue
        limit = limit_for(rows, i, fields)
        if limit is None:
            return False, "from %s: %s" % (describe(got, i), ", ".join(fields)), limits
        limits.append("#%d: %s" % (i, limit))
        if limit.startswith("no SFrame FDE"):
            return True, "%d frames equal up to %s" % (i, describe(got, i - 1)), limits
    return True, "%d frames" % len(got), limits


def test_program(g, entry, original, rep, tmp):
    kind = kind_of(entry["path"])
    run_args, setup, limit, finish_level = settings(kind)
    name = entry["path"]
    noeh = os.path.join(FIXTURES, entry["path"])
    cfi = os.path.join(FIXTURES, original)
    extra_noeh, extra_cfi = [], []
    if kind == "plt":
        extra_noeh = [os.path.join(os.path.dirname(noeh), "libfixture_plt.so")]
        extra_cfi = [os.path.join(os.path.dirname(cfi), "libfixture_plt.so")]
    base = os.path.basename(noeh)
    cdir, ndir = os.path.join(tmp, "c"), os.path.join(tmp, "n")
    shutil.rmtree(cdir, ignore_errors=True)
    shutil.rmtree(ndir, ignore_errors=True)
    stage(cdir, [cfi] + extra_cfi)
    stage(ndir, [noeh] + extra_noeh)
    os.rename(os.path.join(cdir, os.path.basename(cfi)), os.path.join(cdir, base))
    cprog, nprog = os.path.join(cdir, base), os.path.join(ndir, base)
    core = os.path.join(tmp, "core")
    if os.path.exists(core):
        os.remove(core)

    rec = {"run": run_args, "setup": setup, "limit": limit}
    a = record(g, [cprog], rec)
    if a.get("error") or not a.get("frames"):
        rep.check("%s: CFI reference" % name, False, a.get("error") or "no frames")
        return
    ref = a["frames"]
    # Plain GDB is only reported: its first wrong frame comes early, and its
    # heuristics can wander for thousands of frames past it.
    b = record(g, [nprog], dict(rec, limit=min(limit, 64)))
    plain = differ(comparable(ref), comparable(b.get("frames") or []), prefix=len(ref) > 64)
    print("     %s: CFI build %d frames (to %s); plain GDB on the -noeh copy: %s" % (
        name, len(ref), ref[-1]["function"],
        "equal" if plain is None else "wrong from %s (%s)" % (describe(b.get("frames") or [], plain[0]), plain[1])))

    c = record(g, [nprog], dict(rec, core=core, upper=min(2 if kind == "sighandler" else 3, len(ref) - 2),
                               finish=finish_level, rows=True),
                 sfunwind="python")
    if c.get("error"):
        rep.check("%s: sfunwind (python)" % name, False, c["error"])
        return
    ok, detail, limits = check_frames(ref, c["frames"])
    rep.check("%s: bt with sfunwind (python) = CFI build" % name, ok,
              detail + ("; SFrame limits: " + "; ".join(limits) if limits else ""))
    # An upper frame whose CFA is SFrame's (in sighandler, frame 3 is the
    # signal trampoline, GDB's own).
    lvl = min(2 if kind == "sighandler" else 3, len(ref) - 2)
    # Frames past a function SFrame has no FDE for (gas 2.40 and 2.44 write
    # none for DRAP functions) are not SFrame's to unwind: check upper frames
    # only below that limit, and say so.
    uncovered = min((int(l[1:l.index(":")]) for l in limits if "no SFrame FDE" in l), default=len(ref))
    if lvl > uncovered - 2:
        print("     %s: upper-frame checks limited to frames below #%d (%s)" %
              (name, uncovered, "; ".join(limits)))
        lvl = uncovered - 2
    if ok and lvl >= 1:
        up = c.get("upper") or {}
        rep.check("%s: info frame / up in frame %d" % (name, lvl),
                  up.get("info_frame_cfa") == ref[lvl]["cfa"] and up.get("up_level") == lvl + 1 and
                  up.get("up_pc") == ref[lvl + 1]["pc"],
                  "CFA 0x%x, up -> #%s %s" % (up.get("info_frame_cfa") or 0, up.get("up_level"),
                                               up.get("up_function")))
        fin = c.get("finish") or {}
        want = ref[finish_level + 1]
        if finish_level + 1 >= uncovered:
            print("     %s: finish out of frame %d not checked: frame %d is past SFrame's coverage" %
                  (name, finish_level, finish_level + 1))
        else:
            rep.check("%s: finish out of frame %d" % (name, finish_level),
                      fin.get("pc") == want["pc"] and fin.get("sp") == want["sp"],
                      "stopped in %s at 0x%x" % (fin.get("function"), fin.get("pc") or 0) if "pc" in fin
                      else fin.get("error", "?"))

    n = record(g, [nprog], rec, sfunwind="native")
    okn, detailn, _ = check_frames(ref, n.get("frames") or [], c["frames"])
    rep.check("%s: bt with sfunwind (native) = CFI build" % name, not n.get("error") and okn,
              n.get("error") or detailn)

    if os.path.exists(core):
        core_rec = {"run": None, "limit": limit}
        dc = record(g, [nprog, core], core_rec, sfunwind="python")
        okc, detailc, _ = check_frames(ref, dc.get("frames") or [], c["frames"])
        rep.check("%s: core file with sfunwind = CFI build" % name, not dc.get("error") and okc,
                  dc.get("error") or detailc)
        dp = record(g, [nprog, core], dict(core_rec, limit=min(limit, 64)))
        plain_core = differ(comparable(ref), comparable(dp.get("frames") or []), prefix=len(ref) > 64)
        print("     %s: core file under plain GDB: %s" % (
            name, "equal" if plain_core is None else "wrong from %s (%s)" % (
                describe(dp.get("frames") or [], plain_core[0]), plain_core[1])))
    else:
        rep.check("%s: gcore wrote a core file" % name, False)


def test_variable(g, rep, tmp, runs):
    """frame variable in an upper frame of a -g build without CFI."""
    src = os.path.join(FIXTURES, "bin", "gas-2.40", "recurse-O2-nofp-g")
    if runs not in ("host", "chroot") or not os.path.exists(src):
        return
    cdir, ndir = os.path.join(tmp, "gc"), os.path.join(tmp, "gn")
    stage(cdir, [src])
    os.makedirs(ndir, exist_ok=True)
    nprog = os.path.join(ndir, os.path.basename(src))
    subprocess.run(["objcopy", "--remove-section", ".eh_frame", "--remove-section", ".eh_frame_hdr",
                    "--remove-section", ".debug_frame", src, nprog], check=True)
    cprog = os.path.join(cdir, os.path.basename(src))
    rec = {"run": "trap", "limit": 64, "variable": ["level_2", "buf[5] * 100 + buf[63]"]}
    a = record(g, [cprog], rec)
    b = record(g, [nprog], rec)
    c = record(g, [nprog], rec, sfunwind="python")
    want = (a.get("variable") or {}).get("value")
    got = (c.get("variable") or {}).get("value")
    print("     recurse-O2-nofp-g without CFI, level_2's buf[5] * 100 + buf[63]: CFI build %s, plain GDB %s, "
          "sfunwind %s" % (want, (b.get("variable") or {}).get("value", (b.get("variable") or {}).get("error")),
                           got))
    rep.check("frame variable in an upper frame (-g, no CFI)", want == "563" and got == want,
              "level_2 at #%s: %s" % ((c.get("variable") or {}).get("level"), got))
    test_separate_debug(g, rep, tmp, nprog, rec, want)


def test_separate_debug(g, rep, tmp, nprog, rec, want):
    """The same program with its DWARF moved to a separate debug file (found
    by .gnu_debuglink): GDB then has two objfiles for it, and the debug
    file's .sframe is a NOBITS placeholder. The module must be registered
    once, from the program, and the upper-frame local must still print."""
    sdir = os.path.join(tmp, "gs")
    os.makedirs(sdir, exist_ok=True)
    sprog = os.path.join(sdir, os.path.basename(nprog))
    debug = sprog + ".debug"
    # (objcopy warns that the -noeh copy's notes no longer fit a segment: harmless here.)
    subprocess.run(["objcopy", "--only-keep-debug", nprog, debug], check=True, capture_output=True)
    subprocess.run(["objcopy", "--strip-debug", "--add-gnu-debuglink=%s" % debug, nprog, sprog], check=True,
                   capture_output=True)
    d = record(g, [sprog], rec, sfunwind="python")
    got = (d.get("variable") or {}).get("value")
    rep.check("separate debug file: frame variable in an upper frame", got == want and not d.get("error"),
              d.get("error") or "got %s, want %s" % (got, want))
    steps = g.commands(sprog, ["run", "info sharedlibrary", "python print('OBJFILES', [o.filename for o in "
                               "gdb.objfiles()])", "sframe status", "kill"])
    stdout = steps if isinstance(steps, str) else "".join(out for _, out, _, _ in steps)
    objfiles = [l for l in stdout.splitlines() if l.startswith("OBJFILES")]
    status = [l for l in stdout.splitlines() if l.strip().startswith(sprog)]
    has_debug_objfile = bool(objfiles) and debug in objfiles[0]
    print("     separate debug file: GDB objfiles include %s: %s; sframe status lines for the program: %d" % (
        os.path.basename(debug), has_debug_objfile, len(status)))
    rep.check("separate debug file: loaded by GDB, program registered once", has_debug_objfile and
              len(status) == 1 and "SFrame" in status[0], "\n".join(status) or stdout[-800:])


def run(args, res):
    g = H.Gdb(args.gdb, args.loader, args.timeout)
    with tempfile.TemporaryDirectory() as tmp:
        for entry in H.select(args):
            if not (entry["path"].endswith("-noeh") or "-noeh/" in entry["path"]):
                continue
            note = entry["notes"]
            if not note.startswith("copy of "):
                continue
            original = "bin/" + note[len("copy of "):].split(";")[0].strip()
            test_program(g, entry, original, res, tmp)
        if not args.writer or "gas-2.40" in args.writer:
            test_variable(g, res, tmp, args.runs)


if __name__ == "__main__":
    H.main(run, H.parser(__doc__, fixtures=True))

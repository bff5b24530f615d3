#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""End-to-end tests of `sfunwind check` and `sfunwind convert` on the
committed fixtures (tests/fixtures/manifest.tsv and tests/fixtures/large).

check: every fixture of every writer agrees with its CFI at every compared
breakpoint, apart from differences the report names (GNU ld's .plt.got row);
PLT stubs included, SFrame v1's PC-mask FDE too (GNU ld 2.40's .plt, read
per 16-byte entry); the JSON and text reports, --fail-on and the exit
statuses; progress stays off stderr when it is not a terminal.

convert: a fixture's .sframe is removed with objcopy, made again from its
CFI, added back with `objcopy --add-section`, and then found by ElfFile
(check, lookup, validate) and used by `sfunwind bt` to unwind the live
program, glibc included for a static build.

usage: test_check_cli.py --sfunwind PATH [--work DIR] [-v]
Exits non-zero on failure; the last line is "N passed, M failed".
"""

import argparse
import collections
import json
import os
import shutil
import subprocess
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.dirname(os.path.dirname(HERE))
FIXTURES = os.path.join(REPO, "tests", "fixtures")

GNU_LD_PLT_GOT = "GNU ld .plt.got"


class Runner:
    def __init__(self, sfunwind, work, verbose):
        self.sfunwind = sfunwind
        self.work = work
        self.verbose = verbose
        self.passed = 0
        self.failed = 0

    def run(self, args, check_rc=None):
        p = subprocess.run([self.sfunwind] + args, stdin=subprocess.DEVNULL, capture_output=True, text=True,
                           timeout=600)
        if self.verbose:
            print("$ sfunwind " + " ".join(args) + f"  -> {p.returncode}")
        return p

    def expect(self, cond, what):
        if cond:
            self.passed += 1
            if self.verbose:
                print("ok   " + what)
        else:
            self.failed += 1
            print("FAIL " + what)


def manifest():
    out = []
    with open(os.path.join(FIXTURES, "manifest.tsv")) as f:
        for line in f:
            if line.startswith("#") or not line.strip():
                continue
            cols = line.rstrip("\n").split("\t")
            out.append({"path": cols[0], "writer": cols[1], "version": int(cols[2]), "arch": cols[3],
                        "runs": cols[6]})
    return out


def test_every_fixture(r):
    entries = manifest()
    paths = [os.path.join(FIXTURES, e["path"]) for e in entries]
    p = r.run(["check", "--json", "--details"] + paths)
    r.expect(p.returncode == 1, f"check --json on {len(paths)} fixtures exits 1 (GNU ld .plt.got): {p.returncode}")
    r.expect(p.stderr == "", "nothing on stderr when it is not a terminal: " + p.stderr[:200])
    doc = json.loads(p.stdout)
    r.expect(doc["fail_on"] == ["mismatch"], "default --fail-on is mismatch")
    files = {f["file"]: f for f in doc["files"]}
    per_writer = collections.defaultdict(collections.Counter)
    for e, path in zip(entries, paths):
        f = files[path]
        name = e["path"]
        if "error" in f:
            r.expect(False, f"{name}: {f['error']}")
            continue
        both = f["summary"]["both"]
        w = per_writer[e["writer"]]
        w["files"] += 1
        w["functions"] += both["functions"]
        w["breakpoints"] += both["breakpoints"]
        w["agreeing"] += both["breakpoints_agreeing"]
        w["plt_breakpoints"] += f["summary"]["plt"]["breakpoints"]
        w["plt_agreeing"] += f["summary"]["plt"]["breakpoints_agreeing"]
        if both["breakpoints"] != both["breakpoints_agreeing"]:
            r.expect(False, f"{name}: functions both cover disagree")
        names = collections.Counter()
        for fn in f["functions"]:
            for x in fn.get("findings", []):
                names[(fn["section"], x["known"].split(":")[0] if x["known"] else None)] += 1
        w["plt_got_findings"] += names[(".plt.got", GNU_LD_PLT_GOT)]
        noeh = "-noeh" in name
        dynamic_x86 = e["arch"] == "x86-64" and "static" not in name
        # ld 2.40 wrote no SFrame FDE for .plt.got, and its v1 PC-mask FDE
        # for .plt agrees at every entry: no finding.
        if e["writer"] in ("gas-2.44", "gas-2.47") and dynamic_x86 and not noeh:
            expected = collections.Counter({(".plt.got", GNU_LD_PLT_GOT): 1})
        else:
            expected = collections.Counter()
        if names != expected:
            r.expect(False, f"{name}: findings {dict(names)}")
        if noeh and f["summary"]["sframe-only"]["functions"] == 0:
            r.expect(False, f"{name}: no CFI, yet no sframe-only function")
        if f["problems"] or f["unreachable_rows"]:
            r.expect(False, f"{name}: problems {f['problems'][:2]}, {f['unreachable_rows']} unreachable rows")
    r.expect(len(per_writer) == 7, f"seven writers: {sorted(per_writer)}")
    for writer, w in sorted(per_writer.items()):
        pct = 100.0 * w["agreeing"] / max(1, w["breakpoints"])
        plt = (f", PLT {100.0 * w['plt_agreeing'] / w['plt_breakpoints']:.2f}% of {w['plt_breakpoints']}"
               if w["plt_breakpoints"] else "")
        print(f"  {writer:17} {w['files']:2} files, {w['functions']:4} functions both cover, "
              f"{w['breakpoints']:5} breakpoints, {pct:.2f}% agree{plt}")
        r.expect(w["breakpoints"] > 90 and w["agreeing"] == w["breakpoints"],
                 f"{writer}: 100% agreement where both cover")
        r.expect(w["plt_breakpoints"] - w["plt_agreeing"] == w["plt_got_findings"],
                 f"{writer}: PLT breakpoints disagree only at GNU ld's .plt.got "
                 f"({w['plt_breakpoints'] - w['plt_agreeing']} vs {w['plt_got_findings']})")
    # Every dynamic x86-64 fixture has a PLT; ld 2.40's is a v1 PC-mask FDE
    # whose entries after the first are compared too.
    plt_writers = {wr for wr, w in per_writer.items() if w["plt_breakpoints"]}
    r.expect(plt_writers == {"gas-2.40", "gas-2.44", "gas-2.47"}, f"PLTs compared for {sorted(plt_writers)}")
    r.expect(per_writer["gas-2.40"]["plt_breakpoints"] >= 200, "gas-2.40: every PLT entry compared "
             f"({per_writer['gas-2.40']['plt_breakpoints']} breakpoints)")


def test_text_and_exit_status(r):
    plt = os.path.join(FIXTURES, "bin/gas-2.47/plt-O2-nofp/plt")
    p = r.run(["check", plt])
    r.expect(p.returncode == 1, f"gas-2.47 plt: exit 1 on the .plt.got mismatch ({p.returncode})")
    r.expect("mismatch: .plt.got [0x1070, 0x1078) at [0x1070, 0x1078): CFA: CFI rsp+8, SFrame rsp+16" in p.stdout,
             "the .plt.got mismatch is printed")
    r.expect("known: GNU ld .plt.got:" in p.stdout, "and named")
    r.expect("result: 1 of 30 compared breakpoints disagree (96.67% agree); FAIL" in p.stdout,
             "result line: " + p.stdout.strip().splitlines()[-1])
    r.expect(r.run(["check", "--fail-on=none", plt]).returncode == 0, "--fail-on=none exits 0")
    clang = os.path.join(FIXTURES, "bin/clang-23/recurse-O2-nofp")
    r.expect(r.run(["check", clang]).returncode == 0, "clang-23 recurse: exit 0")
    r.expect(r.run(["check", "--fail-on=cfi-only", clang]).returncode == 1, "--fail-on=cfi-only: _start -> 1")
    noeh = os.path.join(FIXTURES, "bin/clang-23/recurse-O2-nofp-noeh")
    r.expect(r.run(["check", noeh]).returncode == 0, "no CFI, default --fail-on: exit 0")
    r.expect(r.run(["check", "--fail-on=sframe-only", noeh]).returncode == 1, "--fail-on=sframe-only -> 1")
    r.expect(r.run(["check", "--fail-on=bogus", clang]).returncode == 2, "bad --fail-on -> 2")
    r.expect(r.run(["check"]).returncode == 2, "no FILE -> 2")
    missing = r.run(["check", os.path.join(r.work, "does-not-exist")])
    r.expect(missing.returncode == 2 and "error:" in missing.stdout, "unreadable file -> 2 with its error")
    details = r.run(["check", "--details", os.path.join(FIXTURES, "bin/gas-2.40/realign-O2-nofp")])
    r.expect("cfi-only: uses_drap [" in details.stdout and ": drap: at " in details.stdout,
             "--details names the DRAP function gas 2.40 skipped")
    r.expect("cfi-only: .plt.got [0x1070, 0x1078): plt:" in details.stdout, "--details: ld 2.40 wrote no .plt.got FDE")
    timed = r.run(["check", "--time", clang])
    r.expect(" breakpoints/s, " in timed.stdout, "--time prints the throughput")
    # Progress goes to stderr only, never changes stdout.
    large = os.path.join(FIXTURES, "large/sqlite3-gas-2.47")
    quiet = r.run(["check", "--fail-on=none", large])
    # Bytes: text mode would turn the progress line's \r into \n.
    loud = subprocess.run([r.sfunwind, "check", "--fail-on=none", "--progress", large], capture_output=True,
                          timeout=600)
    r.expect(quiet.stderr == "" and quiet.stdout == loud.stdout.decode(), "--progress leaves stdout alone")
    r.expect(b"\n" not in loud.stderr and all(part.startswith(b"sfunwind check: ") or part in (b"", b"\033[K")
                                              for part in loud.stderr.split(b"\r")),
             "progress: one line redrawn with \\r, then erased: " + repr(loud.stderr[:80]))
    j = json.loads(r.run(["check", "--json", "--fail-on=none", large]).stdout)["files"][0]
    r.expect(j["summary"]["both"]["functions"] == 2932 and j["disagreements"] == 3,
             f"sqlite3-gas-2.47: 2932 functions both cover, 3 .plt.got breakpoints ({j['disagreements']})")


ASM_S = r"""
	.text
	.globl	asm_func
	.type	asm_func, @function
asm_func:
	.cfi_startproc
	pushq	%rbx
	.cfi_def_cfa_offset 16
	.cfi_offset %rbx, -16
	leal	1(%rdi), %eax
	popq	%rbx
	.cfi_def_cfa_offset 8
	ret
	.cfi_endproc
	.size	asm_func, .-asm_func
	.section	.note.GNU-stack,"",@progbits
"""

MAIN_C = "int asm_func(int);\nint main(int c, char **v) { (void)v; return asm_func(c); }\n"


def test_assembly_reason(r):
    """A function from an assembly file assembled without --gsframe: check
    tells it is hand-written assembly from DWARF (gcc -g on a .s file makes a
    DW_LANG_Mips_Assembler compile unit)."""
    d = os.path.join(r.work, "asm")
    os.makedirs(d, exist_ok=True)
    with open(os.path.join(d, "f.s"), "w") as f:
        f.write(ASM_S)
    with open(os.path.join(d, "main.c"), "w") as f:
        f.write(MAIN_C)
    steps = [["gcc", "-O2", "-g", "-Wa,--gsframe", "-c", "main.c"], ["gcc", "-g", "-c", "f.s"],
             ["gcc", "-g", "main.o", "f.o", "-o", "prog"]]
    for s in steps:
        p = subprocess.run(s, cwd=d, capture_output=True, text=True)
        if p.returncode != 0:
            r.expect(False, " ".join(s) + ": " + p.stderr)
            return
    j = json.loads(r.run(["check", "--json", "--details", os.path.join(d, "prog")]).stdout)["files"][0]
    fn = [f for f in j["functions"] if f["name"] == "asm_func"]
    r.expect(len(fn) == 1 and fn[0]["class"] == "cfi-only" and fn[0]["reason"] == "assembly"
             and "compile unit f.s" in fn[0]["detail"], f"asm_func: cfi-only, assembly: {fn}")


def objcopy(args):
    p = subprocess.run(["objcopy"] + args, capture_output=True, text=True)
    return p.returncode == 0, p.stderr


def test_convert(r):
    if shutil.which("objcopy") is None:
        r.expect(False, "objcopy is needed (binutils)")
        return
    os.makedirs(r.work, exist_ok=True)
    cases = [
        # (fixture, runs on this host, expected frames, stop mode)
        ("bin/gas-2.40/recurse-O2-nofp", ["fixture_leaf", "recurse", "level_1", "main"], "trap"),
        ("bin/clang-23/recurse-O2-nofp-static", ["raise", "abort", "fixture_leaf", "main", "_start"], "abort"),
    ]
    for rel, frames, mode in cases:
        src = os.path.join(FIXTURES, rel)
        base = os.path.join(r.work, os.path.basename(rel))
        bare, section, rebuilt = base + ".nosframe", base + ".sframe", base + ".converted"
        ok, err = objcopy(["--remove-section", ".sframe", src, bare])
        r.expect(ok, f"{rel}: objcopy --remove-section: {err}")
        p = r.run(["convert", "-v", src, "-o", section])
        r.expect(p.returncode == 0 and "wrote" in p.stdout, f"{rel}: convert: {p.stdout}{p.stderr}")
        ok, err = objcopy(["--add-section", ".sframe=" + section, "--set-section-flags", ".sframe=alloc,readonly",
                           bare, rebuilt])
        r.expect(ok, f"{rel}: objcopy --add-section: {err}")
        c = json.loads(r.run(["check", "--json", rebuilt]).stdout)["files"][0]
        r.expect(c["sframe"].startswith("SFrame v3") and c["disagreements"] == 0
                 and c["summary"]["cfi-only"]["functions"] == 0 and c["summary"]["both"]["functions"] > 5,
                 f"{rel}: converted section agrees with the CFI everywhere ({c['sframe']}, "
                 f"{c['disagreements']} disagreements)")
        v = r.run(["validate", rebuilt])
        r.expect(v.returncode == 0, f"{rel}: validate: {v.stdout.strip().splitlines()[-1]}")
        nm = subprocess.run(["nm", src], capture_output=True, text=True).stdout
        leaf = [l.split()[0] for l in nm.splitlines() if l.endswith(" fixture_leaf")]
        lk = r.run(["lookup", rebuilt, "0x" + leaf[0]]) if leaf else None
        r.expect(lk is not None and lk.returncode == 0 and "<fixture_leaf+0x0>" in lk.stdout,
                 f"{rel}: lookup finds fixture_leaf in the added section")
        bt = subprocess.run([r.sfunwind, "bt", "--", rebuilt, mode], capture_output=True, text=True, timeout=120)
        names = [f" in {name}+" for name in frames]
        r.expect(all(n in bt.stdout for n in names) and "1 passed, 0 failed" in bt.stdout,
                 f"{rel}: bt unwinds with the converted section: {bt.stdout[-400:]}")
    # The address option changes the stored starts.
    src = os.path.join(FIXTURES, "bin/gas-2.47/recurse-O2-nofp")
    out = os.path.join(r.work, "vaddr.sframe")
    r.expect(r.run(["convert", "--vaddr", "0x5000", src, "-o", out]).returncode == 0, "convert --vaddr")
    at = r.run(["lookup", "--raw", "--base", "0x5000", out, "0x1090"])
    r.expect(at.returncode == 0 and "FDE" in at.stdout, "read back at --vaddr, the starts are right")
    r.expect(r.run(["convert", src]).returncode == 2, "convert without -o -> 2")


def test_callee_saved(r):
    """check --callee-saved: the JSON report of the CLI, its exit statuses,
    and its text on a file with a known answer (the unit tests check every
    fixture's counts through the library)."""
    files = [os.path.join(FIXTURES, "bin", w, "recurse-O2-nofp") for w in ("gas-2.40", "gas-2.47", "clang-23")]
    p = r.run(["check", "--callee-saved", "--json"] + files)
    r.expect(p.returncode == 0, f"--callee-saved on three builds: exit 0 ({p.returncode}) {p.stderr}")
    reports = json.loads(p.stdout)["files"] if p.returncode == 0 else []
    r.expect(len(reports) == 3, "one report per file")
    for rep in reports:
        name = rep.get("file", "?")
        r.expect(rep.get("wrong") == 0 and rep.get("wrong_pairs") == [], f"{name}: no wrong rule")
        r.expect(rep.get("compared", 0) > 500, f"{name}: compared {rep.get('compared')}")
        r.expect(rep["equal"] + rep["equivalent"] + rep["unknown"] + rep["wrong"] == rep["compared"],
                 f"{name}: the classes add up")
        r.expect(rep.get("coverage_percent", 0) >= 85.0, f"{name}: coverage {rep.get('coverage_percent')}")
    text = r.run(["check", "--callee-saved", files[1]])
    r.expect("wrong                0" in text.stdout and "coverage (equal + equivalent)" in text.stdout,
             "text report: " + text.stdout[:200])
    # The two other architectures the CLI's Capstone decodes (it links only
    # x86, AArch64 and SystemZ: core/src/callee_saved/capstone_architectures.cpp).
    for abi, what in (("aarch64", "x19-x28, d8-d15"), ("s390x", "r6-r13, f8-f15")):
        other = r.run(["check", "--callee-saved", "--json",
                       os.path.join(FIXTURES, f"bin/gas-2.47-{abi}/recurse-O2-nofp-static")])
        rep = json.loads(other.stdout)["files"][0] if other.returncode == 0 else {}
        r.expect(other.returncode == 0 and rep.get("abi") == abi and rep.get("wrong") == 0
                 and rep.get("compared", 0) > 2000 and rep.get("coverage_percent", 0) >= 99.0,
                 f"{abi} ({what}): exit {other.returncode}, {rep.get('compared')} compared, "
                 f"{rep.get('coverage_percent')}% covered, {rep.get('wrong')} wrong {other.stderr.strip()}")
    noeh = r.run(["check", "--callee-saved", os.path.join(FIXTURES, "bin/clang-23/recurse-O2-nofp-noeh")])
    r.expect(noeh.returncode == 2 and "CFI" in noeh.stderr, f"no CFI: exit 2 ({noeh.returncode}): {noeh.stderr.strip()}")


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--sfunwind", required=True)
    ap.add_argument("--work", default=os.path.join(REPO, "build", "cli-check"))
    ap.add_argument("-v", "--verbose", action="store_true")
    a = ap.parse_args()
    os.makedirs(a.work, exist_ok=True)
    r = Runner(os.path.abspath(a.sfunwind), a.work, a.verbose)
    test_every_fixture(r)
    test_text_and_exit_status(r)
    test_assembly_reason(r)
    test_convert(r)
    test_callee_saved(r)
    print(f"{r.passed} passed, {r.failed} failed")
    return 0 if r.failed == 0 else 1


if __name__ == "__main__":
    sys.exit(main())

#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""End-to-end tests of `sfunwind bt`.

Builds small C programs with the host gcc and GNU as's SFrame writer
(-Wa,--gsframe: SFrame v1 with Debian 12's gas 2.40), stops them deep in a
call chain (live under ptrace, attached with -p, and from GDB core dumps of
the same stop) and checks the SFrame backtraces: the function names of every
frame, the CFA/SP chain, how the walk ended, and the frame-by-frame agreement
with libdwfl's DWARF CFI backtrace (--compare-cfi), including each frame's
rbx, r12-r15 as the walk recovered them (a program that keeps known values
in them checks the values themselves).

Debian 12's glibc has no .sframe, so every walk leaves the SFrame-covered
code when it reaches libc (__libc_start_call_main, start_thread,
__restore_rt): the tests expect that end and compare the frames SFrame
produced, and check that CFI continues past them.

usage: test_bt.py [--sfunwind PATH] [--work DIR] [-v]
Exits non-zero on failure; the last line is "N passed, M failed".
"""

import argparse
import json
import os
import re
import shutil
import signal
import struct
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.dirname(os.path.dirname(HERE))

# ----------------------------------------------------------------- fixtures

COMMON_H = r"""
#include <signal.h>
#include <stdlib.h>
#include <string.h>
/* A frame that must appear in the backtrace: not inlined, cloned or turned
   into a sibling call. */
#define NOINLINE __attribute__((noipa, used))
#define KEEP_FRAME() __asm__ volatile("" ::: "memory")
/* NULL, but the compiler cannot prove it: the store stays a store. */
static volatile int *volatile null_ptr;
"""

CHAIN_C = COMMON_H + r"""
/* chain [segv|trap|abort|exit] [DEPTH]: main -> (rec x DEPTH) -> f1 -> f2 ->
   f3 -> f4 -> leaf, which stops the program as asked. */
static const char *mode = "segv";

NOINLINE void leaf(int x) {
  if (strcmp(mode, "segv") == 0) *null_ptr = x;
  else if (strcmp(mode, "trap") == 0) __asm__ volatile("int3" ::: "memory");
  else if (strcmp(mode, "abort") == 0) abort();
  KEEP_FRAME();
}
NOINLINE void f4(int x) { leaf(x + 1); KEEP_FRAME(); }
NOINLINE void f3(int x) {
  volatile char buf[200]; /* a larger frame: CFA = rsp + 200-ish */
  buf[x & 127] = (char)x;
  f4(x + buf[3]);
  KEEP_FRAME();
}
NOINLINE void f2(int x) { f3(x + 1); KEEP_FRAME(); }
NOINLINE void f1(int x) { f2(x + 1); KEEP_FRAME(); }
NOINLINE void rec(int n) {
  if (n > 0) rec(n - 1);
  else f1(n);
  KEEP_FRAME();
}
int main(int argc, char **argv) {
  if (argc > 1) mode = argv[1];
  rec(argc > 2 ? atoi(argv[2]) : 0);
  return 0;
}
"""

PLT_LIB_C = COMMON_H + r"""
/* Called from the program through the PLT; calls back into the program. */
NOINLINE void lib_inner(void (*cb)(int), int x) { cb(x + 1); KEEP_FRAME(); }
NOINLINE void lib_outer(void (*cb)(int), int x) { lib_inner(cb, x + 1); KEEP_FRAME(); }
"""

PLT_MAIN_C = COMMON_H + r"""
void lib_outer(void (*cb)(int), int x);
NOINLINE void crash_cb(int x) { *null_ptr = x; KEEP_FRAME(); }
NOINLINE void p1(int x) { lib_outer(crash_cb, x + 1); KEEP_FRAME(); }
int main(int argc, char **argv) { (void)argv; p1(argc); return 0; }
"""

SIG_C = COMMON_H + r"""
/* SIGUSR1's handler faults: the SIGUSR1 must reach the program (it is not a
   stop signal), the SIGSEGV in the handler stops it. */
NOINLINE void h2(int x) { *null_ptr = x; KEEP_FRAME(); }
NOINLINE void h1(int x) { h2(x + 1); KEEP_FRAME(); }
NOINLINE void handler(int sig) { h1(sig); KEEP_FRAME(); }
NOINLINE void s2(void) { raise(SIGUSR1); KEEP_FRAME(); }
NOINLINE void s1(void) { s2(); KEEP_FRAME(); }
int main(void) {
  struct sigaction sa;
  memset(&sa, 0, sizeof sa);
  sa.sa_handler = handler;
  sigaction(SIGUSR1, &sa, 0);
  s1();
  return 0;
}
"""

THREADS_C = COMMON_H + r"""
#include <pthread.h>
#include <stdatomic.h>
/* Two workers spin inside their own code (so they are interrupted at an
   arbitrary instruction of w_spin) while main faults. */
static atomic_int started;
static volatile int stop;
NOINLINE void w_spin(int x) {
  atomic_fetch_add(&started, 1);
  while (!stop) { x++; KEEP_FRAME(); }
}
NOINLINE void w_mid(int x) { w_spin(x + 1); KEEP_FRAME(); }
NOINLINE void *w_outer(void *arg) { w_mid((int)(long)arg); KEEP_FRAME(); return 0; }
NOINLINE void m2(int x) { *null_ptr = x; KEEP_FRAME(); }
NOINLINE void m1(int x) { m2(x + 1); KEEP_FRAME(); }
int main(void) {
  pthread_t t[2];
  for (long i = 0; i < 2; i++) pthread_create(&t[i], 0, w_outer, (void *)i);
  while (atomic_load(&started) < 2) {}
  m1(3);
  return 0;
}
"""

SPIN_C = COMMON_H + r"""
/* Never stops by itself: for -p and --timeout. */
static volatile int stop;
static volatile unsigned long counter;
NOINLINE void a3(int x) { while (!stop) { counter += (unsigned)x; KEEP_FRAME(); } }
NOINLINE void a2(int x) { a3(x + 1); KEEP_FRAME(); }
NOINLINE void a1(int x) { a2(x + 1); KEEP_FRAME(); }
int main(int argc, char **argv) { (void)argv; a1(argc); return 0; }
"""

REGS_C = COMMON_H + r"""
/* regs: main -> g3 -> g2 -> g1 -> rleaf, which faults. Each g<k> keeps five
   values read from seed[] live across its call, which the psABI puts in
   callee-saved registers: in each frame, rbx, r12-r15 (and rbp) hold that
   frame's own seeds, and its callee saved them on the stack. */
volatile long seed[16];
NOINLINE long rleaf(long x) { *null_ptr = (int)x; KEEP_FRAME(); return x; }
#define KEEPER(name, callee, k)                                     \
  NOINLINE long name(long x) {                                      \
    long a = seed[5 * k], b = seed[5 * k + 1], c = seed[5 * k + 2], \
         d = seed[5 * k + 3], e = seed[5 * k + 4];                  \
    long r = callee(x + 1);                                         \
    KEEP_FRAME();                                                   \
    return r ^ a ^ (b << 1) ^ (c << 2) ^ (d << 3) ^ (e << 4);       \
  }
KEEPER(g1, rleaf, 0)
KEEPER(g2, g1, 1)
KEEPER(g3, g2, 2)
int main(int argc, char **argv) {
  (void)argv;
  for (int i = 0; i < 16; i++) seed[i] = SEED + i;
  return (int)g3(argc);
}
"""
SEED = 0x5eed00

VLA_C = COMMON_H + r"""
/* main -> outer -> mid -> leaf, which faults. mid keeps a variable-length
   array: built with -fstack-clash-protection, it probes the stack a page at
   a time in a loop and lowers the SP by a 32-bit size, so the SP is not
   known at its calls. mid writes rbx and r12 (saved in its prologue) before
   that; outer's values of them are in mid's save slots. */
NOINLINE long opaque(long v) { __asm__ volatile("" : "+r"(v)); return v; }
NOINLINE int leaf(const char *p, int n) {
  *null_ptr = p[n / 2];
  return p[n / 3];
}
NOINLINE int mid(int n, long k) {
  char buf[n];
  memset(buf, (int)k, (size_t)n);
  long a = opaque(k * 3), b = opaque(k * 5), c = opaque(k * 7);
  int r = leaf(buf, n);
  return r + (int)(a + b + c);
}
NOINLINE int outer(int n) {
  long x = opaque(n * 11L), y = opaque(n * 13L), z = opaque(n * 17L);
  int r = mid(n * 100, n + 1);
  return r + (int)(x ^ y ^ z);
}
int main(int argc, char **argv) {
  (void)argv;
  int r = outer(argc + 40);
  KEEP_FRAME();
  return r;
}
"""

NOFP = ["-O2", "-fomit-frame-pointer", "-Wa,--gsframe"]
FP = ["-O2", "-fno-omit-frame-pointer", "-mno-omit-leaf-frame-pointer", "-Wa,--gsframe"]


# ------------------------------------------------------------------ harness

class Results:
    def __init__(self, verbose):
        self.passed = 0
        self.failed = 0
        self.verbose = verbose
        self.walks = 0      # agreement totals over every walk expected to agree
        self.compared = 0
        self.equal = 0
        # Callee-saved registers (rbx, r12-r15) against CFI, over the same walks.
        self.regs_compared = 0
        self.regs_equal = 0
        self.regs_unknown = 0
        self.regs_from_slot = 0  # equal, and not frame 0's value: read from a save slot

    def check(self, name, ok, detail=""):
        if ok:
            self.passed += 1
            if self.verbose:
                print(f"PASS {name}")
        else:
            self.failed += 1
            print(f"FAIL {name}" + (f": {detail}" if detail else ""))
        return ok


def run(cmd, timeout=120, cwd=None):
    p = subprocess.run(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, timeout=timeout, cwd=cwd)
    return p.returncode, p.stdout.decode(errors="replace"), p.stderr.decode(errors="replace")


def must(cmd, cwd=None):
    rc, out, err = run(cmd, cwd=cwd)
    if rc != 0:
        sys.exit(f"setup failed: {' '.join(cmd)}\n{out}{err}")
    return out


def elf_section(path, name):
    """(file offset, size) of a section of a little-endian ELF64 file."""
    with open(path, "rb") as f:
        data = f.read()
    if data[:4] != b"\x7fELF" or data[4] != 2 or data[5] != 1:
        raise ValueError(f"{path}: not a little-endian ELF64 file")
    shoff, = struct.unpack_from("<Q", data, 0x28)
    shentsize, shnum, shstrndx = struct.unpack_from("<HHH", data, 0x3a)
    def shdr(i):
        return struct.unpack_from("<IIQQQQIIQQ", data, shoff + i * shentsize)
    strtab = shdr(shstrndx)
    for i in range(shnum):
        h = shdr(i)
        start = strtab[4] + h[0]
        sec_name = data[start:data.index(b"\0", start)].decode()
        if sec_name == name:
            return h[4], h[5]
    raise ValueError(f"{path}: no section {name}")


class Fixtures:
    def __init__(self, work):
        self.work = work
        os.makedirs(work, exist_ok=True)

    def path(self, name):
        return os.path.join(self.work, name)

    def write(self, name, text):
        with open(self.path(name), "w") as f:
            f.write(text)
        return self.path(name)

    def build(self):
        w = self.path
        must(["gcc"] + NOFP + ["-o", w("chain"), self.write("chain.c", CHAIN_C)])
        must(["gcc"] + NOFP + ["-no-pie", "-o", w("chain-nopie"), w("chain.c")])
        must(["gcc"] + FP + ["-o", w("chain-fp"), w("chain.c")])
        # Only SFrame left: CFI has nothing to unwind this program with.
        must(["objcopy", "--remove-section", ".eh_frame", "--remove-section", ".eh_frame_hdr",
              w("chain"), w("chain-noeh")])
        # A wrong SFrame section: sfh_cfa_fixed_ra_offset (byte 6 of the
        # header, SFrame v1/v2 section 2.1) changed from -8 to -16, so every
        # return address is read from the wrong slot.
        shutil.copy(w("chain"), w("chain-badra"))
        off, _ = elf_section(w("chain-badra"), ".sframe")
        with open(w("chain-badra"), "r+b") as f:
            f.seek(off + 6)
            if f.read(1) != b"\xf8":
                sys.exit("setup failed: chain's SFrame header has no RA offset of -8")
            f.seek(off + 6)
            f.write(b"\xf0")
        os.makedirs(w("plt"), exist_ok=True)
        must(["gcc"] + NOFP + ["-fPIC", "-shared", "-o", w("plt/libbtlib.so"),
                               self.write("plt_lib.c", PLT_LIB_C)])
        must(["gcc"] + NOFP + ["-o", w("plt/plt"), self.write("plt_main.c", PLT_MAIN_C),
                               "-L" + w("plt"), "-lbtlib", "-Wl,-rpath,$ORIGIN"])
        must(["gcc"] + NOFP + ["-o", w("sig"), self.write("sig.c", SIG_C)])
        must(["gcc", "-O2", "-static", "-o", w("sig-entry.cfi"), os.path.join(REPO, "tests", "common", "sig_entry.c")])
        must(["gcc"] + NOFP + ["-pthread", "-o", w("threads"), self.write("threads.c", THREADS_C)])
        must(["gcc"] + NOFP + ["-o", w("spin"), self.write("spin.c", SPIN_C)])
        must(["gcc"] + NOFP + [f"-DSEED={SEED:#x}", "-o", w("regs"), self.write("regs.c", REGS_C)])
        must(["gcc"] + FP + ["-fstack-clash-protection", "-o", w("vla"), self.write("vla.c", VLA_C)])
        for exe in ["chain", "chain-nopie", "chain-fp", "chain-noeh", "plt/plt", "plt/libbtlib.so", "sig",
                    "threads", "spin", "regs", "vla"]:
            out = must(["readelf", "-S", "-W", w(exe)])
            if ".sframe" not in out:
                sys.exit(f"setup failed: {exe} has no .sframe section (does gas support --gsframe?)")


class Bt:
    def __init__(self, sfunwind):
        self.sfunwind = sfunwind

    def run(self, args, timeout=120):
        return run([self.sfunwind, "bt"] + args, timeout=timeout)

    def json(self, args, timeout=120):
        rc, out, err = self.run(["--json"] + args, timeout)
        try:
            doc = json.loads(out)
        except json.JSONDecodeError:
            doc = None
        return rc, doc, err


def names(thread):
    return [f["symbol"] for f in thread["sframe"]["frames"]]


def modules(thread):
    return [f["module"] for f in thread["sframe"]["frames"]]


def cfi_names(thread):
    return [f["symbol"] for f in thread["cfi"]["frames"]]


def check_cfa_chain(r, name, thread):
    """On x86-64 a caller's SP is its callee's CFA (SFrame v2 section 3.1.2:
    the CFA is the SP before the call)."""
    frames = thread["sframe"]["frames"]
    bad = [i for i in range(len(frames) - 1) if frames[i + 1]["sp"] != frames[i]["cfa"]]
    r.check(f"{name}: each caller's sp is its callee's CFA", not bad, f"frames {bad}")


def check_agreement(r, name, thread, expect_beyond=True):
    c = thread.get("comparison")
    if not r.check(f"{name}: compared with CFI", c is not None, "no comparison in the output"):
        return
    n = len(thread["sframe"]["frames"])
    r.walks += 1
    r.compared += c["compared"]
    r.equal += c["equal"]
    r.check(f"{name}: CFI agrees on all {n} SFrame frames",
            c["agree"] and c["compared"] == n and c["equal"] == n,
            f"compared {c['compared']}, equal {c['equal']}, first difference {c['first_difference']}")
    if expect_beyond:
        r.check(f"{name}: CFI continues past SFrame's last frame", c["cfi_beyond"] >= 1,
                f"cfi_beyond {c['cfi_beyond']}")
    # Every compared frame had its CFA compared except SFrame's last.
    cfa_checked = sum(1 for f in c["frames"] if f["cfa"] is True)
    r.check(f"{name}: CFA compared on {n - 1} frames", cfa_checked == n - 1, f"{cfa_checked}")
    check_callee_saved(r, name, thread)


CALLEE_SAVED = ["rbx", "r12", "r13", "r14", "r15"]


def check_callee_saved(r, name, thread):
    """The recovered rbx, r12-r15 of every SFrame frame against libdwfl's for
    the same frame: no value differs. Frame 0's are the thread's registers
    in both; past it they come from each callee's code and stack."""
    c = thread["comparison"].get("callee_saved")
    if not r.check(f"{name}: callee-saved registers compared", c is not None, "no callee_saved comparison"):
        return
    r.check(f"{name}: no callee-saved register differs from CFI", c["differ"] == 0 and not c["differences"]
            and c["compared"] == c["equal"] + c["unknown"], str(c))
    sf = thread["sframe"]["frames"]
    cf = thread["cfi"]["frames"]
    r.check(f"{name}: frame 0's callee-saved registers are CFI's", sf[0].get("callee_saved") is not None
            and sf[0]["callee_saved"] == cf[0].get("callee_saved")
            and all(sf[0]["callee_saved"][k] is not None for k in CALLEE_SAVED), f"{sf[0]} {cf[0]}")
    # The counts are the frames' values, recounted.
    compared = equal = unknown = from_slot = 0
    for i in range(1, min(len(sf), len(cf))):
        ours, theirs = sf[i].get("callee_saved"), cf[i].get("callee_saved")
        if ours is None or sf[i]["pc"] != cf[i]["pc"]:
            continue
        for k in CALLEE_SAVED:
            if theirs[k] is None:
                continue
            compared += 1
            if ours[k] is None:
                unknown += 1
            elif ours[k] == theirs[k]:
                equal += 1
                if ours[k] != sf[0]["callee_saved"][k]:
                    from_slot += 1
    r.check(f"{name}: callee-saved counts match the frames", (compared, equal, unknown) ==
            (c["compared"], c["equal"], c["unknown"]), f"{(compared, equal, unknown)} vs {c}")
    r.regs_compared += c["compared"]
    r.regs_equal += c["equal"]
    r.regs_unknown += c["unknown"]
    r.regs_from_slot += from_slot


def ends_in_libc(r, name, thread):
    """The walk's last frame is the first one in libc (no .sframe). Its name
    (__libc_start_call_main, start_thread, __restore_rt) comes from
    libc6-dbg when installed; either way it must be CFI's name for that
    frame, since both come from the same symbol tables."""
    end = thread["sframe"]["end"]
    frames = thread["sframe"]["frames"]
    last = frames[-1]
    r.check(f"{name}: SFrame walk leaves the covered code in libc",
            end["kind"] == "left-coverage" and last["module"] == "libc.so.6",
            f"{end} last frame {last['symbol']} in {last['module']}")
    if thread.get("cfi") and len(thread["cfi"]["frames"]) >= len(frames):
        cfi_last = thread["cfi"]["frames"][len(frames) - 1]
        r.check(f"{name}: libc frame named as CFI names it", last["symbol"] == cfi_last["symbol"]
                and cfi_last["module"] == "libc.so.6", f"{last['symbol']} vs {cfi_last['symbol']}")


# -------------------------------------------------------------------- tests

# The program's own frames; then one frame in libc ends every walk.
CHAIN_NAMES = ["leaf", "f4", "f3", "f2", "f1", "rec", "main"]


def own_names(thread):
    """The names of the frames before the last (libc) one."""
    return names(thread)[:-1]


def test_chain_variants(r, bt, fx):
    for exe in ["chain", "chain-nopie", "chain-fp"]:
        rc, doc, err = bt.json(["--compare-cfi", "--", fx.path(exe), "segv"])
        if not r.check(f"{exe}: exit 0 and JSON", rc == 0 and doc is not None, f"rc {rc} {err}"):
            continue
        t = doc["threads"][0]
        r.check(f"{exe}: stopped by SIGSEGV at address 0", t["signal"] == "SIGSEGV"
                and "address 0x0" in t.get("stop_detail", ""), str(t.get("stop_detail")))
        r.check(f"{exe}: frames", own_names(t) == CHAIN_NAMES, str(names(t)))
        r.check(f"{exe}: modules", modules(t) == [os.path.basename(exe)] * 7 + ["libc.so.6"], str(modules(t)))
        ends_in_libc(r, exe, t)
        check_cfa_chain(r, exe, t)
        check_agreement(r, exe, t)
        r.check(f"{exe}: CFI ends at _start", cfi_names(t)[-1] == "_start", str(cfi_names(t)))
        rows = [f["row"] for f in t["sframe"]["frames"] if f["row"]]
        if exe == "chain-fp":
            # Frame-pointer code: caller frames are unwound with CFA=rbp+16
            # and the caller's rbp restored from [CFA-16].
            r.check(f"{exe}: rbp-based rows", any(x.startswith("CFA=rbp+16 RA=[CFA-8] FP=[CFA-16]") for x in rows),
                    str(rows))
        else:
            r.check(f"{exe}: rsp-based rows", all(x.startswith("CFA=rsp+") for x in rows), str(rows))


def test_text_output(r, bt, fx):
    rc, out, err = bt.run(["--compare-cfi", "-v", "--", fx.path("chain"), "segv"])
    r.check("text: exit 0", rc == 0, f"rc {rc} {err}")
    frame0 = re.compile(r"^#0   0x[0-9a-f]{16} in leaf\+0x[0-9a-f]+ \(chain\)  cfa=0x[0-9a-f]+ sp=0x[0-9a-f]+ "
                        r"fp=0x[0-9a-f]+  \[row: CFA=rsp\+\d+ RA=\[CFA-8\] FP=\S+\]$", re.M)
    r.check("text: frame line format", frame0.search(out) is not None, out[:800])
    r.check("text: CFI line beside each frame", len(re.findall(r"^CFI  0x.*agrees \(pc sp", out, re.M)) == 8, out)
    r.check("text: end of the walk", "SFrame walk ended at #7: left the SFrame-covered modules: libc.so.6" in out,
            out)
    r.check("text: agreement count", "Compared 8 frames with CFI: 8 agree" in out, out)
    m = re.search(r"Compared (\d+) callee-saved register values with CFI \(frames #1 on\): (\d+) equal, "
                  r"(\d+) unknown to SFrame, 0 differ$", out, re.M)
    r.check("text: callee-saved register count, none differ", m is not None and int(m[1]) > 0
            and int(m[1]) == int(m[2]) + int(m[3]), out[-600:])
    r.check("text: no registers without --registers", re.search(r"^    rbx=", out, re.M) is None, out)
    r.check("text: -v lists modules without SFrame",
            re.search(r"libc\.so\.6  no SFrame: no SFrame section", out) is not None and
            re.search(r"/chain  SFrame v[123] \(\.sframe, \d+ FDEs\)", out) is not None, out)
    r.check("text: summary line", out.rstrip().endswith("1 thread: 1 passed, 0 failed"), out[-200:])

    rc, out, err = bt.run(["--registers", "--", fx.path("chain"), "segv"])
    lines = re.findall(r"^    rbx=(0x[0-9a-f]+|<not saved>) r12=\S+ r13=\S+ r14=\S+ r15=\S+$", out, re.M)
    # Frame 0's are the thread's registers: all known.
    r.check("text: --registers prints every frame's rbx, r12-r15", rc == 0 and len(lines) == 8
            and lines[0] != "<not saved>", out)
    rc, out, err = bt.run(["--registers", "--no-callee-saved", "--", fx.path("chain"), "segv"])
    r.check("usage: --registers with --no-callee-saved", rc == 2 and "--no-callee-saved" in err, err)


REGS_NAMES = ["rleaf", "g1", "g2", "g3", "main"]


def check_seeds(r, name, thread):
    """Each g<k> frame's own rbx, r12-r15 and rbp are its five seeds (regs.c):
    g1's are still in the registers, g2's and g3's were read from the save
    slots of g1 and g2. The compiler chooses which register holds which."""
    frames = thread["sframe"]["frames"]
    for i, k in ((1, 0), (2, 1), (3, 2)):
        f = frames[i]
        want = {hex(SEED + 5 * k + j) for j in range(5)}
        regs = f.get("callee_saved") or {}
        got = {regs.get(x) for x in CALLEE_SAVED}
        r.check(f"{name}: {f['symbol']}'s rbx, r12-r15 and rbp are its seeds", len(want & got) >= 4
                and want <= got | {f["fp"]}, f"{regs} fp {f['fp']}, want {sorted(want)}")


def test_registers(r, bt, fx):
    rc, doc, err = bt.json(["--compare-cfi", "--", fx.path("regs")])
    if not r.check("regs: exit 0", rc == 0 and doc is not None, f"rc {rc} {err}"):
        return
    t = doc["threads"][0]
    r.check("regs: frames", own_names(t) == REGS_NAMES, str(names(t)))
    check_seeds(r, "regs", t)
    check_agreement(r, "regs", t)
    # g2's and g3's seeds were read from the slots where g1 and g2 saved
    # them: libdwfl read the same slots from CFI's rules.
    sf, cf = t["sframe"]["frames"], t["cfi"]["frames"]
    seeds = {hex(SEED + j) for j in range(15)}
    from_slots = [(i, x) for i in (2, 3) for x in CALLEE_SAVED
                  if sf[i]["callee_saved"][x] in seeds and cf[i]["callee_saved"][x] == sf[i]["callee_saved"][x]]
    r.check("regs: seeds read from save slots, equal to CFI's", len(from_slots) >= 6,
            f"{from_slots} {[f.get('callee_saved') for f in cf[:4]]}")


def test_stack_probes(r, bt, fx):
    """Registers saved before a variable-length array that probes the stack:
    the calls after it, made with the SP not known, write below the save
    slots, which still hold outer's rbx and r12."""
    rc, doc, err = bt.json(["--compare-cfi", "--", fx.path("vla")])
    if not r.check("vla: exit 0", rc == 0 and doc is not None, f"rc {rc} {err}"):
        return
    t = doc["threads"][0]
    r.check("vla: frames", own_names(t) == ["leaf", "mid", "outer", "main"], str(names(t)))
    check_agreement(r, "vla", t)
    check_callee_saved(r, "vla", t)
    sf, cf = t["sframe"]["frames"], t["cfi"]["frames"]
    outer = [i for i, f in enumerate(sf) if f["symbol"] == "outer"]
    if not r.check("vla: outer is a frame", len(outer) == 1, str(names(t))):
        return
    i = outer[0]
    # The registers mid wrote: their outer values come from its slots.
    written = [x for x in CALLEE_SAVED if cf[i]["callee_saved"][x] != cf[i - 1]["callee_saved"][x]]
    r.check("vla: outer's registers that mid changed are recovered, equal to CFI's", len(written) >= 2
            and all(sf[i]["callee_saved"][x] == cf[i]["callee_saved"][x] for x in written),
            f"{written}: {sf[i]['callee_saved']} against {cf[i]['callee_saved']}")


def test_no_callee_saved(r, bt, fx):
    """--no-callee-saved: no register recovered, none compared, and the
    frames themselves unchanged."""
    rc, on, err = bt.json(["--compare-cfi", "--", fx.path("chain"), "segv"])
    rc2, off, err2 = bt.json(["--compare-cfi", "--no-callee-saved", "--", fx.path("chain"), "segv"])
    if not r.check("no-callee-saved: exit 0", rc == 0 and rc2 == 0 and on is not None and off is not None,
                   f"rc {rc} {rc2} {err} {err2}"):
        return
    t_on, t_off = on["threads"][0], off["threads"][0]
    r.check("callee-saved: every SFrame frame has its registers in JSON",
            all(set(f.get("callee_saved") or {}) == set(CALLEE_SAVED) for f in t_on["sframe"]["frames"]),
            str(t_on["sframe"]["frames"]))
    r.check("no-callee-saved: no frame has registers", all("callee_saved" not in f for f in t_off["sframe"]["frames"])
            and all("callee_saved" not in f for f in t_off["cfi"]["frames"]), str(t_off["sframe"]["frames"][:2]))
    r.check("no-callee-saved: nothing compared", t_off["comparison"]["callee_saved"] is None
            and t_off["comparison"]["agree"], str(t_off["comparison"]))
    strip = lambda fs: [{k: v for k, v in f.items() if k not in ("callee_saved", "pc", "sp", "fp", "cfa")}
                        for f in fs]
    r.check("no-callee-saved: the same frames", strip(t_on["sframe"]["frames"]) == strip(t_off["sframe"]["frames"]),
            "")


def test_stop_kinds(r, bt, fx):
    rc, doc, err = bt.json(["--compare-cfi", "--", fx.path("chain"), "trap"])
    if r.check("trap: exit 0", rc == 0 and doc is not None, f"rc {rc} {err}"):
        t = doc["threads"][0]
        r.check("trap: SIGTRAP in leaf", t["signal"] == "SIGTRAP" and own_names(t) == CHAIN_NAMES, str(names(t)))
        check_agreement(r, "trap", t)

    # abort() raises SIGABRT inside libc: frame 0 is already outside SFrame.
    rc, doc, err = bt.json(["--compare-cfi", "--", fx.path("chain"), "abort"])
    if r.check("abort: exit 0", rc == 0 and doc is not None, f"rc {rc} {err}"):
        t = doc["threads"][0]
        r.check("abort: SIGABRT, one frame in libc", t["signal"] == "SIGABRT" and len(t["sframe"]["frames"]) == 1
                and modules(t) == ["libc.so.6"], str(names(t)))
        ends_in_libc(r, "abort", t)
        check_agreement(r, "abort", t)
        # GCC moves the abort() call into a cold clone, leaf.cold.
        r.check("abort: CFI passes through abort to leaf", "abort" in cfi_names(t)
                and any(n in ("leaf", "leaf.cold") for n in cfi_names(t)), str(cfi_names(t)))
    rc, _, _ = bt.json(["--require-complete", "--", fx.path("chain"), "abort"])
    r.check("abort: --require-complete makes leaving SFrame a failure", rc == 1, f"rc {rc}")

    rc, out, err = bt.run(["--", fx.path("chain"), "exit"])
    r.check("exit: a program that never stops is reported, exit 1",
            rc == 1 and "exited with status 0 without a stop signal" in err, f"rc {rc} {err}")


def test_deep(r, bt, fx):
    rc, doc, err = bt.json(["--compare-cfi", "--max-frames", "3000", "--", fx.path("chain"), "segv", "1000"])
    if r.check("deep: exit 0", rc == 0 and doc is not None, f"rc {rc} {err}"):
        t = doc["threads"][0]
        n = names(t)
        r.check("deep: 1001 rec frames", n[:5] == ["leaf", "f4", "f3", "f2", "f1"] and n.count("rec") == 1001
                and n[-2] == "main" and len(n) == 1008, f"{len(n)} frames")
        check_agreement(r, "deep", t)
    rc, doc, err = bt.json(["--max-frames", "4", "--", fx.path("chain"), "segv"])
    if r.check("max-frames: exit 1", rc == 1 and doc is not None, f"rc {rc} {err}"):
        t = doc["threads"][0]
        r.check("max-frames: stops after 4 frames", len(t["sframe"]["frames"]) == 4
                and t["sframe"]["end"]["kind"] == "failed" and "stopped after 4 frames" in t["sframe"]["end"]["message"],
                str(t["sframe"]["end"]))


def test_sframe_only(r, bt, fx):
    rc, doc, err = bt.json(["--", fx.path("chain-noeh"), "segv"])
    if r.check("noeh: exit 0 without --compare-cfi", rc == 0 and doc is not None, f"rc {rc} {err}"):
        t = doc["threads"][0]
        r.check("noeh: SFrame alone unwinds the whole program", own_names(t) == CHAIN_NAMES
                and modules(t)[-1] == "libc.so.6", str(names(t)))
        check_cfa_chain(r, "noeh", t)
    rc, doc, err = bt.json(["--compare-cfi", "--", fx.path("chain-noeh"), "segv"])
    if r.check("noeh: --compare-cfi exits 1", rc == 1 and doc is not None, f"rc {rc} {err}"):
        # Without CFI, libdwfl falls back to following rbp, which this
        # code uses as a general register: it either stops at frame 1 or
        # makes up a caller, whose SP then gives frame 0 a different CFA.
        c = doc["threads"][0]["comparison"]
        r.check("noeh: CFI fails by frame 1 (no .eh_frame)",
                c["first_difference"] is not None and c["first_difference"]["frame"] in (0, 1)
                and c["frames"][0]["pc"] and c["frames"][0]["sp"], str(c["first_difference"]))


def test_wrong_sframe(r, bt, fx):
    rc, doc, err = bt.json(["--compare-cfi", "--", fx.path("chain-badra"), "segv"])
    if r.check("badra: exit 1", rc == 1 and doc is not None, f"rc {rc} {err}"):
        t = doc["threads"][0]
        c = t["comparison"]
        r.check("badra: first difference is frame 1's pc",
                c["first_difference"] is not None and c["first_difference"]["frame"] == 1
                and c["first_difference"]["what"].startswith("pc ") and c["equal"] == 1,
                str(c["first_difference"]))
        r.check("badra: frame 0 still agrees", c["frames"][0]["equal"] is True, str(c["frames"][:1]))
    rc, _, _ = bt.json(["--", fx.path("chain-badra"), "segv"])
    r.check("badra: the walk itself fails without CFI too (exit 1)", rc == 1, f"rc {rc}")


def test_plt(r, bt, fx):
    rc, doc, err = bt.json(["--compare-cfi", "--", fx.path("plt/plt")])
    if not r.check("plt: exit 0", rc == 0 and doc is not None, f"rc {rc} {err}"):
        return
    t = doc["threads"][0]
    r.check("plt: frames across the program and the library",
            own_names(t) == ["crash_cb", "lib_inner", "lib_outer", "p1", "main"]
            and modules(t) == ["plt", "libbtlib.so", "libbtlib.so", "plt", "plt", "libc.so.6"],
            f"{names(t)} {modules(t)}")
    check_cfa_chain(r, "plt", t)
    check_agreement(r, "plt", t)
    sframe_modules = [m["path"] for m in doc["modules"] if m["sframe"]]
    r.check("plt: both modules have SFrame", sorted(os.path.basename(p) for p in sframe_modules)
            == ["libbtlib.so", "plt"], str(sframe_modules))


def test_signals(r, bt, fx):
    rc, doc, err = bt.json(["--compare-cfi", "--", fx.path("sig")])
    if r.check("sig: exit 0", rc == 0 and doc is not None, f"rc {rc} {err}"):
        t = doc["threads"][0]
        r.check("sig: SIGUSR1 passed on, SIGSEGV in the handler stops it", t["signal"] == "SIGSEGV"
                and own_names(t) == ["h2", "h1", "handler"], str(names(t)))
        ends_in_libc(r, "sig", t)
        check_agreement(r, "sig", t)
        r.check("sig: CFI goes through the signal frame to s2, s1, main",
                cfi_names(t)[-6:-3] == ["s2", "s1", "main"], str(cfi_names(t)))
    rc, doc, err = bt.json(["--compare-cfi", "--stop-on", "USR1", "--", fx.path("sig")])
    if r.check("stop-on: exit 0", rc == 0 and doc is not None, f"rc {rc} {err}"):
        t = doc["threads"][0]
        r.check("stop-on: stopped by SIGUSR1 from tgkill, in libc", t["signal"] == "SIGUSR1"
                and "tgkill" in t.get("stop_detail", "") and modules(t) == ["libc.so.6"], str(t))
        check_agreement(r, "stop-on", t)


def test_signal_at_entry(r, bt, fx):
    """The frame a signal interrupted has a precise PC: it is named (and its
    module found) at that PC, not one byte before, where another function is
    (tests/common/sig_entry.c)."""
    w = fx.path
    rc, _, err = run([bt.sfunwind, "convert", w("sig-entry.cfi"), "-o", w("sig-entry.sframe")])
    if not r.check("sig-entry: convert", rc == 0, err):
        return
    rc, _, err = run(["objcopy", "--add-section", ".sframe=" + w("sig-entry.sframe"), "--set-section-flags",
                      ".sframe=alloc,readonly", w("sig-entry.cfi"), w("sig-entry")])
    if not r.check("sig-entry: objcopy --add-section", rc == 0, err):
        return
    rc, doc, err = bt.json(["--compare-cfi", "--", w("sig-entry")])
    if not r.check("sig-entry: exit 0", rc == 0 and doc is not None, f"rc {rc} {err}"):
        return
    t = doc["threads"][0]
    frames = t["sframe"]["frames"]
    r.check("sig-entry: SIGSEGV in the SIGUSR1 handler", t["signal"] == "SIGSEGV"
            and names(t)[:2] == ["on_usr1", "__restore_rt"], str(names(t)))
    r.check("sig-entry: the interrupted frame is at_entry+0x0, not before+0x..",
            len(frames) > 2 and frames[2]["symbol"] == "at_entry" and frames[2]["offset"] == "0x0"
            and frames[2]["module"] == "sig-entry", str(frames[2:3]))
    r.check("sig-entry: the walk goes on to main and ends at the outermost frame",
            names(t)[3:4] == ["main"] and t["sframe"]["end"]["kind"] == "outermost",
            f"{names(t)} {t['sframe']['end']}")
    r.check("sig-entry: CFI names the frame the same", cfi_names(t)[:4] == names(t)[:4], str(cfi_names(t)))
    check_agreement(r, "sig-entry", t, expect_beyond=False)


def test_threads(r, bt, fx):
    rc, doc, err = bt.json(["--compare-cfi", "--", fx.path("threads")])
    if not r.check("threads: exit 0", rc == 0 and doc is not None, f"rc {rc} {err}"):
        return
    ts = doc["threads"]
    r.check("threads: three threads, the faulting one first", len(ts) == 3 and ts[0]["signal"] == "SIGSEGV"
            and ts[0]["tid"] == doc["target"]["pid"], str([(t["tid"], t["signal"]) for t in ts]))
    r.check("threads: main's frames", own_names(ts[0]) == ["m2", "m1", "main"], str(names(ts[0])))
    for i, t in enumerate(ts[1:], 1):
        r.check(f"threads: worker {i} interrupted in w_spin", t["signal"] is None
                and own_names(t) == ["w_spin", "w_mid", "w_outer"], str(names(t)))
    for i, t in enumerate(ts):
        ends_in_libc(r, f"threads[{i}]", t)
        check_cfa_chain(r, f"threads[{i}]", t)
        check_agreement(r, f"threads[{i}]", t)


def proc_state(pid):
    with open(f"/proc/{pid}/status") as f:
        fields = dict(line.split(":", 1) for line in f if ":" in line)
    return fields["State"].strip(), int(fields["TracerPid"])


def test_attach(r, bt, fx):
    p = subprocess.Popen([fx.path("spin")])
    try:
        time.sleep(0.3)
        rc, doc, err = bt.json(["--compare-cfi", "-p", str(p.pid)])
        if r.check("attach: exit 0", rc == 0 and doc is not None, f"rc {rc} {err}"):
            t = doc["threads"][0]
            r.check("attach: frames", own_names(t) == ["a3", "a2", "a1", "main"]
                    and doc["target"]["kind"] == "process", str(names(t)))
            check_agreement(r, "attach", t)
        time.sleep(0.2)
        state, tracer = proc_state(p.pid)
        r.check("attach: the process runs on, detached", p.poll() is None and state.startswith("R") and tracer == 0,
                f"state {state} tracer {tracer}")
        # Twice: the first detach left nothing behind.
        rc, doc, err = bt.json(["-p", str(p.pid)])
        r.check("attach: again", rc == 0 and doc is not None and names(doc["threads"][0])[0] == "a3", f"rc {rc} {err}")
    finally:
        p.kill()
        p.wait()

    rc, doc, err = bt.json(["--timeout", "1", "--", fx.path("spin")])
    if r.check("timeout: exit 0", rc == 0 and doc is not None, f"rc {rc} {err}"):
        r.check("timeout: interrupted in a3", doc["stop"].startswith("no stop signal within 1 s")
                and names(doc["threads"][0])[:4] == ["a3", "a2", "a1", "main"], str(doc["stop"]))


def gcore(fx, exe, args, core, extra=()):
    cmd = ["gdb", "-nx", "-batch", "-ex", "set pagination off"]
    for e in extra:
        cmd += ["-ex", e]
    cmd += ["-ex", "run", "-ex", f"generate-core-file {core}", "--args", exe] + args
    run(cmd, timeout=120)
    return os.path.exists(core)


def test_cores(r, bt, fx):
    """The same stops as the live tests, from GDB core dumps (gcore)."""
    cases = [
        ("chain", fx.path("chain"), ["segv"], [], [CHAIN_NAMES]),
        ("chain-noeh", fx.path("chain-noeh"), ["segv"], [], [CHAIN_NAMES]),
        ("plt", fx.path("plt/plt"), [], [], [["crash_cb", "lib_inner", "lib_outer", "p1", "main"]]),
        ("sig", fx.path("sig"), [], ["handle SIGUSR1 nostop noprint pass"], [["h2", "h1", "handler"]]),
        ("regs", fx.path("regs"), [], [], [REGS_NAMES]),
        ("threads", fx.path("threads"), [], [], [["m2", "m1", "main"],
                                                 ["w_spin", "w_mid", "w_outer"],
                                                 ["w_spin", "w_mid", "w_outer"]]),
    ]
    for name, exe, args, extra, expect in cases:
        core = fx.path(f"{name}.core")
        if os.path.exists(core):
            os.unlink(core)
        if not r.check(f"core {name}: gcore wrote a core", gcore(fx, exe, args, core, extra), core):
            continue
        compare = name != "chain-noeh"
        rc, doc, err = bt.json((["--compare-cfi"] if compare else []) + ["--core", core, exe])
        if not r.check(f"core {name}: exit 0", rc == 0 and doc is not None, f"rc {rc} {err}"):
            continue
        ts = doc["threads"]
        r.check(f"core {name}: the faulting thread first, SIGSEGV", ts[0]["signal"] == "SIGSEGV",
                str(ts[0]["signal"]))
        r.check(f"core {name}: frames as in the live stop", [own_names(t) for t in ts] == expect,
                str([names(t) for t in ts]))
        for i, t in enumerate(ts):
            ends_in_libc(r, f"core {name}[{i}]", t)
            check_cfa_chain(r, f"core {name}[{i}]", t)
            if compare:
                check_agreement(r, f"core {name}[{i}]", t)
        if name == "regs":
            check_seeds(r, "core regs", ts[0])
        if not compare:
            rc, doc, err = bt.json(["--compare-cfi", "--core", core, exe])
            r.check(f"core {name}: --compare-cfi finds CFI missing (exit 1)", rc == 1 and doc is not None
                    and doc["threads"][0]["comparison"]["first_difference"]["frame"] in (0, 1), f"rc {rc} {err}")


def test_committed_fixtures(r, bt, fx):
    """tests/fixtures: binaries from every SFrame writer (gas 2.40 v1, gas
    2.44 v2, gas 2.47 v3, clang 23 v2) that run on this host. Each stops in
    fixture_leaf; SFrame must agree with CFI on every frame it produces, and
    a -noeh copy (SFrame only) must unwind exactly like its original."""
    manifest = os.path.join(REPO, "tests", "fixtures", "manifest.tsv")
    if not r.check("fixtures: manifest present", os.path.exists(manifest), manifest):
        return
    rows = []
    with open(manifest) as f:
        for line in f:
            if line.startswith("#"):
                continue
            cols = line.rstrip("\n").split("\t")
            if len(cols) >= 7 and cols[3] == "x86-64" and WHERE in cols[6].split(",") and cols[4] != "shared":
                rows.append(cols[0])
    r.check(f"fixtures: {WHERE}-runnable x86-64 binaries listed", len(rows) >= 20, str(len(rows)))
    base = os.path.join(REPO, "tests", "fixtures")
    symbols = {}
    for rel in sorted(rows, key=lambda p: "-noeh" in p):  # originals first
        exe = os.path.join(base, rel)
        noeh = "-noeh" in rel
        rc, doc, err = bt.json(["--compare-cfi", "--max-frames", "20000", "--", exe, "segv"])
        if not r.check(f"{rel}: ran", doc is not None, f"rc {rc} {err}"):
            continue
        t = doc["threads"][0]
        n = names(t)
        r.check(f"{rel}: stopped by SIGSEGV in fixture_leaf", t["signal"] == "SIGSEGV" and n
                and "fixture_leaf" in (n[0] or ""), str(n[:2]))
        r.check(f"{rel}: walk left the covered code", t["sframe"]["end"]["kind"] == "left-coverage",
                str(t["sframe"]["end"]))
        check_cfa_chain(r, rel, t)
        if noeh:
            original = rel.replace("-noeh", "")
            r.check(f"{rel}: SFrame alone unwinds like {original}", symbols.get(original) == n,
                    f"{n[:6]} vs {(symbols.get(original) or [])[:6]}")
            r.check(f"{rel}: CFI cannot, exit 1", rc == 1 and not t["comparison"]["agree"], f"rc {rc}")
        else:
            symbols[rel] = n
            r.check(f"{rel}: exit 0", rc == 0, f"rc {rc}")
            check_agreement(r, rel, t)


def test_usage(r, bt, fx):
    rc, out, err = bt.run(["--help"])
    r.check("usage: --help", rc == 0 and out.startswith("usage: sfunwind bt"), out[:100])
    rc, out, err = bt.run([])
    r.check("usage: no target is exit 2", rc == 2 and "no target" in err, err)
    rc, out, err = bt.run(["--bogus", "--", fx.path("chain")])
    r.check("usage: unknown option", rc == 2 and "'--bogus'" in err, err)
    rc, out, err = bt.run(["--max-frames", "x", "--", fx.path("chain")])
    r.check("usage: bad --max-frames", rc == 2 and "--max-frames" in err, err)
    rc, out, err = bt.run(["--stop-on", "SIGNOPE", "--", fx.path("chain")])
    r.check("usage: bad --stop-on", rc == 2 and "SIGNOPE" in err, err)
    rc, out, err = bt.run(["-p", "1", "--core", "a", "b"])
    r.check("usage: two targets", rc == 2 and "one target" in err, err)
    missing = fx.path("no-such-program")
    rc, out, err = bt.run(["--", missing])
    r.check("error: missing program is named, exit 2", rc == 2 and missing in err
            and "No such file" in err, err)
    rc, out, err = bt.run(["-p", "999999999"])
    r.check("error: bad pid", rc == 2 and "999999999" in err, err)
    rc, out, err = bt.run(["--core", fx.path("no.core"), fx.path("chain")])
    r.check("error: missing core is named", rc == 2 and fx.path("no.core") in err, err)
    rc, out, err = bt.run(["--core", fx.path("chain"), fx.path("chain")])
    r.check("error: not a core", rc == 2 and "not a core dump" in err and fx.path("chain") in err, err)


WHERE = "host"  # --where: which committed fixtures run here


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--sfunwind", default=os.path.join(REPO, "build", "default", "cli", "sfunwind"))
    ap.add_argument("--work", default=None, help="where to build the test programs (default: a temporary dir)")
    ap.add_argument("-v", "--verbose", action="store_true")
    ap.add_argument("--where", choices=["host", "chroot"], default="host",
                    help="which committed fixtures to run: those the manifest says run on the "
                         "bookworm host, or in the sid chroot (dynamic builds of newer writers)")
    a = ap.parse_args()
    global WHERE
    WHERE = a.where
    if not os.access(a.sfunwind, os.X_OK):
        print(f"{a.sfunwind}: not an executable (build first or pass --sfunwind)")
        print("0 passed, 1 failed")
        return 1
    work = a.work or tempfile.mkdtemp(prefix="sfunwind-bt-")
    fx = Fixtures(os.path.abspath(work))
    fx.build()
    r = Results(a.verbose)
    bt = Bt(a.sfunwind)
    for test in [test_chain_variants, test_text_output, test_registers, test_stack_probes, test_no_callee_saved, test_stop_kinds, test_deep, test_sframe_only,
                 test_wrong_sframe, test_plt, test_signals, test_signal_at_entry, test_threads, test_attach, test_cores,
                 test_committed_fixtures, test_usage]:
        try:
            test(r, bt, fx)
        except subprocess.TimeoutExpired as e:
            r.check(test.__name__, False, f"timed out: {e}")
        except (KeyError, IndexError, TypeError) as e:
            r.check(test.__name__, False, f"unexpected output: {e!r}")
    if a.work is None:
        shutil.rmtree(work, ignore_errors=True)
    print(f"SFrame vs CFI: {r.equal} of {r.compared} frames agree in {r.walks} walks (live, attached and core)")
    print(f"Callee-saved registers vs CFI: {r.regs_compared} compared, {r.regs_equal} equal "
          f"({r.regs_from_slot} read from a save slot), {r.regs_unknown} unknown to SFrame, 0 differ")
    r.check("callee-saved: registers compared with CFI over every walk", r.regs_compared > 0
            and r.regs_equal > 0, f"{r.regs_compared}")
    r.check("callee-saved: some values recovered from save slots, equal to CFI's", r.regs_from_slot > 0,
            f"{r.regs_from_slot}")
    print(f"{r.passed} passed, {r.failed} failed")
    return 0 if r.failed == 0 else 1


if __name__ == "__main__":
    sys.exit(main())

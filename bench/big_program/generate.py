#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""Writes the C sources of a big program for sfunwind's benchmarks (issue
"Big programs"): tens of thousands of functions whose prologues are the
ones real code has, in a main program and two shared libraries, with one
call chain that runs deep and stops.

Every function is one of these shapes (by its index), so that the unwind
tables hold what compilers write for real code:
  live     many values live across calls: every callee-saved register saved
  frame    a large frame (a local array of 4-12 KB: sub rsp, imm32; probes)
  alloca   a variable-sized frame (alloca: a frame pointer, realignment)
  recurse  recursion on its own argument
  switch   a jump table (indirect jumps, code no fall-through reaches)
  float    floating-point values live across calls (AArch64 d8-d15)
Each has a body of arithmetic blocks that sizes the code, and calls two
functions of the level below. Functions are grouped in levels: main calls
level 0, level L calls level L+1, the last level calls the leaf, which
stops the program (SIGTRAP by default, `crash`: SIGSEGV, for a core dump).
The first half of the levels is in the main program, the third quarter in
lib2.so, the last quarter and the leaf in lib1.so.
Only one path runs: the argument selects the callee, and the others exist
for their code.

usage: generate.py OUT_DIR [--functions N] [--units U] [--levels L] [--block-ops K]

Writes OUT_DIR/unit_NNN.c (OUT_DIR/units.txt names each with its target:
main, lib1 or lib2), leaf.c (lib1), main.c and big.h. The output depends on
the arguments only."""

import argparse
import os

SHAPES = ("live", "frame", "alloca", "recurse", "switch", "float")


def name(level, index):
    return "f_%03d_%05d" % (level, index)


def body_block(k, ops):
    """`ops` statements of arithmetic on the locals, distinct per k."""
    lines = []
    for i in range(ops):
        a, b = "v%d" % ((k + i) % 6), "v%d" % ((k + 3 * i + 1) % 6)
        op = ("+", "^", "-", "*")[(k + i) % 4]
        lines.append("    %s = %s %s (%s + %dL);" % (a, a, op, b, (k * 131 + i * 7) % 997 + 1))
    return "\n".join(lines)


def function(level, index, levels, per_level, ops, shape):
    me = name(level, index)
    if level + 1 < levels:
        c1 = name(level + 1, (index * 2) % per_level)
        c2 = name(level + 1, (index * 2 + 1) % per_level)
        call = "(sel & 1) ? %s(sel >> 1, x + v0, ctx) : %s(sel >> 1, x ^ v1, ctx)" % (c1, c2)
    else:
        call = "big_leaf(sel, x + v0, ctx)"
    head = ["__attribute__((noinline)) long %s(unsigned long sel, long x, struct big_ctx *ctx) {" % me,
            "    long v0 = x + %d, v1 = x ^ %d, v2 = ctx->seed + %d, v3 = v0 * 3, v4 = v1 - 7, v5 = v2 + v0;"
            % (index % 97, level, index % 13)]
    mid = []
    tail = []
    if shape == "live":
        mid.append(body_block(index, ops))
        mid.append("    long r = %s;" % call)
        mid.append(body_block(index + 1, ops // 2))
        tail.append("    return r + v0 + v1 + v2 + v3 + v4 + v5;")
    elif shape == "frame":
        size = 4096 + (index % 3) * 4096
        mid.append("    volatile char buf[%d];" % size)
        mid.append("    buf[x & %d] = (char)v0; buf[%d] = (char)v1;" % (size - 1, size - 1))
        mid.append(body_block(index, ops))
        mid.append("    long r = %s;" % call)
        tail.append("    return r + buf[(unsigned long)v2 %% %d] + v3 + v4 + v5;" % size)
    elif shape == "alloca":
        mid.append("    unsigned long n = 16 + ((unsigned long)x & 255);")
        mid.append("    volatile char *p = __builtin_alloca(n);")
        mid.append("    p[0] = (char)v0; p[n - 1] = (char)v1;")
        mid.append(body_block(index, ops))
        mid.append("    long r = %s;" % call)
        tail.append("    return r + p[n / 2] + v2 + v3 + v4 + v5;")
    elif shape == "recurse":
        mid.append("    if (ctx->depth < %d) { ctx->depth++; long d = %s(sel, x + 1, ctx); ctx->depth--; return d + v0; }"
                   % (2 + index % 3, me))
        mid.append(body_block(index, ops))
        mid.append("    long r = %s;" % call)
        tail.append("    return r + v1 + v2 + v3 + v4 + v5;")
    elif shape == "switch":
        cases = ["    case %d: v%d += %d; break;" % (c, c % 6, (index + c) % 101) for c in range(12)]
        mid.append("    switch ((x + %d) & 15) {" % index)
        mid.extend(cases)
        mid.append("    default: v5 ^= v1; break;")
        mid.append("    }")
        mid.append(body_block(index, ops))
        mid.append("    long r = %s;" % call)
        tail.append("    return r + v0 + v1 + v2 + v3 + v4 + v5;")
    else:  # float
        mid.append("    double d0 = (double)v0 * 1.5, d1 = (double)v1 / 3.0, d2 = d0 + d1;")
        mid.append(body_block(index, ops))
        mid.append("    long r = %s;" % call)
        mid.append("    d2 = d2 * d0 - d1;")
        tail.append("    return r + (long)d2 + v2 + v3 + v4 + v5;")
    return "\n".join(head + mid + tail + ["}"])


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("out")
    ap.add_argument("--functions", type=int, default=32000)
    ap.add_argument("--units", type=int, default=200)
    ap.add_argument("--levels", type=int, default=40)
    ap.add_argument("--block-ops", type=int, default=80)
    args = ap.parse_args()
    levels = args.levels
    per_level = max(2, args.functions // levels)
    os.makedirs(args.out, exist_ok=True)

    with open(os.path.join(args.out, "big.h"), "w") as f:
        f.write("/* generated by bench/big_program/generate.py */\n#pragma once\n")
        f.write("struct big_ctx { long seed; int depth; };\n")
        f.write("long big_leaf(unsigned long sel, long x, struct big_ctx *ctx);\n")
        f.write("void big_set_crash(int on);\n")
        for level in range(levels):
            for index in range(per_level):
                f.write("long %s(unsigned long sel, long x, struct big_ctx *ctx);\n" % name(level, index))

    # Units by level ranges: the first half of the levels goes to the main
    # program, the third quarter to lib2, the last quarter and the leaf to
    # lib1 (main -> lib2 -> lib1: calls cross each library boundary once,
    # through the PLT).
    units = []
    flat = [(level, index) for level in range(levels) for index in range(per_level)]
    chunk = (len(flat) + args.units - 1) // args.units
    for u in range(args.units):
        part = flat[u * chunk:(u + 1) * chunk]
        if not part:
            break
        first_level = part[0][0]
        target = "main" if first_level < levels // 2 else "lib2" if first_level < 3 * levels // 4 else "lib1"
        path = "unit_%03d.c" % u
        with open(os.path.join(args.out, path), "w") as f:
            f.write("/* generated by bench/big_program/generate.py */\n#include \"big.h\"\n\n")
            for level, index in part:
                shape = SHAPES[(level * 7 + index) % len(SHAPES)]
                f.write(function(level, index, levels, per_level, args.block_ops, shape) + "\n\n")
        units.append((path, target))
    with open(os.path.join(args.out, "units.txt"), "w") as f:
        for path, target in units:
            f.write("%s %s\n" % (path, target))

    with open(os.path.join(args.out, "leaf.c"), "w") as f:
        f.write('''/* generated by bench/big_program/generate.py (in lib1) */
#include "big.h"
#include <signal.h>

static int crash;

void big_set_crash(int on) { crash = on; }

__attribute__((noinline)) long big_leaf(unsigned long sel, long x, struct big_ctx *ctx) {
    /* The stop: a debugger sees the whole chain from here. */
    if (crash) {
        volatile long *null = 0;
        *null = x;
    }
    raise(SIGTRAP);
    return x + (long)sel + ctx->seed;
}
''')
    with open(os.path.join(args.out, "main.c"), "w") as f:
        f.write('''/* generated by bench/big_program/generate.py */
#include "big.h"
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

int main(int argc, char **argv) {
    struct big_ctx ctx = {argc, 0};
    big_set_crash(argc > 1 && strcmp(argv[1], "crash") == 0);
    unsigned long sel = argc > 2 ? strtoul(argv[2], 0, 0) : 0x2545F4914F6CDD1DUL;
    long r = %s(sel, argc, &ctx);
    printf("%%ld\\n", r);
    return 0;
}
''' % name(0, 0))


if __name__ == "__main__":
    main()

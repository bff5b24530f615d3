#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""The `sframe` commands and the unwinder's visible behaviour in GDB: help
texts, `sframe status` before and after `run` (load bias, a shared library
loaded later), `sframe row`, `sframe compare`, where the Python unwinder
sits among GDB's lists of unwinders (and that another objfile's unwinder
is still asked first), switching paths, and the registers SFrame cannot
restore showing as <not saved> in caller frames.

Each step runs one GDB command and matches its output against a regular
expression. usage: run_command_tests.py --gdb GDB --loader LOADER --runs host
Exit status 1 if any step's output did not match."""

import re

import gdb_harness as H

# The Python unwinders' names in the first objfile's list and in the program
# space's.
WHERE = ("python print('sframe at:', [u.name for u in gdb.objfiles()[0].frame_unwinders], "
         "[u.name for u in gdb.current_progspace().frame_unwinders])")
# An unwinder that counts the frames it is asked about and declines them.
USER_UNWINDER = ("python exec(\"import gdb.unwinder\\nclass Counting(gdb.unwinder.Unwinder):\\n"
                 " def __init__(self):\\n  super().__init__('counting')\\n  self.calls = 0\\n"
                 " def __call__(self, pending_frame):\\n  self.calls += 1\\n"
                 "user_unwinder = Counting()\")")
LIBRARY = "[o for o in gdb.objfiles() if o.filename.endswith('libfixture_plt.so')][0]"
# The section listing sfunwind places modules from (modules.py): the
# executable's sections (key None) and an objfile's, whose path may hold
# "', file type"; other sections, sections not loaded (printed at their
# link-time address) and a core file's own are left out.
MAINT_LISTING = ("Exec file: `/p/main', file type elf64-x86-64.\n"
                 " [3]      0x0->0x8 at 0x00000300: .plt READONLY HAS_CONTENTS\n"
                 " [12]     0x10->0x20 at 0x00001000: .text ALLOC LOAD READONLY CODE HAS_CONTENTS\n"
                 " [13]     0x30->0x40 at 0x00002000: .data ALLOC LOAD DATA HAS_CONTENTS\n"
                 "Object file: `/p/a', file type b/lib.so', file type elf64-x86-64.\n"
                 " [9]      0x50->0x60 at 0x00001050: .sframe ALLOC LOAD READONLY DATA HAS_CONTENTS\n"
                 "Core file: `/p/core', file type elf64-x86-64.\n"
                 " [0]      0x70->0x80 at 0x00000000: .text ALLOC LOAD READONLY CODE HAS_CONTENTS\n")
MAINT_PLACES = {None: {".text": (0x10, 0x20)}, "/p/a', file type b/lib.so": {".sframe": (0x50, 0x60)}}
PARSE = "python from sfunwind_gdb import modules; print(modules.parse_maint_sections(%r)%s)"

# (program, arguments, [(command, regex the output must match, regex it must not match)])
PLT_STEPS = [
    # Every subcommand, one line each (GDB lists them in alphabetical order).
    ("help sframe", r"\nsframe callee-saved -- [^\n]+\nsframe compare -- [^\n]+\nsframe disable -- [^\n]+\n"
                    r"sframe enable -- [^\n]+\nsframe row -- [^\n]+\nsframe status -- [^\n]+\n", None),
    ("help sframe row", r"Show the SFrame row that covers an address", None),
    (PARSE % (MAINT_LISTING, " == %r" % MAINT_PLACES), r"^True$", None),
    # Another format (no line reads as a section of an objfile): None, and
    # `info files` is read.
    (PARSE % ("Exec file: `/p/main'\n  0x10 - 0x20 is .text\n", ""), r"^None$", None),
    (PARSE % ("Object file: /p/lib.so\n [9] 0x10->0x20 at 0x00001000: .text ALLOC LOAD\n", ""),
     r"^None$", None),
    ("sframe status", r"active path: python.*plt: SFrame v\d amd64, \d+ FDEs", r"libfixture_plt"),
    ("run", None, None),
    ("info symbol $pc", r"fixture_leaf", None),
    ("sframe status", r"^selected frame #0 \(0x[0-9a-f]+ in fixture_leaf\): SFrame in use \(python path\): "
                      r"\S+/plt, FDE \d+, FRE \d+: CFA=rsp\+\d+ RA=\[CFA-8\]", None),
    # The library was loaded by `run`: found, placed at its load address.
    ("sframe status", r"libfixture_plt\.so: SFrame v\d amd64.*bias 0x7ff.*\n.*plt: SFrame v\d amd64.*bias 0x555", None),
    ("bt", r"#0 .*fixture_leaf.*#1 .*exe_callback.*#2 .*lib_level_2.*#5 .*call_into_lib.*#6 .*main", None),
    ("sframe status", r"python path: [1-9]\d* frames unwound", None),
    ("sframe row $pc", r"FDE \d+: function 0x[0-9a-f]+, \d+ bytes\n  FRE \d+: \[0x[0-9a-f]+, 0x[0-9a-f]+\)\n"
                       r"  CFA=rsp\+\d+ RA=\[CFA-8\]", None),
    ("sframe row lib_level_1", r"libfixture_plt\.so\n  FDE \d+: function 0x[0-9a-f]+.*\n  FRE 0: .*\n  CFA=rsp\+8 RA=\[CFA-8\] FP=same", None),
    ("sframe row 0", None, None),  # must fail: checked below
    ("sframe compare", r"the walks are equal", None),
    ("info unwinder", r"sframe", None),
    # Where the unwinder sits (SframeUnwinder): after a walk, at the end of
    # the first objfile's list, as no other Python unwinder would come first.
    (WHERE, r"^sframe at: \['sframe'\] \[\]$", None),
    # Another objfile's unwinder (declining every frame) must still be asked
    # first, as GDB orders objfiles' unwinders before a program space's: the
    # next walk puts sframe back in the program space's list, the frames the
    # same, and the library's unwinder asked about every one of them.
    (USER_UNWINDER, r"^$", None),
    ("python gdb.unwinder.register_unwinder(%s, user_unwinder)" % LIBRARY, r"^$", None),
    ("bt", r"#0 .*fixture_leaf.*#1 .*exe_callback.*#2 .*lib_level_2.*#5 .*call_into_lib.*#6 .*main", None),
    (WHERE, r"^sframe at: \[\] \['sframe'\]$", None),
    ("python print('asked:', user_unwinder.calls)", r"^asked: ([7-9]|\d\d+)$", None),
    ("sframe status", r"python path: [1-9]\d* frames unwound", None),
    ("python %s.frame_unwinders.remove(user_unwinder)" % LIBRARY, r"^$", None),
    ("maint flush register-cache", None, None),
    ("bt", r"#6 .*main", None),
    (WHERE, r"^sframe at: \['sframe'\] \[\]$", None),
    # Objfiles going (the first one may be among them): back to the program
    # space's list at once, and to the first objfile at the next walk.
    ("nosharedlibrary", None, None),
    (WHERE, r"^sframe at: \[\] \['sframe'\]$", None),
    ("sharedlibrary", None, None),
    ("bt", r"#0 .*fixture_leaf.*#2 .*lib_level_2.*#6 .*main", None),
    (WHERE, r"^sframe at: \['sframe'\] \[\]$", None),
    # `sframe status` answers for the selected frame: a caller in the library
    # (its row at the return address - 1), and a frame in libc (no SFrame in
    # Debian 12's; sid's may have it).
    ("frame 2", None, None),
    ("sframe status", r"^selected frame #2 \(0x[0-9a-f]+ in lib_level_2\): SFrame in use \(python path\): "
                      r"\S+/libfixture_plt\.so, FDE \d+, FRE \d+", None),
    ("set backtrace past-main on", None, None),
    ("frame 7", None, None),
    ("sframe status", r"^selected frame #7 \(0x[0-9a-f]+( in \S+)?\): (no SFrame: \S*/libc\.so\.6 has no SFrame; "
                      r"GDB's own unwinders take it|SFrame in use \(python path\): \S*/libc\.so\.6)", None),
    ("set backtrace past-main off", None, None),
    ("frame 0", None, None),
    # Caller frames: callee-saved registers SFrame does not track come from
    # the function's code (run_callee_saved_tests.py checks their values
    # against the CFI build); switched off, they are not saved (never an
    # inner frame's value). The FP and SP always are.
    ("frame 2", None, None),
    ("info symbol $pc", r"lib_level_2", None),
    ("info registers rbx", r"rbx +0x[0-9a-f]+", r"not saved"),
    ("sframe callee-saved", r"callee-saved registers: on", None),
    ("sframe callee-saved off", r"^$", None),
    ("frame 2", None, None),
    ("info registers rbx", r"rbx +<not saved>", None),
    ("sframe callee-saved", r"callee-saved registers: off", None),
    ("sframe callee-saved on", r"^$", None),
    ("frame 2", None, None),
    ("info registers rbx", r"rbx +0x[0-9a-f]+", r"not saved"),
    ("info registers rbp", r"rbp +0x[0-9a-f]+", r"not saved"),
    ("info registers rsp", r"rsp +0x[0-9a-f]+", r"not saved"),
    ("frame 0", None, None),
    ("info registers rbx", r"rbx +0x", r"not saved"),
    ("sframe disable", r"^$", None),
    ("sframe status", r"^selected frame #0 .*: SFrame not in use: sfunwind is off .*\nactive path: off", None),
    ("bt", r"#6 .*main", None),
    ("sframe enable native", r"^$", None),
    ("bt", r"#0 .*fixture_leaf.*#2 .*lib_level_2.*#6 .*main", None),
    ("sframe status", r"active path: native.*JIT reader loaded\): [1-9]\d* frames unwound", None),
    ("frame 2", None, None),
    ("info symbol $pc", r"lib_level_2", None),
    ("info registers rbx", r"rbx +0x[0-9a-f]+", r"not saved"),
    ("sframe enable python", r"^$", None),
    ("sframe status", r"active path: python.*JIT reader not loaded", None),
    ("sframe enable bogus", None, None),  # must fail
    ("sframe status extra", None, None),  # must fail
    ("sframe compare x", None, None),  # must fail
    ("sframe callee-saved maybe", None, None),  # must fail
    ("sframe nosuch", None, None),  # must fail
    ("disable unwinder", r"unwinders? disabled", None),
    ("enable unwinder", r"unwinders? enabled", None),
    ("sframe status", r"active path: python", None),
]
# Each a one-line error naming the usage.
MUST_FAIL = {"sframe row 0": r"no module with SFrame covers 0x0",
             "sframe enable bogus": r"^sframe enable: expected python or native, got 'bogus' "
                                    r"\(usage: sframe enable \[python\|native\]\)$",
             "sframe status extra": r"^sframe status: no argument expected, got 'extra' \(usage: sframe status\)$",
             "sframe compare x": r"^sframe compare: N must be a number, got 'x' \(usage: sframe compare \[N\]\)$",
             "sframe callee-saved maybe": r"^sframe callee-saved: expected on or off, got 'maybe' "
                                          r"\(usage: sframe callee-saved \[on\|off\]\)$",
             "sframe nosuch": r'^Undefined sframe command: "nosuch"\.  Try "help sframe"\.$'}


def run(args, res):
    g = H.Gdb(args.gdb, args.loader, args.timeout)
    program = H.fixture("bin", "gas-2.40" if args.runs == "host" else "gas-2.47", "plt-O2-nofp", "plt")
    results = g.commands(program, [s[0] for s in PLT_STEPS], set_args="trap")
    if isinstance(results, str):
        res.check("GDB ran the steps", False, results)
        return
    for (cmd, want, unwanted), (_, output, error, _) in zip(PLT_STEPS, results):
        if cmd in MUST_FAIL:
            ok = error is not None and re.search(MUST_FAIL[cmd], error) is not None
            detail = "error: %s" % error
        else:
            ok = error is None and (want is None or re.search(want, output, re.S | re.M) is not None) and \
                (unwanted is None or re.search(unwanted, output) is None)
            detail = error if error else output.strip().replace("\n", " | ")[:160]
        res.check(cmd, ok, detail)
    if len(results) != len(PLT_STEPS):
        res.check("every step ran", False, "%d of %d" % (len(results), len(PLT_STEPS)))
    print("%d steps, %d failed" % (len(PLT_STEPS), res.failed))


if __name__ == "__main__":
    H.main(run, H.parser(__doc__))

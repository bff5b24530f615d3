# SPDX-License-Identifier: MIT
# Run inside gdb-multiarch (`gdb-multiarch -batch -nx -x gdb_dump.py`),
# attached to `qemu-ppc64[le] -g PORT fixture`. At each stop it writes one
# JSON line: the registers, the stack memory, and GDB's own backtrace (DWARF
# CFI: the fixtures are static and keep .eh_frame). tb_replay then unwinds
# the same stop with the traceback tables alone and compares.
#
# Environment: TB_BINARY (the fixture), TB_PORT, TB_OUT (JSON lines file),
# TB_MODE: "segv" (continue to the SIGSEGV in leaf's body) or "step" (break
# at main, then stepi to the end of main, one record per instruction),
# TB_MAX_STEPS (step mode; default 4000).
import json
import os

import gdb

BINARY = os.environ["TB_BINARY"]
PORT = os.environ["TB_PORT"]
OUT = os.environ["TB_OUT"]
MODE = os.environ.get("TB_MODE", "segv")
MAX_STEPS = int(os.environ.get("TB_MAX_STEPS", "4000"))
MAX_FRAMES = 64
STACK_SLACK = 4096  # bytes dumped above the outermost frame GDB found
PROTECTED_ZONE = 288  # ELFv2 ABI 2.2.2.4; 288 bytes in ELFv1 too


def u64(value):
    return int(value) & 0xFFFFFFFFFFFFFFFF


def read_stack(lo, hi):
    """The largest readable [lo, x) up to hi, in 4 KiB steps from hi down."""
    inferior = gdb.selected_inferior()
    while hi > lo:
        try:
            return bytes(inferior.read_memory(lo, hi - lo))
        except gdb.MemoryError:
            hi = lo + max(0, ((hi - lo) - 1) // 4096 * 4096)
    return b""


def record(out, stop_index):
    frame = gdb.newest_frame()
    regs = {"pc": u64(frame.read_register("pc")), "lr": u64(frame.read_register("lr"))}
    for n in range(32):
        regs["r%d" % n] = u64(frame.read_register("r%d" % n))
    frames = []
    f = frame
    while f is not None and len(frames) < MAX_FRAMES:
        entry = {"pc": u64(f.pc()), "name": f.name()}
        try:
            entry["sp"] = u64(f.read_register("r1"))
            entry["r31"] = u64(f.read_register("r31"))
        except gdb.error:
            entry["sp"] = None
            entry["r31"] = None
        frames.append(entry)
        try:
            older = f.older()
        except gdb.error:
            older = None
        if older is None:
            entry["stop"] = gdb.frame_stop_reason_string(f.unwind_stop_reason())
        f = older
    sps = [e["sp"] for e in frames if e["sp"] is not None]
    # From the bottom of the ABI's 288-byte protected zone below r1, where
    # prologues save registers before the stack update.
    lo = regs["r1"] - PROTECTED_ZONE
    hi = max(sps + [lo]) + STACK_SLACK
    stack = read_stack(lo, hi)
    out.write(json.dumps({
        "stop": stop_index,
        "regs": {k: "0x%x" % v for k, v in regs.items()},
        "stack_base": "0x%x" % lo,
        "stack": stack.hex(),
        "gdb_frames": [{"pc": "0x%x" % e["pc"], "sp": None if e["sp"] is None else "0x%x" % e["sp"],
                        "r31": None if e["r31"] is None else "0x%x" % e["r31"],
                        "name": e["name"], "stop": e.get("stop")} for e in frames],
    }) + "\n")
    return [e["name"] for e in frames]


def running():
    return gdb.selected_inferior().pid != 0 and gdb.selected_thread() is not None


def main():
    gdb.execute("set pagination off")
    gdb.execute("set confirm off")
    # The whole stack, through __libc_start_main, not just up to main.
    gdb.execute("set backtrace past-main on")
    gdb.execute("set backtrace past-entry on")
    gdb.execute("file " + BINARY)
    gdb.execute("target remote localhost:" + PORT)
    with open(OUT, "w") as out:
        if MODE == "segv":
            gdb.execute("continue")
            record(out, 0)
            return
        main_start = u64(gdb.parse_and_eval("(long)&main"))
        gdb.execute("break *0x%x" % main_start)
        gdb.execute("continue")
        gdb.execute("delete")
        # Every instruction from main's first to the one main returns to.
        for i in range(MAX_STEPS):
            names = record(out, i)
            if i > 0 and "main" not in names:
                break
            try:
                gdb.execute("stepi", to_string=True)
            except gdb.error:
                break
            if not running():
                break

main()

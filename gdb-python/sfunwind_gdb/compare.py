# SPDX-License-Identifier: MIT
"""`sframe compare`: the current stop unwound twice, once with SFrame and
once with GDB's own (DWARF CFI) unwinders, frame by frame."""

import re

import gdb

from . import arch as arch_mod

_FRAME_ID_STACK = re.compile(r"stack=(0x[0-9a-fA-F]+)")
FIELDS = ("pc", "cfa", "sp", "fp")


class FrameRecord:
    """One frame as GDB shows it: pc, CFA (the frame id's stack address,
    `info frame`'s "frame at"), sp, fp; None for what GDB cannot tell."""

    __slots__ = ("level", "function", "pc", "lookup", "cfa", "sp", "fp", "sframe")

    def __init__(self, level, function, pc, lookup, cfa, sp, fp, sframe):
        self.level = level
        self.function = function
        self.pc = pc
        # Where the frame's row is looked up: pc, or pc - 1 for a return
        # address (the core's FrameAddress, through the C API).
        self.lookup = lookup
        self.cfa = cfa
        self.sp = sp
        self.fp = fp
        # The frame's PC (PC - 1 for a return address) is in a module with
        # SFrame: in the SFrame walk, this frame's CFA and its caller's
        # registers came from SFrame.
        self.sframe = sframe

    def values(self):
        return tuple(getattr(self, f) for f in FIELDS)

    def as_dict(self):
        return {k: getattr(self, k) for k in self.__slots__}


def _register(frame, name):
    try:
        value = frame.read_register(name)
        if value.is_optimized_out:
            return None
        return int(value) & 0xFFFFFFFFFFFFFFFF
    except (gdb.error, ValueError):
        return None


def _cfa(frame):
    """The frame id's stack address (the CFA for DWARF and SFrame frames),
    from `maint print frame-id` (GDB 12 and later) on the selected frame:
    `info frame` would also print the saved registers, which costs GDB time
    in proportion to the frame's level with DWARF frames and fails on some
    targets (GDB 18 with qemu's SVE registers)."""
    try:
        frame.select()
        text = gdb.execute("maint print frame-id", to_string=True)
    except gdb.error:
        return None
    m = _FRAME_ID_STACK.search(text)
    return int(m.group(1), 16) if m else None


def walk(lib, limit=256, exact_cfa_frames=1024):
    """The frames of the current stop with the unwinders now active, and
    the reason the walk ended.

    The CFA is the frame id's stack address and the FP is read for the
    first `exact_cfa_frames` frames; deeper, the CFA is derived from the
    caller's SP (CFA = caller's SP - the ABI's offset, as where GDB cannot
    print the id) and the FP is left out, which keeps a 10,000-frame walk
    to seconds."""
    records = []
    try:
        frame = gdb.newest_frame()
    except gdb.error as e:
        return records, str(e)
    arch = frame.architecture().name()
    regs = arch_mod.for_arch(lib, arch)
    if regs is None:
        return records, "architecture %s has no SFrame ABI" % arch
    stop = ""
    while frame is not None and len(records) < limit:
        pc = frame.pc()
        level = frame.level()
        # A normal caller frame's pc is a return address; frame 0's, and a
        # signal trampoline's (SIGTRAMP_FRAME), are not.
        lookup = lib.lookup_address(pc, level > 0 and frame.type() == gdb.NORMAL_FRAME)
        sframe = lib.module_at(pc) >= 0 or lib.module_at(lookup) >= 0
        exact = len(records) < exact_cfa_frames
        cfa = _cfa(frame) if exact else None
        # Deeper, the FP is not read either: GDB's DWARF unwinder answers an
        # unsaved register by asking the next frame, down to frame 0, so
        # each read costs time in proportion to the level.
        fp = _register(frame, regs.fp) if exact else None
        records.append(FrameRecord(level, frame.name(), pc, lookup, cfa, _register(frame, regs.sp), fp, sframe))
        try:
            older = frame.older()
        except gdb.error as e:
            stop = str(e)
            break
        if older is None:
            stop = gdb.frame_stop_reason_string(frame.unwind_stop_reason())
        frame = older
    if frame is not None and len(records) >= limit:
        stop = "limit of %d frames" % limit
    # Caller's SP = CFA + sp_from_cfa (s390x keeps a 160-byte register save
    # area above the SP).
    offset = regs.abi.sp_from_cfa
    for i in range(len(records) - 1):
        caller_sp = records[i + 1].sp
        if records[i].cfa is None and caller_sp is not None:
            records[i].cfa = (caller_sp - offset) & 0xFFFFFFFFFFFFFFFF
    return records, stop


def walk_both(session, limit=256, exact_cfa_frames=1024):
    """(SFrame frames, stop reason), (CFI frames, stop reason): the same stop
    walked with SFrame (the active path, or Python when sfunwind is off) and
    with GDB's own unwinders. The selected frame and the path are restored."""
    from . import PATH_OFF, PATH_PYTHON
    try:
        selected_level = gdb.selected_frame().level()
    except gdb.error:
        selected_level = 0
    saved = session.path
    try:
        session.set_path(PATH_PYTHON if saved == PATH_OFF else saved)
        sframe = walk(session.lib, limit, exact_cfa_frames)
        session.set_path(PATH_OFF)
        cfi = walk(session.lib, limit, exact_cfa_frames)
    finally:
        session.set_path(saved)
        try:
            frame = gdb.newest_frame()
            for _ in range(selected_level):
                older = frame.older()
                if older is None:
                    break
                frame = older
            frame.select()
        except gdb.error:
            pass
    return sframe, cfi


def first_divergence(lib, sframe, cfi):
    """Index of the first frame whose (pc, CFA, sp, fp) differ, or whose
    counterpart is missing; None when the walks are equal. The core's
    comparison engine decides (through the C API): both walks are GDB's, so
    a value one knows and the other does not is a difference."""
    index, _ = lib.compare([r.values() for r in sframe], [r.values() for r in cfi])
    return index


def _row_line(session, frame, what):
    """What SFrame says for `frame` (looked up where its record says), as
    one line."""
    lookup = frame.lookup
    if not frame.sframe:
        return "  %s: frame #%d (%s, pc 0x%x) is in no module with SFrame: GDB's own unwinders took it in " \
               "both walks" % (what, frame.level, frame.function or "??", frame.pc)
    try:
        row = session.lib.lookup(lookup)
    except Exception as e:  # noqa: BLE001 -- the failure is the explanation
        return "  %s: no SFrame row for frame #%d at 0x%x: %s" % (what, frame.level, lookup, e)
    return "  %s: SFrame row of frame #%d (%s) at 0x%x: %s (FDE %d, FRE %d, [0x%x, 0x%x))" % (
        what, frame.level, frame.function or "??", lookup, session.lib.describe(row), row.fde_index,
        row.fre_index, row.pc_begin, row.pc_end)


def explain(session, sframe, cfi, index):
    """Why the walks part at frame `index`: the fields, and the SFrame rows
    behind them. A frame's CFA comes from its own row; its pc, sp and fp
    from its callee's (the frame below)."""
    if index >= len(sframe) or index >= len(cfi):
        longer, shorter = ("CFI", "SFrame") if index >= len(sframe) else ("SFrame", "CFI")
        lines = ["the %s walk ends after %d frames; the %s walk goes on" % (shorter, index, longer)]
        if index > 0 and index - 1 < len(sframe):
            lines.append(_row_line(session, sframe[index - 1], "last frame"))
        return lines
    a, b = sframe[index], cfi[index]
    diff = [f for f in FIELDS if getattr(a, f) != getattr(b, f)]
    lines = ["frame #%d differs in %s" % (index, ", ".join(diff))]
    if "cfa" in diff:
        lines.append(_row_line(session, a, "CFA"))
    if index > 0 and any(f in diff for f in ("pc", "sp", "fp")):
        lines.append(_row_line(session, sframe[index - 1], "pc/sp/fp"))
        if "fp" in diff and not ("pc" in diff or "sp" in diff):
            lines.append("  SFrame restores the frame pointer only where the function saved it on the stack")
    return lines


def _fmt(value):
    return "-" if value is None else "0x%x" % value


def report(session, limit=256):
    (sframe, sstop), (cfi, cstop) = walk_both(session, limit)
    out = []
    header = "%-4s %-24s %-18s %-18s %-18s %-18s" % ("#", "function", "pc", "CFA", "sp", "fp")
    out.append(header)
    for i in range(max(len(sframe), len(cfi))):
        a = sframe[i] if i < len(sframe) else None
        b = cfi[i] if i < len(cfi) else None
        if a is not None and b is not None and a.values() == b.values():
            out.append("%-4d %-24s %-18s %-18s %-18s %-18s =" % (
                i, (a.function or "??")[:24], *(_fmt(v) for v in a.values())))
            continue
        for tag, r in (("sframe", a), ("cfi", b)):
            if r is None:
                out.append("%-4d %-24s (no frame)  [%s]" % (i, "", tag))
            else:
                out.append("%-4d %-24s %-18s %-18s %-18s %-18s [%s]" % (
                    i, (r.function or "??")[:24], *(_fmt(v) for v in r.values()), tag))
    out.append("SFrame walk: %d frames (%s); CFI walk: %d frames (%s)" % (len(sframe), sstop, len(cfi), cstop))
    index = first_divergence(session.lib, sframe, cfi)
    if index is None:
        out.append("the walks are equal")
    else:
        out.append("first divergence:")
        out.extend(explain(session, sframe, cfi, index))
    return "\n".join(out)

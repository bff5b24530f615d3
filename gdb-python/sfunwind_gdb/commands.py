# SPDX-License-Identifier: MIT
"""The `sframe` commands."""

import gdb

from . import PATH_NATIVE, PATH_OFF, PATH_PYTHON
from . import arch as arch_mod
from . import native

_VERSION_NAMES = {1: "v1", 2: "v2", 3: "v3"}


def _table(info):
    """What a module's rows come from, as `sframe status` shows it."""
    if info.table == native.TABLE_SFRAME:
        return "SFrame %s %s, %d FDEs, %d FREs, flags %s" % (
            _VERSION_NAMES.get(info.version, str(info.version)), info.abi_name.decode(),
            info.num_fdes, info.num_fres, _flags(info.flags))
    return "%s (%s), %d functions" % (info.kind.decode(), info.abi_name.decode(), info.num_functions)


def _current_arch():
    """GDB's name of the current architecture, or None before a program."""
    try:
        return gdb.selected_frame().architecture().name()
    except gdb.error:
        pass
    try:
        return gdb.selected_inferior().architecture().name()
    except (gdb.error, AttributeError):
        return None


def _flags(flags):
    names = []
    for bit, name in ((1, "SORTED"), (2, "FRAME_POINTER"), (4, "PCREL")):
        if flags & bit:
            names.append(name)
    return "|".join(names) or "none"


def _usage_error(command, problem, usage):
    """The one-line error of a bad argument: what is wrong, and the usage."""
    return gdb.GdbError("%s: %s (usage: %s)" % (command, problem, usage))


def _no_argument(command, arg):
    if arg and arg.strip():
        raise _usage_error(command, "no argument expected, got %r" % arg.strip(), command)


def _objfile_name(addr):
    """The name of the objfile holding addr, or None."""
    try:
        objfile = gdb.current_progspace().objfile_for_address(addr)
    except (AttributeError, gdb.error):   # GDB before 13
        objfile = None
    if objfile is not None and objfile.is_valid():
        return objfile.filename
    return gdb.solib_name(addr) or None


def _selected_frame_line(session):
    """`sframe status`'s answer for the selected frame: whether its caller
    comes from SFrame, and if not, why."""
    try:
        frame = gdb.selected_frame()
    except gdb.error:
        return "selected frame: none (no process or core file)"
    pc = frame.pc()
    name = frame.name()
    head = "selected frame #%d (0x%x%s)" % (frame.level(), pc, " in %s" % name if name else "")
    if session.path == PATH_OFF:
        return head + ": SFrame not in use: sfunwind is off (sframe disable); GDB's own unwinders take every frame"
    if frame.type() == gdb.INLINE_FRAME:
        return head + ": an inlined frame: GDB finds its caller from the debug info, not from an unwinder"
    # A caller's PC is a return address, looked up at PC - 1 (the library's
    # rule); not below a signal frame, whose PC is where the signal struck.
    newer = frame.newer()
    is_return_address = newer is not None and newer.type() != gdb.SIGTRAMP_FRAME
    s = session
    s.rescan()
    addr = s.lib.lookup_address(pc, is_return_address)
    module = next((m for m in s.registry.modules.values()
                   if m.runtime_range is not None and m.runtime_range[0] <= addr <= m.runtime_range[1]), None)
    if module is None:
        where = _objfile_name(addr)
        if where is None:
            why = "no objfile holds this address"
        elif where in s.registry.errors:
            # The error itself is in the list of objfiles below: said once.
            why = "its objfile's SFrame cannot be read (below)"
        elif where in s.registry.modules:
            why = "%s has SFrame, but no FDE covers this address" % where
        else:
            why = "%s has no SFrame" % where
        return head + ": no SFrame: %s; GDB's own unwinders take it" % why
    try:
        row = s.lib.lookup(addr)
    except native.NativeError as e:
        return head + ": no SFrame row in %s: %s; GDB's own unwinders take it" % (module.filename, e)
    if row.flags & native.ROW_OUTERMOST:
        return head + ": SFrame says it is the outermost frame (RA undefined); GDB's own unwinders end the stack"
    table = "FDE %d, FRE %d" % (row.fde_index, row.fre_index)
    if module.info.table == native.TABLE_PPC64_TRACEBACK:
        table = "traceback table, run %d" % row.fre_index
    return head + ": SFrame in use (%s path): %s, %s: %s" % (s.path, module.filename, table, s.lib.describe(row))


class SframePrefix(gdb.Command):
    """Unwind with SFrame (the .sframe section) through sfunwind.

sfunwind unwinds the frames of every objfile with SFrame (and of 64-bit
PowerPC programs without it, from their traceback tables); GDB's own
unwinders take the other frames. `help sframe SUBCOMMAND` for each one."""

    def __init__(self):
        super().__init__("sframe", gdb.COMMAND_STACK, gdb.COMPLETE_NONE, True)


class StatusCommand(gdb.Command):
    """Is SFrame in use for the selected frame, and why not; the objfiles with SFrame.

Usage: sframe status
The selected frame first: whether its caller comes from SFrame, and if not,
why (sfunwind turned off, no SFrame in its objfile, no row for its address,
an outermost row). Then the active path, the objfiles with SFrame (or ppc64
traceback tables: version, ABI, FDE/FRE counts, flags, where each is
loaded), the objfiles whose SFrame cannot be read, and the frames each path
unwound."""

    def __init__(self, session):
        super().__init__("sframe status", gdb.COMMAND_STACK)
        self.session = session

    def invoke(self, arg, from_tty):
        _no_argument("sframe status", arg)
        s = self.session
        s.rescan()
        lines = [_selected_frame_line(s), "active path: %s" % s.path]
        lines.append("library: %s" % s.lib.path)
        if not s.registry.modules:
            lines.append("no objfile with SFrame")
        for module in sorted(s.registry.modules.values(), key=lambda m: m.filename):
            info = module.info
            where = "not placed (%s)" % module.error if module.bias is None else "bias 0x%x, [0x%x, 0x%x)" % (
                module.bias, *module.runtime_range)
            lines.append("  %s: %s, from %s; %s" % (module.filename, _table(info), module.source, where))
        for name, err in sorted(s.registry.errors.items()):
            lines.append("  %s: SFrame not usable: %s" % (name, err))
        lines.append("load addresses: section listings read %d times (once after objfiles change, when a"
                     " frame or a command needs them)" % s.registry.listings)
        c = s.engine.counters
        lines.append("python path: %d frames unwound, %d ended the stack, %d failures" % (
            c.frames, c.outermost, c.failures))
        if c.last_failure:
            lines.append("  last failure: %s" % c.last_failure)
        n = s.lib.native_stats()
        lines.append("native path (JIT reader %s): %d frames unwound, %d declined, %d failures" % (
            "loaded" if s.jit_loaded else "not loaded", n.frames_unwound, n.frames_declined, n.failures))
        if s.native_suspended:
            lines.append("  suspended while there is more than one inferior (the JIT reader cannot tell their"
                         " programs apart): the Python path unwinds")
        gdb.write("\n".join(lines) + "\n")


class EnableCommand(gdb.Command):
    """Unwind frames with SFrame, through the Python unwinder or GDB's JIT reader.

Usage: sframe enable [python|native]
python (the default) uses the Python unwinder; native loads this library as
GDB's JIT reader (jit-reader-load) and unwinds without Python per frame."""

    def __init__(self, session):
        super().__init__("sframe enable", gdb.COMMAND_STACK)
        self.session = session

    def complete(self, text, word):
        return [p for p in (PATH_PYTHON, PATH_NATIVE) if p.startswith(word or "")]

    def invoke(self, arg, from_tty):
        arg = (arg or "").strip() or PATH_PYTHON
        if arg not in (PATH_PYTHON, PATH_NATIVE):
            raise _usage_error("sframe enable", "expected python or native, got %r" % arg,
                               "sframe enable [python|native]")
        if arg == PATH_NATIVE and not self.session.lib.has_jit_reader:
            raise gdb.GdbError("sframe enable: %s has no JIT reader entry points" % self.session.lib.path)
        regs = arch_mod.for_arch(self.session.lib, _current_arch())
        if arg == PATH_NATIVE and regs is not None and regs.no_native:
            raise gdb.GdbError("sframe enable: no native path on %s: %s; the python path unwinds it"
                               % (regs.name, regs.no_native))
        self.session.set_path(arg)


class DisableCommand(gdb.Command):
    """Stop unwinding with SFrame: GDB's own unwinders take every frame.

Usage: sframe disable
In ~/.gdbinit, turns sfunwind off for every session of this user (GDB reads
~/.gdbinit after the system gdbinit directory that loads it)."""

    def __init__(self, session):
        super().__init__("sframe disable", gdb.COMMAND_STACK)
        self.session = session

    def invoke(self, arg, from_tty):
        _no_argument("sframe disable", arg)
        self.session.set_path(PATH_OFF)


class RowCommand(gdb.Command):
    """Show the SFrame row that covers an address, with its FDE and rules.

Usage: sframe row ADDR
The module, the function (FDE), the row (FRE) and its rules.
ADDR is an expression (a function name, $pc, *0x401000). For a caller
frame's return address, the unwinder uses ADDR - 1. In a module unwound
with ppc64 traceback tables, the row is the run of instructions with the
same rules in the function."""

    def __init__(self, session):
        super().__init__("sframe row", gdb.COMMAND_STACK, gdb.COMPLETE_EXPRESSION)
        self.session = session

    def invoke(self, arg, from_tty):
        if not arg or not arg.strip():
            raise _usage_error("sframe row", "an address is needed", "sframe row ADDR")
        s = self.session
        s.rescan()
        try:
            value = gdb.parse_and_eval(arg)
        except gdb.error as e:
            raise _usage_error("sframe row", str(e), "sframe row ADDR")
        if value.type.strip_typedefs().code == gdb.TYPE_CODE_FUNC:
            value = value.address
        addr = int(value.cast(gdb.lookup_type("unsigned long"))) & 0xFFFFFFFFFFFFFFFF
        try:
            row = s.lib.lookup(addr)
        except native.NativeError as e:
            raise gdb.GdbError("sframe row: %s" % e)
        module = next((m for m in s.registry.modules.values() if m.id == row.module), None)
        sym = gdb.current_progspace().block_for_pc(row.func_start)
        name = sym.function.print_name if sym is not None and sym.function is not None else None
        flags = []
        for bit, label in ((native.ROW_SIGNAL, "signal frame"), (native.ROW_MANGLED_RA, "RA signed"),
                           (native.ROW_PAUTH_KEY_B, "key B"), (native.ROW_OUTERMOST, "outermost"),
                           (native.ROW_PC_MASK, "PC-mask FDE"),
                           (native.ROW_TOPMOST_ONLY, "register rules: topmost frame only")):
            if row.flags & bit:
                flags.append(label)
        function = "function 0x%x%s, %d bytes" % (row.func_start, " (%s)" % name if name else "", row.func_size)
        lines = ["0x%x in %s" % (addr, module.filename if module else "module %d" % row.module)]
        if module is not None and module.info.table == native.TABLE_PPC64_TRACEBACK:
            # No FDEs or FREs: the function's rules change run by run.
            lines += ["  %s: %s" % (module.info.kind.decode(), function),
                      "  run %d: [0x%x, 0x%x)" % (row.fre_index, row.pc_begin, row.pc_end)]
        else:
            lines += ["  FDE %d: %s" % (row.fde_index, function),
                      "  FRE %d: [0x%x, 0x%x)" % (row.fre_index, row.pc_begin, row.pc_end)]
        lines.append("  %s" % s.lib.describe(row))
        if flags:
            lines.append("  " + ", ".join(flags))
        gdb.write("\n".join(lines) + "\n")


class CompareCommand(gdb.Command):
    """Compare the SFrame unwind of this stop with GDB's DWARF CFI unwind.

Usage: sframe compare [N]     (at most N frames, default 256)
Both walks frame by frame (pc, CFA, sp, fp), with the first divergence
explained. Frames in objfiles without SFrame (libc) are GDB's in both walks."""

    def __init__(self, session):
        super().__init__("sframe compare", gdb.COMMAND_STACK)
        self.session = session

    def invoke(self, arg, from_tty):
        limit = 256
        if arg and arg.strip():
            try:
                limit = int(gdb.parse_and_eval(arg))
            except (gdb.error, ValueError):
                raise _usage_error("sframe compare", "N must be a number, got %r" % arg.strip(),
                                   "sframe compare [N]")
        self.session.rescan()
        # Imported here: a session that never compares does not pay for it
        # (0.3-0.4 ms of every GDB start, bench/big_program/first_bt.py).
        from . import compare as compare_mod
        gdb.write(compare_mod.report(self.session, limit) + "\n")


class CalleeSavedCommand(gdb.Command):
    """Show or set the recovery of callee-saved registers SFrame has no rules for.

Usage: sframe callee-saved [on|off]
The registers: x86-64 rbx, r12-r15; AArch64 x19-x28, d8-d15; s390x r6-r10,
r12, r13, f8-f15, recovered in the frames SFrame unwinds so that upper frames
show the variables kept in them.
Without an argument, shows the setting. SFrame describes only the CFA, the
return address and the frame pointer; with this on (the default), where
each function keeps its caller's values of the other callee-saved registers
comes from the function's own instructions, anchored by its SFrame rows
(`sfunwind check --callee-saved` proves the analysis against DWARF CFI).
A register the analysis cannot place is shown as <not saved>. Both paths
(python and native) use the setting."""

    def __init__(self, session):
        super().__init__("sframe callee-saved", gdb.COMMAND_STACK)
        self.session = session

    def complete(self, text, word):
        return [v for v in ("on", "off") if v.startswith(word or "")]

    def invoke(self, arg, from_tty):
        arg = (arg or "").strip()
        lib = self.session.lib
        if arg == "":
            gdb.write("callee-saved registers: %s\n" % ("on" if lib.callee_saved() else "off"))
            return
        if arg not in ("on", "off"):
            raise _usage_error("sframe callee-saved", "expected on or off, got %r" % arg,
                               "sframe callee-saved [on|off]")
        lib.set_callee_saved(1 if arg == "on" else 0)
        # Frames already unwound keep what they had: unwind them again.
        self.session.engine.new_stop()
        gdb.invalidate_cached_frames()


def register(session):
    SframePrefix()
    StatusCommand(session)
    EnableCommand(session)
    DisableCommand(session)
    RowCommand(session)
    CompareCommand(session)
    CalleeSavedCommand(session)

# SPDX-License-Identifier: MIT
"""The Python unwinder: for each frame GDB asks about, the row and the step
come from the C++ core in one library call (sfunwind_gdb_unwind); Python
only moves registers and memory between GDB and the library.

GDB's Python API charges about a microsecond for each register read, value
made or converted, and two for a memory read, so a frame costs: the PC, SP
and FP read (the FP converted to a number only where the rules compute with
it), one read of the stack window the row's slots lie in (remembered per
PC from the library's previous answer), one library call, and the
UnwindInfo. Frames outside every module with SFrame cost one register read,
shared by the per-objfile unwinders (they all get the same PendingFrame)."""

import ctypes

import gdb
import gdb.unwinder

from . import arch as arch_mod
from . import native

UNWINDER_NAME = "sframe"


class FrameId:
    """GDB's frame id: the CFA and the function's start. Duck-typed, as
    GDB 13 has no gdb.unwinder.FrameId (GDB 14 and later accept both); GDB
    13 reads the attributes as gdb.Value only."""

    __slots__ = ("sp", "pc")

    def __init__(self, sp, pc):
        self.sp = sp
        self.pc = pc


class Counters:
    def __init__(self):
        self.frames = 0        # frames unwound from SFrame
        self.failures = 0      # frames in a module that could not be stepped
        self.outermost = 0     # frames whose row ends the stack
        self.last_failure = ""


class _CodeValues:
    """gdb.Value objects for code addresses, which repeat from frame to
    frame (function starts, return addresses in a recursion). GDB copies a
    value's contents into its frame cache, so sharing them is safe."""

    MAX = 1 << 12

    def __init__(self):
        self._values = {}

    def get(self, address):
        value = self._values.get(address)
        if value is None:
            if len(self._values) >= self.MAX:
                self._values.clear()
            value = self._values[address] = gdb.Value(address)
        return value


class Engine:
    """The unwinding shared by every objfile's unwinder."""

    # Window plans remembered per PC before the memo is dropped.
    MAX_PLANS = 1 << 16
    # Bytes of stack read at once (see _stack_window).
    CHUNK = 1024

    def __init__(self, lib):
        self.lib = lib
        self.active = True
        self.counters = Counters()
        self.regs = None
        self._arch_name = None
        # Register ids for read_register/add_saved_register: GDB's numbers
        # when they check out against the names, else the names.
        self._pc_id = self._sp_id = self._fp_id = self._link_id = None
        self._pseudo_pc = None
        self._sp_dwarf = self._fp_dwarf = None
        # Whether add_saved_register needs values of the register's own
        # type: learnt at the first frame (GDB 13 checks the size only).
        self._cast = None
        self._types = None
        self._pf = None
        self._pc = None
        self._cur_pf = None
        # (level, pc, sp, sp value, fp value) of the caller the last unwind
        # produced: when GDB asks for that frame next, nothing is read back.
        self._next = None
        # {pc: (window base DWARF register, offset, size, the rules read the
        # FP)}: the library's previous answer for that PC.
        self.plans = {}
        self._code = _CodeValues()
        self._chunk_addr = 0
        self._chunk = b""
        self._frame = native.Frame()
        self._result = native.UnwindResult()
        self._frame_ref = ctypes.addressof(self._frame)
        self._result_ref = ctypes.addressof(self._result)
        self._unwind_raw = lib.unwind_raw
        self._read_cb = native.READ_FN(self._read_memory)
        self._reg_cb = native.REG_FN(self._read_dwarf_register)
        lib.set_callbacks(self._read_cb, self._reg_cb)

    # -- state ---------------------------------------------------------------
    def new_stop(self):
        """The inferior moved (or its memory or registers were written):
        nothing cached describes its frames now."""
        self._pf = None
        self._next = None
        self._chunk = b""
        self._frame.window_size = 0
        self.lib.new_stop()

    def forget_arch(self):
        """A new program or target: learn the architecture again."""
        self._arch_name = None
        self._pf = None
        self._next = None
        self._chunk = b""
        self._frame.window_size = 0
        self.plans.clear()

    def _set_arch(self, pf):
        name = pf.architecture().name()
        self._arch_name = name
        self.regs = regs = arch_mod.for_arch(name)
        self._types = None
        self._cast = None
        self.plans.clear()
        self._code = _CodeValues()
        if regs is None:
            return
        dwarf = {v: k for k, v in regs.dwarf_names.items()}
        self._sp_dwarf = dwarf.get(regs.sp)
        self._fp_dwarf = dwarf.get(regs.fp)
        names = (regs.pc, regs.sp, regs.fp, regs.link)
        ids = names
        try:
            same = all(n is None or int(pf.read_register(n)) == int(pf.read_register(k))
                       for n, k in zip(names, regs.numbers))
            if same:
                ids = regs.numbers
        except (gdb.error, ValueError, TypeError):
            pass
        self._pc_id, self._sp_id, self._fp_id, self._link_id = ids
        self._pseudo_pc = regs.pseudo_pc

    # -- callbacks from the library -----------------------------------------
    def _read_memory(self, addr, buf, size):
        try:
            data = gdb.selected_inferior().read_memory(addr, size)
        except (gdb.MemoryError, gdb.error, OverflowError):
            return 0
        ctypes.memmove(buf, data.tobytes(), size)
        return 1

    def _read_dwarf_register(self, number, out):
        name = self.regs.dwarf_name(number) if self.regs else None
        if name is None or self._cur_pf is None:
            return 0
        try:
            value = self._cur_pf.read_register(name)
            if value.is_optimized_out:
                return 0
            out[0] = int(value) & 0xFFFFFFFFFFFFFFFF
        except (gdb.error, ValueError):
            return 0
        return 1

    # -- unwinding -------------------------------------------------------------
    def pc_of(self, pf):
        """The frame's PC, read once per PendingFrame for all unwinders;
        None when the architecture has no SFrame ABI."""
        if pf is self._pf:
            return self._pc
        if self._arch_name is None:
            self._set_arch(pf)
        self._pf = pf
        self._pc = None if self.regs is None else int(pf.read_register(self._pc_id))
        return self._pc

    def unwind(self, pf, pc):
        level = pf.level()
        nxt = self._next
        if nxt is not None and nxt[0] == level and nxt[1] == pc:
            # GDB is unwinding the caller this engine just produced: its SP
            # and FP are the values handed to GDB for it (GDB read them from
            # that UnwindInfo), so they need not be read back.
            sp, sp_value, fp_value = nxt[2], nxt[3], nxt[4]
        else:
            sp_value = pf.read_register(self._sp_id)
            fp_value = pf.read_register(self._fp_id)
            sp = int(sp_value)
        frame = self._frame
        frame.pc = pc
        frame.sp = sp
        frame.level = level
        frame.has_ra = 0
        if level == 0 and self._link_id is not None:
            try:
                frame.ra = int(pf.read_register(self._link_id))
                frame.has_ra = 1
            except (gdb.error, ValueError):
                pass
        plan = self.plans.get(pc)
        if plan is None or plan[3]:
            fp = frame.fp = int(fp_value)
            frame.has_fp = 1
        else:
            fp = None
            frame.has_fp = 0
        if plan is not None and plan[2]:
            reg = plan[0]
            base = sp if reg == self._sp_dwarf else fp if reg == self._fp_dwarf else None
            if base is not None:
                self._stack_window((base + plan[1]) & 0xFFFFFFFFFFFFFFFF, plan[2])
            else:
                frame.window_size = 0
        else:
            frame.window_size = 0
        self._cur_pf = pf
        status = self._unwind_raw(self._frame_ref, self._result_ref)
        self._cur_pf = None
        if status != native.OK:
            return self._failed(pf, pc, sp, status)
        res = self._result
        if plan is None:
            if len(self.plans) >= self.MAX_PLANS:
                self.plans.clear()
            self.plans[pc] = (res.window_reg, res.window_offset, res.window_size, res.needs_fp)
        cfa = gdb.Value(res.cfa)
        code = self._code
        info = pf.create_unwind_info(FrameId(cfa, code.get(res.func_start)))
        if self._cast is None:
            self._learn_cast(pf, sp_value)
        if self._cast:
            pc_type, sp_type = self._types
            sp_out = gdb.Value(res.sp).cast(sp_type)
            info.add_saved_register(self._pc_id, gdb.Value(res.pc).cast(pc_type))
        else:
            sp_out = cfa if res.sp == res.cfa else gdb.Value(res.sp)
            info.add_saved_register(self._pc_id, code.get(res.pc))
        info.add_saved_register(self._sp_id, sp_out)
        if self._pseudo_pc is not None:
            info.add_saved_register(self._pseudo_pc, code.get(res.pc))
        # The FP: restored from the stack, or this frame's own (the value
        # read above, already of the register's type).
        if res.fp_restored:
            fp_out = gdb.Value(res.fp)
            if self._cast:
                fp_out = fp_out.cast(fp_value.type)
        else:
            fp_out = fp_value
        info.add_saved_register(self._fp_id, fp_out)
        self._next = (level + 1, res.pc, res.sp, sp_out, fp_out)
        self.counters.frames += 1
        return info

    def _stack_window(self, addr, size):
        """Points the frame's window at stack bytes covering [addr, addr +
        size): a chunk read ahead towards older frames, since callers' slots
        lie just above a callee's and one read then serves many frames."""
        start = self._chunk_addr
        chunk = self._chunk
        frame = self._frame
        if start <= addr and addr + size <= start + len(chunk):
            if frame.window_addr != start or not frame.window_size:
                frame.window = chunk
                frame.window_size = len(chunk)
                frame.window_addr = start
            return
        inferior = gdb.selected_inferior()
        try:
            chunk = inferior.read_memory(addr, self.CHUNK).tobytes()
        except gdb.MemoryError:
            # The chunk runs into unmapped memory (the stack's top end).
            try:
                chunk = inferior.read_memory(addr, size).tobytes()
            except gdb.MemoryError:
                frame.window_size = 0
                return
        self._chunk_addr = addr
        self._chunk = chunk
        frame.window = chunk
        frame.window_size = len(chunk)
        frame.window_addr = addr

    def _learn_cast(self, pf, sp_value):
        """GDB 13 takes any value of the register's size; later versions may
        want the register's type. One probe with a throwaway UnwindInfo."""
        self._types = (pf.read_register(self._pc_id).type, sp_value.type)
        probe = pf.create_unwind_info(FrameId(gdb.Value(0), gdb.Value(0)))
        try:
            probe.add_saved_register(self._pc_id, gdb.Value(0))
            self._cast = False
        except (ValueError, gdb.error):
            self._cast = True

    def _failed(self, pf, pc, sp, status):
        if status == native.OUTERMOST:
            # The row says the stack ends here (RA undefined, spec v3
            # section 2.4.1, or a zero RA). GDB's Python API cannot say
            # "outermost" (that takes an outer frame id, which Python
            # unwinders cannot build), and a frame without a saved PC makes
            # GDB raise "PC not saved" in every later unwind: leave the frame
            # to GDB's own unwinders, which end the stack there too (CFI's
            # undefined RA, or the zero frame pointer _start leaves).
            self.counters.outermost += 1
            return None
        self.counters.failures += 1
        self.counters.last_failure = self.lib.last_error()
        return None


class SframeUnwinder(gdb.unwinder.Unwinder):
    """Registered once per objfile with SFrame: claims frames whose PC (or
    PC - 1, for a return address) is in that objfile's FDE range."""

    def __init__(self, engine, module):
        super().__init__(UNWINDER_NAME)
        self.engine = engine
        self.module = module

    def __call__(self, pending_frame):
        engine = self.engine
        if not engine.active:
            return None
        pc = engine._pc if pending_frame is engine._pf else engine.pc_of(pending_frame)
        if pc is None:
            return None
        r = self.module.runtime_range
        if r is None or pc < r[0] or pc > r[1]:
            return None
        return engine.unwind(pending_frame, pc)

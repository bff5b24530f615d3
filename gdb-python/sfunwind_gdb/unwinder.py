# SPDX-License-Identifier: MIT
"""The Python unwinder: for each frame GDB asks about, the row and the step
come from the C++ core in one library call (sfunwind_gdb_unwind); Python
only moves registers and memory between GDB and the library.

GDB's Python API charges about a microsecond for each register read, value
made or converted, and two for a memory read, so a frame costs: the PC read,
one library call, and the UnwindInfo. The library keeps what makes that
enough: the caller its previous call produced (GDB asks for that frame
next, and took its SP and FP from the UnwindInfo, so they are not read
back) and the stack bytes read at this stop (one read serves many frames).
Other frames (the topmost one, frames after GDB's own unwinders) cost the
SP and FP reads through the register callback. Frames outside every module
with SFrame cost one register read and a search of the modules' ranges."""

import ctypes
import struct

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
    # GDB asks for a `special` address too, and takes None as none. Without
    # the attribute, each frame's lookup raises and clears an AttributeError
    # inside GDB: 0.5 us of the 1.6 us create_unwind_info takes on GDB 13.
    special = None

    def __init__(self, sp, pc):
        self.sp = sp
        self.pc = pc


class Counters:
    def __init__(self):
        self.frames = 0        # frames unwound from SFrame
        self.failures = 0      # frames in a module that could not be stepped
        self.outermost = 0     # frames whose row ends the stack
        self.last_failure = ""


# native.SavedRegister's layout, in the host's byte order (the library's).
_SAVED = struct.Struct("=HB5xQ")
assert _SAVED.size == ctypes.sizeof(native.SavedRegister)
# native.UnwindResult's pc, sp, fp, cfa, func_start and saved_count (the
# fields between them skipped): one unpack gives them all, where ctypes
# makes an object per field access.
_RESULT = struct.Struct("=5Q20xI")
assert (native.UnwindResult.pc.offset, native.UnwindResult.func_start.offset) == (0, 32)
assert _RESULT.size == native.UnwindResult.saved_count.offset + 4

# gdb.Type codes of registers whose value is an address or an integer: a
# floating-point register's value would convert to a number, not its bits.
_INTEGER_TYPE_CODES = (gdb.TYPE_CODE_INT, gdb.TYPE_CODE_PTR)


def _register_descriptors(pf):
    """{name: gdb.RegisterDescriptor} of the frame's architecture; {} on a
    GDB without them (before 11)."""
    try:
        return {d.name: d for d in pf.architecture().registers()}
    except (AttributeError, gdb.error):
        return {}


class _Values:
    """gdb.Value objects by number, of one register's type when `type_` is
    given: code addresses (function starts, return addresses in a
    recursion), frame pointers and callee-saved registers passed on
    unchanged repeat from frame to frame. GDB copies a value's contents
    into its frame cache, so sharing them is safe. The hot loop reads
    `cache` itself and calls make() on a miss (a method call per register
    is a measurable share of a frame).

    A typed value is made from its bytes when the target's byte order is
    known (`order`, "little" or "big") and the type is 8 bytes: GDB 18
    takes 0.9 us for that and 2.5 us for gdb.Value(n).cast(type)."""

    MAX = 1 << 12

    def __init__(self, type_=None, order=None):
        self.cache = {}
        self._type = type_
        self._order = order if type_ is not None and type_.sizeof == 8 else None

    def new(self, number):
        if self._order is not None:
            return gdb.Value(number.to_bytes(8, self._order), self._type)
        value = gdb.Value(number)
        return value if self._type is None else value.cast(self._type)

    def make(self, number):
        if len(self.cache) >= self.MAX:
            self.cache.clear()
        value = self.cache[number] = self.new(number)
        return value

    def get(self, number):
        value = self.cache.get(number)
        return self.make(number) if value is None else value


def _byte_order(value):
    """"little" or "big": how GDB (14 and later: Value.bytes) lays out a
    register value's number; None when the value cannot tell."""
    try:
        raw = bytes(value.bytes)
        number = int(value) & ((1 << (8 * len(raw))) - 1)
    except (AttributeError, gdb.error, ValueError, TypeError):
        return None
    little = raw == number.to_bytes(len(raw), "little")
    big = raw == number.to_bytes(len(raw), "big")
    if little == big:
        return None
    return "little" if little else "big"


class Engine:
    """The unwinding shared by every objfile's unwinder."""

    def __init__(self, lib):
        self.lib = lib
        self.active = True
        self.counters = Counters()
        self.regs = None
        self._arch_name = None
        # Register ids for read_register/add_saved_register: GDB's numbers
        # when they check out against the names, else the names.
        self._pc_id = self._sp_id = self._fp_id = None
        self._pseudo_pc = None
        # {DWARF register number: GDB register id, or False when GDB has no
        # such register}, for the library's register callback.
        self._dwarf_ids = {}
        # Whether add_saved_register needs values of the register's own
        # type: learnt at the first frame (GDB 13 checks the size only).
        self._cast = None
        self._sp_values = None
        # The target's byte order, for typed values made from bytes.
        self._order = None
        self._code = _Values()
        self._pc_values = self._fp_values = self._code
        # Callee-saved registers' values: one _Values per GDB register type
        # (general registers share one; s390x f8-f15 have a float type).
        self._saved_values = {}
        # {DWARF number of a callee-saved register: (GDB register id, its
        # _Values), or False when it is not given to GDB}.
        self._saved_slots = {}
        self._descriptors = {}
        self._pc_method = False
        self._pf = None
        self._pc = None
        self._cur_pf = None
        # Set by pc_of() at a walk's frame 0, for the unwinder to seat itself.
        self.walk_start = False
        self._frame = native.Frame()
        self._result = native.UnwindResult()
        self._frame_ref = ctypes.addressof(self._frame)
        self._result_ref = ctypes.addressof(self._result)
        # The result's saved registers as bytes (a live view of the
        # structure the library writes).
        offset = native.UnwindResult.saved.offset
        self._result_view = memoryview(self._result).cast("B")
        self._saved_view = self._result_view[offset:offset + ctypes.sizeof(self._result.saved)]
        self._unwind_raw = lib.unwind_raw
        self._read_cb = native.READ_FN(self._read_memory)
        self._reg_cb = native.REG_FN(self._read_dwarf_register)
        lib.set_callbacks(self._read_cb, self._reg_cb)

    # -- state ---------------------------------------------------------------
    def new_stop(self):
        """The inferior moved (or its memory or registers were written):
        nothing cached describes its frames now."""
        self._pf = None
        self.lib.new_stop()

    def forget_arch(self):
        """A new program or target: learn the architecture again."""
        self._arch_name = None
        self._pf = None
        self.lib.forget_stack()

    def _set_arch(self, pf):
        name = pf.architecture().name()
        self._arch_name = name
        self.regs = regs = arch_mod.for_arch(self.lib, name)
        self._cast = None
        self._code = _Values()
        self._pc_values = self._fp_values = self._code
        self._saved_values = {}
        self._saved_slots = {}
        self._dwarf_ids = {}
        self._descriptors = _register_descriptors(pf)
        self._pc_method = hasattr(pf, "pc")
        if regs is None:
            return
        names = (regs.pc, regs.sp, regs.fp, regs.link)
        ids = names
        try:
            same = all(n is None or int(pf.read_register(n)) == int(pf.read_register(k))
                       for n, k in zip(names, regs.numbers))
            if same:
                ids = regs.numbers
        except (gdb.error, ValueError, TypeError):
            pass
        self._pc_id, self._sp_id, self._fp_id, link_id = ids
        self._pseudo_pc = regs.pseudo_pc
        abi = regs.abi
        self._dwarf_ids = {abi.sp_reg: ids[1], abi.fp_reg: ids[2]}
        if link_id is not None:
            self._dwarf_ids[abi.ra_reg] = link_id

    def _gdb_register_id(self, number):
        """GDB's id of DWARF register `number`: its gdb.RegisterDescriptor
        (GDB finds the register at once; a name costs a search of every
        register's name, 0.5 us an add_saved_register on GDB 13), its name
        where GDB has no descriptors, or False."""
        name = self.regs.abi.register_name(number) if self.regs else None
        if name is None:
            return False
        return self._descriptors.get(name, name)

    # -- callbacks from the library -----------------------------------------
    def _read_memory(self, addr, buf, size):
        try:
            data = gdb.selected_inferior().read_memory(addr, size)
        except (gdb.MemoryError, gdb.error, OverflowError):
            return 0
        ctypes.memmove(buf, data.tobytes(), size)
        return 1

    def _read_dwarf_register(self, number, out):
        pf = self._cur_pf
        if pf is None:
            return 0
        ident = self._dwarf_ids.get(number)
        if ident is None:
            ident = self._dwarf_ids[number] = self._gdb_register_id(number)
        if ident is False:
            return 0
        try:
            value = pf.read_register(ident)
            if value.is_optimized_out or value.type.strip_typedefs().code not in _INTEGER_TYPE_CODES:
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
        if pf.level() == 0:
            # Every walk starts here (GDB unwinds frame N + 1 from frame N),
            # also another thread's, whose frame 0 may lie outside every
            # module with SFrame: the caller the previous walk produced
            # must not be taken for this walk's frame at its level and PC.
            self.lib.forget_stack()
            self.walk_start = True
        if self.regs is None:
            self._pc = None
        elif self._pc_method:
            # GDB 14 and later: the frame's PC as GDB keeps it (which GDB
            # reads again to print the frame), without a gdb.Value: 0.1 us
            # where read_register and int() take 1.2-1.6 us on GDB 18.
            self._pc = pf.pc()
        else:
            self._pc = int(pf.read_register(self._pc_id))
        return self._pc

    def unwind(self, pf, pc):
        frame = self._frame
        frame.pc = pc
        frame.level = pf.level()
        self._cur_pf = pf
        status = self._unwind_raw(self._frame_ref, self._result_ref)
        self._cur_pf = None
        if status != native.OK:
            return self._failed(status)
        pc_out, sp, fp, cfa_number, func_start, count = _RESULT.unpack_from(self._result_view)
        code = self._code
        if self._cast is None:
            self._learn_cast(pf)
        cfa = gdb.Value(cfa_number)
        info = pf.create_unwind_info(FrameId(cfa, code.get(func_start)))
        info.add_saved_register(self._pc_id, self._pc_values.get(pc_out))
        if self._cast:
            sp_out = self._sp_values.new(sp)
        else:
            sp_out = cfa if sp == cfa_number else gdb.Value(sp)
        info.add_saved_register(self._sp_id, sp_out)
        if self._pseudo_pc is not None:
            info.add_saved_register(self._pseudo_pc, code.get(pc_out))
        # The FP: restored from the stack, or this frame's own.
        info.add_saved_register(self._fp_id, self._fp_values.get(fp))
        # The callee-saved registers the function's code shows where it
        # keeps; the others stay <not saved>. Read as (reg, kind, value)
        # tuples in one call: ctypes builds an object per field access.
        if count:
            slots = self._saved_slots
            add = info.add_saved_register
            for reg, kind, number in _SAVED.iter_unpack(self._saved_view[:count * _SAVED.size]):
                if kind != native.SAVED_VALUE:
                    continue
                slot = slots.get(reg)
                if slot is None:
                    slot = slots[reg] = self._saved_slot(pf, reg)
                if slot is False:
                    continue
                ident, values = slot
                value = values.cache.get(number)
                if value is None:
                    value = values.make(number)
                try:
                    add(ident, value)
                except ValueError:
                    # A descriptor belongs to one gdbarch: another variant
                    # of the architecture (another inferior's target
                    # description) takes the register by name.
                    name = self.regs.abi.register_name(reg)
                    slots[reg] = (name, values)
                    self._dwarf_ids[reg] = name
                    add(name, value)
        self.counters.frames += 1
        return info

    def _saved_slot(self, pf, reg):
        """(GDB register id, _Values) for callee-saved DWARF register
        `reg`, or False when GDB is not given it."""
        ident = self._dwarf_ids.get(reg)
        if ident is None:
            ident = self._dwarf_ids[reg] = self._gdb_register_id(reg)
        if ident is False:
            return False
        values = self._values_for(pf, ident)
        return False if values is False else (ident, values)

    def _values_for(self, pf, ident):
        if not self._cast:
            # GDB 13 copies the value's bytes: a 64-bit integer is the
            # register's contents whatever its type (an FPR's bits too).
            key, type_ = None, None
        else:
            type_ = pf.read_register(ident).type
            if type_.strip_typedefs().code not in _INTEGER_TYPE_CODES:
                # Later GDBs want the register's own type, and casting an
                # integer to a float type converts the number instead of
                # keeping its bits: s390x f8-f15 (float-typed) are left
                # unsaved here, which GDB shows as "not saved", never as a
                # wrong value.
                return False
            key = str(type_)
        values = self._saved_values.get(key)
        if values is None:
            values = self._saved_values[key] = _Values(type_, self._order)
        return values

    def _learn_cast(self, pf):
        """GDB 13 takes any value of the register's size; later versions may
        want the register's type. One probe with a throwaway UnwindInfo."""
        probe = pf.create_unwind_info(FrameId(gdb.Value(0), gdb.Value(0)))
        try:
            probe.add_saved_register(self._pc_id, gdb.Value(0))
            self._cast = False
        except (ValueError, gdb.error):
            self._cast = True
            sp = pf.read_register(self._sp_id)
            self._order = _byte_order(sp)
            self._pc_values = _Values(pf.read_register(self._pc_id).type, self._order)
            self._sp_values = _Values(sp.type, self._order)
            self._fp_values = _Values(pf.read_register(self._fp_id).type, self._order)

    def _failed(self, status):
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
    """One per program space: claims frames whose PC (or PC - 1, for a
    return address) is in the FDE range of a module with SFrame.

    Where it sits. GDB tries, for every frame, each objfile's Python
    unwinders, then the program space's, then the global ones
    (gdb/__init__.py, _execute_unwinders): registered with the program
    space, the unwinder is reached after a walk over every objfile, 10-18 us
    a frame in a program of 300 libraries (GDB 13). So at the start of each walk
    (frame 0) it moves itself to the end of the first objfile's list when
    that keeps GDB's order: no other objfile has a Python unwinder and the
    program space has none besides it. Otherwise, and whenever objfiles
    change (the first one may go), it goes back to the program space's list,
    behind the unwinders registered there meanwhile (register_unwinder puts
    new ones first). `info unwinder` lists it where it is."""

    def __init__(self, engine, session, progspace):
        super().__init__(UNWINDER_NAME)
        self.engine = engine
        self.session = session
        self.progspace = progspace
        self.home = progspace.frame_unwinders

    def _move_to(self, unwinders):
        if self.home is unwinders:
            return
        # It is called from GDB's iteration over the list it leaves, which
        # then skips the unwinder after it: there is none, as it leaves the
        # program space's list only when alone there, and sits last in the
        # first objfile's (register_unwinder inserts before it).
        if self in self.home:
            self.home.remove(self)
        unwinders.append(self)
        self.home = unwinders

    def seat(self):
        """At a walk's start: the first objfile's list when GDB's order
        allows, else the program space's."""
        progspace = self.progspace
        objfiles = progspace.objfiles()
        own = progspace.frame_unwinders
        alone = (bool(objfiles) and all(u is self for u in own)
                 and not any(o.frame_unwinders for o in objfiles[1:]))
        self._move_to(objfiles[0].frame_unwinders if alone else own)

    def go_home(self):
        """Back to the program space's list (objfiles changed)."""
        if self.progspace.is_valid():
            self._move_to(self.progspace.frame_unwinders)

    def __call__(self, pending_frame):
        engine = self.engine
        session = self.session
        # The modules are placed when a frame first needs them. GDB asks
        # the JIT reader (the native path) before Python unwinders, and the
        # reader cannot call back into Python: a frame it declined because
        # its module was not placed yet is unwound here, once placed.
        placed_now = session.place_stale(self.progspace)
        if not engine.active and not (placed_now and session.jit_loaded):
            return None
        registry = session.registry
        pc = engine.pc_of(pending_frame)
        if engine.walk_start:
            engine.walk_start = False
            self.seat()
        if pc is None or registry.module_at(pc) is None:
            return None
        return engine.unwind(pending_frame, pc)

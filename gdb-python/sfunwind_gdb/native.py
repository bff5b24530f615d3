# SPDX-License-Identifier: MIT
"""ctypes binding of libsfunwind_gdb.so (gdb-python/native/sfunwind_gdb.h).

ctypes needs no compilation against Python's headers, so one library serves
every Python that GDB embeds (3.11 in GDB 13, 3.14 in GDB 18)."""

import ctypes
import os

API_VERSION = 11

# enum sfunwind_gdb_status
OK = 0
NOT_FOUND = 5
MEMORY_UNREADABLE = 6
OUTERMOST = 10
BAD_ARGUMENT = 11

# enum sfunwind_gdb_row_flags
ROW_SIGNAL = 1
ROW_MANGLED_RA = 2
ROW_PAUTH_KEY_B = 4
ROW_OUTERMOST = 8
ROW_PC_MASK = 16
ROW_TOPMOST_ONLY = 32

# enum sfunwind_gdb_table
TABLE_SFRAME = 0
TABLE_PPC64_TRACEBACK = 1

# RegRule::Kind
RULE_UNDEFINED, RULE_SAME, RULE_AT_CFA, RULE_VAL_CFA, RULE_AT_REG, RULE_VAL_REG = range(6)


class Rule(ctypes.Structure):
    _fields_ = [
        ("kind", ctypes.c_uint8),
        ("source", ctypes.c_uint8),
        ("reg", ctypes.c_uint16),
        ("offset", ctypes.c_int32),
    ]


class Row(ctypes.Structure):
    _fields_ = [
        ("pc_begin", ctypes.c_uint64),
        ("pc_end", ctypes.c_uint64),
        ("func_start", ctypes.c_uint64),
        ("func_size", ctypes.c_uint32),
        ("fde_index", ctypes.c_uint32),
        ("fre_index", ctypes.c_uint32),
        ("module", ctypes.c_int32),
        ("cfa_reg", ctypes.c_uint16),
        ("cfa_deref", ctypes.c_uint8),
        ("reserved", ctypes.c_uint8),
        ("cfa_offset", ctypes.c_int32),
        ("ra", Rule),
        ("fp", Rule),
        ("flags", ctypes.c_uint32),
        ("window_reg", ctypes.c_uint16),
        ("reserved2", ctypes.c_uint16),
        ("window_size", ctypes.c_uint32),
        ("window_offset", ctypes.c_int64),
    ]


class Frame(ctypes.Structure):
    _fields_ = [
        ("pc", ctypes.c_uint64),
        ("sp", ctypes.c_uint64),
        ("fp", ctypes.c_uint64),
        ("has_sp", ctypes.c_uint32),
        ("has_fp", ctypes.c_uint32),
        ("level", ctypes.c_int32),
        ("reserved", ctypes.c_uint32),
    ]


# struct sfunwind_gdb_saved_register kinds (sfunwind_gdb_unwind gives no 1,
# "same value": it resolves those to values)
SAVED_NOT_SAVED = 0
SAVED_VALUE = 2
MAX_SAVED = 20


class SavedRegister(ctypes.Structure):
    _fields_ = [
        ("reg", ctypes.c_uint16),
        ("kind", ctypes.c_uint8),
        ("reserved", ctypes.c_uint8 * 5),
        ("value", ctypes.c_uint64),
    ]


class UnwindResult(ctypes.Structure):
    _fields_ = [
        ("pc", ctypes.c_uint64),
        ("sp", ctypes.c_uint64),
        ("fp", ctypes.c_uint64),
        ("cfa", ctypes.c_uint64),
        ("func_start", ctypes.c_uint64),
        ("module", ctypes.c_int32),
        ("topmost", ctypes.c_uint32),
        ("fp_restored", ctypes.c_uint32),
        ("fallback_reads", ctypes.c_uint32),
        ("row_flags", ctypes.c_uint32),
        ("saved_count", ctypes.c_uint32),
        ("saved", SavedRegister * MAX_SAVED),
    ]


class AbiInfo(ctypes.Structure):
    _fields_ = [
        ("sp_reg", ctypes.c_uint16),
        ("fp_reg", ctypes.c_uint16),
        ("ra_reg", ctypes.c_uint16),
        ("ra_in_register", ctypes.c_uint16),
        ("sp_from_cfa", ctypes.c_int32),
        ("reserved", ctypes.c_uint32),
    ]


class ModuleInfo(ctypes.Structure):
    _fields_ = [
        ("version", ctypes.c_uint32),
        ("abi_arch", ctypes.c_uint32),
        ("flags", ctypes.c_uint32),
        ("num_fdes", ctypes.c_uint32),
        ("num_fres", ctypes.c_uint32),
        ("placed", ctypes.c_uint32),
        ("section_vaddr", ctypes.c_uint64),
        ("section_size", ctypes.c_uint64),
        ("text_begin", ctypes.c_uint64),
        ("text_end", ctypes.c_uint64),
        ("bias", ctypes.c_uint64),
        ("sp_reg", ctypes.c_uint16),
        ("fp_reg", ctypes.c_uint16),
        ("ra_reg", ctypes.c_uint16),
        ("ra_in_register", ctypes.c_uint16),
        ("sp_from_cfa", ctypes.c_int32),
        ("table", ctypes.c_uint32),
        ("num_functions", ctypes.c_uint32),
        ("reserved", ctypes.c_uint32),
        ("abi_name", ctypes.c_char * 16),
        ("kind", ctypes.c_char * 32),
    ]


class NativeStats(ctypes.Structure):
    _fields_ = [
        ("frames_unwound", ctypes.c_uint64),
        ("frames_declined", ctypes.c_uint64),
        ("failures", ctypes.c_uint64),
        ("frame_ids", ctypes.c_uint64),
    ]


READ_FN = ctypes.CFUNCTYPE(ctypes.c_int, ctypes.c_uint64, ctypes.c_void_p, ctypes.c_size_t)
REG_FN = ctypes.CFUNCTYPE(ctypes.c_int, ctypes.c_uint32, ctypes.POINTER(ctypes.c_uint64))


class NativeError(Exception):
    """A failed call: `status` is the sfunwind_gdb_status, str() the message."""

    def __init__(self, status, message):
        super().__init__(message)
        self.status = status


class Abi:
    """One of the core's ABIs (by its name: "amd64", "aarch64_be", ...):
    the DWARF numbers of its SP, FP and RA, whether the RA is in a register,
    caller's SP = CFA + sp_from_cfa, and its DWARF register names."""

    def __init__(self, lib, name, info):
        self._lib = lib
        self.name = name
        self.sp_reg = info.sp_reg
        self.fp_reg = info.fp_reg
        self.ra_reg = info.ra_reg
        self.ra_in_register = bool(info.ra_in_register)
        self.sp_from_cfa = info.sp_from_cfa
        self._names = {}

    def register_name(self, number):
        """The name of DWARF register `number`, or None."""
        if number not in self._names:
            self._names[number] = self._lib.register_name(self.name, number)
        return self._names[number]


def library_path():
    """Where libsfunwind_gdb.so is: $SFUNWIND_GDB_LIBRARY (set by the build
    tree's loader), else next to this package (an installed copy)."""
    path = os.environ.get("SFUNWIND_GDB_LIBRARY")
    if path:
        return path
    here = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    return os.path.join(here, "libsfunwind_gdb.so")


class FrameView(ctypes.Structure):
    """sfunwind_gdb_frame_view: one frame of a walk; has_* 0 for an unknown value."""
    _fields_ = [
        ("pc", ctypes.c_uint64),
        ("cfa", ctypes.c_uint64),
        ("sp", ctypes.c_uint64),
        ("fp", ctypes.c_uint64),
        ("has_cfa", ctypes.c_uint8),
        ("has_sp", ctypes.c_uint8),
        ("has_fp", ctypes.c_uint8),
        ("reserved", ctypes.c_uint8 * 5),
    ]


class Comparison(ctypes.Structure):
    _fields_ = [
        ("compared", ctypes.c_uint32),
        ("equal", ctypes.c_uint32),
        ("first", ctypes.c_int32),
        ("kind", ctypes.c_uint32),
    ]


class Library:
    """The loaded library, with argument types declared once."""

    def __init__(self, path=None):
        self.path = os.path.abspath(path or library_path())
        lib = ctypes.CDLL(self.path)
        self._lib = lib
        u64, i32 = ctypes.c_uint64, ctypes.c_int32

        def fn(name, res, *args):
            f = getattr(lib, name)
            f.restype = res
            f.argtypes = list(args)
            return f

        fn("sfunwind_gdb_api_version", ctypes.c_int)
        version = lib.sfunwind_gdb_api_version()
        if version != API_VERSION:
            raise NativeError(0, "%s has API version %d, this package needs %d" % (self.path, version, API_VERSION))
        self._last_error = fn("sfunwind_gdb_last_error", ctypes.c_char_p)
        self._open_file = fn("sfunwind_gdb_open_file", i32, ctypes.c_char_p)
        self._open_bytes = fn("sfunwind_gdb_open_bytes", i32, ctypes.c_char_p, ctypes.c_size_t, u64, ctypes.c_char_p)
        self._module_info = fn("sfunwind_gdb_get_module_info", ctypes.c_int, i32, ctypes.POINTER(ModuleInfo))
        self._abi_info = fn("sfunwind_gdb_get_abi_info", ctypes.c_int, ctypes.c_char_p, ctypes.POINTER(AbiInfo))
        self._register_name = fn("sfunwind_gdb_register_name", ctypes.c_int, ctypes.c_char_p, ctypes.c_uint32,
                                 ctypes.c_char_p, ctypes.c_size_t)
        self._abis = {}
        self._section_vaddr = fn("sfunwind_gdb_section_vaddr", ctypes.c_int, i32, ctypes.c_char_p,
                                 ctypes.POINTER(u64))
        self._place = fn("sfunwind_gdb_place", ctypes.c_int, i32, u64)
        self._unplace = fn("sfunwind_gdb_unplace", ctypes.c_int, i32)
        self.reset = fn("sfunwind_gdb_reset", None)
        self.module_at = fn("sfunwind_gdb_module_at", i32, u64)
        self._lookup = fn("sfunwind_gdb_lookup", ctypes.c_int, u64, ctypes.POINTER(Row))
        self.lookup_frame_raw = fn("sfunwind_gdb_lookup_frame", ctypes.c_int, u64, u64, i32,
                                   ctypes.POINTER(Row), ctypes.POINTER(ctypes.c_int))
        self._describe = fn("sfunwind_gdb_describe", ctypes.c_size_t, ctypes.POINTER(Row), ctypes.c_char_p,
                            ctypes.c_size_t)
        self._lookup_address = fn("sfunwind_gdb_lookup_address", u64, u64, ctypes.c_int)
        self._compare = fn("sfunwind_gdb_compare", ctypes.c_int, ctypes.POINTER(FrameView), ctypes.c_size_t,
                           ctypes.POINTER(FrameView), ctypes.c_size_t, ctypes.POINTER(Comparison),
                           ctypes.c_char_p, ctypes.c_size_t)
        self.set_callbacks = fn("sfunwind_gdb_set_callbacks", None, READ_FN, REG_FN)
        # Addresses (ctypes.addressof) rather than POINTER types: converting
        # an int argument is the cheapest ctypes does, and this runs per frame.
        self.unwind_raw = fn("sfunwind_gdb_unwind", ctypes.c_int, ctypes.c_void_p, ctypes.c_void_p)
        self._native_stats = fn("sfunwind_gdb_get_native_stats", None, ctypes.POINTER(NativeStats))
        self.native_enable = fn("sfunwind_gdb_native_enable", None, ctypes.c_int)
        self.new_stop = fn("sfunwind_gdb_new_stop", None)
        self.forget_stack = fn("sfunwind_gdb_forget_stack", None)
        self.set_topmost = fn("sfunwind_gdb_set_topmost", None, u64, u64)
        self.set_callee_saved = fn("sfunwind_gdb_set_callee_saved", None, ctypes.c_int)
        self.callee_saved = fn("sfunwind_gdb_callee_saved", ctypes.c_int)
        self.has_jit_reader = hasattr(lib, "gdb_init_reader")

    def last_error(self):
        return self._last_error().decode("utf-8", "replace")

    def _check(self, status):
        if status != OK:
            raise NativeError(status, self.last_error())

    def open_file(self, path):
        module = self._open_file(os.fsencode(path))
        if module < 0:  # the negated status: NOT_FOUND only when there is no SFrame
            raise NativeError(-module, self.last_error())
        return module

    def open_bytes(self, data, vaddr, name):
        module = self._open_bytes(bytes(data), len(data), vaddr, name.encode("utf-8", "replace"))
        if module < 0:
            raise NativeError(-module, self.last_error())
        return module

    def module_info(self, module):
        info = ModuleInfo()
        self._check(self._module_info(module, ctypes.byref(info)))
        return info

    def abi(self, name):
        """The Abi named `name` (ModuleInfo.abi_name, decoded)."""
        abi = self._abis.get(name)
        if abi is None:
            info = AbiInfo()
            self._check(self._abi_info(name.encode(), ctypes.byref(info)))
            abi = self._abis[name] = Abi(self, name, info)
        return abi

    def register_name(self, abi_name, number):
        """The name of DWARF register `number` in an ABI, or None."""
        buf = ctypes.create_string_buffer(32)
        if number < 0 or number > 0xFFFFFFFF or self._register_name(abi_name.encode(), number, buf, len(buf)) != OK:
            return None
        return buf.value.decode()

    def section_vaddr(self, module, name):
        """Link-time address of a named section, or None."""
        out = ctypes.c_uint64()
        if self._section_vaddr(module, name.encode(), ctypes.byref(out)) != OK:
            return None
        return out.value

    def place(self, module, bias):
        self._check(self._place(module, bias & 0xFFFFFFFFFFFFFFFF))

    def unplace(self, module):
        self._check(self._unplace(module))

    def lookup(self, pc):
        row = Row()
        self._check(self._lookup(pc, ctypes.byref(row)))
        return row

    def describe(self, row):
        buf = ctypes.create_string_buffer(256)
        self._describe(ctypes.byref(row), buf, len(buf))
        return buf.value.decode("utf-8", "replace")

    def lookup_address(self, pc, is_return_address):
        """Where a frame's row is looked up: pc, or pc - 1 for a return address."""
        return self._lookup_address(pc & 0xFFFFFFFFFFFFFFFF, 1 if is_return_address else 0)

    def compare(self, sframe, reference):
        """The core's comparison of two walks, each a list of (pc, cfa, sp,
        fp) with None for an unknown value: (index of the first frame that
        differs or is missing on one side, or None; that difference in one
        line)."""
        def views(walk):
            arr = (FrameView * max(1, len(walk)))()
            for i, (pc, cfa, sp, fp) in enumerate(walk):
                v = arr[i]
                v.pc = pc & 0xFFFFFFFFFFFFFFFF
                for name, value in (("cfa", cfa), ("sp", sp), ("fp", fp)):
                    if value is not None:
                        setattr(v, name, value & 0xFFFFFFFFFFFFFFFF)
                        setattr(v, "has_" + name, 1)
            return arr
        out = Comparison()
        summary = ctypes.create_string_buffer(256)
        self._check(self._compare(views(sframe), len(sframe), views(reference), len(reference),
                                  ctypes.byref(out), summary, len(summary)))
        return (None if out.first < 0 else out.first), summary.value.decode("utf-8", "replace")

    def native_stats(self):
        stats = NativeStats()
        self._native_stats(ctypes.byref(stats))
        return stats

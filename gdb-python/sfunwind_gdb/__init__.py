# SPDX-License-Identifier: MIT
"""sfunwind for GDB: unwinds frames from SFrame sections.

Load with `source /path/to/gdb-python/sfunwind.py` (or, with this directory
on sys.path, `python import sfunwind_gdb; sfunwind_gdb.install()`). Then
`help sframe` lists the commands. See gdb-python/README.md."""

import gdb

from . import arch as arch_mod
from . import native
from .modules import Registry
from .unwinder import Engine, SframeUnwinder

PATH_PYTHON = "python"
PATH_NATIVE = "native"
PATH_OFF = "off"


class Session:
    """Everything sfunwind keeps in one GDB process."""

    def __init__(self, lib):
        self.lib = lib
        self.registry = Registry(lib, self._register_unwinder)
        self.engine = Engine(lib)
        self.path = PATH_PYTHON
        self.jit_loaded = False
        self.native_suspended = False  # apply_path()
        self.scan_error = None
        self.unwinders = {}      # gdb.Progspace -> its SframeUnwinder

    # -- objfiles ----------------------------------------------------------
    def _register_unwinder(self, objfile):
        # One unwinder for the program space finds a frame's module by its
        # PC: GDB tries every objfile's Python unwinders in turn, so one per
        # objfile made a frame in a program's 300th library 300 calls (and
        # where it sits: SframeUnwinder).
        progspace = objfile.progspace
        if self.unwinders.get(progspace) is None:
            unwinder = self.unwinders[progspace] = SframeUnwinder(self.engine, self, progspace)
            gdb.unwinder.register_unwinder(progspace, unwinder, replace=True)

    def _unwinders_home(self):
        # The first objfile, where an unwinder may sit, can be the one going.
        for unwinder in self.unwinders.values():
            unwinder.go_home()

    def rescan(self, place=True, objfile=None):
        """Opens the new objfiles' SFrame (or only `objfile`'s); with
        `place`, places every module now (the commands), else when a frame
        first needs it (place_stale)."""
        try:
            if objfile is None:
                added = self.registry.scan()
            else:
                added = self.registry.add(objfile)
            if place:
                added += self.registry.place()
            self.scan_error = None
        except gdb.error as e:
            # No section listing yet (no program): nothing to unwind.
            self.scan_error = str(e)
            return []
        if added:
            gdb.invalidate_cached_frames()
        return added

    def place_stale(self, progspace=None):
        """Places the modules if objfiles changed since they were placed:
        one section listing for every objfile GDB loaded meanwhile (and the
        objfiles read from target memory opened with it). True if it placed
        them. The unwinder calls it at the first frame it is asked for
        after objfiles changed, so that frame and the later ones are
        unwound with the new modules."""
        if progspace is None:
            progspace = gdb.current_progspace()
        if self.registry.placed_for is not progspace:
            # Another inferior's program space: its programs may lie at
            # the same addresses as the last one's, and its stack holds
            # other bytes.
            self.registry.stale = True
            self.engine.new_stop()
        if not self.registry.stale:
            return False
        try:
            self.registry.place()
        except gdb.error as e:
            self.scan_error = str(e)
        return True

    # -- paths ---------------------------------------------------------------
    def set_path(self, path):
        """Switches between the Python unwinder, the JIT reader and neither.
        The JIT reader is loaded only while the native path is on: GDB tries
        a loaded reader on every frame, ahead of its DWARF unwinders."""
        if path == PATH_NATIVE and not self.jit_loaded:
            gdb.execute("jit-reader-load %s" % self.lib.path, to_string=True)
            self.jit_loaded = True
        elif path != PATH_NATIVE and self.jit_loaded:
            gdb.execute("jit-reader-unload", to_string=True)
            self.jit_loaded = False
        self.path = path
        self.apply_path()

    def apply_path(self):
        """Turns the paths on and off for the chosen one. GDB's JIT reader
        interface names no program space, and the module table places one
        program space's modules at a time: while there is more than one
        inferior, the native path is suspended (the JIT reader declines
        every frame) and the Python unwinder, which knows the program space
        of each frame, takes its frames."""
        native = self.path == PATH_NATIVE
        self.native_suspended = native and len(gdb.inferiors()) > 1
        self.place_stale()
        self.lib.native_enable(1 if native and not self.native_suspended else 0)
        self.engine.active = self.path == PATH_PYTHON or self.native_suspended
        self.engine.new_stop()
        gdb.invalidate_cached_frames()

    # -- events --------------------------------------------------------------
    def on_new_objfile(self, event):
        self._unwinders_home()
        self.engine.forget_arch()
        self.rescan(place=False, objfile=getattr(event, "new_objfile", None))

    def on_clear_objfiles(self, event):
        self._unwinders_home()
        self.registry.clear()
        self.engine.forget_arch()
        self.engine.new_stop()

    def on_free_objfile(self, event):
        self._unwinders_home()
        objfile = getattr(event, "objfile", None)
        if objfile is not None and objfile.filename:
            self.registry.forget(objfile.filename)

    def on_resume(self, event):
        # A (pc, sp) recorded as a caller may be the next stop's topmost frame.
        self.engine.new_stop()

    def on_inferiors_changed(self, event):
        # An inferior added or removed (add-inferior, a fork followed with
        # detach-on-fork off, remove-inferiors): the native path is
        # suspended or resumed (apply_path).
        if self.path == PATH_NATIVE:
            self.apply_path()

    def on_stop(self, event):
        if self.path != PATH_NATIVE or self.native_suspended:
            return
        # The JIT reader interface has no frame level: tell the library which
        # frame is the topmost one, then let GDB unwind again with it.
        self.place_stale()
        try:
            frame = gdb.newest_frame()
            regs = arch_mod.for_arch(self.lib, frame.architecture().name())
            if regs is None:
                return
            sp = int(frame.read_register(regs.sp)) & 0xFFFFFFFFFFFFFFFF
            self.lib.new_stop()
            self.lib.set_topmost(frame.pc(), sp)
            gdb.invalidate_cached_frames()
        except gdb.error:
            pass


_session = None


def session():
    """The Session, or None before install()."""
    return _session


def install(library=None):
    """Loads the library, registers the event handlers and commands, and the
    unwinder for every objfile with SFrame. Idempotent."""
    global _session
    if _session is not None:
        return _session
    lib = native.Library(library)
    s = Session(lib)
    events = gdb.events
    events.new_objfile.connect(s.on_new_objfile)
    events.clear_objfiles.connect(s.on_clear_objfiles)
    if hasattr(events, "free_objfile"):
        events.free_objfile.connect(s.on_free_objfile)
    events.cont.connect(s.on_resume)
    events.inferior_call.connect(s.on_resume)
    events.memory_changed.connect(s.on_resume)
    events.register_changed.connect(s.on_resume)
    events.stop.connect(s.on_stop)
    events.new_inferior.connect(s.on_inferiors_changed)
    events.inferior_deleted.connect(s.on_inferiors_changed)
    _session = s
    from . import commands
    commands.register(s)
    s.rescan()
    return s

# SPDX-License-Identifier: MIT
"""Which objfiles have SFrame, and where each is loaded.

An objfile's SFrame section is opened from its file (sfunwind::elf::ElfFile
finds it by name, by section type or by PT_GNU_SFRAME); a 64-bit PowerPC file
without one is opened with its traceback tables instead (the library
decides). When the file is not on this machine (a remote target's "target:"
path), the SFrame section's bytes are read from the target's memory instead. The load bias (run-time address -
link-time address: PIE executables, shared libraries) comes from the
objfiles' section addresses (section_addresses()), which GDB knows for
native processes, core files and remote stubs alike (no /proc needed).

One listing gives every objfile's sections, so the modules are placed from
it when a bias is first needed after objfiles changed, not at each objfile
GDB loads: a program with 300 shared libraries loads them one
new_objfile event after another, and a listing per event made the start
quadratic (15.6 s against GDB's own 0.6 s). For the same reason an objfile
read from target memory (which needs the listing to find its .sframe) is
opened with the others at placement, not when it loads."""

import bisect
import os
import re

import gdb

from . import native

# "\t0x0000555555556198 - 0x000055555555627b is .sframe in /path/lib.so"
_INFO_FILES_LINE = re.compile(r"^\s*(0x[0-9a-fA-F]+) - (0x[0-9a-fA-F]+) is (\S+)(?: in (.*))?$")

# The sections a module is placed by, in the order tried: the SFrame
# section itself, else code whose link-time address the file gives.
PLACING_SECTIONS = (".sframe", ".text", ".plt")

# The most of a .sframe section read from target memory: the section of a
# program of about 3 GB of code (the big program's is 1.3 MB for 15 MB).
MAX_SFRAME_FROM_TARGET = 256 << 20


# The listing of those sections alone, every objfile's (GDB 13 and 18).
MAINT_SECTIONS = "maint info sections -all-objects " + " ".join(PLACING_SECTIONS)

# " [15]     0x5555555570d8->0x555555557160 at 0x000030d8: .sframe ALLOC LOAD ..."
# Loaded (ALLOC) sections only, as `info files` lists: another section is
# printed at its link-time address.
_MAINT_SECTION_LINE = re.compile(
    r"^\s*\[\s*\d+\]\s+(0x[0-9a-fA-F]+)->(0x[0-9a-fA-F]+) at 0x[0-9a-fA-F]+: (\S+) (?:.* )?ALLOC\b")


def section_addresses():
    """{file name or None (the executable): {section: (start, end)}} of the
    PLACING_SECTIONS at run time, for the current program space: from
    `maint info sections -all-objects` asked for those sections alone (GDB
    13 and 18), else from `info files`, which lists every section of every
    objfile (6,465 lines for the core of a program of 300 libraries, which
    GDB 13 takes 9 ms to print and GDB 18 7 ms; the sections asked for, 914
    lines, 3.5-4 ms to print).

    `info files` is read instead while an objfile may have no file behind
    it (one a JIT reader made, "<< JIT compiled code >>", or one without a
    name): GDB 13's `maint info sections -all-objects` prints every
    objfile's file name without checking that it has a file."""
    text = None
    if not any(o.filename is None or o.filename.startswith("<<") for o in gdb.current_progspace().objfiles()):
        try:
            text = gdb.execute(MAINT_SECTIONS, to_string=True)
        except gdb.error:
            text = None
    out = None if text is None else parse_maint_sections(text)
    return out if out is not None else parse_info_files(gdb.execute("info files", to_string=True))


def parse_maint_sections(text):
    """section_addresses() of `maint info sections -all-objects` output:
    "Exec file: `PATH', ..." (the executable: None) or "Object file:
    `PATH', ..." and their sections' lines; a core file's own sections
    ("Core file: ...") are left out. None when no line reads as a section
    of an objfile (another GDB's format: `info files` is read instead)."""
    out = {}
    where = False   # False: lines not of an objfile (a core file's)
    sections = 0    # lines read as a section of an objfile
    for line in text.splitlines():
        if line and not line[0].isspace():
            where = False
            if line.startswith(("Exec file: `", "Object file: `")):
                begin = line.index("`") + 1
                end = line.rfind("', file type")
                if end >= begin:
                    where = None if line.startswith("Exec") else line[begin:end]
            continue
        m = _MAINT_SECTION_LINE.match(line) if where is not False else None
        if not m:
            continue
        sections += 1
        start, end, name = int(m.group(1), 16), int(m.group(2), 16), m.group(3)
        if name in PLACING_SECTIONS:
            out.setdefault(where, {}).setdefault(name, (start, end))
    return out if sections else None


def parse_info_files(text):
    """section_addresses() of `info files` output: the exec file's and
    shared libraries' sections, as listed under the native process, the
    remote target or "Local exec file:". A core file's own sections
    ("load1", ...) are left out."""
    out = {}
    in_core = False
    for line in text.splitlines():
        if line and not line[0].isspace():
            in_core = line.startswith("Local core dump file")
            continue
        if in_core:
            continue
        # Most lines are other sections (20 an objfile): a string test
        # before the regex (300 libraries list 5,800 lines).
        at = line.find(" is .")
        if at < 0 or not line.startswith(PLACING_SECTIONS, at + 4):
            continue
        m = _INFO_FILES_LINE.match(line)
        if not m:
            continue
        start, end, name, where = int(m.group(1), 16), int(m.group(2), 16), m.group(3), m.group(4)
        if name in PLACING_SECTIONS:  # not .plt.got, which the test above lets through
            out.setdefault(where, {}).setdefault(name, (start, end))
    return out


class Module:
    """One objfile's SFrame section in the native module table."""

    def __init__(self, objfile, module_id, info, source):
        self.objfile = objfile
        self.filename = objfile.filename
        self.id = module_id
        self.info = info
        self.source = source          # "file" or "target memory"
        self.bias = None              # None until placed
        # (begin, end) of the FDEs at run time, once placed: the unwinder
        # checks every frame's PC against it.
        self.runtime_range = None
        self.error = None             # why it could not be placed

    def set_bias(self, bias):
        self.bias = bias
        self.runtime_range = None if bias is None else (
            (self.info.text_begin + bias) & 0xFFFFFFFFFFFFFFFF, (self.info.text_end + bias) & 0xFFFFFFFFFFFFFFFF)


class Registry:
    """The modules of every program space's objfiles (one per file), kept
    in step with GDB's objfiles by the event handlers in __init__.py, and
    placed for one program space at a time (place())."""

    def __init__(self, lib, register_unwinder):
        self.lib = lib
        # Called with an objfile that has (or, read from the target, may
        # have) SFrame: its program space needs the unwinder.
        self.register_unwinder = register_unwinder
        self.modules = {}        # objfile filename -> Module
        self.from_memory = {}    # filename -> objfile to open from target memory at placement
        self.without = set()     # filenames known to have no SFrame
        self.errors = {}         # filename -> why its SFrame could not be read
        self.stale = False       # objfiles changed since the modules were placed
        self.placed_for = None   # the gdb.Progspace they were placed for
        self.listings = 0        # section listings read (to place modules, to open them from memory)
        self._placed = []        # placed modules by run-time start (module_at)
        self._begins = []

    @staticmethod
    def _wanted(objfile):
        # Separate debug files (owner set) carry .sframe as NOBITS; the
        # stripped objfile they belong to has the bytes.
        return objfile.is_valid() and objfile.owner is None and objfile.filename

    def scan(self):
        """Opens every new objfile's SFrame section from its file (those
        read from target memory wait for place()) and forgets the objfiles
        gone. Returns the modules added. The load biases are left to
        place(): objfiles come and go (and GDB relocates a PIE executable
        when it starts) before a frame needs them."""
        added = []
        live = set()
        for objfile in (o for progspace in gdb.progspaces() for o in progspace.objfiles()):
            if not self._wanted(objfile):
                continue
            live.add(objfile.filename)
            module = self._add(objfile)
            if module is not None:
                added.append(module)
        for name in list(self.modules) + list(self.from_memory):
            if name not in live:
                self.forget(name)
        self.stale = bool(self.modules or self.from_memory)
        return added

    def add(self, objfile):
        """scan() for the one objfile GDB just loaded: the others are known,
        and a program's libraries come one new_objfile event at a time."""
        module = self._add(objfile) if self._wanted(objfile) else None
        self.stale = bool(self.modules or self.from_memory)
        return [] if module is None else [module]

    def _add(self, objfile):
        name = objfile.filename
        if name in self.modules or name in self.from_memory:
            # Known from another program space (another inferior of the
            # same program), which needs its unwinder too.
            self.register_unwinder(objfile)
            return None
        if name in self.without:
            return None
        if not self._on_this_machine(name):
            self.from_memory[name] = objfile
            self.register_unwinder(objfile)
            return None
        module = self._open(objfile)
        if module is not None:
            self.modules[name] = module
            self.register_unwinder(objfile)
        return module

    def place(self):
        """Opens the objfiles waiting to be read from target memory and
        (re)computes every module's load bias, all from one section listing
        (gdb.error when GDB has none yet: no program). Returns the modules
        it opened.

        The listing is the current program space's: a module of another
        one (another inferior's program, which may lie at the same
        addresses) is not in it and is left unplaced, so that no frame of
        this program space is looked up in it. `placed_for` says which
        program space the placement is for."""
        self.stale = False
        self.placed_for = gdb.current_progspace()
        opened = []
        if self.modules or self.from_memory:
            sections = self._section_addresses()
            waiting, self.from_memory = self.from_memory, {}
            for name, objfile in waiting.items():
                module = self._open_from_memory(objfile, sections) if objfile.is_valid() else None
                if module is not None:
                    self.modules[name] = module
                    opened.append(module)
            for module in self.modules.values():
                self._place(module, sections)
        self._index()
        return opened

    def module_at(self, pc):
        """The placed module whose run-time FDE range holds pc (its end
        included: a return address past a function that ends the range is
        looked up at pc - 1), or None."""
        i = bisect.bisect_right(self._begins, pc) - 1
        if i < 0:
            return None
        module = self._placed[i]
        return module if pc <= module.runtime_range[1] else None

    def _index(self):
        placed = sorted((m for m in self.modules.values() if m.runtime_range is not None),
                        key=lambda m: m.runtime_range[0])
        self._placed = placed
        self._begins = [m.runtime_range[0] for m in placed]

    def _section_addresses(self):
        # Every listing is counted (`sframe status`): a test checks that a
        # session makes a few, not one per objfile.
        self.listings += 1
        return section_addresses()

    @staticmethod
    def _on_this_machine(name):
        # A remote target's files are "target:" paths, which GDB reads
        # through gdbserver (or another remote target); a file that is not
        # on this machine is read from the target's memory too.
        return not name.startswith("target:") and os.path.isfile(name)

    def _open(self, objfile):
        name = objfile.filename
        try:
            module_id = self.lib.open_file(name)
        except native.NativeError as e:
            self._no_sframe(name, e)
            return None
        return Module(objfile, module_id, self.lib.module_info(module_id), "file")

    def _no_sframe(self, name, error):
        # NOT_FOUND: the file simply has no SFrame (libc, ld.so).
        if error.status != native.NOT_FOUND:
            self.errors[name] = str(error)
        self.without.add(name)

    def _open_from_memory(self, objfile, sections):
        name = objfile.filename
        where = self._sections_of(name, sections).get(".sframe")
        if where is None:
            self.without.add(name)
            return None
        start, end = where
        size = end - start
        if size > MAX_SFRAME_FROM_TARGET:
            # The size is the file's section header's: a hostile or broken
            # one made GDB allocate it whole for read_memory ("virtual
            # memory exhausted", GDB's session lost).
            self.errors[name] = ".sframe at 0x%x is %d bytes by its section header, more than the %d MiB" \
                " sfunwind reads from a target" % (start, size, MAX_SFRAME_FROM_TARGET >> 20)
            self.without.add(name)
            return None
        try:
            data = gdb.selected_inferior().read_memory(start, size).tobytes()
            # Addresses in this section are then run-time ones: bias 0.
            module_id = self.lib.open_bytes(data, start, name)
        except (gdb.error, OverflowError) as e:  # gdb.MemoryError is a gdb.error
            self.errors[name] = "cannot read .sframe at 0x%x (%d bytes) from the target: %s" % (start, size, e)
            self.without.add(name)
            return None
        except native.NativeError as e:
            self._no_sframe(name, e)
            return None
        return Module(objfile, module_id, self.lib.module_info(module_id), "target memory")

    @staticmethod
    def _sections_of(name, sections):
        if name in sections:
            return sections[name]
        # The executable's sections are listed without its name.
        progspace_file = gdb.current_progspace().filename
        if progspace_file and name == progspace_file:
            return sections.get(None, {})
        # The same file under another path (a sysroot's): by its base name,
        # when one file alone has it.
        base = os.path.basename(name)
        same = [secs for where, secs in sections.items() if where is not None and os.path.basename(where) == base]
        if len(same) == 1:
            return same[0]
        if not same and progspace_file and os.path.basename(progspace_file) == base:
            return sections.get(None, {})
        return {}

    def _place(self, module, sections):
        if module.source == "target memory":
            bias = 0
        else:
            bias = self._bias(module, self._sections_of(module.filename, sections))
        if bias is None:
            objfile = module.objfile
            if objfile.is_valid() and objfile.progspace is not self.placed_for:
                module.error = "loaded by another inferior's program, not the selected one's"
            else:
                module.error = "no section of %s is in GDB's section listing: load address unknown" % module.filename
            self._unplace(module)
            return
        if bias != module.bias:
            self.lib.place(module.id, bias)
            module.info = self.lib.module_info(module.id)
            module.set_bias(bias)
        module.error = None

    def _bias(self, module, mine):
        for name in PLACING_SECTIONS:
            runtime = mine.get(name)
            if runtime is None:
                continue
            link = self.lib.section_vaddr(module.id, name)
            if link is None:
                continue
            return (runtime[0] - link) & 0xFFFFFFFFFFFFFFFF
        return None

    def forget(self, name):
        self.from_memory.pop(name, None)
        module = self.modules.pop(name, None)
        if module is not None and self._unplace(module):
            self._index()

    def _unplace(self, module):
        """Takes a placed module out of the native table; True if it was placed."""
        if module.bias is None:
            return False
        self.lib.unplace(module.id)
        module.set_bias(None)
        return True

    def clear(self):
        self.stale = False
        self.modules.clear()
        self.from_memory.clear()
        self._index()
        self.without.clear()
        self.errors.clear()
        self.lib.reset()

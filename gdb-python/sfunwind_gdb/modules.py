# SPDX-License-Identifier: MIT
"""Which objfiles have SFrame, and where each is loaded.

An objfile's SFrame section is opened from its file (sfunwind::elf::ElfFile
finds it by name, by section type or by PT_GNU_SFRAME); a 64-bit PowerPC file
without one is opened with its traceback tables instead (the library
decides). When the file is not on this machine (a remote target's "target:"
path), the SFrame section's bytes are read from the target's memory instead. The load bias (run-time address -
link-time address: PIE executables, shared libraries) comes from the
section addresses `info files` prints, which GDB knows for native processes,
core files and remote stubs alike (no /proc needed)."""

import os
import re

import gdb

from . import native

# "\t0x0000555555556198 - 0x000055555555627b is .sframe in /path/lib.so"
_INFO_FILES_LINE = re.compile(r"^\s*(0x[0-9a-fA-F]+) - (0x[0-9a-fA-F]+) is (\S+)(?: in (.*))?$")


def section_addresses():
    """{file name or None (the executable): {section: (start, end)}} from
    `info files`: the exec file's and shared libraries' sections, as listed
    under the native process, the remote target or "Local exec file:". A
    core file's own sections ("load1", ...) are left out."""
    text = gdb.execute("info files", to_string=True)
    out = {}
    in_core = False
    for line in text.splitlines():
        if line and not line[0].isspace():
            in_core = line.startswith("Local core dump file")
            continue
        if in_core:
            continue
        m = _INFO_FILES_LINE.match(line)
        if not m:
            continue
        start, end, name, where = int(m.group(1), 16), int(m.group(2), 16), m.group(3), m.group(4)
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
        self.unwinder = None
        self.error = None             # why it could not be placed

    def set_bias(self, bias):
        self.bias = bias
        self.runtime_range = None if bias is None else (
            (self.info.text_begin + bias) & 0xFFFFFFFFFFFFFFFF, (self.info.text_end + bias) & 0xFFFFFFFFFFFFFFFF)


class Registry:
    """The modules of the current program space, kept in step with GDB's
    objfiles by the event handlers in __init__.py."""

    def __init__(self, lib):
        self.lib = lib
        self.modules = {}        # objfile filename -> Module
        self.without = set()     # filenames known to have no SFrame
        self.errors = {}         # filename -> why its SFrame could not be read

    @staticmethod
    def _wanted(objfile):
        # Separate debug files (owner set) carry .sframe as NOBITS; the
        # stripped objfile they belong to has the bytes.
        return objfile.is_valid() and objfile.owner is None and objfile.filename

    def scan(self, register_unwinder):
        """Opens every new objfile's SFrame section and (re)computes every
        module's load bias. Returns the modules added."""
        added = []
        live = set()
        sections = None
        for objfile in gdb.objfiles():
            if not self._wanted(objfile):
                continue
            name = objfile.filename
            live.add(name)
            if name in self.modules:
                continue
            if name in self.without:
                continue
            if sections is None:
                sections = section_addresses()
            module = self._open(objfile, sections)
            if module is None:
                continue
            self.modules[name] = module
            module.unwinder = register_unwinder(objfile, module)
            added.append(module)
        for name in list(self.modules):
            if name not in live:
                self.forget(name)
        if self.modules:
            if sections is None:
                sections = section_addresses()
            for module in self.modules.values():
                self._place(module, sections)
        return added

    def _open(self, objfile, sections):
        name = objfile.filename
        path = name[len("target:"):] if name.startswith("target:") else name
        try:
            if not name.startswith("target:") and os.path.isfile(path):
                module_id = self.lib.open_file(path)
                source = "file"
            else:
                module_id = self._open_from_memory(name, sections)
                if module_id is None:
                    self.without.add(name)
                    return None
                source = "target memory"
        except native.NativeError as e:
            # NOT_FOUND: the file simply has no SFrame (libc, ld.so).
            if e.status != native.NOT_FOUND:
                self.errors[name] = str(e)
            self.without.add(name)
            return None
        return Module(objfile, module_id, self.lib.module_info(module_id), source)

    def _open_from_memory(self, name, sections):
        mine = self._sections_of(name, sections)
        where = mine.get(".sframe")
        if where is None:
            return None
        start, end = where
        try:
            data = gdb.selected_inferior().read_memory(start, end - start).tobytes()
        except gdb.MemoryError:
            self.errors[name] = "cannot read .sframe at 0x%x from the target" % start
            return None
        # Addresses in this section are then run-time ones: bias 0.
        return self.lib.open_bytes(data, start, name)

    @staticmethod
    def _sections_of(name, sections):
        if name in sections:
            return sections[name]
        base = os.path.basename(name)
        for where, secs in sections.items():
            if where is not None and os.path.basename(where) == base:
                return secs
        # The executable's sections carry no " in FILE".
        progspace_file = gdb.current_progspace().filename
        if progspace_file and (name == progspace_file or os.path.basename(progspace_file) == base):
            return sections.get(None, {})
        return {}

    def _place(self, module, sections):
        if module.source == "target memory":
            bias = 0
        else:
            bias = self._bias(module, self._sections_of(module.filename, sections))
        if bias is None:
            module.error = "no section of %s is in `info files`: load address unknown" % module.filename
            if module.bias is not None:
                self.lib.unplace(module.id)
                module.set_bias(None)
            return
        if bias != module.bias:
            self.lib.place(module.id, bias)
            module.info = self.lib.module_info(module.id)
            module.set_bias(bias)
        module.error = None

    def _bias(self, module, mine):
        for name in (".sframe", ".text", ".plt"):
            runtime = mine.get(name)
            if runtime is None:
                continue
            link = self.lib.section_vaddr(module.id, name)
            if link is None:
                continue
            return (runtime[0] - link) & 0xFFFFFFFFFFFFFFFF
        return None

    def forget(self, name):
        module = self.modules.pop(name, None)
        if module is not None and module.bias is not None:
            self.lib.unplace(module.id)

    def clear(self):
        self.modules.clear()
        self.without.clear()
        self.errors.clear()
        self.lib.reset()

    def ranges(self):
        """Sorted [(begin, end, module)] of the placed modules (run time)."""
        out = []
        for module in self.modules.values():
            r = module.runtime_range
            if r is not None:
                out.append((r[0], r[1], module))
        out.sort(key=lambda t: t[0])
        return out

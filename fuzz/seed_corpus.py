#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""Seed corpora for the fuzz targets (fuzz/seed.sh runs this).

Sections come from the GNU as test vectors in tests/vectors (their "content" bytes) and
from the .sframe section of every committed fixture. ELF seeds are the small
fixtures and tests/unit/data files themselves. The ppc64 seeds are pieces of
the traceback-table fixtures' .text with the function symbols inside them.

Sections are cut out of the files here rather than with `objcopy -O binary
--only-section=.sframe`, whose Debian build reads only x86 ELF files: the
aarch64, s390x and ppc64 fixtures would be left out.
"""
import argparse
import hashlib
import json
import pathlib
import struct

MAX_ELF = 64 * 1024      # whole-file seeds: the dynamic fixtures, not the static ones
MAX_SECTION = 0xffff     # fuzz_step's section length field is 16 bits
TBTAB_CHUNK = 4096
TBTAB_CHUNKS = 24        # per fixture

STEP_HEADER = struct.Struct("<BBHIQQQI")  # fuzz/fuzz_step.cpp's layout, 0x24 bytes
assert STEP_HEADER.size == 0x24


class Elf:
    """The section headers and symbols of an ELF64 file, either byte order."""

    def __init__(self, data):
        if data[:4] != b"\x7fELF" or data[4] != 2:
            raise ValueError("not ELF64")
        self.data = data
        self.e = "<" if data[5] == 1 else ">"
        shoff, = struct.unpack_from(self.e + "Q", data, 0x28)
        shentsize, shnum, shstrndx = struct.unpack_from(self.e + "HHH", data, 0x3a)
        self.sections = []
        if shoff == 0 or shnum == 0 or shentsize != 64:
            return
        raw = [struct.unpack_from(self.e + "IIQQQQIIQQ", data, shoff + 64 * i) for i in range(shnum)]
        names = raw[shstrndx] if shstrndx < shnum else None
        for h in raw:
            name = self._str(names[4], h[0]) if names else ""
            self.sections.append({"name": name, "type": h[1], "addr": h[3], "offset": h[4],
                                  "size": h[5], "link": h[6]})

    def _str(self, table_off, at):
        end = self.data.index(b"\0", table_off + at)
        return self.data[table_off + at:end].decode("latin-1")

    def section(self, name):
        for s in self.sections:
            if s["name"] == name and s["type"] != 8:  # not SHT_NOBITS
                return s
        return None

    def bytes_of(self, s):
        return self.data[s["offset"]:s["offset"] + s["size"]]

    def functions(self):
        """(value, size) of every STT_FUNC symbol in .symtab."""
        out = []
        for s in self.sections:
            if s["type"] != 2:  # SHT_SYMTAB
                continue
            table = self.bytes_of(s)
            for at in range(24, len(table) - 23, 24):
                _, info, _, shndx, value, size = struct.unpack_from(self.e + "IBBHQQ", table, at)
                if info & 0xf == 2 and shndx != 0:
                    out.append((value, size))
        return sorted(set(out))


class Corpus:
    def __init__(self, root, name):
        self.dir = root / name
        self.dir.mkdir(parents=True, exist_ok=True)
        self.count = 0

    def add(self, data):
        if not data:
            return
        path = self.dir / hashlib.sha1(data).hexdigest()
        if not path.exists():
            path.write_bytes(data)
            self.count += 1


def step_seeds(section, corpus):
    """Two stacks per section: one whose slots hold code and stack markers
    (fuzz_step resolves them into FDE starts and stack addresses), one of
    zeros."""
    words = []
    for i in range(64):
        if i % 2 == 0:
            words.append(0xfeed << 48 | (i // 2) << 16 | 4)          # a return address into FDE i/2
        else:
            words.append(0xfee5 << 48 | (i + 1) * 8)                 # a saved frame pointer
    stack = b"".join(struct.pack("<Q", w) for w in words)
    for fde, flags in ((0, 0b0011), (1, 0b0111)):
        header = STEP_HEADER.pack(flags, 16, len(section), fde << 16 | 8, 0xfee5 << 48 | 64,
                                  0xfeed << 48 | 1 << 16 | 12, 0x7ffd00000100, 0)
        corpus.add(header + section + stack)
    corpus.add(STEP_HEADER.pack(1, 3, len(section), 0, 0, 0, 0, 0) + section + bytes(128))


def tbtab_seeds(elf, corpus):
    text = elf.section(".text")
    if text is None:
        return
    code = elf.bytes_of(text)
    big = elf.e == ">"
    funcs = elf.functions()
    opd = elf.section(".opd")
    if opd is not None:  # ELFv1: symbols name descriptors; the entry is the first doubleword
        table = elf.bytes_of(opd)
        resolved = []
        for value, size in funcs:
            if opd["addr"] <= value < opd["addr"] + opd["size"] - 7:
                entry, = struct.unpack_from(elf.e + "Q", table, value - opd["addr"])
                resolved.append((entry, size))
            else:
                resolved.append((value, size))
        funcs = sorted(set(resolved))
    stride = max(TBTAB_CHUNK, (len(code) // TBTAB_CHUNKS) & ~3)
    for begin in range(0, len(code), stride):
        chunk = code[begin:begin + TBTAB_CHUNK]
        lo = text["addr"] + begin
        inside = [(v - lo, s) for v, s in funcs if lo <= v < lo + len(chunk)][:8]
        header = bytes([1 if big else 0, len(inside)])
        header += b"".join(struct.pack("<II", off, size) for off, size in inside)
        corpus.add(header + chunk)
        # The same code without section headers (PT_LOAD path, no symbols).
        corpus.add(bytes([(1 if big else 0) | 2, 0]) + chunk)


def callee_saved_seeds(elf, corpus, abi_index, entry_cfa):
    """fuzz_callee_saved inputs: each function's code of a fixture of an ABI
    the analysis reads (abi_index: fuzz_callee_saved.cpp's order), with the
    entry row (CFA = SP + entry_cfa) only: the analysis then counts the
    stack itself, and the fuzzer mutates rows in."""
    text = elf.section(".text")
    if text is None:
        return
    base, code = text["addr"], elf.bytes_of(text)
    for value, size in elf.functions()[:64]:
        if size == 0 or value < base or value + size > base + len(code):
            continue
        corpus.add(bytes([1 + 17 * abi_index, 0, 0, entry_cfa // 8]) + code[value - base:value - base + size])


def switch_table_seed(corpus):
    """A fuzz_callee_saved input whose switch table the analysis reads
    (x86_64_switch_table.hpp): tests/unit/test_callee_saved.cpp's switch,
    its table of two offsets right after the code (the fuzzer gives its
    input's bytes as the read-only data)."""
    code = bytes([0x53, 0x48, 0x83, 0xec, 0x10, 0x85, 0xf6, 0x74, 0x21, 0x83, 0xff, 0x01, 0x77,
                  0x1e, 0x89, 0xf8, 0x48, 0x8d, 0x0d, 0x1b, 0x00, 0x00, 0x00, 0x48, 0x89, 0xf3,
                  0x48, 0x63, 0x04, 0x81, 0x48, 0x01, 0xc8, 0xff, 0xe0, 0xb8, 0x01, 0x00, 0x00,
                  0x00, 0xeb, 0x02, 0x31, 0xc0, 0x48, 0x83, 0xc4, 0x10, 0x5b, 0xc3])
    table = struct.pack("<ii", 0x23 - len(code), 0x2c - len(code))
    corpus.add(bytes([1, 0, 0, 1]) + code + table)


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--repo", type=pathlib.Path, required=True)
    ap.add_argument("--out", type=pathlib.Path, required=True)
    args = ap.parse_args()

    names = ["fuzz_section", "fuzz_lookup", "fuzz_step", "fuzz_elf", "fuzz_tbtab", "fuzz_convert",
             "fuzz_callee_saved"]
    corpora = {n: Corpus(args.out, n) for n in names}

    sections = []
    for path in sorted((args.repo / "tests" / "vectors" / "gas-sframe").glob("*.json")):
        sections.append(bytes(json.loads(path.read_text())["content"]))

    elf_files = sorted(p for d in ("tests/fixtures/bin", "tests/unit/data")
                       for p in (args.repo / d).rglob("*") if p.is_file() and p.suffix not in (".c", ".sh"))
    for path in elf_files:
        data = path.read_bytes()
        try:
            elf = Elf(data)
        except (ValueError, struct.error):
            continue
        s = elf.section(".sframe")
        if s is not None:
            sections.append(elf.bytes_of(s))
        # e_machine: EM_X86_64 (62), EM_AARCH64 (183), EM_S390 (22, big-endian)
        if len(data) > 19 and data[18] == 62 and data[19] == 0:
            callee_saved_seeds(elf, corpora["fuzz_callee_saved"], 0, 8)
        elif len(data) > 19 and data[18] == 183 and data[19] == 0:
            callee_saved_seeds(elf, corpora["fuzz_callee_saved"], 1, 0)
        elif len(data) > 19 and data[18] == 0 and data[19] == 22:
            callee_saved_seeds(elf, corpora["fuzz_callee_saved"], 3, 160)
        if len(data) <= MAX_ELF:
            corpora["fuzz_elf"].add(data)
            if elf.section(".eh_frame") or elf.section(".debug_frame"):
                corpora["fuzz_convert"].add(data)

    switch_table_seed(corpora["fuzz_callee_saved"])

    for section in sections:
        corpora["fuzz_section"].add(section)
        corpora["fuzz_lookup"].add(section)
        if len(section) <= MAX_SECTION:
            step_seeds(section, corpora["fuzz_step"])

    for path in sorted((args.repo / "tests/fixtures/ppc64/bin").rglob("tbtab-*")):
        tbtab_seeds(Elf(path.read_bytes()), corpora["fuzz_tbtab"])

    for n in names:
        print(f"{n}: {corpora[n].count} seeds in {corpora[n].dir}")


if __name__ == "__main__":
    main()

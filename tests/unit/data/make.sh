#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# tests/unit/data/make.sh: rebuild the small ELF inputs of test_elf.cpp and
# test_cfi.cpp from prog.c. The outputs are committed, so the tests need no
# compiler; run this only to change them (then update the tests' expectations).
#
# Needs the Debian 12 host toolchain (gcc 12, binutils 2.40, which writes
# SFrame v1 with -Wa,--gsframe), gcc-aarch64-linux-gnu, and python3.
set -euo pipefail

cd "$(dirname "${BASH_SOURCE[0]}")"
SF=(-Wa,--gsframe)
# Reproducible: no paths or dates in the outputs.
COMMON=(-O2 -ffile-prefix-map="$PWD"=. -Wl,--build-id=sha1)

# PIE and non-PIE x86-64 programs with .sframe, .eh_frame and .symtab.
gcc "${COMMON[@]}" "${SF[@]}" -fPIE -pie prog.c -o x86_64-pie
gcc "${COMMON[@]}" "${SF[@]}" -fno-pie -no-pie prog.c -o x86_64-nopie
# A shared library, and a copy with only .dynsym left.
gcc "${COMMON[@]}" "${SF[@]}" -fPIC -shared prog.c -o x86_64-lib.so
strip --strip-all x86_64-lib.so -o x86_64-lib-stripped.so
# CFI in .debug_frame only (the C runtime's objects still bring .eh_frame).
gcc "${COMMON[@]}" "${SF[@]}" -g -fno-asynchronous-unwind-tables -fno-pie -no-pie prog.c \
    -o x86_64-debugframe
objcopy --strip-debug --keep-section=.debug_frame x86_64-debugframe
# 32-bit ELF: only the error path reads it.
gcc -m32 -O2 -c prog.c -o x86-32.o
# AArch64, little-endian PIE; and big-endian, freestanding (no big-endian libc).
aarch64-linux-gnu-gcc "${COMMON[@]}" -Wl,-z,max-page-size=4096 "${SF[@]}" prog.c -o aarch64-pie
aarch64-linux-gnu-gcc "${COMMON[@]}" -Wl,-z,max-page-size=4096 "${SF[@]}" -mbig-endian -nostdlib -static -e main prog.c \
    -o aarch64be-static

# Patched copies of x86_64-pie:
#   x86_64-noshdr   no section headers (e_shoff, e_shnum, e_shstrndx zeroed):
#                   only PT_GNU_SFRAME finds the SFrame data. strip(1) cannot
#                   do this; it keeps section headers.
#   x86_64-sftype   .sframe renamed "sframe" (sh_name + 1) with type
#                   SHT_GNU_SFRAME: only the section type finds it.
python3 - <<'EOF'
import struct

def patch(src, dst, fn):
    data = bytearray(open(src, 'rb').read())
    fn(data)
    open(dst, 'wb').write(data)

def no_shdr(d):
    struct.pack_into('<Q', d, 0x28, 0)   # e_shoff
    struct.pack_into('<H', d, 0x3c, 0)   # e_shnum
    struct.pack_into('<H', d, 0x3e, 0)   # e_shstrndx

def sframe_by_type(d):
    shoff, = struct.unpack_from('<Q', d, 0x28)
    shentsize, shnum, shstrndx = struct.unpack_from('<HHH', d, 0x3a)
    stroff, = struct.unpack_from('<Q', d, shoff + shstrndx * shentsize + 0x18)
    for i in range(shnum):
        hdr = shoff + i * shentsize
        name, = struct.unpack_from('<I', d, hdr)
        end = d.index(0, stroff + name)
        if d[stroff + name:end] == b'.sframe':
            struct.pack_into('<II', d, hdr, name + 1, 0x6ffffff4)
            return
    raise SystemExit('no .sframe in x86_64-pie')

patch('x86_64-pie', 'x86_64-noshdr', no_shdr)
patch('x86_64-pie', 'x86_64-sftype', sframe_by_type)
EOF
chmod +x x86_64-noshdr x86_64-sftype
ls -l x86_64-* x86-32.o aarch64-*

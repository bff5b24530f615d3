// SPDX-License-Identifier: MIT
// Capstone's architectures that the callee-saved analysis does not decode,
// left out of a module that links Capstone's static archive (the GDB
// library, the LLDB plugin, the CLI: SFUNWIND_STATIC_CAPSTONE in the
// top-level CMakeLists.txt).
//
// Why: Debian builds libcapstone.a with every architecture, and cs.o, the
// member every program pulls in, refers to each one's <Arch>_global_init and
// <Arch>_option (Capstone 4.0 and 5.0 alike). The linker then takes every
// architecture's module, with its tables: with Capstone 4, 1.27 MB of
// pointers in .data.rel.ro (M68K's opcode table alone is 1 MB) besides the
// 67 KB of the three used here. The dynamic loader relocates them, so every
// page of them is written and resident in each debugger that loads
// sfunwind, though nothing reads them (GDB 13's peak RSS at the big
// program's first backtrace: 1.7 MB less without them). Defined here, before the
// archive is searched, these names keep those members out; cs_open() on one of
// these architectures then fails with CS_ERR_ARCH, as on a Capstone built
// without it. The decoders open x86 (x86_64_decoder.cpp), AArch64
// (aarch64_decoder.cpp) and SystemZ (s390x_decoder.cpp) only; those three
// are not defined here, so the archive's own modules serve them.
//
// The list covers the architectures of Capstone 4.0 (Debian 12) and 5.0
// (sid). A name that an archive does not refer to costs one small function;
// an architecture a later Capstone adds is linked in as before.
#include <capstone/capstone.h>
#include <cstddef>

// Capstone's handle structure (cs_priv.h, not installed): only pointed to.
struct cs_struct;

namespace {

// What cs_open() gets from an architecture's init function when the
// architecture is not there.
cs_err absent_architecture(cs_struct* /*handle*/) {
    return CS_ERR_ARCH;
}

cs_err absent_option(cs_struct* /*handle*/, cs_opt_type /*type*/, std::size_t /*value*/) {
    return CS_ERR_ARCH;
}

} // namespace

// cs.o calls these through its per-architecture tables (C linkage, hidden:
// they must not interpose on a shared Capstone elsewhere in the debugger).
#define SFUNWIND_ABSENT_ARCHITECTURE(arch)                                                         \
    extern "C" __attribute__((visibility("hidden"))) cs_err arch##_global_init(cs_struct* h) {     \
        return absent_architecture(h);                                                             \
    }                                                                                              \
    extern "C" __attribute__((visibility("hidden")))                                               \
    cs_err arch##_option(cs_struct* h, cs_opt_type type, std::size_t value) {                      \
        return absent_option(h, type, value);                                                      \
    }

SFUNWIND_ABSENT_ARCHITECTURE(ARM)
SFUNWIND_ABSENT_ARCHITECTURE(Mips)
SFUNWIND_ABSENT_ARCHITECTURE(PPC)
SFUNWIND_ABSENT_ARCHITECTURE(Sparc)
SFUNWIND_ABSENT_ARCHITECTURE(XCore)
SFUNWIND_ABSENT_ARCHITECTURE(M68K)
SFUNWIND_ABSENT_ARCHITECTURE(TMS320C64x)
SFUNWIND_ABSENT_ARCHITECTURE(M680X)
SFUNWIND_ABSENT_ARCHITECTURE(EVM)
SFUNWIND_ABSENT_ARCHITECTURE(MOS65XX)
SFUNWIND_ABSENT_ARCHITECTURE(WASM)
SFUNWIND_ABSENT_ARCHITECTURE(BPF)
SFUNWIND_ABSENT_ARCHITECTURE(RISCV)
SFUNWIND_ABSENT_ARCHITECTURE(SH)
SFUNWIND_ABSENT_ARCHITECTURE(TRICORE)

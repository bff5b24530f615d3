/* SPDX-License-Identifier: MIT */
/* The C interface of libsfunwind_gdb.so: what GDB's Python side (through
 * ctypes) and GDB's JIT reader interface share. The library holds one table
 * of modules (an executable or shared library's unwind table and its load
 * bias: the SFrame section, or for a 64-bit PowerPC file without one, its
 * traceback tables); Python fills it, and both unwind paths read it:
 *   - the Python unwinder calls sfunwind_gdb_unwind() for each frame;
 *   - after `jit-reader-load` of this same file, GDB calls the reader entry
 *     points (jit_reader.cpp) for each frame, without Python.
 * GDB loads the file once (dlopen of the same path returns the same handle),
 * so the table is shared.
 *
 * Plain C types only, so that one binary serves every Python version ctypes
 * runs in (GDB 13: Python 3.11; GDB 18: Python 3.14). All calls are made from
 * GDB's main thread; the library is not thread-safe.
 *
 * Return codes: 0 on success, otherwise an sfunwind_gdb_status value;
 * sfunwind_gdb_last_error() then describes the failure. */
#pragma once

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

/* Bumped when a struct or a signature changes; Python refuses a mismatch. */
enum { SFUNWIND_GDB_API_VERSION = 11 };

/* The values of sfunwind::Errc + 1 (0 is success). */
enum sfunwind_gdb_status {
    SFUNWIND_GDB_OK = 0,
    SFUNWIND_GDB_TRUNCATED = 1,
    SFUNWIND_GDB_BAD_MAGIC = 2,
    SFUNWIND_GDB_UNSUPPORTED = 3,
    SFUNWIND_GDB_MALFORMED = 4,
    SFUNWIND_GDB_NOT_FOUND = 5,
    SFUNWIND_GDB_MEMORY_UNREADABLE = 6,
    SFUNWIND_GDB_BAD_FRAME = 7,
    SFUNWIND_GDB_UNSAFE_RULE = 8,
    SFUNWIND_GDB_IO = 9,
    SFUNWIND_GDB_OUTERMOST = 10,
    SFUNWIND_GDB_BAD_ARGUMENT = 11
};

/* A register rule (sfunwind::RegRule). kind: 0 undefined, 1 same value,
 * 2 at CFA+offset, 3 CFA+offset, 4 at reg+offset, 5 reg+offset. */
struct sfunwind_gdb_rule {
    uint8_t kind;
    uint8_t source; /* 0 FRE, 1 header, 2 padding, 3 absent */
    uint16_t reg;
    int32_t offset;
};

enum sfunwind_gdb_row_flags {
    SFUNWIND_GDB_ROW_SIGNAL = 1,
    SFUNWIND_GDB_ROW_MANGLED_RA = 2,
    SFUNWIND_GDB_ROW_PAUTH_KEY_B = 4,
    SFUNWIND_GDB_ROW_OUTERMOST = 8,
    SFUNWIND_GDB_ROW_PC_MASK = 16,
    SFUNWIND_GDB_ROW_TOPMOST_ONLY = 32
};

/* A row (sfunwind::Row) with its addresses at run time (link-time + bias),
 * plus the stack window its step reads (sfunwind::plan_reads). From ppc64
 * traceback tables: fde_index 0, fre_index the run of instructions with the
 * same rules within the function. */
struct sfunwind_gdb_row {
    uint64_t pc_begin;
    uint64_t pc_end;
    uint64_t func_start;
    uint32_t func_size;
    uint32_t fde_index;
    uint32_t fre_index;
    int32_t module; /* module id */
    uint16_t cfa_reg;
    uint8_t cfa_deref;
    uint8_t reserved;
    int32_t cfa_offset;
    struct sfunwind_gdb_rule ra;
    struct sfunwind_gdb_rule fp;
    uint32_t flags; /* sfunwind_gdb_row_flags */
    /* Window: [value of window_reg + window_offset, + window_size). */
    uint16_t window_reg;
    uint16_t reserved2;
    uint32_t window_size;
    int64_t window_offset;
};

/* Fills `len` bytes at `buf` from target address `addr`; returns 1 on
 * success, 0 if any byte is unreadable. */
typedef int (*sfunwind_gdb_read_fn)(uint64_t addr, void* buf, size_t len);
/* Stores the value of DWARF register `reg` in *value; returns 1 if known. */
typedef int (*sfunwind_gdb_reg_fn)(uint32_t reg, uint64_t* value);

/* Where a module's rows come from. */
enum sfunwind_gdb_table {
    SFUNWIND_GDB_TABLE_SFRAME = 0,
    /* 64-bit PowerPC traceback tables (ELF ABI 3.3), for a file without
     * SFrame: no section, no FDEs or FREs; rows per function, from its
     * table and its code (sfunwind/ppc64/index.hpp). */
    SFUNWIND_GDB_TABLE_PPC64_TRACEBACK = 1
};

/* The SFrame fields (version to section_size) are 0 for other tables. */
struct sfunwind_gdb_module_info {
    uint32_t version;  /* SFrame version */
    uint32_t abi_arch; /* sfh_abi_arch */
    uint32_t flags;    /* sfh_flags */
    uint32_t num_fdes;
    uint32_t num_fres;
    uint32_t placed;        /* sfunwind_gdb_place() was called */
    uint64_t section_vaddr; /* link-time address of the section */
    uint64_t section_size;  /* bytes used */
    uint64_t text_begin;    /* link-time [begin, end) the table covers */
    uint64_t text_end;
    uint64_t bias;   /* run time - link time, once placed */
    uint16_t sp_reg; /* DWARF numbers of the ABI's SP, FP, RA */
    uint16_t fp_reg;
    uint16_t ra_reg;
    uint16_t ra_in_register; /* the ABI has a link register */
    int32_t sp_from_cfa;     /* caller SP = CFA + this */
    uint32_t table;          /* sfunwind_gdb_table */
    uint32_t num_functions;  /* traceback tables: functions with a table */
    uint32_t reserved;
    char abi_name[16]; /* "amd64", "ppc64le", ... (NUL-terminated) */
    char kind[32];     /* "SFrame v3", "ppc64 traceback tables" */
};

/* An ABI's registers and stack layout (sfunwind::Abi). */
struct sfunwind_gdb_abi_info {
    uint16_t sp_reg; /* DWARF numbers of the SP, FP, RA */
    uint16_t fp_reg;
    uint16_t ra_reg;
    uint16_t ra_in_register; /* the ABI has a link register */
    int32_t sp_from_cfa;     /* caller SP = CFA + this */
    uint32_t reserved;
};

int sfunwind_gdb_api_version(void);
/* The message of the last failed call (empty if none). Valid until the next call. */
const char* sfunwind_gdb_last_error(void);

/* Opens the SFrame section of an ELF file (by name, section type, or
 * PT_GNU_SFRAME); a 64-bit PowerPC file without SFrame is opened with its
 * traceback tables instead. Returns a module id >= 0, or the negated status:
 * -SFUNWIND_GDB_NOT_FOUND when the file has neither, another status when its
 * .sframe is damaged (truncated, malformed, unsupported) or it is no ELF. */
int32_t sfunwind_gdb_open_file(const char* path);
/* A module from the bytes of a section read elsewhere (a remote target's
 * memory, a separate file); `vaddr` is the address the bytes are at, in the
 * same terms as the PCs later looked up with bias 0. The bytes are copied.
 * Returns a module id >= 0, or the negated status. */
int32_t sfunwind_gdb_open_bytes(const uint8_t* bytes, size_t size, uint64_t vaddr,
                                const char* name);
int sfunwind_gdb_get_module_info(int32_t module, struct sfunwind_gdb_module_info* out);
/* The ABI named `abi_name` (sfunwind_gdb_module_info.abi_name: "amd64",
 * "aarch64", "aarch64_be", "s390x", "ppc64", "ppc64le"), for callers that
 * know the architecture but no module; BAD_ARGUMENT for another name. */
int sfunwind_gdb_get_abi_info(const char* abi_name, struct sfunwind_gdb_abi_info* out);
/* The psABI's name of DWARF register `reg` in that ABI ("rbp", "x29",
 * "r14", "f2"), NUL-terminated in `buf` (cut to `size` bytes); NOT_FOUND
 * when the ABI gives the number no register sfunwind names. */
int sfunwind_gdb_register_name(const char* abi_name, uint32_t reg, char* buf, size_t size);
/* Link-time address of a named ELF section of a module opened from a file
 * (for load bias computations); NOT_FOUND if there is none. */
int sfunwind_gdb_section_vaddr(int32_t module, const char* name, uint64_t* out);
/* Makes the module answer lookups for PCs in its FDE range + bias. */
int sfunwind_gdb_place(int32_t module, uint64_t bias);
/* Stops lookups in the module (it stays open and can be placed again). */
int sfunwind_gdb_unplace(int32_t module);
/* Closes every module (ids are not reused). */
void sfunwind_gdb_reset(void);
/* The id of the placed module covering run-time `pc`, or -1. */
int32_t sfunwind_gdb_module_at(uint64_t pc);

/* The row for run-time `pc` (already pc - 1 for a return address). */
int sfunwind_gdb_lookup(uint64_t pc, struct sfunwind_gdb_row* out);
/* The row for a frame whose registers are (pc, sp), at GDB frame level
 * `level` (-1 when unknown): decides whether pc is exact (the topmost frame,
 * a frame a signal interrupted) or a return address (looked up at pc - 1),
 * from the level, the frames sfunwind_gdb_unwind() and the JIT reader
 * produced since the last sfunwind_gdb_new_stop(), and the rows (see
 * module_table.cpp). *topmost receives 1 when the frame's registers are all
 * live. */
int sfunwind_gdb_lookup_frame(uint64_t pc, uint64_t sp, int32_t level, struct sfunwind_gdb_row* out,
                              int* topmost);
/* "CFA=rsp+16 RA=[CFA-8] FP=u" for a row. Returns the length written. */
size_t sfunwind_gdb_describe(const struct sfunwind_gdb_row* row, char* buf, size_t size);

/* Where a frame's row and symbol are looked up (sfunwind::FrameAddress): its
 * pc, or pc - 1 when the pc is a return address (`is_return_address`
 * non-zero: a caller frame that no signal interrupted). */
uint64_t sfunwind_gdb_lookup_address(uint64_t pc, int is_return_address);

/* One frame of a walk for sfunwind_gdb_compare(): a value the walk does not
 * know has its has_ field 0. */
struct sfunwind_gdb_frame_view {
    uint64_t pc;
    uint64_t cfa;
    uint64_t sp;
    uint64_t fp;
    uint8_t has_cfa;
    uint8_t has_sp;
    uint8_t has_fp;
    uint8_t reserved[5];
};
struct sfunwind_gdb_comparison {
    uint32_t compared; /* frames both walks have */
    uint32_t equal;    /* leading frames that agree */
    int32_t first;     /* the first frame that differs or is missing on one side; -1: none */
    uint32_t kind;     /* sfunwind::Divergence::Kind: 0 pc, 1 cfa, 2 sp, 3 fp, 4 SFrame
                          walk shorter, 5 reference walk shorter */
};
/* Two walks of one stop (GDB with sfunwind, and GDB's own unwinders)
 * compared by the core's engine (sfunwind::compare_backtraces). Both come
 * from GDB, which knows the same values of a frame either way: a value one
 * walk knows and the other does not is a difference. `summary` receives the
 * first difference in one line ("CFA 0x... (SFrame) vs 0x... (GDB)"). */
int sfunwind_gdb_compare(const struct sfunwind_gdb_frame_view* sframe, size_t sframe_count,
                         const struct sfunwind_gdb_frame_view* reference, size_t reference_count,
                         struct sfunwind_gdb_comparison* out, char* summary, size_t summary_size);
/* A frame as GDB's Python unwinder sees it. */
struct sfunwind_gdb_frame {
    uint64_t pc;
    uint64_t sp; /* if has_sp */
    uint64_t fp; /* if has_fp */
    uint32_t has_sp;
    uint32_t has_fp;
    int32_t level; /* GDB's frame level, -1 if unknown */
    uint32_t reserved;
};

/* The caller's value of a callee-saved register SFrame has no rule for
 * (sfunwind::callee_saved::SavedRegister). kind: 0 not saved (unknown),
 * 2 `value` (from its slot, or the frame's own value of the register: the
 * one the previous sfunwind_gdb_unwind() gave, else the register callback's). */
struct sfunwind_gdb_saved_register {
    uint16_t reg; /* DWARF number */
    uint8_t kind;
    uint8_t reserved[5];
    uint64_t value;
};
/* At least as many as any ABI has callee-saved registers SFrame has no rule
   for (sfunwind::callee_saved::FunctionRules::max_registers). */
enum { SFUNWIND_GDB_MAX_SAVED = 20 };
struct sfunwind_gdb_unwind_result {
    uint64_t pc; /* the caller's registers (PAC bits stripped) */
    uint64_t sp;
    uint64_t fp; /* restored from the stack, or the frame's own */
    uint64_t cfa;
    uint64_t func_start; /* run time: with cfa, the frame's id */
    int32_t module;
    uint32_t topmost; /* the frame was looked up at its exact pc */
    uint32_t fp_restored;
    uint32_t fallback_reads; /* reads the stack window did not serve */
    uint32_t row_flags;      /* sfunwind_gdb_row_flags */
    uint32_t saved_count;    /* entries of `saved` (0 when the analysis is off or declined) */
    struct sfunwind_gdb_saved_register saved[SFUNWIND_GDB_MAX_SAVED];
};

/* Whether sfunwind_gdb_unwind() and the JIT reader recover the callee-saved
 * registers from the functions' instructions (on by default). */
void sfunwind_gdb_set_callee_saved(int on);
int sfunwind_gdb_callee_saved(void);
/* Where sfunwind_gdb_unwind() reads memory and registers. */
void sfunwind_gdb_set_callbacks(sfunwind_gdb_read_fn read, sfunwind_gdb_reg_fn reg);
/* One frame in one call: sfunwind_gdb_lookup_frame(), then the step. A
 * frame without has_sp or has_fp takes them from the caller the previous
 * call produced when `level` and `pc` are that caller's (GDB took the
 * frame's registers from that call's result), else from the register
 * callback, as it does the link register of a topmost frame. The stack
 * window the row's step reads comes from bytes read ahead (4 KiB from 512
 * bytes below the window towards older frames, one read callback for many
 * frames), which serve the frames of one run: a frame that is not the
 * caller the previous call produced reads anew. */
int sfunwind_gdb_unwind(const struct sfunwind_gdb_frame* frame,
                        struct sfunwind_gdb_unwind_result* out);

/* The native (JIT reader) path's bookkeeping. */
struct sfunwind_gdb_native_stats {
    uint64_t frames_unwound;  /* unwind calls that succeeded */
    uint64_t frames_declined; /* PCs outside every module */
    uint64_t failures;        /* PCs in a module that could not be stepped */
    uint64_t frame_ids;
};
void sfunwind_gdb_get_native_stats(struct sfunwind_gdb_native_stats* out);
/* Whether the JIT reader unwinds (it declines every frame when off). */
void sfunwind_gdb_native_enable(int on);
/* Forget which frames the steps produced and the stack bytes read (call
 * when the inferior resumes or its memory or registers are written: a
 * recorded pc/sp may then be a new topmost frame). */
void sfunwind_gdb_new_stop(void);
/* Forget the stack bytes read and the registers of the caller last
 * produced, but not which frames are callers or topmost: for a new program,
 * target or objfile, where the same addresses may hold other values
 * although the inferior did not run, and at each walk's frame 0 (Python
 * sees every frame 0; the library only those in its modules). */
void sfunwind_gdb_forget_stack(void);
/* The topmost frame of the thread being unwound, when Python knows it. */
void sfunwind_gdb_set_topmost(uint64_t pc, uint64_t sp);

#ifdef __cplusplus
}
#endif

// SPDX-License-Identifier: MIT
// The extern "C" functions of sfunwind_gdb.h over ModuleTable and the core's
// step(). Every entry point catches C++ exceptions: none may unwind into
// GDB or into Python's ctypes.
#include "c_rows.hpp"
#include "frame_unwind.hpp"
#include "module_table.hpp"
#include "sfunwind/abi.hpp"
#include "sfunwind/unwind/backtrace_comparison.hpp"
#include "sfunwind/unwind/frame_address.hpp"
#include "sfunwind/unwind/step.hpp"
#include "sfunwind_gdb.h"

#include <algorithm>
#include <cstring>
#include <exception>
#include <span>
#include <string>
#include <string_view>
#include <vector>

namespace {

using sfunwind::Errc;
using sfunwind::Error;
namespace g = sfunwind::gdb;

std::string& last_error() {
    static std::string message;
    return message;
}

int fail(const Error& e) {
    last_error() = e.message();
    return static_cast<int>(e.code()) + 1;
}

// The end of the stack: not an error in the core, a status of its own here.
int fail_outermost(const char* why, std::uint64_t pc) {
    last_error() = std::string("outermost frame: ") + why + " at " + sfunwind::to_hex(pc);
    return SFUNWIND_GDB_OUTERMOST;
}

int fail_argument(const char* what) {
    last_error() = what;
    return SFUNWIND_GDB_BAD_ARGUMENT;
}

int fail_exception() {
    try {
        throw;
    } catch (const std::exception& e) {
        last_error() = std::string("internal error: ") + e.what();
    } catch (...) {
        last_error() = "internal error";
    }
    return SFUNWIND_GDB_IO;
}

// Reads through the caller's callback (ctypes or GDB's JIT target_read).
class CallbackMemory final : public sfunwind::MemoryReader {
  public:
    explicit CallbackMemory(sfunwind_gdb_read_fn fn) : fn_(fn) {}
    bool read(std::uint64_t addr, std::span<std::uint8_t> out) override {
        return fn_ != nullptr && fn_(addr, out.data(), out.size()) != 0;
    }

  private:
    sfunwind_gdb_read_fn fn_;
};

class CallbackRegisters final : public sfunwind::RegisterSource {
  public:
    explicit CallbackRegisters(sfunwind_gdb_reg_fn fn) : fn_(fn) {}
    std::optional<std::uint64_t> get(std::uint16_t reg) override {
        std::uint64_t v = 0;
        if (fn_ == nullptr || fn_(reg, &v) == 0) return std::nullopt;
        return v;
    }

  private:
    sfunwind_gdb_reg_fn fn_;
};

// A NUL-terminated copy of `text` in a fixed C array, cut to fit.
template <std::size_t N> void copy_string(std::string_view text, char (&out)[N]) {
    const std::size_t n = std::min(N - 1, text.size());
    std::memcpy(out, text.data(), n);
    out[n] = '\0';
}

struct Callbacks {
    sfunwind_gdb_read_fn read = nullptr;
    sfunwind_gdb_reg_fn reg = nullptr;
};

Callbacks& callbacks() {
    static Callbacks c;
    return c;
}

} // namespace

extern "C" {

int sfunwind_gdb_api_version(void) {
    return SFUNWIND_GDB_API_VERSION;
}

const char* sfunwind_gdb_last_error(void) {
    return last_error().c_str();
}

int32_t sfunwind_gdb_open_file(const char* path) {
    try {
        last_error().clear();
        if (path == nullptr) return -fail_argument("no path");
        auto id = g::table().open_file(path);
        // The negated status: callers must tell "no SFrame here" (NOT_FOUND,
        // normal for libc) from a damaged section, which is reported.
        if (!id) return -fail(id.error());
        return *id;
    } catch (...) {
        return -fail_exception();
    }
}

int32_t sfunwind_gdb_open_bytes(const uint8_t* bytes, size_t size, uint64_t vaddr,
                                const char* name) {
    try {
        last_error().clear();
        if (bytes == nullptr && size != 0) return -fail_argument("no bytes");
        auto id = g::table().open_bytes(std::span<const std::uint8_t>(bytes, size), vaddr,
                                        name != nullptr ? name : "<memory>");
        if (!id) return -fail(id.error());
        return *id;
    } catch (...) {
        return -fail_exception();
    }
}

int sfunwind_gdb_get_module_info(int32_t module, struct sfunwind_gdb_module_info* out) {
    try {
        const g::OpenModule* m = g::table().get(module);
        if (m == nullptr || out == nullptr) return fail_argument("no such module");
        *out = {};
        if (const sfunwind::sframe::Section* section = m->sframe()) {
            const auto& s = *section;
            const auto& h = s.header();
            out->table = SFUNWIND_GDB_TABLE_SFRAME;
            out->version = static_cast<std::uint32_t>(h.version);
            out->abi_arch = static_cast<std::uint32_t>(h.abi_arch);
            out->flags = h.flags;
            out->num_fdes = h.num_fdes;
            out->num_fres = h.num_fres;
            out->section_vaddr = s.vaddr();
            out->section_size = s.used_size();
        } else {
            out->table = SFUNWIND_GDB_TABLE_PPC64_TRACEBACK;
            out->num_functions = m->functions;
        }
        const sfunwind::Abi& abi = m->abi();
        out->placed = m->placed ? 1U : 0U;
        out->text_begin = m->text_begin;
        out->text_end = m->text_end;
        out->bias = m->bias;
        out->sp_reg = abi.sp_reg;
        out->fp_reg = abi.fp_reg;
        out->ra_reg = abi.ra_reg;
        out->ra_in_register = abi.ra_in_register ? 1U : 0U;
        out->sp_from_cfa = abi.sp_from_cfa;
        copy_string(abi.name, out->abi_name);
        copy_string(m->kind(), out->kind);
        return SFUNWIND_GDB_OK;
    } catch (...) {
        return fail_exception();
    }
}

int sfunwind_gdb_get_abi_info(const char* abi_name, struct sfunwind_gdb_abi_info* out) {
    try {
        const sfunwind::Abi* abi = abi_name != nullptr ? sfunwind::abi_named(abi_name) : nullptr;
        if (abi == nullptr || out == nullptr) return fail_argument("no such ABI");
        *out = {};
        out->sp_reg = abi->sp_reg;
        out->fp_reg = abi->fp_reg;
        out->ra_reg = abi->ra_reg;
        out->ra_in_register = abi->ra_in_register ? 1U : 0U;
        out->sp_from_cfa = abi->sp_from_cfa;
        return SFUNWIND_GDB_OK;
    } catch (...) {
        return fail_exception();
    }
}

int sfunwind_gdb_register_name(const char* abi_name, uint32_t reg, char* buf, size_t size) {
    try {
        const sfunwind::Abi* abi = abi_name != nullptr ? sfunwind::abi_named(abi_name) : nullptr;
        if (abi == nullptr || buf == nullptr || size == 0) return fail_argument("no such ABI");
        const auto name = reg <= 0xffff
                              ? sfunwind::known_register_name(*abi, static_cast<std::uint16_t>(reg))
                              : std::nullopt;
        if (!name)
            return fail(Error(Errc::NotFound, std::string(abi->name) + " names no DWARF register " +
                                                  std::to_string(reg)));
        const std::size_t n = std::min(size - 1, name->size());
        std::memcpy(buf, name->data(), n);
        buf[n] = '\0';
        return SFUNWIND_GDB_OK;
    } catch (...) {
        return fail_exception();
    }
}

int sfunwind_gdb_section_vaddr(int32_t module, const char* name, uint64_t* out) {
    try {
        const g::OpenModule* m = g::table().get(module);
        if (m == nullptr || name == nullptr || out == nullptr)
            return fail_argument("no such module");
        if (m->elf == nullptr)
            return fail(Error(Errc::NotFound, m->name + " was not opened from a file"));
        const auto* s = m->elf->section(name);
        if (s == nullptr || s->vaddr == 0)
            return fail(Error(Errc::NotFound, m->name + " has no allocated section " + name));
        *out = s->vaddr;
        return SFUNWIND_GDB_OK;
    } catch (...) {
        return fail_exception();
    }
}

int sfunwind_gdb_place(int32_t module, uint64_t bias) {
    try {
        auto st = g::table().place(module, bias);
        return st ? SFUNWIND_GDB_OK : fail(st.error());
    } catch (...) {
        return fail_exception();
    }
}

int sfunwind_gdb_unplace(int32_t module) {
    try {
        auto st = g::table().unplace(module);
        return st ? SFUNWIND_GDB_OK : fail(st.error());
    } catch (...) {
        return fail_exception();
    }
}

void sfunwind_gdb_reset(void) {
    try {
        g::table().reset();
    } catch (...) {
        fail_exception();
    }
}

int32_t sfunwind_gdb_module_at(uint64_t pc) {
    return g::table().module_at(pc);
}

int sfunwind_gdb_lookup(uint64_t pc, struct sfunwind_gdb_row* out) {
    try {
        if (out == nullptr) return fail_argument("no output row");
        auto found = g::table().lookup(pc);
        if (!found) return fail(found.error());
        g::to_c(*found, *out);
        return SFUNWIND_GDB_OK;
    } catch (...) {
        return fail_exception();
    }
}

int sfunwind_gdb_lookup_frame(uint64_t pc, uint64_t sp, int32_t level, struct sfunwind_gdb_row* out,
                              int* topmost) {
    try {
        if (out == nullptr || topmost == nullptr) return fail_argument("no output row");
        auto found = g::table().lookup_frame(pc, sp, level);
        if (!found) return fail(found.error());
        g::to_c(found->found, *out);
        *topmost = found->topmost ? 1 : 0;
        return SFUNWIND_GDB_OK;
    } catch (...) {
        return fail_exception();
    }
}

uint64_t sfunwind_gdb_lookup_address(uint64_t pc, int is_return_address) {
    return sfunwind::FrameAddress::of_frame(pc, is_return_address == 0).lookup_address();
}

int sfunwind_gdb_compare(const struct sfunwind_gdb_frame_view* sframe, size_t sframe_count,
                         const struct sfunwind_gdb_frame_view* reference, size_t reference_count,
                         struct sfunwind_gdb_comparison* out, char* summary, size_t summary_size) {
    try {
        if (out == nullptr || (sframe == nullptr && sframe_count != 0) ||
            (reference == nullptr && reference_count != 0))
            return fail_argument("null argument");
        const auto views = [](const sfunwind_gdb_frame_view* frames, std::size_t n) {
            std::vector<sfunwind::FrameView> v(n);
            for (std::size_t i = 0; i < n; ++i) {
                v[i].pc = frames[i].pc;
                if (frames[i].has_cfa != 0) v[i].cfa = frames[i].cfa;
                if (frames[i].has_sp != 0) v[i].sp = frames[i].sp;
                if (frames[i].has_fp != 0) v[i].fp = frames[i].fp;
            }
            return v;
        };
        // Where GDB's walk with sfunwind ended does not change which frame
        // differs first; the stop only words the explanation, which GDB's
        // side writes itself.
        const sfunwind::BacktraceComparison c = sfunwind::compare_backtraces(
            views(sframe, sframe_count), sfunwind::BacktraceStop{},
            views(reference, reference_count), "GDB", /*one_sided_differs=*/true);
        *out = {};
        out->compared = static_cast<std::uint32_t>(c.frames.size());
        out->equal = static_cast<std::uint32_t>(c.equal);
        out->first = c.first ? static_cast<std::int32_t>(c.first->frame) : -1;
        out->kind = c.first ? static_cast<std::uint32_t>(c.first->kind) : 0;
        if (summary != nullptr && summary_size > 0) {
            const std::string text = c.first ? c.first->summary : std::string();
            const std::size_t n = std::min(summary_size - 1, text.size());
            std::memcpy(summary, text.data(), n);
            summary[n] = '\0';
        }
        return SFUNWIND_GDB_OK;
    } catch (...) {
        return fail_exception();
    }
}

size_t sfunwind_gdb_describe(const struct sfunwind_gdb_row* row, char* buf, size_t size) {
    try {
        if (row == nullptr) return 0;
        const g::OpenModule* m = g::table().get(row->module);
        if (m == nullptr) return 0;
        const std::string text = sfunwind::describe(g::from_c(*row), m->abi());
        if (buf != nullptr && size > 0) {
            const std::size_t n = std::min(size - 1, text.size());
            std::memcpy(buf, text.data(), n);
            buf[n] = '\0';
        }
        return text.size();
    } catch (...) {
        fail_exception();
        return 0;
    }
}

void sfunwind_gdb_set_callee_saved(int on) {
    g::table().recover_callee_saved = on != 0;
}

int sfunwind_gdb_callee_saved(void) {
    return g::table().recover_callee_saved ? 1 : 0;
}

void sfunwind_gdb_set_callbacks(sfunwind_gdb_read_fn read, sfunwind_gdb_reg_fn reg) {
    callbacks().read = read;
    callbacks().reg = reg;
}

int sfunwind_gdb_unwind(const struct sfunwind_gdb_frame* frame,
                        struct sfunwind_gdb_unwind_result* out) {
    try {
        if (frame == nullptr || out == nullptr) return fail_argument("null argument");
        g::FrameInput in;
        in.pc = frame->pc;
        if (frame->has_sp != 0) in.sp = frame->sp;
        if (frame->has_fp != 0) in.fp = frame->fp;
        in.level = frame->level;
        CallbackMemory target(callbacks().read);
        CallbackRegisters registers(callbacks().reg);
        auto done = g::unwind_frame(g::table(), in, target, registers);
        if (!done) return fail(done.error());
        if (done->step.outermost())
            return fail_outermost(sfunwind::to_string(done->step.end), frame->pc);
        *out = {};
        out->pc = done->step.caller->pc;
        out->sp = done->step.caller->sp;
        out->fp = done->step.caller->fp;
        out->cfa = done->step.cfa;
        out->func_start = done->found.row.func_start + done->found.bias;
        out->module = done->found.module;
        out->topmost = done->topmost ? 1U : 0U;
        out->fp_restored = done->step.fp_restored ? 1U : 0U;
        out->fallback_reads = done->fallback_reads;
        out->row_flags = g::row_flags(done->found.row);
        static_assert(static_cast<int>(sfunwind::callee_saved::SavedRegister::Kind::SameValue) ==
                          1 &&
                      static_cast<int>(sfunwind::callee_saved::SavedRegister::Kind::Value) == 2);
        static_assert(SFUNWIND_GDB_MAX_SAVED >=
                      sfunwind::callee_saved::FunctionRules::max_registers);
        out->saved_count = static_cast<std::uint32_t>(
            std::min<std::size_t>(done->saved_count, SFUNWIND_GDB_MAX_SAVED));
        for (std::uint32_t i = 0; i < out->saved_count; ++i) {
            const auto& r = done->saved[i];
            out->saved[i].reg = r.reg;
            out->saved[i].kind = static_cast<std::uint8_t>(r.kind);
            out->saved[i].value = r.value;
        }
        return SFUNWIND_GDB_OK;
    } catch (...) {
        return fail_exception();
    }
}

void sfunwind_gdb_new_stop(void) {
    g::table().new_stop();
}

void sfunwind_gdb_forget_stack(void) {
    g::table().forget_stack();
}

void sfunwind_gdb_set_topmost(uint64_t pc, uint64_t sp) {
    g::table().set_topmost(pc, sp);
}

} // extern "C"

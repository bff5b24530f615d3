// SPDX-License-Identifier: MIT
#include "dwfl_session.hpp"

#include <cerrno>
#include <cstring>
#include <elfutils/libdwfl.h>
#include <fcntl.h>
#include <unistd.h>

namespace sfunwind::cli::bt {
namespace {

std::string dwfl_error() {
    // dwfl_errmsg(-1) is the last error, which some failures do not set.
    const char* msg = dwfl_errno() != 0 ? dwfl_errmsg(-1) : nullptr;
    return msg != nullptr ? msg : "libdwfl gave no reason";
}

std::string base_name(const char* path) {
    if (path == nullptr) return {};
    const char* slash = std::strrchr(path, '/');
    return slash != nullptr ? slash + 1 : path;
}

struct UnwindContext {
    Dwfl* dwfl;
    const Abi* abi;
    std::uint32_t max_frames;
    bool callee_saved;
    CfiBacktrace* out;
    bool hit_limit = false;
};

int collect_frame(Dwfl_Frame* state, void* arg) {
    auto* ctx = static_cast<UnwindContext*>(arg);
    Dwarf_Addr pc = 0;
    bool activation = false;
    if (!dwfl_frame_pc(state, &pc, &activation)) {
        ctx->out->end_error = dwfl_error();
        return DWARF_CB_ABORT;
    }
    CfiFrame f;
    f.pc = pc;
    f.activation = activation;
    Dwarf_Word v = 0;
    if (dwfl_frame_reg(state, ctx->abi->sp_reg, &v) == 0) f.sp = v;
    if (dwfl_frame_reg(state, ctx->abi->fp_reg, &v) == 0) f.fp = v;
    // libdwfl gives a register its CFI leaves unmentioned the ABI's default
    // rule (x86-64: same value for rbx, r12-r15), and none where a rule
    // cannot be followed.
    if (ctx->callee_saved)
        for (std::uint16_t reg : untracked_callee_saved(*ctx->abi))
            f.callee_saved.push_back(dwfl_frame_reg(state, reg, &v) == 0
                                         ? std::optional<std::uint64_t>(v)
                                         : std::nullopt);
    // libdwfl's "activation" frames have a precise PC (frame 0, signal frames).
    const Dwarf_Addr lookup = FrameAddress::of_frame(pc, activation).lookup_address();
    if (Dwfl_Module* mod = dwfl_addrmodule(ctx->dwfl, lookup)) {
        f.module = base_name(
            dwfl_module_info(mod, nullptr, nullptr, nullptr, nullptr, nullptr, nullptr, nullptr));
        GElf_Off off = 0;
        GElf_Sym sym{};
        if (const char* name =
                dwfl_module_addrinfo(mod, lookup, &off, &sym, nullptr, nullptr, nullptr)) {
            f.symbol = name;
            f.symbol_offset = off + (pc - lookup);
        }
    }
    ctx->out->frames.push_back(std::move(f));
    if (ctx->out->frames.size() >= ctx->max_frames) {
        ctx->hit_limit = true;
        return DWARF_CB_ABORT;
    }
    return DWARF_CB_OK;
}

struct AllThreads {
    Dwfl* dwfl;
    const Abi* abi;
    std::uint32_t max_frames;
    bool callee_saved;
    std::map<pid_t, CfiBacktrace> out;
};

int unwind_thread(Dwfl_Thread* thread, void* arg) {
    auto* all = static_cast<AllThreads*>(arg);
    CfiBacktrace& bt = all->out[dwfl_thread_tid(thread)];
    UnwindContext ctx{all->dwfl, all->abi, all->max_frames, all->callee_saved, &bt};
    // -1 also ends many complete walks (libdwfl.h: "Some systems return
    // error instead of zero on end of the backtrace").
    const int r = dwfl_thread_getframes(thread, collect_frame, &ctx);
    if (ctx.hit_limit)
        bt.end_error = "stopped after " + std::to_string(all->max_frames) + " frames";
    else if (r == -1 && bt.end_error.empty())
        bt.end_error = dwfl_error();
    return DWARF_CB_OK;
}

int initial_frame(Dwfl_Frame* state, void* arg) {
    auto* t = static_cast<CoreThread*>(arg);
    Dwarf_Addr pc = 0;
    if (!dwfl_frame_pc(state, &pc, nullptr)) {
        t->error = "no PC: " + dwfl_error();
        return DWARF_CB_ABORT;
    }
    ThreadRegisters regs;
    regs.pc = pc;
    for (std::uint16_t r = 0; r < RegisterTable::max_regs; ++r) {
        Dwarf_Word v = 0;
        if (dwfl_frame_reg(state, r, &v) == 0) regs.table.set(r, v);
    }
    t->regs = std::move(regs);
    return DWARF_CB_ABORT; // only the initial frame
}

int collect_thread(Dwfl_Thread* thread, void* arg) {
    auto* out = static_cast<std::vector<CoreThread>*>(arg);
    CoreThread t;
    t.tid = dwfl_thread_tid(thread);
    if (dwfl_thread_getframes(thread, initial_frame, &t) == -1 && t.error.empty())
        t.error = dwfl_error();
    out->push_back(std::move(t));
    return DWARF_CB_OK;
}

int collect_module(Dwfl_Module* mod, void** /*userdata*/, const char* name, Dwarf_Addr /*start*/,
                   void* arg) {
    auto* out = static_cast<ProcessModules*>(arg);
    ProcessModule m;
    m.path = name != nullptr ? name : "?";
    Dwarf_Addr bias = 0;
    Elf* elf = dwfl_module_getelf(mod, &bias);
    Dwarf_Addr low = 0;
    Dwarf_Addr high = 0;
    const char* mainfile = nullptr;
    dwfl_module_info(mod, nullptr, &low, &high, nullptr, nullptr, &mainfile, nullptr);
    m.begin = low;
    m.end = high;
    m.bias = bias;
    if (elf == nullptr) {
        m.problem = "ELF file not found: " + dwfl_error();
    } else if (mainfile != nullptr) {
        load_module_file(m, mainfile, out->analyser());
    } else {
        // An image libdwfl read from the core itself (the vdso).
        std::size_t size = 0;
        const char* raw = elf_rawfile(elf, &size);
        if (raw != nullptr)
            load_module_image(m, {reinterpret_cast<const std::uint8_t*>(raw), size},
                              out->analyser());
        else
            m.problem = "no file and no image in the core";
    }
    out->add(std::move(m));
    return DWARF_CB_OK;
}

} // namespace

struct DwflSession::Impl {
    // libdwfl keeps a pointer to the callbacks, and the core's Elf must
    // outlive the Dwfl: both live here.
    Dwfl_Callbacks callbacks{};
    char* debuginfo_path = nullptr;
    Dwfl* dwfl = nullptr;
    int core_fd = -1;
    Elf* core_elf = nullptr;

    ~Impl() {
        if (dwfl != nullptr) dwfl_end(dwfl);
        if (core_elf != nullptr) elf_end(core_elf);
        if (core_fd >= 0) ::close(core_fd);
    }
};

DwflSession::~DwflSession() = default;

Expected<std::unique_ptr<DwflSession>> DwflSession::live(pid_t pid) {
    std::unique_ptr<DwflSession> s(new DwflSession());
    s->impl_ = std::make_unique<Impl>();
    Impl& im = *s->impl_;
    im.callbacks.find_elf = dwfl_linux_proc_find_elf;
    im.callbacks.find_debuginfo = dwfl_standard_find_debuginfo;
    im.callbacks.debuginfo_path = &im.debuginfo_path;
    im.dwfl = dwfl_begin(&im.callbacks);
    const std::string who = "process " + std::to_string(pid);
    if (im.dwfl == nullptr) return Error(Errc::Io, "libdwfl: " + dwfl_error());
    dwfl_report_begin(im.dwfl);
    int r = dwfl_linux_proc_report(im.dwfl, pid);
    if (r != 0)
        return Error(Errc::Io, "libdwfl cannot read the modules of " + who + ": " +
                                   (r < 0 ? dwfl_error() : std::string(std::strerror(r))));
    if (dwfl_report_end(im.dwfl, nullptr, nullptr) != 0)
        return Error(Errc::Io, "libdwfl cannot read the modules of " + who + ": " + dwfl_error());
    s->pid_ = pid;
    r = dwfl_linux_proc_attach(im.dwfl, pid, true);
    if (r != 0)
        return Error(Errc::Io, "libdwfl cannot attach to " + who + ": " +
                                   (r < 0 ? dwfl_error() : std::string(std::strerror(r))));
    return s;
}

Expected<std::unique_ptr<DwflSession>> DwflSession::core(const std::string& core_path,
                                                         const std::string& exe_path) {
    if (::access(exe_path.c_str(), R_OK) != 0)
        return Error(Errc::Io, exe_path + ": " + std::strerror(errno));
    std::unique_ptr<DwflSession> s(new DwflSession());
    s->impl_ = std::make_unique<Impl>();
    Impl& im = *s->impl_;
    im.core_fd = ::open(core_path.c_str(), O_RDONLY | O_CLOEXEC);
    if (im.core_fd < 0) return Error(Errc::Io, core_path + ": " + std::strerror(errno));
    elf_version(EV_CURRENT);
    im.core_elf = elf_begin(im.core_fd, ELF_C_READ_MMAP, nullptr);
    if (im.core_elf == nullptr) return Error(Errc::Io, core_path + ": " + elf_errmsg(-1));
    im.callbacks.find_elf = dwfl_build_id_find_elf;
    im.callbacks.find_debuginfo = dwfl_standard_find_debuginfo;
    im.callbacks.section_address = dwfl_offline_section_address;
    im.callbacks.debuginfo_path = &im.debuginfo_path;
    im.dwfl = dwfl_begin(&im.callbacks);
    if (im.dwfl == nullptr) return Error(Errc::Io, "libdwfl: " + dwfl_error());
    dwfl_report_begin(im.dwfl);
    if (dwfl_core_file_report(im.dwfl, im.core_elf, exe_path.c_str()) < 0)
        return Error(Errc::Io, core_path + ": libdwfl cannot read the modules: " + dwfl_error());
    if (dwfl_report_end(im.dwfl, nullptr, nullptr) != 0)
        return Error(Errc::Io, core_path + ": libdwfl cannot read the modules: " + dwfl_error());
    s->pid_ = dwfl_core_file_attach(im.dwfl, im.core_elf);
    if (s->pid_ < 0)
        return Error(Errc::Io,
                     core_path +
                         ": libdwfl cannot read the threads (NT_PRSTATUS notes): " + dwfl_error());
    return s;
}

std::map<pid_t, CfiBacktrace> DwflSession::unwind_all(const Abi& abi, std::uint32_t max_frames,
                                                      bool callee_saved) {
    AllThreads all{impl_->dwfl, &abi, max_frames, callee_saved, {}};
    dwfl_getthreads(impl_->dwfl, unwind_thread, &all);
    return std::move(all.out);
}

SymbolName DwflSession::symbol(FrameAddress address) {
    const std::uint64_t pc = address.address();
    const Dwarf_Addr lookup = address.lookup_address();
    Dwfl_Module* mod = dwfl_addrmodule(impl_->dwfl, lookup);
    if (mod == nullptr) return {};
    GElf_Off off = 0;
    GElf_Sym sym{};
    const char* name = dwfl_module_addrinfo(mod, lookup, &off, &sym, nullptr, nullptr, nullptr);
    if (name == nullptr) return {};
    return {name, off + (pc - lookup)};
}

Expected<std::vector<CoreThread>> DwflSession::threads() {
    std::vector<CoreThread> out;
    if (dwfl_getthreads(impl_->dwfl, collect_thread, &out) == -1 && out.empty())
        return Error(Errc::Io, "libdwfl lists no threads: " + dwfl_error());
    return out;
}

ProcessModules DwflSession::modules() {
    ProcessModules out;
    dwfl_getmodules(impl_->dwfl, collect_module, &out, 0);
    return out;
}

} // namespace sfunwind::cli::bt

// SPDX-License-Identifier: MIT
#include "cfi_probe.hpp"

#include <array>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <elfutils/libdwfl.h>
#include <string>
#include <sys/mman.h>
#include <unistd.h>

namespace sfunwind::check::detail {
namespace {

// x86-64 DWARF registers 0-16 (rax..r15, rip: psABI figure 3.36) are what
// libdwfl's x86-64 backend unwinds; rip is the PC.
constexpr unsigned x86_64_registers = 17;
constexpr std::uint16_t x86_64_rip = 16;
// The probe's one thread. libdwfl needs a pid and a tid; no process exists.
constexpr pid_t probe_tid = 1;

std::string dwfl_error() {
    const char* msg = dwfl_errno() != 0 ? dwfl_errmsg(-1) : nullptr;
    return msg != nullptr ? msg : "libdwfl gave no reason";
}

int no_debuginfo(Dwfl_Module*, void**, const char*, Dwarf_Addr, const char*, const char*, GElf_Word,
                 char**) {
    return -1; // CFI comes from the file itself, never from elsewhere
}

} // namespace

std::uint64_t register_value(std::uint16_t reg) {
    // Far apart (1 MiB), 16-byte aligned, in the user half of a 48-bit space.
    return 0x7f0000000000ULL + (std::uint64_t{reg} + 1) * 0x100000ULL;
}

std::uint64_t memory_value(std::uint64_t address) {
    // Values read from memory are unlike any register value or address
    // near one, so a rule that reads memory never equals one that does not.
    return (address ^ 0x00005a5a5a5a5a50ULL) & 0x0000ffffffffffffULL;
}

std::optional<FrameValues> evaluate_row(const Row& row, const Abi& abi, std::uint64_t pc) {
    auto reg = [&](std::uint16_t r) {
        return r == abi.ra_reg && !abi.ra_in_register ? pc : register_value(r);
    };
    FrameValues v;
    if (row.ra.kind == RegRule::Kind::Undefined) {
        v.outermost = true;
        return v;
    }
    const std::uint64_t base =
        reg(row.cfa.reg) + static_cast<std::uint64_t>(std::int64_t{row.cfa.offset});
    v.cfa = row.cfa.deref ? memory_value(base) : base;
    auto value = [&](const RegRule& r, std::uint16_t self) -> std::optional<std::uint64_t> {
        const auto off = static_cast<std::uint64_t>(std::int64_t{r.offset});
        switch (r.kind) {
        case RegRule::Kind::Undefined:
            return std::nullopt;
        case RegRule::Kind::SameValue:
            return reg(self);
        case RegRule::Kind::AtCfa:
            return memory_value(v.cfa + off);
        case RegRule::Kind::ValCfa:
            return v.cfa + off;
        case RegRule::Kind::AtReg:
            return memory_value(reg(r.reg) + off);
        case RegRule::Kind::ValReg:
            return reg(r.reg) + off;
        }
        return std::nullopt;
    };
    v.ra = value(row.ra, abi.ra_reg);
    v.fp = value(row.fp, abi.fp_reg);
    return v;
}

std::optional<Row> rules_from_values(const FrameValues& values, const Abi& abi) {
    // Offsets found in real frames are far below the registers' spacing.
    constexpr std::int64_t reach = 1 << 19;
    auto offset = [](std::uint64_t value, std::uint64_t base) -> std::optional<std::int32_t> {
        const auto d = static_cast<std::int64_t>(value - base);
        if (d <= -reach || d >= reach) return std::nullopt;
        return static_cast<std::int32_t>(d);
    };
    Row row;
    if (values.outermost) {
        row.ra = RegRule::undefined();
        row.outermost = true;
        return row;
    }
    if (auto d = offset(values.cfa, register_value(abi.sp_reg)))
        row.cfa = CfaRule{abi.sp_reg, *d, false};
    else if (auto e = offset(values.cfa, register_value(abi.fp_reg)))
        row.cfa = CfaRule{abi.fp_reg, *e, false};
    else
        return std::nullopt;
    // memory_value() is its own inverse on 48-bit values.
    auto saved = [&](const std::optional<std::uint64_t>& v, bool may_be_same,
                     std::uint16_t reg) -> std::optional<RegRule> {
        if (!v) return std::nullopt;
        if (may_be_same && *v == register_value(reg))
            return RegRule::same_value(RegRule::Source::Fre);
        if (auto d = offset(memory_value(*v), values.cfa)) return RegRule::at_cfa(*d);
        return std::nullopt;
    };
    auto ra = saved(values.ra, abi.ra_in_register, abi.ra_reg);
    auto fp = saved(values.fp, true, abi.fp_reg);
    if (!ra || !fp) return std::nullopt;
    row.ra = *ra;
    row.fp = *fp;
    return row;
}

struct CfiProbe::Impl {
    Abi abi{};
    std::string file_name;
    Dwfl_Callbacks callbacks{};
    Dwfl_Thread_Callbacks thread_callbacks{};
    Dwfl* dwfl = nullptr;
    std::uint64_t pc = 0; // the PC of the step being taken

    Impl() = default;
    Impl(const Impl&) = delete;
    Impl& operator=(const Impl&) = delete;
    ~Impl() {
        if (dwfl != nullptr) dwfl_end(dwfl);
    }

    // The thread argument is the Impl itself (libdwfl passes dwfl_arg to
    // these two and the thread argument to set_initial_registers).
    static pid_t next_thread(Dwfl*, void* self, void** thread_arg) {
        // One thread: *thread_arg is null on the first call of a walk only.
        if (*thread_arg != nullptr) return 0;
        *thread_arg = self;
        return probe_tid;
    }
    static bool get_thread(Dwfl*, pid_t tid, void* self, void** thread_arg) {
        *thread_arg = self;
        return tid == probe_tid;
    }
    static bool memory_read(Dwfl*, Dwarf_Addr address, Dwarf_Word* result, void*) {
        *result = memory_value(address);
        return true;
    }
    static bool set_initial_registers(Dwfl_Thread* thread, void* arg) {
        const auto* self = static_cast<const Impl*>(arg);
        std::array<Dwarf_Word, x86_64_registers> regs{};
        for (unsigned r = 0; r < regs.size(); ++r)
            regs[r] = register_value(static_cast<std::uint16_t>(r));
        regs[x86_64_rip] = self->pc;
        if (!dwfl_thread_state_registers(thread, 0, x86_64_registers, regs.data())) return false;
        dwfl_thread_state_register_pc(thread, self->pc);
        return true;
    }
};

CfiProbe::CfiProbe(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}
CfiProbe::CfiProbe(CfiProbe&&) noexcept = default;
CfiProbe& CfiProbe::operator=(CfiProbe&&) noexcept = default;
CfiProbe::~CfiProbe() = default;

Expected<CfiProbe> CfiProbe::open(const elf::ElfFile& file, const Abi& abi) {
    // Only x86-64 is wired up: its libdw ABI rules make the caller's SP the
    // CFA (val_offset(0)), which is how step() reads the CFA back.
    if (abi.arch != Arch::X86_64)
        return Error(Errc::Unsupported,
                     file.name() + ": evaluating CFI expressions is implemented for x86-64 only");
    auto impl = std::make_unique<Impl>();
    impl->abi = abi;
    impl->file_name = file.name();
    impl->callbacks.find_elf = nullptr;
    impl->callbacks.find_debuginfo = no_debuginfo;
    impl->callbacks.section_address = dwfl_offline_section_address;
    impl->dwfl = dwfl_begin(&impl->callbacks);
    if (impl->dwfl == nullptr) return Error(Errc::Io, file.name() + ": libdwfl: " + dwfl_error());

    // libdwfl reads the module from a file descriptor; an anonymous file
    // holds the image, so files opened from memory work too.
    const int fd = memfd_create("sfunwind-cfi-probe", MFD_CLOEXEC);
    if (fd < 0) return Error(Errc::Io, file.name() + ": memfd_create: " + std::strerror(errno));
    const auto image = file.image();
    std::size_t done = 0;
    while (done < image.size()) {
        const ssize_t n = ::write(fd, image.data() + done, image.size() - done);
        if (n < 0 && errno == EINTR) continue;
        if (n <= 0) {
            const int e = errno;
            ::close(fd);
            return Error(Errc::Io,
                         file.name() + ": writing the probe's image: " + std::strerror(e));
        }
        done += static_cast<std::size_t>(n);
    }
    // Bias 0: module addresses are the file's link-time addresses. libdwfl
    // owns fd from here on, also on failure.
    dwfl_report_begin(impl->dwfl);
    Dwfl_Module* mod = dwfl_report_elf(impl->dwfl, "probe", file.name().c_str(), fd, 0, true);
    if (mod == nullptr) return Error(Errc::Malformed, file.name() + ": libdwfl: " + dwfl_error());
    if (dwfl_report_end(impl->dwfl, nullptr, nullptr) != 0)
        return Error(Errc::Malformed, file.name() + ": libdwfl: " + dwfl_error());

    impl->thread_callbacks.next_thread = Impl::next_thread;
    impl->thread_callbacks.get_thread = Impl::get_thread;
    impl->thread_callbacks.memory_read = Impl::memory_read;
    impl->thread_callbacks.set_initial_registers = Impl::set_initial_registers;
    if (!dwfl_attach_state(impl->dwfl, nullptr, probe_tid, &impl->thread_callbacks, impl.get()))
        return Error(Errc::Unsupported,
                     file.name() + ": libdwfl cannot unwind it: " + dwfl_error());
    return CfiProbe(std::move(impl));
}

namespace {

struct StepState {
    const Abi* abi = nullptr;
    int frames = 0;
    bool have_caller = false;
    Dwarf_Addr caller_pc = 0;
    std::optional<Dwarf_Word> caller_sp;
    std::optional<Dwarf_Word> caller_fp;
};

int take_frame(Dwfl_Frame* frame, void* arg) {
    auto* s = static_cast<StepState*>(arg);
    if (s->frames++ == 0) return DWARF_CB_OK; // the probe's own frame
    s->have_caller = dwfl_frame_pc(frame, &s->caller_pc, nullptr);
    Dwarf_Word v = 0;
    if (dwfl_frame_reg(frame, s->abi->sp_reg, &v) == 0) s->caller_sp = v;
    if (dwfl_frame_reg(frame, s->abi->fp_reg, &v) == 0) s->caller_fp = v;
    return DWARF_CB_ABORT;
}

} // namespace

Expected<FrameValues> CfiProbe::step(std::uint64_t pc) {
    Impl& m = *impl_;
    m.pc = pc;
    StepState s;
    s.abi = &m.abi;
    const int r = dwfl_getthread_frames(m.dwfl, probe_tid, take_frame, &s);
    if (s.frames == 0)
        return Error(Errc::Malformed,
                     m.file_name + ": libdwfl cannot start at " + to_hex(pc) + ": " + dwfl_error(),
                     Address{pc});
    FrameValues v;
    if (s.frames == 1) {
        // No caller frame: the RA is undefined there (libdwfl ends the walk
        // without an error), or the unwinder failed.
        if (r == 0 || dwfl_errno() == 0) {
            v.outermost = true;
            return v;
        }
        return Error(Errc::Malformed,
                     m.file_name + ": libdwfl cannot unwind from " + to_hex(pc) + ": " +
                         dwfl_error(),
                     Address{pc});
    }
    if (!s.have_caller || !s.caller_sp)
        return Error(Errc::Malformed,
                     m.file_name + ": libdwfl gave no caller PC or SP at " + to_hex(pc),
                     Address{pc});
    // The caller's SP is the CFA plus the ABI offset (x86-64: 0).
    v.cfa = *s.caller_sp - static_cast<std::uint64_t>(std::int64_t{m.abi.sp_from_cfa});
    v.ra = s.caller_pc;
    v.fp = s.caller_fp;
    return v;
}

} // namespace sfunwind::check::detail

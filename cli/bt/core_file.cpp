// SPDX-License-Identifier: MIT
#include "core_file.hpp"

#include "sfunwind/bytes.hpp"

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <elf.h>
#include <fcntl.h>
#include <gelf.h>
#include <libelf.h>
#include <limits>
#include <sys/stat.h>
#include <unistd.h>

namespace sfunwind::cli::bt {
namespace {

struct ElfCloser {
    void operator()(Elf* e) const { elf_end(e); }
};

// struct elf_prstatus (linux/elfcore.h) begins with struct elf_siginfo
// (three ints), then pr_cursig (short), pr_sigpend and pr_sighold (longs),
// then pr_pid: pr_cursig is at 12 and pr_pid at 32 (ELFCLASS64) or 24
// (ELFCLASS32) on every Linux architecture.
void parse_prstatus(std::span<const std::uint8_t> desc, ByteOrder order, bool is64,
                    std::vector<CoreThreadNote>& out) {
    const ByteView v(desc, order);
    std::uint16_t cursig = 0;
    std::uint32_t pid = 0;
    if (!v.load(12, cursig) || !v.load(is64 ? 32 : 24, pid)) return; // too short: not a usable note
    if (pid == 0 || pid > static_cast<std::uint32_t>(std::numeric_limits<pid_t>::max())) return;
    out.push_back({static_cast<pid_t>(pid), cursig});
}

} // namespace

CoreFile::~CoreFile() {
    if (fd_ >= 0) ::close(fd_);
}

Expected<std::unique_ptr<CoreFile>> CoreFile::open(const std::string& path) {
    std::unique_ptr<CoreFile> core(new CoreFile());
    core->path_ = path;
    core->fd_ = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
    if (core->fd_ < 0) return Error(Errc::Io, path + ": " + std::strerror(errno));
    struct stat st {};
    if (::fstat(core->fd_, &st) != 0) return Error(Errc::Io, path + ": " + std::strerror(errno));
    const auto file_size = static_cast<std::uint64_t>(st.st_size);

    elf_version(EV_CURRENT);
    std::unique_ptr<Elf, ElfCloser> elf(elf_begin(core->fd_, ELF_C_READ_MMAP, nullptr));
    if (!elf || elf_kind(elf.get()) != ELF_K_ELF)
        return Error(Errc::BadMagic, path + ": not an ELF file");
    GElf_Ehdr eh{};
    if (gelf_getehdr(elf.get(), &eh) == nullptr)
        return Error(Errc::Malformed, path + ": " + elf_errmsg(-1));
    if (eh.e_type != ET_CORE)
        return Error(Errc::Unsupported,
                     path + ": not a core dump (ELF type " + std::to_string(eh.e_type) + ")");
    const ByteOrder order = eh.e_ident[EI_DATA] == ELFDATA2MSB ? ByteOrder::Big : ByteOrder::Little;
    const bool is64 = eh.e_ident[EI_CLASS] == ELFCLASS64;

    std::size_t phnum = 0;
    if (elf_getphdrnum(elf.get(), &phnum) != 0)
        return Error(Errc::Malformed, path + ": " + elf_errmsg(-1));
    for (std::size_t i = 0; i < phnum; ++i) {
        GElf_Phdr ph{};
        if (gelf_getphdr(elf.get(), static_cast<int>(i), &ph) == nullptr) continue;
        if (ph.p_offset > file_size) continue; // a truncated core: the segment is not there
        const std::uint64_t in_file = std::min<std::uint64_t>(ph.p_filesz, file_size - ph.p_offset);
        if (ph.p_type == PT_LOAD && in_file > 0) {
            core->segments_.push_back({ph.p_vaddr, in_file, ph.p_offset});
        } else if (ph.p_type == PT_NOTE && in_file > 0) {
            Elf_Data* data = elf_getdata_rawchunk(elf.get(), static_cast<off_t>(ph.p_offset),
                                                  static_cast<std::size_t>(in_file), ELF_T_NHDR);
            if (data == nullptr) continue;
            std::size_t off = 0;
            GElf_Nhdr nh{};
            std::size_t name_off = 0;
            std::size_t desc_off = 0;
            const std::span<const std::uint8_t> bytes(static_cast<const std::uint8_t*>(data->d_buf),
                                                      data->d_size);
            while (off < data->d_size) {
                const std::size_t next = gelf_getnote(data, off, &nh, &name_off, &desc_off);
                if (next == 0 || next <= off) break; // malformed: stop rather than loop
                if (nh.n_type == NT_PRSTATUS && desc_off <= bytes.size() &&
                    nh.n_descsz <= bytes.size() - desc_off)
                    parse_prstatus(bytes.subspan(desc_off, nh.n_descsz), order, is64,
                                   core->threads_);
                off = next;
            }
        }
    }
    std::sort(core->segments_.begin(), core->segments_.end(),
              [](const Segment& a, const Segment& b) { return a.vaddr < b.vaddr; });
    return core;
}

bool CoreFile::read(std::uint64_t addr, std::span<std::uint8_t> out) {
    std::size_t done = 0;
    while (done < out.size()) {
        const std::uint64_t at = addr + done;
        if (at < addr) return false; // wrapped
        auto it = std::upper_bound(segments_.begin(), segments_.end(), at,
                                   [](std::uint64_t a, const Segment& s) { return a < s.vaddr; });
        if (it == segments_.begin()) return false;
        --it;
        if (at - it->vaddr >= it->filesz) return false;
        const std::uint64_t avail = it->filesz - (at - it->vaddr);
        const std::size_t want =
            static_cast<std::size_t>(std::min<std::uint64_t>(avail, out.size() - done));
        const std::uint64_t file_off = it->offset + (at - it->vaddr);
        if (file_off > static_cast<std::uint64_t>(std::numeric_limits<off_t>::max())) return false;
        const ssize_t n = ::pread(fd_, out.data() + done, want, static_cast<off_t>(file_off));
        if (n < 0 && errno == EINTR) continue;
        if (n <= 0) return false;
        done += static_cast<std::size_t>(n);
    }
    return true;
}

} // namespace sfunwind::cli::bt

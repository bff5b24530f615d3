// SPDX-License-Identifier: MIT
// Finding SFrame data in an ELF file or an in-memory ELF image (via libelf):
// by section name ".sframe", by section type SHT_GNU_SFRAME, or, when the
// section headers are gone, by the PT_GNU_SFRAME program header (whose size
// may exceed the section's: the SFrame header gives the real size).
#pragma once

#include "sfunwind/abi.hpp"
#include "sfunwind/elf/call_sites.hpp"
#include "sfunwind/error.hpp"
#include "sfunwind/sframe/section.hpp"

#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <vector>

// libelf's handle (<libelf.h> declares it the same way), for libdw users.
struct Elf;

namespace sfunwind::elf {

// ELF constants that Debian 12's <elf.h> predates.
inline constexpr std::uint32_t sht_gnu_sframe = 0x6ffffff4;
inline constexpr std::uint32_t pt_gnu_sframe = 0x6474e554;

struct SframeLocation {
    enum class How : std::uint8_t { SectionName, SectionType, Segment };
    How how = How::SectionName;
    std::uint64_t vaddr = 0; // link-time virtual address of the section
    std::uint64_t file_offset = 0;
    std::uint64_t size = 0; // bytes used (from the SFrame header for segments)
    std::string name;       // section name, or "PT_GNU_SFRAME"
};

struct LoadSegment {
    std::uint64_t vaddr;
    std::uint64_t memsz;
    std::uint64_t offset;
    std::uint64_t filesz;
    std::uint32_t flags; // PF_R/PF_W/PF_X
};

struct ProgramHeader {
    std::uint32_t type;  // PT_*
    std::uint32_t flags; // PF_*
    std::uint64_t offset;
    std::uint64_t vaddr;
    std::uint64_t filesz;
    std::uint64_t memsz;
    std::uint64_t align;
};

struct SectionInfo {
    std::string name;
    std::uint32_t index;
    std::uint32_t type;  // SHT_*
    std::uint64_t flags; // SHF_*
    std::uint64_t vaddr; // sh_addr: link-time address (0 when not allocated)
    std::uint64_t offset;
    std::uint64_t size;
    std::uint32_t link;
    // The section's bytes lie inside the file (always false for SHT_NOBITS).
    bool in_file;
};

// What the dynamic section says of the libraries a file needs (gABI
// "Dynamic Section"): DT_NEEDED names in order, DT_RUNPATH and DT_RPATH as
// written (empty when absent), and the DT_FLAGS_1 bits (DF_1_PIE marks a
// static PIE, whose ELF type is that of a shared object).
struct DynamicInfo {
    std::vector<std::string> needed;
    std::string runpath;
    std::string rpath;
    std::uint64_t flags_1 = 0;
    // DT_TEXTREL, or DF_TEXTREL in DT_FLAGS: the dynamic loader may write
    // into segments without write permission, whose bytes in memory then
    // differ from the file's.
    bool text_relocations = false;
    // A dynamic section (SHT_DYNAMIC, with its string table) was read: where
    // the file has a PT_DYNAMIC segment and this is false, none of the
    // above is known.
    bool read = false;
};

struct Symbol {
    std::string name;
    std::uint64_t value; // link-time address
    std::uint64_t size;
};

class ElfFile {
  public:
    // Opens the file and reads its headers; the rest is read as it is asked
    // for (the headers and section-name table now, then .sframe, the
    // symbols, code ranges: a debugger opening every module of a program
    // reads little of each). Errors name the file. Each later read opens
    // the file again (a debugger with thousands of modules holds no
    // descriptors), unless `keep_descriptor`: then the descriptor opened
    // here serves them until close_descriptor(), for a caller that reads
    // more of the file at once (.sframe, the dynamic section).
    static Expected<ElfFile> open(const std::string& path, bool keep_descriptor = false);
    // Closes the descriptor open() kept, if any (the destructor does too).
    void close_descriptor() const noexcept;
    // An ELF image already in memory (copied).
    static Expected<ElfFile> from_bytes(std::span<const std::uint8_t> bytes,
                                        std::string name = "<memory>");

    ElfFile(ElfFile&&) noexcept;
    ElfFile& operator=(ElfFile&&) noexcept;
    ~ElfFile();

    const std::string& name() const noexcept;
    // The whole file (read now if not yet); empty if it cannot be read whole
    // any more (the file changed or went away since open()).
    std::span<const std::uint8_t> image() const;
    // How many of the file's bytes have been read so far.
    std::size_t bytes_read() const noexcept;
    ByteOrder byte_order() const noexcept;
    // The libelf handle over image(), for libdw (dwarf_getcfi_elf,
    // dwarf_begin_elf). It lives as long as this ElfFile (moves keep it).
    // Reads the whole file first (null if that fails), as libdw may look
    // anywhere.
    ::Elf* libelf_handle() const;
    // The same handle with only what open() read: the ELF, program and
    // section headers and the section names. For a reader of a few sections
    // (a debug file's writer): section_bytes() of a section before libelf
    // reads its contents, which are zeros until then.
    ::Elf* libelf_headers() const noexcept;
    // The ABI from e_machine and EI_DATA (EM_X86_64, EM_AARCH64, EM_S390, EM_PPC64).
    std::optional<Abi> abi() const;
    std::uint16_t machine() const noexcept;
    bool is_pie_or_shared() const noexcept; // ET_DYN
    std::uint64_t entry() const noexcept;   // e_entry, link-time
    // The function the process starts in, when this file is a program
    // (ET_EXEC; ET_DYN with a PT_INTERP, or DF_1_PIE): the function symbol
    // that starts at e_entry, with its size (one without a size reaches the
    // next function symbol or its code section's end). The kernel jumps there with no
    // return address, so that function's frame is the outermost one (x86-64
    // psABI section 3.4.1 "Initial Stack and Register State"; the AArch64,
    // s390x and ELFv2 ppc64 Linux ABIs start a process the same way).
    // nullopt for a shared library, whose e_entry is run only when the
    // library is run as a program, and when no function symbol starts there.
    std::optional<Symbol> entry_function() const;
    const std::vector<LoadSegment>& load_segments() const noexcept;
    const std::vector<ProgramHeader>& program_headers() const noexcept;
    // Section headers; empty when the file has none (or they were zeroed).
    const std::vector<SectionInfo>& sections() const noexcept;
    // The first section of that name, if any.
    const SectionInfo* section(const std::string& name) const;
    // Lowest PT_LOAD vaddr, aligned down to 4 KiB: a module whose first
    // mapping starts at runtime address B has load bias B - this. (Loaders
    // map the first PT_LOAD from its page start; its vaddr is congruent to
    // its file offset, 0, modulo every page size, so 4 KiB is exact.)
    std::uint64_t link_base() const noexcept;
    std::optional<std::vector<std::uint8_t>> build_id() const;
    // The dynamic section's needed libraries (each once, at most 4096, names
    // of at most 4096 bytes) and search paths, reading that section and its
    // string table only; empty for a file without one.
    DynamicInfo dynamic_info() const;

    Expected<SframeLocation> find_sframe() const;
    // The section's bytes (size clipped to the file), all read now; and a
    // parsed Section over them that reads the file on demand (the header and
    // FDE records now, an FDE's data at its first lookup:
    // sframe::SectionFetcher). The Section refers into this ElfFile, which
    // must outlive it.
    Expected<std::span<const std::uint8_t>> sframe_bytes(const SframeLocation& where) const;
    // The same bytes handed to `consume` in order, a piece at a time, and not
    // kept: for one pass over them (a hash), which then leaves no more of the
    // section in memory than was read before.
    Status scan_sframe(const SframeLocation& where,
                       const std::function<void(std::span<const std::uint8_t>)>& consume) const;
    Expected<sframe::Section> sframe() const;

    // The file bytes loaded at link-time [vaddr, vaddr + size), from the
    // PT_LOAD segment whose file part holds them all; nullopt otherwise.
    std::optional<std::span<const std::uint8_t>> loaded_bytes(std::uint64_t vaddr,
                                                              std::uint64_t size) const;
    // The same from a PT_LOAD segment without write permission (PF_W): bytes
    // the program cannot change, and that the dynamic loader leaves as the
    // file has them unless the file has text relocations
    // (DynamicInfo::text_relocations).
    std::optional<std::span<const std::uint8_t>> read_only_bytes(std::uint64_t vaddr,
                                                                 std::uint64_t size) const;
    // Bytes of a named section, if present (e.g. ".eh_frame").
    std::optional<std::span<const std::uint8_t>> section_bytes(const std::string& name) const;
    // The same for a section of this file (from sections() or section()).
    std::optional<std::span<const std::uint8_t>> section_bytes(const SectionInfo& s) const;
    bool has_section(const std::string& name) const;

    // The exception call sites of the functions .eh_frame describes, read
    // at the first call (call_sites.hpp); safe from several threads.
    const ExceptionCallSites& exception_call_sites() const;

    // Function symbols from .symtab and .dynsym, sorted by address.
    const std::vector<Symbol>& function_symbols() const;
    // The function symbol containing a link-time address ("name+0x12" form
    // is left to callers); the nearest start wins when symbols nest. A
    // zero-size symbol contains only its own address.
    const Symbol* symbol_for(std::uint64_t addr) const;

  private:
    struct Impl;
    explicit ElfFile(std::unique_ptr<Impl> impl);
    std::optional<std::span<const std::uint8_t>>
    segment_bytes(std::uint64_t vaddr, std::uint64_t size, bool read_only) const;
    std::unique_ptr<Impl> impl_;
};

// The GNU build-id (NT_GNU_BUILD_ID) of the ELF file at `path`, read through
// a mapping (a probe of many large files costs their note pages only):
// Errc::Io, BadMagic (not ELF), NotFound (no note).
Expected<std::vector<std::uint8_t>> read_build_id(const std::string& path);

} // namespace sfunwind::elf

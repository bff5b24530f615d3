// SPDX-License-Identifier: MIT
#include "fde_list.hpp"

#include "sfunwind/elf/eh_encoding.hpp"

#include <cstdio>
#include <cstring>
#include <dwarf.h>
#include <elf.h>
#include <elfutils/libdw.h>
#include <map>

namespace sfunwind::cfi::detail {
namespace {

bool fits(std::uint64_t offset, std::uint64_t size, std::uint64_t total) {
    return offset <= total && size <= total - offset;
}

// The CIE facts the FDE address fields depend on.
struct CieInfo {
    std::uint8_t fde_encoding = DW_EH_PE_absptr;
    std::string unreadable; // why this CIE's FDEs cannot be read; empty when they can
};

// The FDE pointer encoding of the CIE's 'R' augmentation (absolute without
// one). Letters after 'R' need not be readable.
CieInfo cie_info(const Dwarf_CIE& cie, ByteOrder order) {
    CieInfo info;
    const char* aug = cie.augmentation;
    if (aug == nullptr) return info;
    const ByteView data(
        std::span<const std::uint8_t>(cie.augmentation_data, cie.augmentation_data_size), order);
    const elf::CieAugmentation a = elf::read_cie_augmentation(aug, data);
    info.fde_encoding = a.fde_encoding;
    if (!a.fde_encoding_read) info.unreadable = a.unreadable;
    return info;
}

} // namespace

std::optional<CfiBytes> eh_frame_bytes(const elf::ElfFile& file, std::vector<Error>& errors) {
    if (const elf::SectionInfo* s = file.section(".eh_frame")) {
        if (s->type != SHT_PROGBITS && s->type != SHT_X86_64_UNWIND) return std::nullopt;
        if (!s->in_file) {
            errors.emplace_back(Errc::Truncated,
                                file.name() + ": .eh_frame runs past the end of the file",
                                s->offset);
            return std::nullopt;
        }
        const auto bytes = file.section_bytes(*s);
        if (!bytes) {
            errors.emplace_back(Errc::Io, file.name() + ": .eh_frame cannot be read", s->offset);
            return std::nullopt;
        }
        return CfiBytes{*bytes, s->vaddr, ".eh_frame"};
    }
    if (!file.sections().empty()) return std::nullopt;

    // No section headers: .eh_frame_hdr's second field points at .eh_frame
    // (LSB 5.0 ".eh_frame_hdr": version 1, eh_frame_ptr_enc, fde_count_enc,
    // table_enc, then the encoded eh_frame_ptr).
    const auto image = file.image();
    for (const auto& p : file.program_headers()) {
        if (p.type != PT_GNU_EH_FRAME) continue;
        auto fail = [&](const std::string& what) {
            errors.emplace_back(Errc::Malformed, file.name() + ": PT_GNU_EH_FRAME: " + what,
                                p.offset);
            return std::nullopt;
        };
        if (!fits(p.offset, p.filesz, image.size()) || p.filesz < 4)
            return fail("header outside the file");
        const ByteView hdr(image.subspan(p.offset, p.filesz), file.byte_order());
        std::uint8_t version = 0;
        std::uint8_t enc = 0;
        (void)hdr.load(0, version);
        (void)hdr.load(1, enc);
        if (version != 1) return fail("unknown .eh_frame_hdr version " + std::to_string(version));
        std::uint64_t pos = 4;
        std::string why;
        const auto target = elf::read_encoded(hdr, pos, enc, p.vaddr, p.vaddr, why);
        if (!target) return fail("eh_frame_ptr: " + why);
        for (const auto& l : file.load_segments()) {
            if (*target < l.vaddr || *target - l.vaddr >= l.filesz) continue;
            const std::uint64_t off = l.offset + (*target - l.vaddr);
            const std::uint64_t end = l.offset + l.filesz;
            if (end < l.offset || !fits(off, end - off, image.size()))
                return fail("its PT_LOAD runs past the file");
            return CfiBytes{image.subspan(off, end - off), *target,
                            ".eh_frame (via PT_GNU_EH_FRAME)"};
        }
        return fail("eh_frame_ptr " + to_hex(*target) + " is in no PT_LOAD segment's file bytes");
    }
    return std::nullopt;
}

std::optional<CfiBytes> debug_frame_bytes(const elf::ElfFile& file) {
    const elf::SectionInfo* s = file.section(".debug_frame");
    if (s == nullptr || !s->in_file) return std::nullopt;
    const auto bytes = file.section_bytes(*s);
    if (!bytes) return std::nullopt;
    return CfiBytes{*bytes, s->vaddr, ".debug_frame"};
}

FdeListing list_fdes(const elf::ElfFile& file, const CfiBytes& cfi, Source source) {
    FdeListing out;
    const bool eh = source == Source::EhFrame;
    auto error = [&](Errc code, std::uint64_t at, const std::string& what) {
        out.errors.emplace_back(code, file.name() + ": " + cfi.name + ": " + what, at);
    };
    const auto image = file.image();
    if (image.size() < EI_NIDENT) return out;
    // dwarf_next_cfi wants a mutable Elf_Data but only reads through it.
    Elf_Data data{};
    data.d_buf = const_cast<std::uint8_t*>(cfi.bytes.data());
    data.d_type = ELF_T_BYTE;
    data.d_size = cfi.bytes.size();
    data.d_version = EV_CURRENT;
    const unsigned char* ident = image.data();

    struct RawFde {
        std::uint64_t offset;
        std::uint64_t cie;
        std::uint64_t begin; // offsets of the address fields and of the end
        std::uint64_t end;
    };
    std::map<std::uint64_t, CieInfo> cies;
    std::vector<RawFde> raw;
    Dwarf_Off offset = 0;
    while (offset < cfi.bytes.size()) {
        Dwarf_Off next = 0;
        Dwarf_CFI_Entry entry;
        const int rc = dwarf_next_cfi(ident, &data, eh, offset, &next, &entry);
        if (rc == 1) break; // the zero terminator, or the end
        if (rc != 0) {
            error(Errc::Malformed, offset, std::string("bad CIE/FDE: ") + dwarf_errmsg(-1));
            // libdw sets next when the entry can be skipped; insist on progress.
            if (next == static_cast<Dwarf_Off>(-1) || next <= offset) break;
            offset = next;
            continue;
        }
        const auto* base = cfi.bytes.data();
        if (dwarf_cfi_cie_p(&entry)) {
            cies[offset] = cie_info(entry.cie, file.byte_order());
        } else {
            raw.push_back({offset, entry.fde.CIE_pointer,
                           static_cast<std::uint64_t>(entry.fde.start - base),
                           static_cast<std::uint64_t>(entry.fde.end - base)});
        }
        if (next <= offset) break;
        offset = next;
    }

    const ByteView view(cfi.bytes, file.byte_order());
    for (const auto& f : raw) {
        std::uint8_t encoding = DW_EH_PE_absptr;
        if (eh) {
            auto it = cies.find(f.cie);
            if (it == cies.end()) {
                error(Errc::Malformed, f.offset,
                      "FDE refers to no CIE (CIE pointer " + to_hex(f.cie) + ")");
                continue;
            }
            if (!it->second.unreadable.empty()) {
                error(Errc::Unsupported, f.offset,
                      "FDE of the CIE at " + to_hex(f.cie) + ": " + it->second.unreadable);
                continue;
            }
            encoding = it->second.fde_encoding;
        }
        // .debug_frame FDEs hold target addresses (DWARF 5 section 6.4.1);
        // address_range uses the initial_location's format, never its base.
        const ByteView fde(cfi.bytes.subspan(0, f.end), view.order());
        std::uint64_t pos = f.begin;
        std::string why;
        const auto begin = elf::read_encoded(fde, pos, encoding, cfi.vaddr, std::nullopt, why);
        const auto range =
            begin ? elf::read_encoded(fde, pos, static_cast<std::uint8_t>(encoding & 0x0fU), 0,
                                      std::nullopt, why)
                  : std::nullopt;
        if (!begin || !range) {
            error(Errc::Unsupported, f.offset, "FDE address fields: " + why);
            continue;
        }
        if (*range == 0) continue; // discarded by the linker, or empty
        const std::uint64_t end = *begin + *range;
        if (end < *begin) {
            error(Errc::Malformed, f.offset,
                  "FDE range " + to_hex(*begin) + " + " + to_hex(*range) + " wraps around");
            continue;
        }
        out.fdes.push_back({source, *begin, end, f.offset});
    }
    return out;
}

} // namespace sfunwind::cfi::detail

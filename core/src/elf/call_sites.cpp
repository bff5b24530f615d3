// SPDX-License-Identifier: MIT
#include "sfunwind/elf/call_sites.hpp"

#include "sfunwind/bytes.hpp"
#include "sfunwind/elf/eh_encoding.hpp"
#include "sfunwind/elf/elf_file.hpp"

#include <algorithm>
#include <dwarf.h>
#include <string>
#include <unordered_map>

namespace sfunwind::elf {
namespace {

constexpr std::size_t max_problems = 16;

// What an FDE's fields depend on in its CIE (LSB 5.0 "The Common Information
// Entry Format": the 'z' augmentation data, whose letters say in order what
// it holds).
struct Cie {
    bool readable = false;
    bool augmented = false; // 'z': FDEs carry augmentation data
    bool has_lsda = false;  // 'L'
    std::uint8_t fde_encoding = DW_EH_PE_absptr;
    std::uint8_t lsda_encoding = DW_EH_PE_omit;
};

Cie read_cie(const ByteView& eh, std::uint64_t pos, std::uint64_t end) {
    Cie cie;
    std::uint8_t version = 0;
    if (!eh.load(pos, version) || (version != 1 && version != 3)) return cie;
    ++pos;
    std::string augmentation;
    for (std::uint8_t c = 1; pos < end && augmentation.size() < 16; ++pos) {
        if (!eh.load(pos, c)) return cie;
        if (c == 0) break;
        augmentation.push_back(static_cast<char>(c));
    }
    if (pos >= end) return cie;
    ++pos;                                                                 // the NUL
    if (!augmentation.empty() && augmentation[0] != 'z') return cie;       // e.g. GCC 2's "eh"
    if (!read_leb(eh, pos, false) || !read_leb(eh, pos, true)) return cie; // alignment factors
    if (version == 1) {
        ++pos; // return address column, one byte
    } else if (!read_leb(eh, pos, false)) {
        return cie;
    }
    if (augmentation.empty()) {
        cie.readable = true;
        return cie;
    }
    const auto length = read_leb(eh, pos, false);
    if (!length || !eh.contains(pos, *length) || pos + *length > end) return cie;
    const CieAugmentation a =
        read_cie_augmentation(augmentation, ByteView(eh.bytes().subspan(pos, *length), eh.order()));
    if (!a.unreadable.empty()) return cie;
    cie.augmented = a.fde_data;
    cie.fde_encoding = a.fde_encoding;
    cie.has_lsda = a.lsda_encoding.has_value();
    cie.lsda_encoding = a.lsda_encoding.value_or(DW_EH_PE_omit);
    cie.readable = true;
    return cie;
}

// The call-site table of the LSDA at `lsda` for the function that starts at
// `start` (Itanium C++ ABI LSDA header: LPStart encoding and value, type
// table encoding and offset, call-site encoding and table length; each
// site: start and length from the function's start, landing pad from
// LPStart, action). False when it cannot be read whole.
bool read_lsda(const ByteView& table, std::uint64_t table_vaddr, std::uint64_t lsda,
               std::uint64_t start, std::vector<ExceptionCallSite>& out) {
    if (lsda < table_vaddr) return false;
    std::uint64_t pos = lsda - table_vaddr;
    std::string why;
    std::uint8_t encoding = 0;
    if (!table.load(pos++, encoding)) return false;
    std::uint64_t lp_start = start;
    if (encoding != DW_EH_PE_omit) {
        const auto v = read_encoded(table, pos, encoding, table_vaddr, std::nullopt, why);
        if (!v) return false;
        lp_start = *v;
    }
    if (!table.load(pos++, encoding)) return false;
    if (encoding != DW_EH_PE_omit && !read_leb(table, pos, false)) return false;
    std::uint8_t site_encoding = 0;
    if (!table.load(pos++, site_encoding)) return false;
    // Offsets, not addresses: no pc-relative or other application.
    if ((site_encoding & 0x70U) != 0) return false;
    const auto length = read_leb(table, pos, false);
    if (!length || !table.contains(pos, *length)) return false;
    const std::uint64_t end = pos + *length;
    while (pos < end) {
        const auto site = read_encoded(table, pos, site_encoding, 0, std::nullopt, why);
        const auto size = read_encoded(table, pos, site_encoding, 0, std::nullopt, why);
        const auto pad = read_encoded(table, pos, site_encoding, 0, std::nullopt, why);
        if (!site || !size || !pad || !read_leb(table, pos, false) || pos > end) return false;
        if (*pad == 0) continue; // no landing pad: the throw goes on to the caller
        const std::uint64_t begin = start + *site;
        if (begin < start || begin + *size < begin || lp_start + *pad < lp_start) return false;
        out.push_back({begin, begin + *size, lp_start + *pad});
    }
    return true;
}

} // namespace

ExceptionCallSites ExceptionCallSites::read(const ElfFile& file) {
    ExceptionCallSites r;
    auto problem = [&r, &file](Errc code, const std::string& what, std::uint64_t offset) {
        if (r.problems_.size() < max_problems)
            r.problems_.emplace_back(code, file.name() + ": " + what, offset);
    };
    const SectionInfo* eh_section = file.section(".eh_frame");
    if (eh_section == nullptr || !eh_section->in_file) return r;
    const auto eh_bytes = file.section_bytes(*eh_section);
    if (!eh_bytes) {
        problem(Errc::Io, ".eh_frame cannot be read", eh_section->offset);
        return r;
    }
    const ByteView eh(*eh_bytes, file.byte_order());
    const std::uint64_t eh_vaddr = eh_section->vaddr;
    ByteView table;
    std::uint64_t table_vaddr = 0;
    if (const SectionInfo* t = file.section(".gcc_except_table"); t != nullptr && t->in_file) {
        if (const auto bytes = file.section_bytes(*t)) {
            table = ByteView(*bytes, file.byte_order());
            table_vaddr = t->vaddr;
        }
    }
    std::unordered_map<std::uint64_t, Cie> cies;
    std::uint64_t pos = 0;
    // Each entry is at least its 4-byte length: the walk ends.
    while (eh.contains(pos, 4)) {
        const std::uint64_t at = pos;
        std::uint32_t length32 = 0;
        eh.load(pos, length32);
        pos += 4;
        if (length32 == 0) break; // the terminator
        std::uint64_t length = length32;
        if (length32 == 0xffffffffU && !eh.load(pos, length)) break;
        if (length32 == 0xffffffffU) pos += 8;
        if (!eh.contains(pos, length) || length < 4) {
            problem(Errc::Truncated, ".eh_frame entry runs past the section", at);
            break;
        }
        const std::uint64_t body = pos;
        const std::uint64_t end = pos + length;
        pos = end;
        std::uint32_t id = 0;
        eh.load(body, id);
        if (id == 0) continue; // a CIE: read when an FDE names it
        if (id > body) {
            problem(Errc::Malformed, ".eh_frame FDE's CIE pointer leaves the section", at);
            continue;
        }
        const std::uint64_t cie_at = body - id;
        auto it = cies.find(cie_at);
        if (it == cies.end()) {
            Cie cie;
            std::uint32_t cie_length = 0;
            std::uint32_t cie_id = 1;
            if (eh.load(cie_at, cie_length) && cie_length != 0xffffffffU &&
                eh.contains(cie_at + 4, cie_length) && eh.load(cie_at + 4, cie_id) && cie_id == 0)
                cie = read_cie(eh, cie_at + 8, cie_at + 4 + cie_length);
            it = cies.emplace(cie_at, cie).first;
        }
        const Cie& cie = it->second;
        std::uint64_t field = body + 4;
        std::string why;
        Function f;
        const auto start =
            cie.readable ? read_encoded(eh, field, cie.fde_encoding, eh_vaddr, std::nullopt, why)
                         : std::nullopt;
        if (!start) {
            problem(Errc::Malformed, ".eh_frame FDE whose start cannot be read", at);
            continue;
        }
        f.start = *start;
        f.first = static_cast<std::uint32_t>(r.sites_.size());
        f.known = read_encoded(eh, field, static_cast<std::uint8_t>(cie.fde_encoding & 0x0fU), 0,
                               std::nullopt, why)
                      .has_value();
        if (f.known && cie.augmented && cie.has_lsda) {
            const auto data_length = read_leb(eh, field, false);
            std::uint64_t raw_at = field;
            // A zero pointer is no LSDA, before any pc-relative application
            // (libgcc's read_encoded_value applies none to 0).
            const auto raw =
                read_encoded(eh, raw_at, static_cast<std::uint8_t>(cie.lsda_encoding & 0x0fU), 0,
                             std::nullopt, why);
            if (!data_length || !raw || field + *data_length > end) {
                f.known = false;
            } else if (*raw != 0) {
                const auto lsda =
                    (cie.lsda_encoding & 0x80U) != 0
                        ? std::nullopt // indirect: through memory
                        : read_encoded(eh, field, cie.lsda_encoding, eh_vaddr, std::nullopt, why);
                f.known = lsda && read_lsda(table, table_vaddr, *lsda, f.start, r.sites_);
                if (!f.known) {
                    r.sites_.resize(f.first);
                    problem(Errc::Malformed,
                            "the LSDA of the FDE for " + to_hex(f.start) + " cannot be read", at);
                }
            }
        }
        f.count = static_cast<std::uint32_t>(r.sites_.size() - f.first);
        r.functions_.push_back(f);
    }
    std::stable_sort(r.functions_.begin(), r.functions_.end(),
                     [](const Function& a, const Function& b) { return a.start < b.start; });
    // Two FDEs for one start: which one a frame's PC belongs to is unknown.
    for (std::size_t i = 1; i < r.functions_.size(); ++i)
        if (r.functions_[i].start == r.functions_[i - 1].start)
            r.functions_[i].known = r.functions_[i - 1].known = false;
    return r;
}

std::optional<std::span<const ExceptionCallSite>>
ExceptionCallSites::of(std::uint64_t start) const {
    const auto it =
        std::lower_bound(functions_.begin(), functions_.end(), start,
                         [](const Function& f, std::uint64_t s) { return f.start < s; });
    if (it == functions_.end() || it->start != start || !it->known) return std::nullopt;
    return std::span<const ExceptionCallSite>(sites_).subspan(it->first, it->count);
}

} // namespace sfunwind::elf

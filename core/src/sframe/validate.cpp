// SPDX-License-Identifier: MIT
#include "sfunwind/sframe/validate.hpp"

#include <cstdio>
#include <string>

namespace sfunwind::sframe {
namespace {

class Validator {
  public:
    explicit Validator(const Section& s) : s_(s) {}

    void error(std::uint64_t at, std::string msg) {
        out_.push_back({Problem::Severity::Error, at, std::move(msg)});
    }
    void warn(std::uint64_t at, std::string msg) {
        out_.push_back({Problem::Severity::Warning, at, std::move(msg)});
    }
    void error(const Error& e) { error(e.where(), e.what()); }

    void header() {
        const Header& h = s_.header();
        const bool big = s_.view().order() == ByteOrder::Big;
        const bool abi_big = h.abi_arch == AbiArch::AArch64Big || h.abi_arch == AbiArch::S390xBig;
        if (big != abi_big)
            error(4, std::string("ABI/arch ") + std::string(s_.abi().name) +
                         " does not match the section's " + (big ? "big" : "little") +
                         "-endian magic");
        if (s_.abi().fixed_ra_offset != 0 && h.cfa_fixed_ra_offset == 0)
            error(6, "AMD64 section without a fixed RA offset");
        if (s_.abi().fixed_ra_offset == 0 && h.cfa_fixed_ra_offset != 0)
            warn(6, "fixed RA offset " + std::to_string(h.cfa_fixed_ra_offset) +
                        " on an ABI that tracks the RA");
    }

    void fdes() {
        const Header& h = s_.header();
        std::uint64_t total_fres = 0;
        bool have_prev = false;
        Fde prev;
        for (std::uint32_t i = 0; i < h.num_fdes; ++i) {
            auto f = s_.fde(i);
            if (!f) {
                error(f.error());
                continue;
            }
            total_fres += f->num_fres;
            one_fde(*f);
            if (have_prev && h.sorted()) {
                if (f->start < prev.start)
                    error(f->entry_offset, "FDE " + std::to_string(i) + " starts at " +
                                               to_hex(f->start) + ", before FDE " +
                                               std::to_string(i - 1) + " (" + to_hex(prev.start) +
                                               "), but the section claims to be sorted");
                else if (f->start < prev.end())
                    error(f->entry_offset, "FDE " + std::to_string(i) + " (" + to_hex(f->start) +
                                               ") overlaps FDE " + std::to_string(i - 1) + " [" +
                                               to_hex(prev.start) + ", " + to_hex(prev.end()) +
                                               ")");
            }
            prev = *f;
            have_prev = true;
        }
        if (total_fres != h.num_fres)
            error(12, "header says " + std::to_string(h.num_fres) + " FREs; the FDEs have " +
                          std::to_string(total_fres));
    }

    void one_fde(const Fde& f) {
        const std::string name = "FDE " + std::to_string(f.index);
        const Version v = s_.version();
        const std::uint8_t unused = v == Version::V3 ? 0x40 : 0xc0;
        if ((f.info & unused) != 0)
            warn(f.attr_offset, name + ": unused info bits set (" + to_hex(f.info) + ")");
        if (v == Version::V3 && (f.info2 & 0xe0U) != 0)
            warn(f.attr_offset + 3, name + ": unused info2 bits set (" + to_hex(f.info2) + ")");
        if (f.pauth_key == PauthKey::B && s_.abi().arch != Arch::AArch64)
            error(f.attr_offset, name + ": PAuth key B on a non-AArch64 ABI");
        if (f.start + f.size < f.start)
            error(f.entry_offset, name + ": function range wraps around");
        // fde() refuses a stored size of 0, so this is v1 on an ABI for which
        // no size is implied (layout_v1.cpp): lookups of it fail.
        const bool mask = f.pc_type == PcType::Mask;
        if (mask && f.rep_size == 0 && f.num_fres > 0)
            warn(f.entry_offset, name + ": PC-mask FDE without a repeat block size (SFrame v" +
                                     std::to_string(static_cast<unsigned>(v)) +
                                     " implies one only for AMD64)");

        const std::uint64_t limit = mask && f.rep_size != 0 ? f.rep_size : f.size;
        std::uint64_t at = f.fres_begin;
        bool have_prev = false;
        std::uint32_t prev_start = 0;
        for (std::uint32_t k = 0; k < f.num_fres; ++k) {
            auto fre = s_.fre_at(f, at);
            if (!fre) {
                error(fre.error());
                return;
            }
            const std::string fname = name + " FRE " + std::to_string(k);
            if (have_prev && fre->start <= prev_start)
                error(fre->offset, fname + ": start " + to_hex(fre->start) +
                                       " is not above the previous FRE's " + to_hex(prev_start));
            if (fre->start >= limit && !(fre->start == 0 && limit == 0))
                error(fre->offset, fname + ": start " + to_hex(fre->start) +
                                       " is outside the function (" + std::to_string(limit) +
                                       " bytes)");
            if (fre->mangled_ra && s_.abi().arch != Arch::AArch64)
                error(fre->offset, fname + ": mangled-RA bit on a non-AArch64 ABI");
            auto row = s_.row(f, *fre, k, limit);
            if (!row)
                error(row.error().where(), fname + ": " + row.error().what());
            else if (f.fde_type == FdeType::Default && s_.abi().arch == Arch::AArch64 &&
                     fre->word_count == 2)
                warn(fre->offset, fname + ": AArch64 FRE with 2 data words (the ABI uses 1 or 3)");
            prev_start = fre->start;
            have_prev = true;
            at += fre->size;
        }
    }

    std::vector<Problem> take() { return std::move(out_); }

  private:
    const Section& s_;
    std::vector<Problem> out_;
};

} // namespace

std::vector<Problem> validate(const Section& section) {
    Validator c(section);
    c.header();
    c.fdes();
    return c.take();
}

std::vector<Problem> validate(std::span<const std::uint8_t> bytes, std::uint64_t vaddr) {
    auto s = Section::parse(bytes, vaddr);
    if (!s) return {Problem{Problem::Severity::Error, s.error().where(), s.error().what()}};
    return validate(*s);
}

} // namespace sfunwind::sframe

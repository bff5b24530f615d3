// SPDX-License-Identifier: MIT
#include "shuffled_copy.hpp"

#include "sfunwind/sframe/writer.hpp"

#include <algorithm>
#include <random>
#include <string>

namespace sfunwind::bench {
namespace {

Expected<sframe::FdeSpec> describe_fde(const sframe::Section& section, std::uint32_t index) {
    auto fde = section.fde(index);
    if (!fde) return std::move(fde).error();
    auto fres = section.fres(*fde);
    if (!fres) return std::move(fres).error();

    sframe::FdeSpec spec;
    spec.start = fde->start;
    spec.size = fde->size;
    spec.pc_type = fde->pc_type;
    spec.rep_size = fde->rep_size;
    spec.fde_type = fde->fde_type;
    spec.signal = fde->signal;
    spec.pauth_key = fde->pauth_key;
    spec.fre_type = fde->fre_type;
    // The last FRE runs to the end of the function, or of the repeat block
    // for a PC-mask FDE (spec v3 section 2.3.3.1).
    const std::uint64_t end =
        fde->pc_type == sframe::PcType::Mask && fde->rep_size != 0 ? fde->rep_size : fde->size;
    for (std::size_t k = 0; k < fres->size(); ++k) {
        const sframe::Fre& fre = (*fres)[k];
        const std::uint64_t next = k + 1 < fres->size() ? (*fres)[k + 1].start : end;
        auto row = section.row(*fde, fre, static_cast<std::uint32_t>(k), next);
        if (!row) return std::move(row).error();
        sframe::FreSpec out;
        out.start = fre.start;
        out.cfa = row->cfa;
        out.ra = row->ra;
        out.fp = row->fp;
        out.mangled_ra = fre.mangled_ra;
        out.word_size = fre.word_size;
        spec.fres.push_back(out);
    }
    return spec;
}

} // namespace

Expected<std::vector<std::uint8_t>> shuffled_copy(const sframe::Section& section,
                                                  std::uint64_t seed) {
    const sframe::Header& h = section.header();
    sframe::WriterOptions options;
    options.version = h.version;
    options.abi = h.abi_arch;
    options.section_vaddr = section.vaddr();
    options.pcrel = h.pcrel();
    options.sorted = false;
    options.frame_pointer = (h.flags & sframe::flag::frame_pointer) != 0;
    options.cfa_fixed_ra_offset = h.cfa_fixed_ra_offset;
    options.cfa_fixed_fp_offset = h.cfa_fixed_fp_offset;

    std::vector<sframe::FdeSpec> fdes;
    fdes.reserve(section.fde_count());
    for (std::uint32_t i = 0; i < section.fde_count(); ++i) {
        auto spec = describe_fde(section, i);
        if (!spec) return std::move(spec).error();
        fdes.push_back(std::move(*spec));
    }
    std::mt19937_64 rng(seed);
    std::shuffle(fdes.begin(), fdes.end(), rng);

    sframe::Writer writer(options);
    for (auto& f : fdes)
        writer.add(std::move(f));
    return writer.write();
}

} // namespace sfunwind::bench

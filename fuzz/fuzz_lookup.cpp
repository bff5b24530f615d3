// SPDX-License-Identifier: MIT
// Row lookup at arbitrary PCs. The input is an SFrame section; the bytes after
// the part the section uses (Section::used_size(), as in a PT_GNU_SFRAME
// segment padded past the section) are 8-byte PC words, so the fuzzer's seeds
// are plain sections and it grows the PC list by appending. Each word is
// looked up as is, and again as an offset into the FDE it selects. Besides,
// every FDE is probed at its edges and at each FRE start.
//
// Properties: a found row covers the PC; lookup() picks the same FRE that a
// plain walk of fres() picks (the last whose start is <= the PC's offset,
// stopping at the first start above it, spec v3 section 2.4); and it agrees
// with find_fde().
#include "sfunwind/abi.hpp"
#include "sfunwind/sframe/section.hpp"
#include "support.hpp"

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <span>
#include <vector>

using namespace sfunwind;
using fuzz::require;

namespace {

constexpr std::uint64_t section_vaddr = 0x4010e8;
// Bounds on the work per input, so that a long run explores instead of
// looking up a thousand PCs in one section.
constexpr std::uint32_t max_fdes_probed = 64;
constexpr std::size_t max_pc_words = 64;

// The FRE a linear walk chooses for `pc` in `fde`, or none.
std::optional<std::uint32_t> walk(const sframe::Section& s, const sframe::Fde& fde,
                                  std::uint64_t pc) {
    auto fres = s.fres(fde);
    if (!fres || fres->empty()) return std::nullopt;
    std::uint64_t offset = pc - fde.start;
    if (fde.pc_type == sframe::PcType::Mask) {
        if (fde.rep_size == 0) return std::nullopt;
        offset %= fde.rep_size;
    }
    std::optional<std::uint32_t> best;
    for (std::uint32_t k = 0; k < fres->size(); ++k) {
        if ((*fres)[k].start > offset) break;
        best = k;
    }
    return best;
}

void probe(const sframe::Section& s, std::uint64_t pc) {
    auto row = s.lookup(pc);
    auto fde = s.find_fde(pc);
    if (!row) return;
    require(fde.has_value(), "lookup() succeeded, so find_fde() does", to_hex(pc));
    require(row->fde_index == fde->index, "lookup() uses find_fde()'s FDE", to_hex(pc));
    require(row->pc_begin <= pc && pc < row->pc_end, "the row covers the PC",
            to_hex(pc) + " not in [" + to_hex(row->pc_begin) + ", " + to_hex(row->pc_end) + ")");
    require(row->func_start == fde->start && row->func_size == fde->size,
            "the row names its function");
    (void)describe(*row, s.abi());
    if (row->outermost && fde->num_fres == 0) return; // v3: an FDE without FREs is outermost
    auto expected = walk(s, *fde, pc);
    // fres() may fail on a later FRE that lookup() never decodes.
    if (expected)
        require(row->fre_index == *expected, "lookup() picks the FRE a walk of fres() picks",
                to_hex(pc) + ": FRE " + std::to_string(row->fre_index) + " vs " +
                    std::to_string(*expected));
}

} // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
    const std::span<const std::uint8_t> bytes(data, size);
    auto section = sframe::Section::parse(bytes, section_vaddr);
    if (!section) return 0;
    const sframe::Section& s = *section;

    const std::uint32_t n = s.fde_count();
    for (std::uint32_t i = 0; i < n && i < max_fdes_probed; ++i) {
        auto fde = s.fde(i);
        if (!fde) continue;
        for (const std::uint64_t pc : {fde->start - 1, fde->start, fde->end() - 1, fde->end()})
            probe(s, pc);
        auto fres = s.fres(*fde);
        if (!fres) continue;
        for (std::size_t k = 0; k < fres->size() && k < max_fdes_probed; ++k) {
            probe(s, fde->start + (*fres)[k].start);
            if ((*fres)[k].start > 0) probe(s, fde->start + (*fres)[k].start - 1);
        }
    }

    // PC words after the section's bytes.
    const std::uint64_t used = std::min<std::uint64_t>(s.used_size(), size);
    const ByteView tail(bytes.subspan(static_cast<std::size_t>(used)), ByteOrder::Little);
    for (std::size_t w = 0; w < max_pc_words && tail.contains(8 * w, 8); ++w) {
        std::uint64_t word = 0;
        (void)tail.load(8 * w, word);
        probe(s, word);
        if (n == 0) continue;
        // High half: an FDE; low half: a signed offset from its start.
        if (auto fde = s.fde(static_cast<std::uint32_t>(word >> 32) % n)) {
            const auto offset = static_cast<std::int32_t>(static_cast<std::uint32_t>(word));
            probe(s, fde->start + static_cast<std::uint64_t>(std::int64_t{offset}));
        }
    }
    return 0;
}

// SPDX-License-Identifier: MIT
// Section decoding and validation: the input is an SFrame section's bytes (any
// version, either byte order). Parse it, validate it, dump it in both objdump
// styles, and read every FDE and FRE the way the CLI's `dump` and `check` do.
#include "sfunwind/sframe/dump.hpp"
#include "sfunwind/sframe/section.hpp"
#include "sfunwind/sframe/validate.hpp"
#include "support.hpp"

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <span>

using namespace sfunwind;
using fuzz::require;

namespace {

// A typical .sframe address; PC-relative starts add their field's offset to it.
constexpr std::uint64_t section_vaddr = 0x4010e8;

// Problems point into the section (or, for one cut short, into where its
// header should be): a byte offset past its end would send someone looking
// at the wrong bytes.
void check_offsets(const std::vector<sframe::Problem>& problems, std::size_t size) {
    const std::size_t limit = std::max<std::size_t>(size, sframe::header_size);
    for (const auto& p : problems)
        require(p.offset == no_offset || p.offset < limit,
                "validate() problem offset inside the section",
                to_hex(p.offset) + " of " + std::to_string(size) + " bytes: " + p.message);
}

} // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
    const std::span<const std::uint8_t> bytes(data, size);
    auto section = sframe::Section::parse(bytes, section_vaddr);
    if (!section) {
        const auto problems = sframe::validate(bytes, section_vaddr);
        require(problems.size() == 1 && problems[0].severity == sframe::Problem::Severity::Error,
                "an unparsable section gives one error");
        check_offsets(problems, size);
        return 0;
    }
    const sframe::Section& s = *section;
    require(s.used_size() <= size, "used_size() within the bytes");
    require(s.fde_subsection() <= size && s.fre_subsection() <= size,
            "sub-sections start inside the bytes");

    check_offsets(sframe::validate(s), size);

    for (const auto style : {sframe::DumpStyle::Binutils2_40, sframe::DumpStyle::Binutils2_47}) {
        sframe::DumpOptions options;
        options.style = style;
        const std::string text = sframe::dump(s, options);
        require(text.rfind("Contents of the SFrame section .sframe:\n", 0) == 0,
                "dump() starts with its title");
    }

    // Every FRE of every FDE, and its rules, as `sfunwind dump --rows` reads them.
    for (std::uint32_t i = 0; i < s.fde_count(); ++i) {
        auto fde = s.fde(i);
        if (!fde) continue;
        require(fde->index == i, "fde(i).index == i");
        auto fres = s.fres(*fde);
        if (!fres) continue;
        require(fres->size() == fde->num_fres, "fres() returns num_fres FREs");
        for (std::size_t k = 0; k < fres->size(); ++k) {
            const sframe::Fre& fre = (*fres)[k];
            require(fre.offset >= s.fre_subsection() && fre.offset + fre.size <= s.used_size(),
                    "an FRE lies inside the FRE sub-section");
            require(fre.word_count <= sframe::Fre::max_words, "at most 15 data words");
            const std::uint64_t next = k + 1 < fres->size() ? (*fres)[k + 1].start : fde->size;
            auto row = s.row(*fde, fre, static_cast<std::uint32_t>(k), next);
            if (!row) continue;
            (void)describe(*row, s.abi());
            require(row->outermost == (row->ra.kind == RegRule::Kind::Undefined),
                    "outermost exactly when the RA is undefined");
        }
    }
    return 0;
}

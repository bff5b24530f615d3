// SPDX-License-Identifier: MIT
#include "check_commands.hpp"
#include "check_options.hpp"
#include "sfunwind/convert/from_cfi.hpp"
#include "sfunwind/elf/elf_file.hpp"

#include <cerrno>
#include <cinttypes>
#include <cstdio>
#include <cstring>
#include <fstream>

namespace sfunwind::cli {

int run_convert(const Args& args) {
    auto parsed = check::parse_convert(args);
    if (parsed.help) {
        std::fputs(check::convert_help, stdout);
        return exit_ok;
    }
    if (!parsed.options) return exit_usage;
    const check::ConvertOptions& o = *parsed.options;

    auto file = elf::ElfFile::open(o.file);
    if (!file) {
        std::fprintf(stderr, "sfunwind convert: %s\n", file.error().message().c_str());
        return exit_usage;
    }
    convert::Options opts;
    opts.cfi_source = o.cfi_source;
    opts.section_vaddr = o.vaddr;
    opts.pcrel = o.pcrel;
    opts.plt = o.plt;
    auto result = convert::from_cfi(*file, opts);
    if (!result) {
        std::fprintf(stderr, "sfunwind convert: %s\n", result.error().message().c_str());
        return exit_usage;
    }
    if (result->fdes.empty()) {
        std::fprintf(stderr, "sfunwind convert: %s: no function could be converted\n",
                     o.file.c_str());
        for (const auto& s : result->skipped)
            std::fprintf(stderr, "  left out %s [0x%" PRIx64 ", 0x%" PRIx64 "): %s\n",
                         s.name.c_str(), s.begin, s.end, s.reason.c_str());
        return exit_usage;
    }
    std::ofstream out(o.output, std::ios::binary | std::ios::trunc);
    if (out)
        out.write(reinterpret_cast<const char*>(result->section.data()),
                  static_cast<std::streamsize>(result->section.size()));
    if (!out) {
        std::fprintf(stderr, "sfunwind convert: %s: %s\n", o.output.c_str(), std::strerror(errno));
        return exit_usage;
    }
    std::printf(
        "%s: wrote %s: SFrame v3, %zu FDEs (%zu flexible, %zu PC-mask), %zu FREs, %zu bytes, "
        "for address 0x%" PRIx64 "%s; %zu function(s) left out\n",
        o.file.c_str(), o.output.c_str(), result->fdes.size(), result->flexible, result->pc_mask,
        result->fres, result->section.size(), o.vaddr, o.pcrel ? " (PC-relative starts)" : "",
        result->skipped.size());
    if (o.verbose)
        for (const auto& s : result->skipped)
            std::printf("  left out %s [0x%" PRIx64 ", 0x%" PRIx64 "): %s\n", s.name.c_str(),
                        s.begin, s.end, s.reason.c_str());
    return result->skipped.empty() ? exit_ok : exit_finding;
}

} // namespace sfunwind::cli

// SPDX-License-Identifier: MIT
#include "commands.hpp"
#include "options.hpp"
#include "sfunwind/sframe/dump.hpp"

#include <cstdio>

namespace sfunwind::cli {

namespace {
constexpr const char* help = R"(usage: sfunwind dump [--raw --base ADDR] FILE...

Print each file's SFrame section in the layout of GNU objdump --sframe: the
header, then every function with its rows (STARTPC, CFA, FP, RA). Version 1
sections are printed as binutils 2.40 printed them, versions 2 and 3 as
binutils 2.47 does.

  --raw        FILE is a raw section (e.g. from objcopy -O binary -j .sframe)
  --base ADDR  with --raw: the section's virtual address
)";
} // namespace

int run_dump(const Args& args) {
    auto begun = begin_command(args, "dump", help);
    if (const int* status = std::get_if<int>(&begun)) return *status;
    const auto* o = &std::get<CommonOptions>(begun);
    int status = exit_ok;
    for (const auto& path : o->positional) {
        auto in = open_input(path, o->input);
        if (!in) {
            std::fprintf(stderr, "sfunwind dump: %s\n", in.error().message().c_str());
            status = exit_usage;
            continue;
        }
        const Input& input = **in;
        if (input.elf)
            std::printf("\n%s:     file format %s\n\n", path.c_str(),
                        bfd_target_name(*input.elf).c_str());
        sframe::DumpOptions d;
        if (input.where)
            d.section_name = input.where->how == elf::SframeLocation::How::Segment
                                 ? ".sframe"
                                 : input.where->name;
        std::fputs(sframe::dump(*input.section, d).c_str(), stdout);
    }
    return status;
}

} // namespace sfunwind::cli

// SPDX-License-Identifier: MIT
#include "commands.hpp"
#include "options.hpp"
#include "sfunwind/sframe/validate.hpp"

#include <algorithm>
#include <cinttypes>
#include <cstdio>

namespace sfunwind::cli {

namespace {
constexpr const char* help = R"(usage: sfunwind validate [--raw --base ADDR] FILE...

Check each file's SFrame section strictly: the header and sub-section bounds,
every FDE and FRE (bounds, counts, sorted order when claimed, FREs strictly
increasing and inside their function, types, sizes and flags valid for the
version, flexible-FDE words that make sense). Every problem is printed with
its byte offset in the section:

  FILE: .sframe+0x1c: error: FDE 3 FRE 2: start 0x40 is outside the function (32 bytes)

Exit status: 0 when no errors (warnings allowed), 1 when any file has errors,
2 on usage errors or unreadable files.
)";
} // namespace

int run_validate(const Args& args) {
    auto begun = begin_command(args, "validate", help);
    if (const int* status = std::get_if<int>(&begun)) return *status;
    const auto* o = &std::get<CommonOptions>(begun);
    int status = exit_ok;
    for (const auto& path : o->positional) {
        auto in = open_input(path, o->input);
        if (!in) {
            // A section that does not even parse is a finding, not a usage error,
            // when the file itself could be read.
            std::fprintf(stdout, "%s: error: %s\n", path.c_str(), in.error().message().c_str());
            status = in.error().code() == Errc::Io ? exit_usage : std::max(status, exit_finding);
            continue;
        }
        const Input& input = **in;
        const std::string name = input.where ? input.where->name : ".sframe";
        const auto problems = sframe::validate(*input.section);
        std::size_t errors = 0;
        for (const auto& p : problems) {
            const bool is_error = p.severity == sframe::Problem::Severity::Error;
            errors += is_error ? 1 : 0;
            if (p.offset == no_offset)
                std::printf("%s: %s: %s: %s\n", path.c_str(), name.c_str(),
                            is_error ? "error" : "warning", p.message.c_str());
            else
                std::printf("%s: %s+0x%" PRIx64 ": %s: %s\n", path.c_str(), name.c_str(), p.offset,
                            is_error ? "error" : "warning", p.message.c_str());
        }
        const auto& h = input.section->header();
        std::printf("%s: SFrame v%u, %s, %u FDEs, %u FREs: %zu error(s), %zu warning(s)\n",
                    path.c_str(), static_cast<unsigned>(h.version),
                    std::string(input.section->abi().name).c_str(), h.num_fdes, h.num_fres, errors,
                    problems.size() - errors);
        if (errors > 0 && status == exit_ok) status = exit_finding;
    }
    return status;
}

} // namespace sfunwind::cli

// SPDX-License-Identifier: MIT
#include "commands.hpp"
#include "options.hpp"
#include "sfunwind/elf/module_rows.hpp"
#include "sfunwind/row.hpp"

#include <cinttypes>
#include <cstdio>

namespace sfunwind::cli {

namespace {
constexpr const char* help = R"(usage: sfunwind lookup [--raw --base ADDR] FILE PC...

For each PC (a link-time address, hex with 0x or decimal), print the function
(FDE) and row (FRE) that cover it and the rules they give: how to compute the
CFA, and where the return address and the frame pointer are. A PowerPC64 file
without .sframe is read through its traceback tables, as the debuggers do.

Exit status: 0 if every PC has a row, 1 if some do not, 2 on usage errors.
)";
} // namespace

int run_lookup(const Args& args) {
    auto begun = begin_command(args, "lookup", help, 2);
    if (const int* status = std::get_if<int>(&begun)) return *status;
    const auto* o = &std::get<CommonOptions>(begun);
    // The rows a debugger would use: the file's unwind table (SFrame, or
    // ppc64 traceback tables), or the raw section given.
    std::shared_ptr<const RowSource> rows;
    std::shared_ptr<const elf::ElfFile> file;
    if (o->input.raw) {
        auto in = open_input(o->positional[0], o->input);
        if (!in) {
            std::fprintf(stderr, "sfunwind lookup: %s\n", in.error().message().c_str());
            return exit_usage;
        }
        // The section refers to the input's bytes: the rows keep the input.
        std::shared_ptr<Input> input = std::move(*in);
        sframe::Section section = std::move(*input->section);
        rows = sframe_rows(std::move(section), std::move(input));
    } else {
        elf::ModuleRows table = elf::open_module_rows(o->positional[0]);
        if (!table.rows) {
            const std::string& path = o->positional[0];
            const std::string problem = table.problem();
            std::fprintf(stderr, "sfunwind lookup: %s%s\n",
                         problem.rfind(path, 0) == 0 ? "" : (path + ": ").c_str(), problem.c_str());
            return exit_usage;
        }
        rows = table.rows;
        file = table.file;
    }
    int status = exit_ok;
    for (std::size_t i = 1; i < o->positional.size(); ++i) {
        const auto pc = parse_address(o->positional[i]);
        if (!pc) {
            std::fprintf(stderr, "sfunwind lookup: bad address '%s'\n", o->positional[i].c_str());
            return exit_usage;
        }
        auto row = rows->lookup(*pc);
        if (!row) {
            std::printf("0x%" PRIx64 ": %s\n", *pc, row.error().message().c_str());
            status = exit_finding;
            continue;
        }
        std::string where;
        if (file)
            if (const auto* sym = file->symbol_for(*pc))
                where = " <" + sym->name + "+0x" + [&] {
                    char b[24];
                    std::snprintf(b, sizeof b, "%" PRIx64, *pc - sym->value);
                    return std::string(b);
                }() + ">";
        if (rows->sframe() != nullptr)
            std::printf("0x%" PRIx64 "%s: FDE %u [0x%" PRIx64 ", 0x%" PRIx64 ") FRE %u [0x%" PRIx64
                        ", 0x%" PRIx64 "): %s\n",
                        *pc, where.c_str(), row->fde_index, row->func_start,
                        row->func_start + row->func_size, row->fre_index, row->pc_begin,
                        row->pc_end, describe(*row, rows->abi()).c_str());
        else
            std::printf("0x%" PRIx64 "%s: %s: function [0x%" PRIx64 ", 0x%" PRIx64
                        ") row %u [0x%" PRIx64 ", 0x%" PRIx64 "): %s\n",
                        *pc, where.c_str(), rows->kind().c_str(), row->func_start,
                        row->func_start + row->func_size, row->fre_index, row->pc_begin,
                        row->pc_end, describe(*row, rows->abi()).c_str());
    }
    return status;
}

} // namespace sfunwind::cli

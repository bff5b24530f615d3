// SPDX-License-Identifier: MIT
#include "compare_common.hpp"

#include "sample_pcs.hpp"

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>

namespace sfunwind::bench {

Expected<std::unique_ptr<Program>> load_program(const std::string& path) {
    auto file = elf::ElfFile::open(path);
    if (!file) return std::move(file).error();
    auto where = file->find_sframe();
    if (!where) return Error(where.error().code(), path + ": " + where.error().message());
    auto bytes = file->sframe_bytes(*where);
    if (!bytes) return Error(bytes.error().code(), path + ": " + bytes.error().message());

    auto p = std::make_unique<Program>(Program{path,
                                               std::filesystem::path(path).filename().string(),
                                               std::move(*file),
                                               {},
                                               0,
                                               std::nullopt,
                                               {}});
    p->sframe.assign(bytes->begin(), bytes->end());
    p->sframe_vaddr = where->vaddr;
    auto section = sframe::Section::parse(p->sframe, p->sframe_vaddr);
    if (!section) return Error(section.error().code(), path + ": " + section.error().message());
    p->section.emplace(std::move(*section));
    auto pcs = draw_pcs(*p->section, compare_pc_count, compare_pc_seed);
    if (!pcs) return Error(pcs.error().code(), path + ": " + pcs.error().message());
    p->pcs = std::move(*pcs);
    return p;
}

std::string describe_section(const sframe::Section& section, std::size_t bytes) {
    char buf[160];
    std::snprintf(buf, sizeof buf, "SFrame v%u%s, %u FDEs, %u FREs, %zu bytes",
                  static_cast<unsigned>(section.version()),
                  section.header().sorted() ? " sorted" : " unsorted", section.fde_count(),
                  section.header().num_fres, bytes);
    return buf;
}

std::string ratio_text(double slower_ns, double faster_ns) {
    char buf[32];
    std::snprintf(buf, sizeof buf, "%.1fx", faster_ns > 0 ? slower_ns / faster_ns : 0.0);
    return buf;
}

int main_over_programs(int argc, char** argv,
                       const std::function<int(const Program&, std::chrono::milliseconds)>& run) {
    long budget_ms = 1500;
    int first = 1;
    if (argc > 2 && std::strcmp(argv[1], "--budget-ms") == 0) {
        budget_ms = std::strtol(argv[2], nullptr, 10);
        first = 3;
    }
    if (first >= argc) {
        std::fprintf(stderr, "usage: %s [--budget-ms N] ELF...\n", argv[0]);
        return 2;
    }
    int status = 0;
    for (int i = first; i < argc; ++i) {
        auto p = sfunwind::bench::load_program(argv[i]);
        if (!p) {
            std::printf("%s\n", p.error().message().c_str());
            status = 1;
            continue;
        }
        if (run(**p, std::chrono::milliseconds(budget_ms)) != 0) status = 1;
    }
    return status;
}

} // namespace sfunwind::bench

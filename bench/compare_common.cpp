// SPDX-License-Identifier: MIT
#include "compare_common.hpp"

#include "sample_pcs.hpp"
#include "synthetic_section.hpp"

#include <charconv>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <string_view>

namespace sfunwind::bench {

namespace {

constexpr std::string_view synthetic_prefix = "synthetic:";
constexpr std::uint64_t synthetic_seed = 20261202;

// The rest of load_program(), for bytes from a file or made here.
Expected<std::unique_ptr<Program>> with_section(std::unique_ptr<Program> p) {
    auto section = sframe::Section::parse(p->sframe, p->sframe_vaddr);
    if (!section) return Error(section.error().code(), p->path + ": " + section.error().message());
    p->section.emplace(std::move(*section));
    auto pcs = draw_pcs(*p->section, compare_pc_count, compare_pc_seed);
    if (!pcs) return Error(pcs.error().code(), p->path + ": " + pcs.error().message());
    p->pcs = std::move(*pcs);
    return p;
}

Expected<std::unique_ptr<Program>> load_synthetic(const std::string& spec) {
    // Digits only, the whole rest (from_chars takes no sign or blank).
    const char* first = spec.data() + synthetic_prefix.size();
    const char* last = spec.data() + spec.size();
    std::uint32_t n = 0;
    const auto [end, ec] = std::from_chars(first, last, n);
    if (ec != std::errc{} || end != last || n == 0 || n > max_synthetic_functions)
        return Error(Errc::Malformed, spec + ": expected synthetic:N, N functions from 1 to " +
                                          std::to_string(max_synthetic_functions));
    auto made = synthetic_section(n, synthetic_seed);
    if (!made) return Error(made.error().code(), spec + ": " + made.error().message());
    auto p = std::make_unique<Program>();
    p->path = spec;
    p->name = spec;
    p->sframe = std::move(made->bytes);
    p->sframe_vaddr = made->vaddr;
    return with_section(std::move(p));
}

} // namespace

Expected<std::unique_ptr<Program>> load_program(const std::string& path) {
    if (path.starts_with(synthetic_prefix)) return load_synthetic(path);
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
    return with_section(std::move(p));
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
        std::fprintf(stderr, "usage: %s [--budget-ms N] ELF|synthetic:N...\n", argv[0]);
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

// SPDX-License-Identifier: MIT
// `sfunwind check --callee-saved`: the callee-saved register rules recovered
// from instructions (sfunwind/callee_saved/) against the DWARF CFI, per file.
#include "check_commands.hpp"
#include "check_options.hpp"
#include "progress.hpp"
#include "sfunwind/check/callee_saved_check.hpp"
#include "sfunwind/elf/elf_file.hpp"

#include <cstdio>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

namespace sfunwind::cli::check {
namespace {

double percent(std::uint64_t part, std::uint64_t whole) {
    return whole == 0 ? 0.0 : 100.0 * static_cast<double>(part) / static_cast<double>(whole);
}

void print_text(const sfunwind::check::CalleeSavedReport& r, bool details) {
    const auto& c = r.counts;
    std::printf("%s: %s, %llu functions, %llu instructions (and %llu of padding no path runs)\n",
                r.file.c_str(), r.abi.c_str(), static_cast<unsigned long long>(r.functions),
                static_cast<unsigned long long>(r.instructions),
                static_cast<unsigned long long>(r.padding_instructions));
    std::printf("  callee-saved rules compared with CFI: %llu (instruction, register) pairs\n",
                static_cast<unsigned long long>(c.compared));
    std::printf("    equal       %10llu\n", static_cast<unsigned long long>(c.equal));
    std::printf("    equivalent  %10llu\n", static_cast<unsigned long long>(c.equivalent));
    std::printf("    unknown     %10llu\n", static_cast<unsigned long long>(c.unknown));
    std::printf("    wrong       %10llu\n", static_cast<unsigned long long>(c.wrong));
    if (c.not_compared != 0)
        std::printf("    not compared (CFI expression) %llu\n",
                    static_cast<unsigned long long>(c.not_compared));
    if (c.not_preserved != 0)
        std::printf("    not compared (CFI \"same value\" for a register Swift code's calls need "
                    "not preserve) %llu\n",
                    static_cast<unsigned long long>(c.not_preserved));
    std::printf("  coverage (equal + equivalent) / compared: %.2f%%\n",
                percent(c.equal + c.equivalent, c.compared));
    std::printf("  functions declined: %llu; code seeded from the body's state: %llu regions; "
                "switch tables read: %llu; SFrame rows that disagreed with the count: %llu\n",
                static_cast<unsigned long long>(r.declined_total),
                static_cast<unsigned long long>(r.unreached_seeds),
                static_cast<unsigned long long>(r.switch_tables),
                static_cast<unsigned long long>(r.anchor_conflicts));
    std::printf("  rule tables: %llu bytes (%.1f per function)\n",
                static_cast<unsigned long long>(r.memory_bytes),
                r.functions == 0
                    ? 0.0
                    : static_cast<double>(r.memory_bytes) / static_cast<double>(r.functions));
    for (const auto& w : r.wrong)
        std::printf("  WRONG %s at %s: %s: analysis %s, CFI %s\n", w.function.c_str(),
                    to_hex(w.pc).c_str(), w.reg.c_str(), w.analysis.c_str(), w.cfi.c_str());
    if (details)
        for (const auto& d : r.declined)
            std::printf("  declined %s (%s): %s\n", d.name.c_str(), to_hex(d.function).c_str(),
                        d.why.c_str());
}

nlohmann::json to_json(const sfunwind::check::CalleeSavedReport& r) {
    const auto& c = r.counts;
    nlohmann::json j;
    j["file"] = r.file;
    j["abi"] = r.abi;
    j["functions"] = r.functions;
    j["instructions"] = r.instructions;
    j["padding_instructions"] = r.padding_instructions;
    j["compared"] = c.compared;
    j["equal"] = c.equal;
    j["equivalent"] = c.equivalent;
    j["unknown"] = c.unknown;
    j["wrong"] = c.wrong;
    j["not_compared"] = c.not_compared;
    j["not_preserved"] = c.not_preserved;
    j["coverage_percent"] = percent(c.equal + c.equivalent, c.compared);
    j["declined"] = r.declined_total;
    j["unreached_seeds"] = r.unreached_seeds;
    j["switch_tables"] = r.switch_tables;
    j["anchor_conflicts"] = r.anchor_conflicts;
    j["memory_bytes"] = r.memory_bytes;
    auto& wrong = j["wrong_pairs"] = nlohmann::json::array();
    for (const auto& w : r.wrong)
        wrong.push_back({{"pc", to_hex(w.pc)},
                         {"function", w.function},
                         {"register", w.reg},
                         {"analysis", w.analysis},
                         {"cfi", w.cfi}});
    auto& declined = j["declined_functions"] = nlohmann::json::array();
    for (const auto& d : r.declined)
        declined.push_back({{"function", d.name}, {"start", to_hex(d.function)}, {"why", d.why}});
    return j;
}

} // namespace

int run_check_callee_saved(const CheckOptions& o) {
    const bool show_progress = progress_wanted(o.progress);
    nlohmann::json files = nlohmann::json::array();
    bool unreadable = false;
    bool wrong = false;
    for (const auto& path : o.files) {
        auto file = elf::ElfFile::open(path);
        Expected<sfunwind::check::CalleeSavedReport> report =
            file ? Expected<sfunwind::check::CalleeSavedReport>(Error(Errc::Io, ""))
                 : Expected<sfunwind::check::CalleeSavedReport>(file.error());
        if (file) {
            Progress progress(show_progress, "sfunwind check --callee-saved: " + path);
            sfunwind::check::CalleeSavedOptions opts;
            opts.cfi_source = o.cfi_source;
            // --details: every wrong pair and declined function, not the first few.
            if (o.details) opts.max_listed = static_cast<std::size_t>(-1);
            opts.progress = [&progress](std::size_t done, std::size_t total) {
                progress.update(done, total);
            };
            report = sfunwind::check::check_callee_saved(*file, opts);
            progress.finish();
        }
        if (!report) {
            unreadable = true;
            if (o.json)
                files.push_back({{"file", path}, {"error", report.error().message()}});
            else
                std::fprintf(stderr, "sfunwind check: %s\n", report.error().message().c_str());
            continue;
        }
        wrong = wrong || report->counts.wrong != 0;
        if (o.json) {
            files.push_back(to_json(*report));
        } else {
            print_text(*report, o.details);
            std::fflush(stdout);
        }
    }
    if (o.json) std::printf("%s\n", nlohmann::json{{"files", files}}.dump(2).c_str());
    if (unreadable) return exit_usage;
    return wrong ? exit_finding : exit_ok;
}

} // namespace sfunwind::cli::check

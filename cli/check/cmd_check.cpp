// SPDX-License-Identifier: MIT
#include "check_commands.hpp"
#include "check_options.hpp"
#include "progress.hpp"
#include "report.hpp"
#include "sfunwind/check/check.hpp"
#include "sfunwind/elf/elf_file.hpp"

#include <chrono>
#include <cstdio>

namespace sfunwind::cli {

int run_check(const Args& args) {
    auto parsed = check::parse_check(args);
    if (parsed.help) {
        std::fputs(check::check_help, stdout);
        return exit_ok;
    }
    if (!parsed.options) return exit_usage;
    const check::CheckOptions& o = *parsed.options;
    if (o.callee_saved) return check::run_check_callee_saved(o);
    const bool show_progress = check::progress_wanted(o.progress);

    std::vector<check::FileResult> results;
    bool unreadable = false;
    bool failed = false;
    for (const auto& path : o.files) {
        check::FileResult result;
        result.path = path;
        const auto started = std::chrono::steady_clock::now();
        auto file = elf::ElfFile::open(path);
        if (!file) {
            result.error = file.error().message();
        } else {
            check::Progress progress(show_progress, "sfunwind check: " + path);
            sfunwind::check::Options opts;
            opts.cfi_source = o.cfi_source;
            opts.evaluate = o.evaluate;
            opts.progress = [&progress](std::size_t done, std::size_t total) {
                progress.update(done, total);
            };
            auto report = sfunwind::check::check(*file, opts);
            progress.finish();
            if (report)
                result.report.emplace(std::move(*report));
            else
                result.error = report.error().message();
        }
        result.seconds =
            std::chrono::duration<double>(std::chrono::steady_clock::now() - started).count();
        if (result.report) {
            result.failed = check::fails(*result.report, o.fail_on);
            failed = failed || result.failed;
        } else {
            unreadable = true;
        }
        if (!o.json) {
            check::print_text(result, o, stdout);
            std::fflush(stdout);
        }
        results.push_back(std::move(result));
    }
    if (o.json) check::print_json(results, o, stdout);
    if (unreadable) return exit_usage;
    return failed ? exit_finding : exit_ok;
}

} // namespace sfunwind::cli

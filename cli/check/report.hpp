// SPDX-License-Identifier: MIT
// What `sfunwind check` prints for each file: a summary per class, and with
// --details every disagreement, one-sided function and unreachable row; as
// text or as one JSON document for all files.
#pragma once

#include "check_options.hpp"
#include "sfunwind/check/check.hpp"

#include <cstdio>
#include <optional>
#include <string>
#include <vector>

namespace sfunwind::cli::check {

struct FileResult {
    std::string path;
    std::optional<sfunwind::check::Report> report; // empty: the file could not be checked
    std::string error;
    double seconds = 0;  // wall time: reading the file and checking it
    bool failed = false; // something --fail-on names was found
};

// Whether the report holds something --fail-on names.
bool fails(const sfunwind::check::Report& report, const FailOn& fail_on);

// Breakpoints compared (both and plt classes).
std::uint64_t compared_breakpoints(const sfunwind::check::Report& report);

void print_text(const FileResult& result, const CheckOptions& options, std::FILE* out);
void print_json(const std::vector<FileResult>& results, const CheckOptions& options,
                std::FILE* out);

} // namespace sfunwind::cli::check

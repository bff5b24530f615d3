// SPDX-License-Identifier: MIT
// Shared by the fuzz targets: a failed property aborts, which libFuzzer
// reports as a crash and saves the input for.
#pragma once

#include <cstdio>
#include <cstdlib>
#include <string>

namespace sfunwind::fuzz {

// A property that holds for every input, however malformed: the decoder's
// promise, not an accident of the seeds.
inline void require(bool holds, const char* property, const std::string& detail = {}) {
    if (holds) return;
    std::fprintf(stderr, "fuzz property violated: %s%s%s\n", property, detail.empty() ? "" : ": ",
                 detail.c_str());
    std::abort();
}

} // namespace sfunwind::fuzz

// SPDX-License-Identifier: MIT
#include "progress.hpp"

#include <cstdio>
#include <optional>
#include <unistd.h>

namespace sfunwind::cli::check {

namespace {
constexpr auto redraw_interval = std::chrono::milliseconds(100);
}

Progress::Progress(bool enabled, std::string label)
    : enabled_(enabled), label_(std::move(label)),
      next_(std::chrono::steady_clock::now() + redraw_interval) {}

Progress::~Progress() {
    finish();
}

void Progress::update(std::size_t done, std::size_t total) {
    if (!enabled_) return;
    const auto now = std::chrono::steady_clock::now();
    // Small files finish before the first redraw and print nothing.
    if (now < next_ && done != total) return;
    if (!drawn_ && done == total) return;
    next_ = now + redraw_interval;
    const double pct =
        total == 0 ? 100.0 : 100.0 * static_cast<double>(done) / static_cast<double>(total);
    std::fprintf(stderr, "\r%s: %zu/%zu functions (%.0f%%)\033[K", label_.c_str(), done, total,
                 pct);
    std::fflush(stderr);
    drawn_ = true;
}

void Progress::finish() {
    if (!drawn_) return;
    std::fputs("\r\033[K", stderr);
    std::fflush(stderr);
    drawn_ = false;
}

bool progress_wanted(const std::optional<bool>& option) {
    if (option) return *option;
    return ::isatty(STDERR_FILENO) == 1;
}

} // namespace sfunwind::cli::check

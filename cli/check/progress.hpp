// SPDX-License-Identifier: MIT
// A one-line progress indicator on stderr, redrawn at most ten times a
// second, for checks of large files. Off unless asked for or stderr is a
// terminal, so that CI logs stay clean.
#pragma once

#include <chrono>
#include <cstddef>
#include <optional>
#include <string>

namespace sfunwind::cli::check {

class Progress {
  public:
    Progress(bool enabled, std::string label);
    Progress(const Progress&) = delete;
    Progress& operator=(const Progress&) = delete;
    ~Progress();

    void update(std::size_t done, std::size_t total);
    // Erases the line (if one was drawn).
    void finish();

  private:
    bool enabled_;
    bool drawn_ = false;
    std::string label_;
    std::chrono::steady_clock::time_point next_;
};

// --progress / --no-progress, else whether stderr is a terminal.
bool progress_wanted(const std::optional<bool>& option);

} // namespace sfunwind::cli::check

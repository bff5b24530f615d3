// SPDX-License-Identifier: MIT
// Writer bugs and format limits that explain a disagreement, recognised by
// their exact shape so that a report can name them. Each entry says what
// the writer did and why the CFI is right; an unrecognised disagreement
// stays unnamed.
#pragma once

#include "sfunwind/abi.hpp"
#include "sfunwind/cfi/cfi_table.hpp"
#include "sfunwind/row.hpp"

#include <string>

namespace sfunwind::check::detail {

struct KnownIssueContext {
    const Abi& abi;
    const std::string& section; // the section holding the PC
    // The first row of the CFI FDE that holds the PC (the rules at the
    // function's start), or null.
    const cfi::CfiRow* first_row = nullptr;
};

// The name and explanation of a known issue this disagreement matches, or
// an empty string.
std::string known_issue(const KnownIssueContext& context, const Row& sframe,
                        const cfi::CfiRow& cfi);

} // namespace sfunwind::check::detail

// SPDX-License-Identifier: MIT
// The exception call sites of a module: for each function an .eh_frame FDE
// describes, the LSDA's call-site table (the 'L' augmentation's pointer into
// .gcc_except_table; Itanium C++ ABI "Exception Handling", LSB 5.0
// "Exception Frames"), as link-time addresses. A throw out of a call whose
// return address - 1 lies in a site's [begin, end) enters its landing pad.
//
// Read by hand: libdw splits .eh_frame into entries but reads no LSDA, and
// the debugger adapters do not link it; the LSDA's layout is otherwise read
// only inside each language's personality routine.
#pragma once

#include "sfunwind/error.hpp"

#include <cstdint>
#include <optional>
#include <span>
#include <vector>

namespace sfunwind::elf {

class ElfFile;

struct ExceptionCallSite {
    std::uint64_t begin = 0;
    std::uint64_t end = 0;
    std::uint64_t landing_pad = 0;
};

class ExceptionCallSites {
  public:
    // Every FDE of the file's .eh_frame and its LSDA, if it has one. A file
    // without .eh_frame (or section headers) has no function known.
    static ExceptionCallSites read(const ElfFile& file);

    // The call sites with a landing pad of the function whose FDE starts at
    // link-time `start`, in the table's order: empty for a function without
    // an LSDA; nullopt when no FDE starts there, or its LSDA (or its CIE)
    // could not be read whole, or two FDEs start there.
    std::optional<std::span<const ExceptionCallSite>> of(std::uint64_t start) const;

    std::size_t functions() const noexcept { return functions_.size(); }
    std::size_t call_sites() const noexcept { return sites_.size(); }
    // What could not be read, with the .eh_frame or LSDA offset (the first
    // 16 problems).
    const std::vector<Error>& problems() const noexcept { return problems_; }

  private:
    struct Function {
        std::uint64_t start = 0;
        std::uint32_t first = 0; // into sites_
        std::uint32_t count = 0;
        bool known = false;
    };
    std::vector<Function> functions_; // sorted by start
    std::vector<ExceptionCallSite> sites_;
    std::vector<Error> problems_;
};

} // namespace sfunwind::elf

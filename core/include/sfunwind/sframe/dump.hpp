// SPDX-License-Identifier: MIT
// Text dumps of an SFrame section in the layout GNU objdump --sframe uses, so
// that sfunwind's output can be compared with binutils' line by line. Each
// version is printed as the newest objdump that reads it would print it:
// binutils 2.40 for v1 (later releases no longer print v1), 2.47 for v2/v3.
#pragma once

#include "sfunwind/sframe/section.hpp"

#include <string>

namespace sfunwind::sframe {

enum class DumpStyle : std::uint8_t {
    Auto, // by version, as above
    Binutils2_40,
    Binutils2_47,
};

struct DumpOptions {
    DumpStyle style = DumpStyle::Auto;
    std::string section_name = ".sframe";
};

// "Contents of the SFrame section .sframe:" and everything after it. FDEs
// that cannot be decoded are reported inline ("<corrupt FDE: ...>") and the
// dump goes on.
std::string dump(const Section& section, const DumpOptions& options = {});

} // namespace sfunwind::sframe

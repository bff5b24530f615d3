// SPDX-License-Identifier: MIT
// Text helpers shared by the commands.
#pragma once

#include "sfunwind/sframe/format.hpp"

#include <cstdint>
#include <optional>
#include <string>

namespace sfunwind::lldb_plugin {

// "0x00007ffd2f3c6a10": addresses padded to 16 digits so that columns line up.
std::string addr16(std::uint64_t v);
// The same, or 16 dashes padded when unknown.
std::string addr16(const std::optional<std::uint64_t>& v);
// "v1", "v2", "v3".
const char* version_name(sframe::Version v);

} // namespace sfunwind::lldb_plugin

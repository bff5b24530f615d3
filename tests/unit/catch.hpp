// SPDX-License-Identifier: MIT
// Catch2 2 (Debian 12) and Catch2 3 (sid) spell their headers differently.
#pragma once
#if defined(SFUNWIND_CATCH3)
#include <catch2/catch_all.hpp>
#else
#include <catch2/catch.hpp>
#endif

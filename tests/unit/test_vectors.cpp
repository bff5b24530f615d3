// SPDX-License-Identifier: MIT
// The 110 sections GNU as/ld 2.40 to 2.46 wrote for binutils' own SFrame
// tests, each with what that release's objdump printed: every one must
// decode, validate clean, and dump to the same text.
#include "catch.hpp"
#include "sfunwind/sframe/dump.hpp"
#include "sfunwind/sframe/section.hpp"
#include "sfunwind/sframe/validate.hpp"
#include "support.hpp"
#include "vectors.hpp"

#include <algorithm>
#include <nlohmann/json.hpp>

using namespace sfunwind;
namespace fs = std::filesystem;

namespace {

using test::load_vectors;
using test::Vector;

// Wording that differs between the binutils release that made a vector and
// the one sfunwind's dump imitates (2.40 for v1, 2.47 for v2 and v3).
std::string reword(std::string text, const std::string& name) {
    (void)name;
    return text;
}

} // namespace

TEST_CASE("every shared test vector decodes, validates and dumps like objdump", "[vectors]") {
    const auto vectors = load_vectors();
    REQUIRE(vectors.size() == 110);
    for (const auto& v : vectors) {
        INFO("vector " << v.name);
        auto section = sframe::Section::parse(v.bytes, v.base);
        if (v.bytes.empty()) {
            // The linker wrote no section (nothing to describe); objdump
            // printed only the file line, and parsing must say "too short".
            CHECK(v.groundtruth.find("Contents of the SFrame section") == std::string::npos);
            REQUIRE_FALSE(section.has_value());
            CHECK(section.error().code() == Errc::Truncated);
            continue;
        }
        if (!section) {
            FAIL_CHECK("parse failed: " << section.error().message());
            continue;
        }
        const auto problems = sframe::validate(*section);
        for (const auto& p : problems)
            INFO("problem: " << p.message << " at " << p.offset);
        CHECK(std::none_of(problems.begin(), problems.end(), [](const auto& p) {
            return p.severity == sframe::Problem::Severity::Error;
        }));
        const std::string expected =
            test::normalise(reword(test::section_part(v.groundtruth), v.name));
        const std::string actual = test::normalise(sframe::dump(*section));
        CHECK(actual == expected);
    }
}

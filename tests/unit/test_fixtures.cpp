// SPDX-License-Identifier: MIT
// The committed fixture programs (tests/fixtures/manifest.tsv), built by every
// real SFrame writer: each decodes, validates, and dumps exactly as the
// objdump of its version printed it when the fixture was made (host objdump
// 2.40 for v1, the sid chroot's 2.47 for v2 and v3).
#include "catch.hpp"
#include "sfunwind/elf/elf_file.hpp"
#include "sfunwind/sframe/dump.hpp"
#include "sfunwind/sframe/validate.hpp"
#include "support.hpp"

#include <algorithm>
#include <map>

using namespace sfunwind;
namespace fs = std::filesystem;

namespace {

struct Fixture {
    std::string path;
    std::string writer;
    unsigned version;
    std::string arch;
};

std::vector<Fixture> fixtures() {
    std::vector<Fixture> out;
    std::istringstream in(test::read_text(test::source_dir() / "tests/fixtures/manifest.tsv"));
    for (std::string line; std::getline(in, line);) {
        if (line.empty() || line[0] == '#') continue;
        std::vector<std::string> f;
        std::istringstream cols(line);
        for (std::string c; std::getline(cols, c, '\t');)
            f.push_back(c);
        if (f.size() < 4) continue;
        out.push_back({f[0], f[1], static_cast<unsigned>(std::stoul(f[2])), f[3]});
    }
    return out;
}

} // namespace

TEST_CASE("every fixture decodes, validates and dumps like its writer's objdump", "[fixtures]") {
    const auto all = fixtures();
    REQUIRE(all.size() > 50);
    std::map<unsigned, int> per_version;
    for (const auto& fx : all) {
        INFO("fixture " << fx.path);
        const fs::path bin = test::source_dir() / "tests/fixtures" / fx.path;
        auto file = elf::ElfFile::open(bin.string());
        REQUIRE(file.has_value());
        auto section = file->sframe();
        if (!section) FAIL_CHECK(section.error().message());
        if (!section) continue;
        CHECK(static_cast<unsigned>(section->version()) == fx.version);
        const auto problems = sframe::validate(*section);
        for (const auto& p : problems)
            INFO("problem: " << p.message << " at " << p.offset);
        CHECK(std::none_of(problems.begin(), problems.end(), [](const auto& p) {
            return p.severity == sframe::Problem::Severity::Error;
        }));
        const fs::path expected = test::source_dir() / "tests/fixtures/expected" /
                                  (fx.path.substr(fx.path.find('/') + 1) + ".sframe.txt");
        REQUIRE(fs::exists(expected));
        CHECK(test::normalise(sframe::dump(*section)) ==
              test::normalise(test::section_part(test::read_text(expected))));
        ++per_version[fx.version];
    }
    // Every writer's version is represented.
    CHECK(per_version[1] > 0);
    CHECK(per_version[2] > 0);
    CHECK(per_version[3] > 0);
}

// SPDX-License-Identifier: MIT
#include "large_fixture.hpp"

#include "sfunwind/elf/elf_file.hpp"
#include "sfunwind/sframe/section.hpp"

#include <fstream>
#include <nlohmann/json.hpp>
#include <sstream>

namespace sfunwind::bench {
namespace {

Error mismatch(const std::string& file, const std::string& what, std::uint64_t got,
               std::uint64_t want) {
    return Error(Errc::Malformed, file + ": " + what + " is " + std::to_string(got) +
                                      ", sections.json says " + std::to_string(want) +
                                      " (rerun tests/fixtures/large/make.sh?)");
}

Expected<LargeSection> load_one(const std::filesystem::path& dir, const nlohmann::json& entry) {
    LargeSection out;
    out.name = entry.at("file").get<std::string>();
    const auto path = (dir / out.name).string();
    auto file = elf::ElfFile::open(path);
    if (!file) return std::move(file).error();
    auto where = file->find_sframe();
    if (!where) return std::move(where).error();
    auto bytes = file->sframe_bytes(*where);
    if (!bytes) return std::move(bytes).error();
    out.bytes.assign(bytes->begin(), bytes->end());
    out.vaddr = where->vaddr;
    out.version = entry.at("sframe_version").get<unsigned>();
    out.num_fdes = entry.at("sframe_num_fdes").get<std::uint32_t>();
    out.num_fres = entry.at("sframe_num_fres").get<std::uint32_t>();

    // The benchmark means nothing if it reads a different section from the
    // one binutils described.
    const auto& json_section = entry.at("sframe");
    if (const auto want = json_section.at("vaddr").get<std::uint64_t>(); out.vaddr != want)
        return mismatch(path, ".sframe address", out.vaddr, want);
    if (const auto want = json_section.at("size").get<std::uint64_t>(); out.bytes.size() != want)
        return mismatch(path, ".sframe size", out.bytes.size(), want);
    auto section = sframe::Section::parse(out.bytes, out.vaddr);
    if (!section)
        return Error(section.error().code(), path + ": " + section.error().what(),
                     section.error().where());
    if (static_cast<unsigned>(section->version()) != out.version)
        return mismatch(path, "SFrame version", static_cast<unsigned>(section->version()),
                        out.version);
    if (section->fde_count() != out.num_fdes)
        return mismatch(path, "FDE count", section->fde_count(), out.num_fdes);
    if (section->header().num_fres != out.num_fres)
        return mismatch(path, "FRE count", section->header().num_fres, out.num_fres);
    return out;
}

} // namespace

Expected<std::vector<LargeSection>> load_large_sections(const std::filesystem::path& dir) {
    const auto json_path = dir / "sections.json";
    std::ifstream in(json_path, std::ios::binary);
    if (!in) return Error(Errc::Io, "cannot open " + json_path.string());
    std::ostringstream text;
    text << in.rdbuf();
    const auto json = nlohmann::json::parse(text.str(), nullptr, /*allow_exceptions=*/false);
    if (json.is_discarded() || !json.contains("binaries") || !json.at("binaries").is_array())
        return Error(Errc::Malformed, json_path.string() + ": not JSON with a \"binaries\" array");

    std::vector<LargeSection> out;
    for (const auto& entry : json.at("binaries")) {
        try {
            auto one = load_one(dir, entry);
            if (!one) return std::move(one).error();
            out.push_back(std::move(*one));
        } catch (const nlohmann::json::exception& e) {
            return Error(Errc::Malformed, json_path.string() + ": " + e.what());
        }
    }
    if (out.empty()) return Error(Errc::NotFound, json_path.string() + " lists no binaries");
    return out;
}

} // namespace sfunwind::bench

// SPDX-License-Identifier: MIT
// Exception call sites (elf::ExceptionCallSites): the LSDAs of a C++ fixture
// as GCC wrote them, damaged copies of its tables, and the callee-saved
// analysis at every landing pad of the C++ fixtures against the calls that
// enter it.
#include "../../core/src/callee_saved/instruction.hpp"
#include "catch.hpp"
#include "open_elf.hpp"
#include "sfunwind/callee_saved/module_rules.hpp"
#include "sfunwind/elf/call_sites.hpp"
#include "sfunwind/elf/eh_encoding.hpp"
#include "sfunwind/elf/module_rows.hpp"
#include "support.hpp"

#include <array>
#include <cstdint>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <vector>

using namespace sfunwind;

namespace {

std::filesystem::path fixture(const char* writer, const char* name) {
    return test::source_dir() / "tests" / "fixtures" / "bin" / writer / name;
}

std::vector<std::uint8_t> file_bytes(const std::filesystem::path& path) {
    std::ifstream in(path, std::ios::binary);
    return {std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};
}

bool same_sites(std::optional<std::span<const elf::ExceptionCallSite>> got,
                const std::vector<elf::ExceptionCallSite>& want) {
    if (!got || got->size() != want.size()) return false;
    for (std::size_t i = 0; i < want.size(); ++i)
        if ((*got)[i].begin != want[i].begin || (*got)[i].end != want[i].end ||
            (*got)[i].landing_pad != want[i].landing_pad)
            return false;
    return true;
}

} // namespace

TEST_CASE("call sites: the LSDAs GCC 16 wrote for the C++ fixture", "[call_sites]") {
    // Read independently with pyelftools (FDE lsda_pointer) and the LSDA
    // layout, 2026-11-29: 18 FDEs, 11 with an LSDA, 12 sites with a pad.
    const auto file = test::open_elf(fixture("gas-2.47", "cxx_exceptions-O2-nofp").string());
    const auto& sites = file.exception_call_sites();
    CHECK(sites.problems().empty());
    CHECK(sites.functions() == 18);
    CHECK(sites.call_sites() == 12);
    CHECK(
        same_sites(sites.of(0x1450),
                   {{0x1455, 0x145a, 0x146b}, {0x1484, 0x1489, 0x14c0}, {0x149a, 0x149f, 0x146b}}));
    // main's .cold part: its own LSDA, its pads inside it.
    CHECK(same_sites(sites.of(0x10f5), {{0x1116, 0x111b, 0x1131}, {0x112c, 0x1131, 0x1152}}));
    CHECK(same_sites(sites.of(0x11d0), {{0x1257, 0x125c, 0x1288}}));
    // An LSDA whose sites have no landing pad, and an FDE without an LSDA:
    // known, no pads.
    CHECK(same_sites(sites.of(0x118d), {}));
    CHECK(same_sites(sites.of(0x1420), {}));
    // No FDE starts there.
    CHECK_FALSE(sites.of(0x1451).has_value());
    // Built without unwind tables: nothing is known.
    const auto noeh = test::open_elf(fixture("gas-2.47", "cxx_exceptions-O2-nofp-noeh").string());
    CHECK(noeh.exception_call_sites().functions() == 0);
    CHECK_FALSE(noeh.exception_call_sites().of(0x1450).has_value());
}

TEST_CASE("call sites: damaged tables end the reading of what they hold", "[call_sites]") {
    const auto path = fixture("gas-2.47", "cxx_exceptions-O2-nofp");
    const auto original = file_bytes(path);
    const auto clean = test::open_elf(path.string());
    const elf::SectionInfo* table = clean.section(".gcc_except_table");
    const elf::SectionInfo* eh = clean.section(".eh_frame");
    REQUIRE(table != nullptr);
    REQUIRE(eh != nullptr);
    // Every byte of both tables set to 0xff in turn, and truncated LSDAs
    // (the table's last bytes): no crash, no site outside what was read.
    std::size_t damaged = 0;
    auto check_copy = [&](std::uint64_t offset, std::uint8_t value) {
        auto bytes = original;
        bytes[offset] = value;
        auto copy = elf::ElfFile::from_bytes(bytes, "damaged");
        REQUIRE(copy);
        const auto& sites = copy->exception_call_sites();
        CHECK(sites.problems().size() <= 16);
        for (const std::uint64_t start :
             std::array<std::uint64_t, 4>{0x10f5, 0x1450, 0x11d0, 0x1400})
            if (const auto s = sites.of(start); s)
                for (const auto& site : *s)
                    CHECK(site.begin <= site.end);
        if (!sites.problems().empty()) ++damaged;
    };
    for (std::uint64_t i = 0; i < table->size; ++i)
        check_copy(table->offset + i, 0xff);
    for (std::uint64_t i = 0; i < eh->size; ++i)
        check_copy(eh->offset + i, 0xff);
    // Some damage is reported with where it is.
    CHECK(damaged > 0);
    auto bytes = original;
    // The first entry's length past the section's end.
    bytes[eh->offset + 3] = 0x7f;
    auto copy = elf::ElfFile::from_bytes(bytes, "long");
    REQUIRE(copy);
    const auto& sites = copy->exception_call_sites();
    REQUIRE_FALSE(sites.problems().empty());
    CHECK(sites.problems()[0].where() == 0);
    CHECK(sites.functions() == 0);
}

TEST_CASE("call sites: every landing pad of the C++ fixtures claims no more than each call "
          "that enters it",
          "[call_sites][callee_saved]") {
    // The analysis's rule at a landing pad must hold for every call its
    // call sites send there: "same" only where each such call has the
    // register intact, a slot only where each has the value in that slot.
    using Kind = RegRule::Kind;
    std::size_t pads = 0;
    std::size_t claims = 0;
    for (const char* writer : {"gas-2.40", "gas-2.44", "gas-2.47", "clang-23"}) {
        for (const char* name :
             {"cxx_exceptions-O2-nofp", "cxx_exceptions-O2-nofp-static", "cxx_exceptions-O0-g"}) {
            const auto path = fixture(writer, name);
            if (!std::filesystem::exists(path)) continue;
            INFO(path.string());
            auto module = elf::open_module_rows(path.string());
            REQUIRE(module.rows);
            auto analysis = callee_saved::module_rules(module.file.get(), module.rows);
            const auto& table = module.file->exception_call_sites();
            const sframe::Section* section = module.sframe();
            REQUIRE(section != nullptr);
            for (std::uint32_t i = 0; i < section->fde_count(); ++i) {
                const auto fde = section->fde(i);
                if (!fde || fde->size == 0) continue;
                const auto sites = table.of(fde->start);
                if (!sites || sites->empty()) continue;
                const callee_saved::FunctionRules* rules =
                    analysis->function(fde->start, fde->size);
                if (rules == nullptr) continue;
                const auto code = module.file->loaded_bytes(fde->start, fde->size);
                REQUIRE(code);
                callee_saved::detail::Code decoded;
                REQUIRE(
                    callee_saved::detail::decode(section->abi(), fde->start, *code, {}, decoded));
                const auto regs = rules->registers();
                for (const auto& in : decoded.instructions) {
                    if (in.flow != callee_saved::detail::Flow::Call) continue;
                    const std::uint64_t ip = in.address + in.size - 1;
                    for (const auto& site : *sites) {
                        if (ip < site.begin || ip >= site.end) continue;
                        if (site.landing_pad < fde->start ||
                            site.landing_pad >= fde->start + fde->size)
                            break;
                        ++pads;
                        for (std::size_t r = 0; r < regs.size(); ++r) {
                            const RegRule at_pad = rules->at(site.landing_pad, regs[r]);
                            const RegRule at_call = rules->at(in.address, regs[r]);
                            INFO("call " << in.address << " pad " << site.landing_pad
                                         << " register " << regs[r]);
                            if (at_pad.kind == Kind::SameValue) {
                                ++claims;
                                CHECK(at_call.kind == Kind::SameValue);
                            } else if (at_pad.kind == Kind::AtCfa) {
                                ++claims;
                                CHECK((at_call == at_pad ||
                                       rules->slot_at(in.address, r) == at_pad.offset));
                            }
                        }
                        break;
                    }
                }
            }
        }
    }
    CHECK(pads >= 40);
    CHECK(claims >= 100);
}

TEST_CASE("call sites: a CIE's augmentation letters, read in order", "[call_sites]") {
    // "zPLR": personality (udata4), LSDA encoding, FDE encoding.
    const std::array<std::uint8_t, 7> data = {0x03, 0x10, 0x20, 0x30, 0x40, 0x1b, 0x1b};
    const ByteView view(std::span<const std::uint8_t>(data), ByteOrder::Little);
    const auto a = elf::read_cie_augmentation("zPLR", view);
    CHECK(a.unreadable.empty());
    CHECK(a.fde_data);
    REQUIRE(a.lsda_encoding);
    CHECK(*a.lsda_encoding == 0x1b);
    CHECK(a.fde_encoding_read);
    CHECK(a.fde_encoding == 0x1b);
    // An aligned personality pointer (DW_EH_PE_aligned) pads from the
    // section's start, which the data does not give: the letters after it
    // are not guessed.
    std::array<std::uint8_t, 7> aligned = data;
    aligned[0] = 0x53;
    const auto b = elf::read_cie_augmentation(
        "zPLR", ByteView(std::span<const std::uint8_t>(aligned), ByteOrder::Little));
    CHECK_FALSE(b.unreadable.empty());
    CHECK_FALSE(b.lsda_encoding);
    CHECK_FALSE(b.fde_encoding_read);
}

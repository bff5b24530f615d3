// SPDX-License-Identifier: MIT
// ElfFile on the small programs of tests/unit/data (made by make.sh). The
// expected numbers come from readelf -lSsn on those files.
#include "../../core/src/elf/file_image.hpp"
#include "catch.hpp"
#include "sfunwind/cfi/cfi_table.hpp"
#include "sfunwind/elf/elf_file.hpp"
#include "sfunwind/sframe/section.hpp"
#include "support.hpp"

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdio>
#include <elf.h>
#include <filesystem>
#include <fstream>
#include <random>
#include <set>
#include <thread>
#include <utility>

using namespace sfunwind;

namespace {

std::filesystem::path data(const std::string& name) {
    return test::source_dir() / "tests/unit/data" / name;
}

std::vector<std::uint8_t> bytes_of(const std::string& name) {
    return test::read_bytes(data(name));
}

elf::ElfFile open(const std::string& name) {
    auto f = elf::ElfFile::open(data(name).string());
    if (!f) FAIL(f.error().message());
    return std::move(*f);
}

using test::get_le;
using test::put_le;

// Offset of section header `index` / program header `index` in a 64-bit
// little-endian image (gABI: e_shoff at 0x28, e_phoff at 0x20).
std::size_t shdr_at(const std::vector<std::uint8_t>& b, std::uint32_t index) {
    return static_cast<std::size_t>(get_le(b, 0x28, 8)) + std::size_t{index} * 64U;
}
std::size_t phdr_at(const std::vector<std::uint8_t>& b, std::size_t index) {
    return static_cast<std::size_t>(get_le(b, 0x20, 8)) + index * 56U;
}
std::size_t phdr_index(const elf::ElfFile& f, std::uint32_t type) {
    const auto& ph = f.program_headers();
    for (std::size_t i = 0; i < ph.size(); ++i)
        if (ph[i].type == type) return i;
    FAIL("no program header of type " << type);
    return 0;
}

std::string hex_string(const std::vector<std::uint8_t>& v) {
    std::string s;
    char buf[4];
    for (auto b : v) {
        std::snprintf(buf, sizeof buf, "%02x", b);
        s += buf;
    }
    return s;
}

bool has_text(const Error& e, const std::string& text) {
    return e.message().find(text) != std::string::npos;
}

} // namespace

TEST_CASE("find_sframe: by section name, with the section's vaddr", "[elf]") {
    const auto f = open("x86_64-pie");
    auto where = f.find_sframe();
    REQUIRE(where.has_value());
    CHECK(where->how == elf::SframeLocation::How::SectionName);
    CHECK(where->name == ".sframe");
    CHECK(where->vaddr == 0x21e0);
    CHECK(where->file_offset == 0x21e0);
    CHECK(where->size == 0xfa);
    auto section = f.sframe();
    REQUIRE(section.has_value());
    CHECK(section->vaddr() == 0x21e0);
    CHECK(section->used_size() == where->size);
    CHECK(section->version() == sframe::Version::V1); // gas 2.40
    CHECK(section->fde_count() == 9);
    // leaf() is at 0x1180 (readelf -s): its FDE is found through the vaddr.
    auto fde = section->find_fde(0x1182);
    REQUIRE(fde.has_value());
    CHECK(fde->start == 0x1180);
    CHECK(fde->size == 5);

    const auto nopie = open("x86_64-nopie");
    auto w2 = nopie.find_sframe();
    REQUIRE(w2.has_value());
    CHECK(w2->vaddr == 0x4021d8);
    CHECK(w2->file_offset == 0x21d8);
}

TEST_CASE("find_sframe: a .sframe of type SHT_GNU_SFRAME, and a same-named section of another type",
          "[elf]") {
    const auto f = open("x86_64-pie");
    const auto* s = f.section(".sframe");
    REQUIRE(s != nullptr);
    auto copy = bytes_of("x86_64-pie");

    put_le(copy, shdr_at(copy, s->index) + 4, elf::sht_gnu_sframe, 4); // sh_type
    auto typed = elf::ElfFile::from_bytes(copy, "typed");
    REQUIRE(typed.has_value());
    auto w = typed->find_sframe();
    REQUIRE(w.has_value());
    CHECK(w->how == elf::SframeLocation::How::SectionName);
    CHECK(w->vaddr == 0x21e0);

    // SHT_NOTE (7): not SFrame data whatever its name; the segment still is.
    put_le(copy, shdr_at(copy, s->index) + 4, 7, 4);
    auto note = elf::ElfFile::from_bytes(copy, "note");
    REQUIRE(note.has_value());
    auto w2 = note->find_sframe();
    REQUIRE(w2.has_value());
    CHECK(w2->how == elf::SframeLocation::How::Segment);
}

TEST_CASE("find_sframe: by section type when the name is not .sframe", "[elf]") {
    const auto f = open("x86_64-sftype");
    auto where = f.find_sframe();
    REQUIRE(where.has_value());
    CHECK(where->how == elf::SframeLocation::How::SectionType);
    CHECK(where->name == "sframe");
    CHECK(where->vaddr == 0x21e0);
    CHECK(where->size == 0xfa);
    CHECK(f.sframe().has_value());
}

TEST_CASE(
    "find_sframe: by PT_GNU_SFRAME without section headers; the size comes from the SFrame header",
    "[elf]") {
    const auto f = open("x86_64-noshdr");
    CHECK(f.sections().empty());
    auto where = f.find_sframe();
    REQUIRE(where.has_value());
    CHECK(where->how == elf::SframeLocation::How::Segment);
    CHECK(where->name == "PT_GNU_SFRAME");
    CHECK(where->vaddr == 0x21e0);
    CHECK(where->file_offset == 0x21e0);
    // ld 2.40 made the segment 0x11c bytes for a 0xfa-byte section.
    const auto& seg = f.program_headers().at(phdr_index(f, elf::pt_gnu_sframe));
    CHECK(seg.filesz == 0x11c);
    CHECK(where->size == 0xfa);
    auto section = f.sframe();
    REQUIRE(section.has_value());
    CHECK(section->used_size() == where->size);

    // The same bytes as the section found by name in the original.
    const auto orig = open("x86_64-pie");
    auto ow = orig.find_sframe();
    REQUIRE(ow.has_value());
    auto a = f.sframe_bytes(*where);
    auto b = orig.sframe_bytes(*ow);
    REQUIRE(a.has_value());
    REQUIRE(b.has_value());
    CHECK(std::equal(a->begin(), a->end(), b->begin(), b->end()));
    CHECK(ow->size == where->size);
}

TEST_CASE("find_sframe: errors name the file and the offset", "[elf]") {
    const auto f = open("x86_64-noshdr");
    const std::size_t i = phdr_index(f, elf::pt_gnu_sframe);
    auto copy = bytes_of("x86_64-noshdr");

    SECTION("a bad SFrame header in the segment") {
        copy.at(0x21e0) ^= 0xff; // first magic byte
        auto bad = elf::ElfFile::from_bytes(copy, "bad-magic");
        REQUIRE(bad.has_value());
        auto w = bad->find_sframe();
        REQUIRE_FALSE(w.has_value());
        CHECK(w.error().code() == Errc::BadMagic);
        CHECK(w.error().where() == 0x21e0);
        CHECK(has_text(w.error(), "bad-magic"));
        CHECK(has_text(w.error(), "PT_GNU_SFRAME"));
        // The offset once, the section's added to the segment's.
        const std::string text = w.error().message();
        CHECK(text.find("(at offset 0x21e0)") != std::string::npos);
        CHECK(text.find("(at offset") == text.rfind("(at offset"));
    }
    SECTION("an empty segment (objcopy removed .sframe, the header stayed)") {
        put_le(copy, phdr_at(copy, i) + 0x20, 0, 8); // p_filesz
        auto empty = elf::ElfFile::from_bytes(copy, "empty-segment");
        REQUIRE(empty.has_value());
        auto w = empty->find_sframe();
        REQUIRE_FALSE(w.has_value());
        CHECK(w.error().code() == Errc::Truncated);
        CHECK(w.error().where() == 0x21e0);
        const std::string text = w.error().message();
        CHECK(has_text(w.error(), "0 bytes, too short for the SFrame preamble"));
        CHECK(text.find("(at offset") == text.rfind("(at offset"));
    }
    SECTION("a segment that runs past the end of the file") {
        put_le(copy, phdr_at(copy, i) + 0x20, 0x100000, 8); // p_filesz
        auto big = elf::ElfFile::from_bytes(copy, "big-segment");
        REQUIRE(big.has_value());
        auto w = big->find_sframe();
        REQUIRE_FALSE(w.has_value());
        CHECK(w.error().code() == Errc::Truncated);
        CHECK(w.error().where() == 0x21e0);
        CHECK(has_text(w.error(), "big-segment"));
    }
    SECTION("no SFrame at all") {
        put_le(copy, phdr_at(copy, i), 0, 4); // p_type = PT_NULL
        auto none = elf::ElfFile::from_bytes(copy, "no-sframe");
        REQUIRE(none.has_value());
        auto w = none->find_sframe();
        REQUIRE_FALSE(w.has_value());
        CHECK(w.error().code() == Errc::NotFound);
        CHECK(has_text(w.error(), "no-sframe"));
        CHECK_FALSE(none->sframe().has_value());
    }
    SECTION("a section whose size runs past the end of the file") {
        const auto pie = open("x86_64-pie");
        auto p = bytes_of("x86_64-pie");
        put_le(p, shdr_at(p, pie.section(".sframe")->index) + 0x20, 0x7fffffff, 8); // sh_size
        auto huge = elf::ElfFile::from_bytes(p, "huge-section");
        REQUIRE(huge.has_value());
        auto w = huge->find_sframe();
        REQUIRE_FALSE(w.has_value());
        CHECK(w.error().code() == Errc::Truncated);
        CHECK(w.error().where() == 0x21e0);
        CHECK(has_text(w.error(), "huge-section"));
        CHECK_FALSE(huge->section_bytes(".sframe").has_value());
    }
}

TEST_CASE("ELF classes, byte orders and machines", "[elf]") {
    SECTION("x86-64") {
        const auto f = open("x86_64-pie");
        CHECK(f.machine() == 62);
        CHECK(f.byte_order() == ByteOrder::Little);
        REQUIRE(f.abi().has_value());
        CHECK(f.abi()->arch == Arch::X86_64);
    }
    SECTION("AArch64, both byte orders") {
        const auto le = open("aarch64-pie");
        REQUIRE(le.abi().has_value());
        CHECK(le.abi()->name == "aarch64");
        const auto be = open("aarch64be-static");
        CHECK(be.byte_order() == ByteOrder::Big);
        REQUIRE(be.abi().has_value());
        CHECK(be.abi()->name == "aarch64_be");
        auto w = be.find_sframe();
        REQUIRE(w.has_value());
        CHECK(w->vaddr == 0x4003d8);
        CHECK(w->size == 0xcb);
        auto s = be.sframe();
        REQUIRE(s.has_value());
        CHECK(s->header().abi_arch == sframe::AbiArch::AArch64Big);
        CHECK(s->fde_count() == 7);
        // libelf converts headers and symbols to host order in its own
        // buffers: the image stays as the file was.
        (void)be.function_symbols();
        (void)be.build_id();
        const auto file = bytes_of("aarch64be-static");
        CHECK(std::equal(be.image().begin(), be.image().end(), file.begin(), file.end()));
    }
    SECTION("s390x and ppc64 by e_machine (offset 18, file byte order)") {
        auto be = bytes_of("aarch64be-static");
        be.at(18) = 0;
        be.at(19) = 22; // EM_S390
        auto s390 = elf::ElfFile::from_bytes(be, "s390x");
        REQUIRE(s390.has_value());
        REQUIRE(s390->abi().has_value());
        CHECK(s390->abi()->arch == Arch::S390x);
        be.at(19) = 21; // EM_PPC64
        auto ppc = elf::ElfFile::from_bytes(be, "ppc64");
        REQUIRE(ppc.has_value());
        REQUIRE(ppc->abi().has_value());
        CHECK(ppc->abi()->name == "ppc64");

        auto le = bytes_of("x86_64-pie");
        put_le(le, 18, 21, 2);
        auto ppcle = elf::ElfFile::from_bytes(le, "ppc64le");
        REQUIRE(ppcle.has_value());
        REQUIRE(ppcle->abi().has_value());
        CHECK(ppcle->abi()->name == "ppc64le");
        put_le(le, 18, 22, 2); // little-endian s390x does not exist
        auto s390le = elf::ElfFile::from_bytes(le, "s390le");
        REQUIRE(s390le.has_value());
        CHECK_FALSE(s390le->abi().has_value());
        put_le(le, 18, 243, 2); // EM_RISCV: readable, no SFrame ABI
        auto riscv = elf::ElfFile::from_bytes(le, "riscv");
        REQUIRE(riscv.has_value());
        CHECK_FALSE(riscv->abi().has_value());
        CHECK(riscv->find_sframe().has_value());
        auto cfi = cfi::CfiTable::open(*riscv);
        REQUIRE_FALSE(cfi.has_value());
        CHECK(cfi.error().code() == Errc::Unsupported);
    }
    SECTION("32-bit ELF is refused") {
        auto f = elf::ElfFile::open(data("x86-32.o").string());
        REQUIRE_FALSE(f.has_value());
        CHECK(f.error().code() == Errc::Unsupported);
        CHECK(f.error().where() == 4); // EI_CLASS
        CHECK(has_text(f.error(), "x86-32.o"));
        CHECK(has_text(f.error(), "32-bit"));
    }
    SECTION("not ELF, or no file") {
        std::vector<std::uint8_t> zeros(256, 0);
        auto z = elf::ElfFile::from_bytes(zeros, "zeros");
        REQUIRE_FALSE(z.has_value());
        CHECK(z.error().code() == Errc::BadMagic);
        CHECK(has_text(z.error(), "zeros"));
        auto missing = elf::ElfFile::open(data("no-such-file").string());
        REQUIRE_FALSE(missing.has_value());
        CHECK(missing.error().code() == Errc::Io);
        CHECK(has_text(missing.error(), "no-such-file"));
    }
}

TEST_CASE("load segments, link base and the load bias", "[elf]") {
    const auto pie = open("x86_64-pie");
    CHECK(pie.is_pie_or_shared());
    CHECK(pie.link_base() == 0);
    const auto& loads = pie.load_segments();
    REQUIRE(loads.size() == 4);
    CHECK(loads[1].vaddr == 0x1000);
    CHECK(loads[1].offset == 0x1000);
    CHECK(loads[1].filesz == 0x241);
    CHECK(loads[1].flags == 5); // PF_R | PF_X
    CHECK(loads[3].vaddr == 0x3dd0);
    CHECK(loads[3].filesz == 0x248);
    CHECK(loads[3].memsz == 0x250);

    const auto nopie = open("x86_64-nopie");
    CHECK_FALSE(nopie.is_pie_or_shared());
    CHECK(nopie.link_base() == 0x400000);
    // A non-PIE loads where it was linked: bias 0.
    CHECK(0x400000 - nopie.link_base() == 0);

    const auto lib = open("x86_64-lib.so");
    CHECK(lib.is_pie_or_shared());
    CHECK(lib.link_base() == 0);
    // Mapped at 0x7f0000000000: link-time 0x1180 is runtime 0x7f0000001180.
    const std::uint64_t bias = 0x7f0000000000 - lib.link_base();
    CHECK(bias + 0x1180 == 0x7f0000001180);
}

TEST_CASE("build ID from NT_GNU_BUILD_ID, through sections or PT_NOTE", "[elf]") {
    auto id = open("x86_64-pie").build_id();
    REQUIRE(id.has_value());
    CHECK(hex_string(*id) == "969f4e67d12164ee03fa1986d72b112747e4367b");
    auto seg = open("x86_64-noshdr").build_id();
    REQUIRE(seg.has_value());
    CHECK(*seg == *id);
    auto be = open("aarch64be-static").build_id();
    REQUIRE(be.has_value());
    CHECK(hex_string(*be) == "13580f7ee618b5aff81d8b0d3df7843e89ae5429");
    // No section headers and no PT_NOTE: no build ID.
    auto copy = bytes_of("x86_64-noshdr");
    const auto f = open("x86_64-noshdr");
    for (std::size_t i = 0; i < f.program_headers().size(); ++i)
        if (f.program_headers()[i].type == 4)
            put_le(copy, phdr_at(copy, i), 0, 4); // PT_NOTE -> PT_NULL
    auto none = elf::ElfFile::from_bytes(copy, "no-notes");
    REQUIRE(none.has_value());
    CHECK_FALSE(none->build_id().has_value());
}

TEST_CASE("function symbols from .symtab and .dynsym", "[elf]") {
    const auto f = open("x86_64-pie");
    const auto& syms = f.function_symbols();
    auto find = [&](const std::string& name) -> const elf::Symbol* {
        for (const auto& s : syms)
            if (s.name == name) return &s;
        return nullptr;
    };
    // readelf -s: 16 defined FUNC/IFUNC symbols; __libc_start_main and
    // __cxa_finalize are undefined and left out.
    CHECK(syms.size() == 16);
    CHECK(find("__libc_start_main") == nullptr);
    REQUIRE(find("leaf") != nullptr);
    CHECK(find("leaf")->value == 0x1180);
    CHECK(find("leaf")->size == 5);
    REQUIRE(find("picked") != nullptr); // STT_GNU_IFUNC
    CHECK(find("picked")->value == 0x1230);
    REQUIRE(find("impl") != nullptr); // local
    CHECK(std::is_sorted(syms.begin(), syms.end(), [](const elf::Symbol& a, const elf::Symbol& b) {
        return a.value < b.value;
    }));

    CHECK(f.symbol_for(0x1180)->name == "leaf");
    CHECK(f.symbol_for(0x1184)->name == "leaf");
    CHECK(f.symbol_for(0x1185) == nullptr); // padding after leaf
    CHECK(f.symbol_for(0x11a0)->name == "with_frame");
    CHECK(f.symbol_for(0x1000)->name == "_init"); // zero size: its own address only
    CHECK(f.symbol_for(0x1001) == nullptr);
    CHECK(f.symbol_for(0x10) == nullptr);

    SECTION("both tables: each symbol once") {
        const auto lib = open("x86_64-lib.so");
        std::set<std::pair<std::uint64_t, std::string>> seen;
        for (const auto& s : lib.function_symbols())
            CHECK(seen.insert({s.value, s.name}).second);
        CHECK(seen.count({0x1190, "leaf"}) == 1);
    }
    SECTION(".dynsym only") {
        const auto stripped = open("x86_64-lib-stripped.so");
        CHECK_FALSE(stripped.has_section(".symtab"));
        const auto& ds = stripped.function_symbols();
        // The exported functions (readelf --dyn-syms); not the static impl.
        std::set<std::string> names;
        for (const auto& s : ds)
            names.insert(s.name);
        CHECK(names == std::set<std::string>{"cfa_exprs", "leaf", "main", "picked", "realign",
                                             "recurse", "with_frame"});
        CHECK(stripped.symbol_for(0x1192)->name == "leaf");
    }
}

TEST_CASE("ElfFile is movable and its libelf handle survives the move", "[elf]") {
    auto f = open("x86_64-pie");
    ::Elf* handle = f.libelf_handle();
    elf::ElfFile moved(std::move(f));
    CHECK(moved.libelf_handle() == handle);
    elf::ElfFile other = open("x86_64-nopie");
    other = std::move(moved);
    CHECK(other.libelf_handle() == handle);
    CHECK(other.find_sframe()->vaddr == 0x21e0);
    CHECK(other.section_bytes(".eh_frame")->size() == 0x178);
}

TEST_CASE("threads reading a file's code at once each get the file's bytes, read once", "[elf]") {
    // What a module's translation does: threads ask for functions' code
    // that other threads may be reading or have read.
    const auto path = test::source_dir() / "tests/fixtures/large/sqlite3-gas-2.47";
    const auto whole = test::read_bytes(path);
    auto f = elf::ElfFile::open(path.string());
    REQUIRE(f);
    const auto& text = *f->section(".text");
    const auto& syms = f->function_symbols();
    REQUIRE(syms.size() > 1000);
    std::atomic<std::size_t> wrong{0};
    std::atomic<std::size_t> checked{0};
    std::vector<std::thread> threads;
    for (unsigned t = 0; t < 4; ++t)
        threads.emplace_back([&, t] {
            // Each thread walks every function, from its own place.
            for (std::size_t n = 0; n < syms.size(); ++n) {
                const elf::Symbol& fn = syms[(n + t * syms.size() / 4) % syms.size()];
                if (fn.size == 0 || fn.value < text.vaddr ||
                    fn.value + fn.size > text.vaddr + text.size)
                    continue;
                const auto code = f->loaded_bytes(fn.value, fn.size);
                const auto at = static_cast<long>(text.offset + (fn.value - text.vaddr));
                if (!code || !std::equal(code->begin(), code->end(), whole.begin() + at)) ++wrong;
                ++checked;
            }
        });
    for (auto& t : threads)
        t.join();
    CHECK(checked.load() > 4000);
    CHECK(wrong.load() == 0);
    // Every byte is read from the file once at most.
    CHECK(f->bytes_read() <= whole.size());
}

TEST_CASE("open() reads what is asked for, and refuses a file changed since", "[elf]") {
    // A 2.4 MB program: its headers, .sframe and one function are a small part.
    const auto path = test::source_dir() / "tests/fixtures/large/sqlite3-gas-2.47";
    const auto whole = test::read_bytes(path);
    auto f = elf::ElfFile::open(path.string());
    REQUIRE(f);
    const std::size_t after_open = f->bytes_read();
    CHECK(after_open > 0);
    CHECK(after_open < whole.size() / 8);

    auto section = f->sframe();
    REQUIRE(section);
    const auto where = f->find_sframe();
    REQUIRE(where);
    // sframe(): the header and the FDE records, not the FRE sub-section
    // (125 of the section's 172 KB); a lookup reads its FDE's FREs.
    const std::size_t after_sframe = f->bytes_read();
    CHECK(after_sframe >= after_open + std::size_t{section->fde_count()} * 16U);
    CHECK(after_sframe < after_open + where->size / 2);
    auto fde = section->fde(section->fde_count() / 2);
    REQUIRE(fde);
    REQUIRE(section->lookup(fde->start));
    CHECK(f->bytes_read() > after_sframe);
    CHECK(f->bytes_read() <= after_sframe + 8192);
    // scan_sframe() hands over the whole section, the file's bytes in order
    // (172 KB: three pieces), and keeps none of what it read.
    const std::size_t before_scan = f->bytes_read();
    std::vector<std::uint8_t> scanned;
    std::size_t pieces = 0;
    REQUIRE(f->scan_sframe(*where, [&](std::span<const std::uint8_t> piece) {
        scanned.insert(scanned.end(), piece.begin(), piece.end());
        ++pieces;
    }));
    CHECK(pieces == 3);
    CHECK(f->bytes_read() == before_scan);
    REQUIRE(scanned.size() == where->size);
    CHECK(std::equal(scanned.begin(), scanned.end(),
                     whole.begin() + static_cast<long>(where->file_offset)));
    // sframe_bytes() reads the whole section, and the bytes read are the file's.
    const auto sframe = f->sframe_bytes(*where);
    REQUIRE(sframe);
    CHECK(std::equal(sframe->begin(), sframe->end(),
                     whole.begin() + static_cast<long>(where->file_offset)));

    const auto& syms = f->function_symbols();
    REQUIRE(syms.size() > 100);
    const elf::Symbol& fn = syms[syms.size() / 2];
    const auto code = f->loaded_bytes(fn.value, fn.size);
    REQUIRE(code);
    const auto& text = *f->section(".text");
    REQUIRE(fn.value >= text.vaddr);
    const std::size_t at = text.offset + (fn.value - text.vaddr);
    CHECK(std::equal(code->begin(), code->end(), whole.begin() + static_cast<long>(at)));
    CHECK(f->bytes_read() < whole.size());

    // image() reads the rest, and it is the file.
    const auto image = f->image();
    CHECK(f->bytes_read() == whole.size());
    CHECK(std::equal(image.begin(), image.end(), whole.begin(), whole.end()));

    SECTION("a file rewritten after open() is not read any more") {
        const auto copy = std::filesystem::temp_directory_path() / "sfunwind-test-changed.elf";
        std::filesystem::copy_file(path, copy, std::filesystem::copy_options::overwrite_existing);
        auto g = elf::ElfFile::open(copy.string());
        REQUIRE(g);
        // Same size, same inode, new contents and mtime.
        std::filesystem::last_write_time(copy, std::filesystem::last_write_time(copy) +
                                                   std::chrono::seconds(5));
        const auto gone = g->sframe();
        REQUIRE_FALSE(gone);
        CHECK(gone.error().code() == Errc::Io);
        CHECK(has_text(gone.error(), "changed since it was opened"));
        // The same for a section opened before: its lookups fail, with
        // what and why, where they would read FREs not read yet.
        auto h = elf::ElfFile::open(copy.string());
        REQUIRE(h);
        auto opened = h->sframe();
        REQUIRE(opened);
        std::filesystem::last_write_time(copy, std::filesystem::last_write_time(copy) +
                                                   std::chrono::seconds(5));
        const auto scanned_later = h->scan_sframe(*h->find_sframe(), [](auto) {});
        REQUIRE_FALSE(scanned_later);
        CHECK(scanned_later.error().code() == Errc::Io);
        CHECK(has_text(scanned_later.error(), "changed since it was opened"));
        auto later = opened->lookup(fn.value);
        REQUIRE_FALSE(later);
        CHECK(later.error().code() == Errc::Io);
        CHECK(has_text(later.error(), "cannot read the FREs of FDE"));
        CHECK(has_text(later.error(), "changed since it was opened"));
        CHECK_FALSE(g->loaded_bytes(fn.value, fn.size));
        CHECK(g->image().empty());
        CHECK(g->libelf_handle() == nullptr);
        std::filesystem::remove(copy);
    }
    SECTION("a file removed after open() gives an error naming it") {
        const auto copy = std::filesystem::temp_directory_path() / "sfunwind-test-removed.elf";
        std::filesystem::copy_file(path, copy, std::filesystem::copy_options::overwrite_existing);
        auto g = elf::ElfFile::open(copy.string());
        REQUIRE(g);
        std::filesystem::remove(copy);
        const auto gone = g->sframe();
        REQUIRE_FALSE(gone);
        CHECK(gone.error().code() == Errc::Io);
        CHECK(has_text(gone.error(), copy.string()));
    }
    SECTION("a kept descriptor serves the reads until it is closed") {
        const auto copy = std::filesystem::temp_directory_path() / "sfunwind-test-kept.elf";
        std::filesystem::copy_file(path, copy, std::filesystem::copy_options::overwrite_existing);
        auto g = elf::ElfFile::open(copy.string(), true);
        REQUIRE(g);
        // Removed: only the descriptor open() kept still reaches the bytes.
        std::filesystem::remove(copy);
        auto kept = g->sframe();
        REQUIRE(kept);
        const auto third = kept->fde(kept->fde_count() / 3);
        REQUIRE(third);
        const auto row = kept->lookup(third->start);
        REQUIRE(row);
        CHECK(*row == *section->lookup(third->start));
        g->close_descriptor();
        // Closed: a read of what is not read yet opens the file by name.
        const auto unread = g->loaded_bytes(fn.value, fn.size);
        CHECK_FALSE(unread);
        const auto lost = kept->lookup(section->fde(section->fde_count() - 1)->start);
        REQUIRE_FALSE(lost);
        CHECK(has_text(lost.error(), copy.string()));
    }
}

TEST_CASE("a read of several MiB at once (a translation's code) is the file's bytes", "[elf]") {
    // FileImage backs the whole 2 MiB pages inside a large fill with huge
    // pages where the kernel offers them: the bytes must not change, next
    // to chunks read before and after it, nor where the kernel refuses.
    const auto path = std::filesystem::temp_directory_path() / "sfunwind-test-large-read.bin";
    std::vector<std::uint8_t> contents((std::size_t{6} << 20) + 12345);
    std::mt19937 random(7);
    for (auto& b : contents)
        b = static_cast<std::uint8_t>(random());
    {
        std::ofstream out(path, std::ios::binary | std::ios::trunc);
        out.write(reinterpret_cast<const char*>(contents.data()),
                  static_cast<std::streamsize>(contents.size()));
        REQUIRE(out);
    }
    elf::detail::FileImage image;
    std::string error;
    REQUIRE(image.open(path.string(), error));
    // Chunks read first inside the range, and the range from an odd offset.
    REQUIRE(image.ensure(3 << 20, 100));
    REQUIRE(image.ensure((1 << 20) + 77, 10));
    REQUIRE(image.ensure(4097, (std::size_t{5} << 20) + 3));
    const auto read = image.bytes();
    CHECK(
        std::equal(read.begin() + 4096, read.begin() + (5 << 20) + 4100, contents.begin() + 4096));
    // Chunks 0 (open) to 1281, the last one the range reaches.
    CHECK(image.resident() == (std::size_t{5} << 20) + 8192);
    REQUIRE(image.ensure(0, contents.size()));
    CHECK(std::equal(read.begin(), read.end(), contents.begin(), contents.end()));
    CHECK(image.resident() == contents.size());
    std::filesystem::remove(path);
}

TEST_CASE("sframe(): a small section is copied, not read into the image", "[elf]") {
    // 394 bytes of .sframe at file offset 0x2218, alone in its page: the
    // page would cost 4 KiB for them. The copy gives the same rows as the section read
    // in place, and the image never holds the page.
    const auto path = test::source_dir() / "tests/fixtures/bin/gas-2.47/recurse-O0-g";
    const auto whole = test::read_bytes(path);
    auto f = elf::ElfFile::open(path.string());
    REQUIRE(f);
    const auto where = f->find_sframe();
    REQUIRE(where);
    REQUIRE(where->size == 0x18a);
    REQUIRE(where->file_offset == 0x2218);
    const std::size_t before = f->bytes_read();
    auto copied = f->sframe();
    REQUIRE(copied);
    CHECK(f->bytes_read() == before);
    auto again = f->sframe();
    REQUIRE(again);
    CHECK(again->view().bytes().data() == copied->view().bytes().data()); // one copy
    auto in_place = sframe::Section::parse(
        std::span(whole).subspan(where->file_offset, where->size), where->vaddr);
    REQUIRE(in_place);
    REQUIRE(copied->fde_count() == in_place->fde_count());
    std::size_t compared = 0;
    for (std::uint32_t i = 0; i < in_place->fde_count(); ++i) {
        const auto fde = in_place->fde(i);
        REQUIRE(fde);
        for (std::uint64_t pc = fde->start; pc < fde->start + fde->size; ++pc) {
            const auto a = copied->lookup(pc);
            const auto b = in_place->lookup(pc);
            REQUIRE(a.has_value() == b.has_value());
            if (a) CHECK(*a == *b);
            ++compared;
        }
    }
    CHECK(compared > 50);
    CHECK(f->bytes_read() == before);
    // scan_sframe() hands over the copy: no read of the file, which may be
    // gone by now.
    {
        const auto copy = std::filesystem::temp_directory_path() / "sfunwind-test-copied.elf";
        std::filesystem::copy_file(path, copy, std::filesystem::copy_options::overwrite_existing);
        auto g = elf::ElfFile::open(copy.string());
        REQUIRE(g);
        REQUIRE(g->sframe());
        std::filesystem::remove(copy);
        std::vector<std::uint8_t> scanned;
        REQUIRE(g->scan_sframe(*where, [&](std::span<const std::uint8_t> piece) {
            scanned.insert(scanned.end(), piece.begin(), piece.end());
        }));
        CHECK(std::equal(scanned.begin(), scanned.end(),
                         whole.begin() + static_cast<long>(where->file_offset),
                         whole.begin() + static_cast<long>(where->file_offset + where->size)));
    }
    // sframe_bytes() still reads the section into the image.
    REQUIRE(f->sframe_bytes(*where));
    CHECK(f->bytes_read() > before);
}

TEST_CASE("dynamic_info(): DT_NEEDED in order, reading the dynamic section only", "[elf]") {
    // readelf -d: NEEDED libm.so.6, libc.so.6; no RUNPATH or RPATH.
    const auto path = test::source_dir() / "tests/fixtures/large/sqlite3-gas-2.47";
    auto f = elf::ElfFile::open(path.string());
    REQUIRE(f);
    const std::size_t after_open = f->bytes_read();
    const elf::DynamicInfo d = f->dynamic_info();
    CHECK(d.needed == std::vector<std::string>{"libm.so.6", "libc.so.6"});
    CHECK(d.runpath.empty());
    CHECK(d.rpath.empty());
    const auto* dynamic = f->section(".dynamic");
    const auto* dynstr = f->section(".dynstr");
    REQUIRE(dynamic != nullptr);
    REQUIRE(dynstr != nullptr);
    CHECK(f->bytes_read() <= after_open + dynamic->size + dynstr->size + 2 * std::uint64_t{4096});
    CHECK(f->bytes_read() < test::read_bytes(path).size() / 8);

    // Hostile: every entry names the same library. It is kept once.
    auto bytes = test::read_bytes(path);
    std::uint64_t libm = 0;
    for (std::uint64_t at = dynamic->offset; at + 16 <= dynamic->offset + dynamic->size; at += 16) {
        std::uint64_t tag = 0;
        std::uint64_t val = 0;
        for (int k = 7; k >= 0; --k) {
            tag = tag << 8U | bytes[at + static_cast<std::uint64_t>(k)];
            val = val << 8U | bytes[at + 8 + static_cast<std::uint64_t>(k)];
        }
        if (tag == DT_NEEDED && libm == 0) libm = val;
        if (tag == DT_NULL) break;
        for (int k = 0; k < 8; ++k) {
            bytes[at + static_cast<std::uint64_t>(k)] =
                static_cast<std::uint8_t>(k == 0 ? DT_NEEDED : 0);
            bytes[at + 8 + static_cast<std::uint64_t>(k)] =
                static_cast<std::uint8_t>(libm >> (8U * static_cast<unsigned>(k)));
        }
    }
    REQUIRE(libm != 0);
    auto hostile = elf::ElfFile::from_bytes(bytes, "hostile");
    REQUIRE(hostile);
    CHECK(hostile->dynamic_info().needed == std::vector<std::string>{"libm.so.6"});

    // A static program has no dynamic section.
    auto static_program = elf::ElfFile::open(
        (test::source_dir() / "tests/fixtures/bin/gas-2.40/recurse-O2-nofp-static").string());
    REQUIRE(static_program);
    CHECK(static_program->dynamic_info().needed.empty());
}

TEST_CASE("truncated files give errors, not crashes", "[elf][robustness]") {
    SECTION("every cut of a file with section headers fails to open") {
        const auto full = bytes_of("x86_64-pie");
        // The section header table is at the end, so any cut loses part of it.
        for (std::size_t cut = 0; cut < full.size(); cut += cut < 128 ? 1 : 13) {
            INFO("cut at " << cut);
            auto f = elf::ElfFile::from_bytes(std::span(full).first(cut), "cut");
            REQUIRE_FALSE(f.has_value());
            CHECK(f.error().code() == Errc::Truncated);
            CHECK(has_text(f.error(), "cut"));
        }
    }
    SECTION("cuts of a file without section headers fail where the data is missing") {
        const auto full = bytes_of("x86_64-noshdr");
        const std::size_t phdr_end = 64 + 14 * 56; // e_phoff 64, 14 program headers
        const std::size_t seg_end = 0x21e0 + 0x11c;
        int opened = 0;
        for (std::size_t cut = 0; cut <= full.size(); cut += cut < 900 ? 1 : 7) {
            INFO("cut at " << cut);
            auto f = elf::ElfFile::from_bytes(std::span(full).first(cut), "cut");
            if (cut < phdr_end) {
                CHECK_FALSE(f.has_value());
                continue;
            }
            REQUIRE(f.has_value());
            ++opened;
            auto w = f->find_sframe();
            CHECK(w.has_value() == (cut >= seg_end));
            if (!w) CHECK(w.error().code() == Errc::Truncated);
            (void)f->build_id();
            (void)f->function_symbols();
            auto table = cfi::CfiTable::open(*f);
            if (table)
                for (const auto& fde : table->fdes())
                    (void)table->rows(fde);
        }
        CHECK(opened > 1000);
    }
    SECTION("random damage to the tables libelf and the decoders read") {
        const auto full = bytes_of("x86_64-pie");
        const auto f = open("x86_64-pie");
        const auto id = f.build_id();
        std::mt19937 rng(12345);
        for (const char* name :
             {".symtab", ".strtab", ".dynsym", ".note.gnu.build-id", ".sframe", ".shstrtab"}) {
            const auto* s = f.section(name);
            REQUIRE(s != nullptr);
            for (int round = 0; round < 150; ++round) {
                auto copy = full;
                for (int k = 0; k < 3; ++k)
                    copy[s->offset + rng() % s->size] = static_cast<std::uint8_t>(rng());
                // The headers are intact, so the file opens; what was damaged
                // reads as an error or as other values, never out of bounds.
                auto g = elf::ElfFile::from_bytes(copy, "damaged");
                REQUIRE(g.has_value());
                if (std::string(name) != ".note.gnu.build-id") CHECK(g->build_id() == id);
                for (const auto& sym : g->function_symbols())
                    CHECK(g->symbol_for(sym.value) != nullptr);
                auto sec = g->sframe();
                if (!sec) {
                    CHECK(has_text(sec.error(), "damaged"));
                    continue;
                }
                for (std::uint32_t i = 0; i < sec->fde_count(); ++i)
                    (void)sec->fde(i);
            }
        }
    }
}

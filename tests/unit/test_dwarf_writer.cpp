// SPDX-License-Identifier: MIT
// cfi::write_debug_frame, checked through libdw: the .debug_frame written for
// every fixture's SFrame section (every writer: v1, v2, v2 PC-relative, v3;
// x86-64, AArch64, s390x) and for sections made with the SFrame writer to hold
// the rules fixtures lack (dereferenced CFA, register rules, odd offsets,
// PC-mask FDEs, signal frames, PAuth key B) is put in a debug file next to
// the program, read back with dwarf_getcfi/dwarf_cfi_addrframe, and at the
// first and last byte of every SFrame row (every repeat block of a PC-mask
// FDE) the CFA and the RA and FP rules libdw reports must compute what the
// SFrame row computes. The expressions libdw hands back are evaluated on a
// made-up register file and memory, so every DWARF form the writer uses
// (offset, expression, val_expression, register, def_cfa_expression) is
// checked for what it means rather than how it is spelled.
#include "catch.hpp"
#include "sfunwind/cfi/dwarf_writer.hpp"
#include "sfunwind/elf/debug_file_writer.hpp"
#include "sfunwind/elf/elf_file.hpp"
#include "sfunwind/sframe/section.hpp"
#include "sfunwind/sframe/writer.hpp"
#include "support.hpp"

#include <algorithm>
#include <cstdio>
#include <dwarf.h>
#include <elfutils/libdw.h>
#include <fcntl.h>
#include <fstream>
#include <iterator>
#include <libelf.h>
#include <map>
#include <memory>
#include <optional>
#include <sstream>
#include <unistd.h>

using namespace sfunwind;
using Kind = RegRule::Kind;

namespace {

// A made-up machine state: register r holds reg_value(r), a load from
// address a gives memory_value(a).
std::uint64_t reg_value(unsigned r) {
    return 0x7f0000000000ULL + 0x100000ULL * r;
}
std::uint64_t memory_value(std::uint64_t a) {
    return (a ^ 0x5a5a5a5aULL) + 0x1000;
}

std::uint64_t expected_cfa(const CfaRule& c) {
    const std::uint64_t a = reg_value(c.reg) + static_cast<std::uint64_t>(std::int64_t{c.offset});
    return c.deref ? memory_value(a) : a;
}

// What a register rule yields: the address it is saved at, or its value.
struct Where {
    enum class What : std::uint8_t { Undefined, Same, Address, Value, Register };
    What what = What::Undefined;
    std::uint64_t v = 0;
    bool operator==(const Where&) const = default;
};

Where expected_rule(const RegRule& r, std::uint64_t cfa) {
    const auto off = static_cast<std::uint64_t>(std::int64_t{r.offset});
    switch (r.kind) {
    case Kind::Undefined:
        return {Where::What::Undefined, 0};
    case Kind::SameValue:
        return {Where::What::Same, 0};
    case Kind::AtCfa:
        return {Where::What::Address, cfa + off};
    case Kind::ValCfa:
        return {Where::What::Value, cfa + off};
    case Kind::AtReg:
        return {Where::What::Address, reg_value(r.reg) + off};
    case Kind::ValReg:
        return r.offset == 0 ? Where{Where::What::Register, r.reg}
                             : Where{Where::What::Value, reg_value(r.reg) + off};
    }
    return {};
}

// Evaluates a location description libdw returned (the ops this writer's
// rules turn into); nullopt for an operation it does not know.
std::optional<Where> evaluate(const Dwarf_Op* ops, std::size_t n, std::uint64_t cfa) {
    std::vector<std::uint64_t> stack;
    bool value = false;
    for (std::size_t i = 0; i < n; ++i) {
        const Dwarf_Op& op = ops[i];
        const unsigned atom = op.atom;
        if (atom >= DW_OP_breg0 && atom <= DW_OP_breg31) {
            stack.push_back(reg_value(atom - DW_OP_breg0) + op.number);
        } else if (atom >= DW_OP_reg0 && atom <= DW_OP_reg31) {
            if (n != 1) return std::nullopt;
            return Where{Where::What::Register, atom - DW_OP_reg0};
        } else if (atom >= DW_OP_lit0 && atom <= DW_OP_lit31) {
            stack.push_back(atom - DW_OP_lit0);
        } else {
            switch (atom) {
            case DW_OP_bregx:
                stack.push_back(reg_value(static_cast<unsigned>(op.number)) + op.number2);
                break;
            case DW_OP_regx:
                if (n != 1) return std::nullopt;
                return Where{Where::What::Register, op.number};
            case DW_OP_call_frame_cfa:
                stack.push_back(cfa);
                break;
            case DW_OP_consts:
            case DW_OP_constu:
            case DW_OP_const1s:
            case DW_OP_const2s:
            case DW_OP_const4s:
            case DW_OP_const1u:
            case DW_OP_const2u:
            case DW_OP_const4u:
            case DW_OP_const8u:
            case DW_OP_const8s:
                stack.push_back(op.number);
                break;
            case DW_OP_plus_uconst:
                if (stack.empty()) return std::nullopt;
                stack.back() += op.number;
                break;
            case DW_OP_plus:
            case DW_OP_minus: {
                if (stack.size() < 2) return std::nullopt;
                const std::uint64_t b = stack.back();
                stack.pop_back();
                stack.back() = atom == DW_OP_plus ? stack.back() + b : stack.back() - b;
                break;
            }
            case DW_OP_deref:
                if (stack.empty()) return std::nullopt;
                stack.back() = memory_value(stack.back());
                break;
            case DW_OP_stack_value:
                value = true;
                break;
            default:
                return std::nullopt;
            }
        }
    }
    if (stack.empty()) return std::nullopt;
    return Where{value ? Where::What::Value : Where::What::Address, stack.back()};
}

Where libdw_rule(Dwarf_Frame* frame, unsigned reg, std::uint64_t cfa) {
    Dwarf_Op mem[3];
    Dwarf_Op* ops = nullptr;
    std::size_t n = 0;
    REQUIRE(dwarf_frame_register(frame, static_cast<int>(reg), mem, &ops, &n) == 0);
    if (n == 0) return {ops == nullptr ? Where::What::Same : Where::What::Undefined, 0};
    auto w = evaluate(ops, n, cfa);
    REQUIRE(w.has_value());
    return *w;
}

// A debug file for `program` with `frame` as its .debug_frame, opened with
// libdw. Keeps what libdw needs alive.
class DebugFrameReader {
  public:
    DebugFrameReader(const elf::ElfFile& program, const std::vector<std::uint8_t>& frame,
                     const std::string& name)
        : path_((std::filesystem::temp_directory_path() /
                 ("sfunwind-dwarf-writer-" + std::to_string(::getpid()) + "-" + name))
                    .string()) {
        elf::DebugFileContents contents;
        contents.debug_frame = frame;
        auto written = elf::write_debug_file(program, contents, path_);
        if (!written) FAIL(written.error().message());
        fd_ = ::open(path_.c_str(), O_RDONLY | O_CLOEXEC);
        REQUIRE(fd_ >= 0);
        elf_ = elf_begin(fd_, ELF_C_READ_MMAP, nullptr);
        REQUIRE(elf_ != nullptr);
        dwarf_ = dwarf_begin_elf(elf_, DWARF_C_READ, nullptr);
        if (dwarf_ == nullptr) FAIL(std::string("dwarf_begin_elf: ") + dwarf_errmsg(-1));
        cfi_ = dwarf_getcfi(dwarf_);
        if (cfi_ == nullptr) FAIL(std::string("dwarf_getcfi: ") + dwarf_errmsg(-1));
    }
    DebugFrameReader(const DebugFrameReader&) = delete;
    DebugFrameReader& operator=(const DebugFrameReader&) = delete;
    ~DebugFrameReader() {
        if (dwarf_ != nullptr) dwarf_end(dwarf_);
        if (elf_ != nullptr) elf_end(elf_);
        if (fd_ >= 0) ::close(fd_);
        std::remove(path_.c_str());
    }
    Dwarf_CFI* cfi() const { return cfi_; }

  private:
    std::string path_;
    int fd_ = -1;
    ::Elf* elf_ = nullptr;
    Dwarf* dwarf_ = nullptr;
    Dwarf_CFI* cfi_ = nullptr;
};

struct Counts {
    std::size_t pcs = 0;
    std::size_t rows = 0;
};

// Checks the DWARF rules at `pc` against the SFrame row lookup() gives there.
void check_pc(const DebugFrameReader& r, const sframe::Section& section, std::uint64_t pc,
              const std::string& what, Counts& counts) {
    const Abi& abi = section.abi();
    auto row = section.lookup(pc);
    if (!row) return; // not covered by SFrame: nothing to compare
    INFO(what << ": pc 0x" << std::hex << pc << std::dec << ", SFrame row " << describe(*row, abi));
    Dwarf_Frame* raw = nullptr;
    if (dwarf_cfi_addrframe(r.cfi(), pc, &raw) != 0)
        FAIL(std::string("dwarf_cfi_addrframe: ") + dwarf_errmsg(-1));
    std::unique_ptr<Dwarf_Frame, void (*)(void*)> frame(raw, std::free);
    Dwarf_Addr start = 0;
    Dwarf_Addr end = 0;
    bool signal = false;
    const int ra_column = dwarf_frame_info(frame.get(), &start, &end, &signal);
    CHECK(ra_column == abi.ra_reg);
    CHECK(signal == row->signal_frame);
    ++counts.pcs;

    if (!row->outermost) {
        Dwarf_Op* ops = nullptr;
        std::size_t n = 0;
        REQUIRE(dwarf_frame_cfa(frame.get(), &ops, &n) == 0);
        REQUIRE(n > 0);
        const auto cfa = evaluate(ops, n, 0);
        REQUIRE(cfa.has_value());
        CHECK(cfa->what == Where::What::Address); // an expression's value: the CFA itself
        CHECK(cfa->v == expected_cfa(row->cfa));
    }
    const std::uint64_t cfa = expected_cfa(row->cfa);
    CHECK(libdw_rule(frame.get(), abi.ra_reg, cfa) == expected_rule(row->ra, cfa));
    if (!row->outermost)
        CHECK(libdw_rule(frame.get(), abi.fp_reg, cfa) == expected_rule(row->fp, cfa));
    // Registers SFrame cannot restore are undefined, never "same value".
    for (const std::uint16_t reg : untracked_callee_saved(abi))
        CHECK(libdw_rule(frame.get(), reg, cfa).what == Where::What::Undefined);
    if (abi.sp_from_cfa != 0)
        CHECK(libdw_rule(frame.get(), abi.sp_reg, cfa) ==
              (Where{Where::What::Value,
                     cfa + static_cast<std::uint64_t>(std::int64_t{abi.sp_from_cfa})}));
}

// Every row of every FDE: its first and last byte (each repeat block of a
// PC-mask FDE).
Counts check_section(const elf::ElfFile& program, const sframe::Section& section,
                     const std::string& name) {
    auto frame = cfi::write_debug_frame(section);
    if (!frame) FAIL(name << ": " << frame.error().message());
    CHECK(frame->skipped.empty());
    DebugFrameReader r(program, frame->bytes, name);
    Counts counts;
    for (std::uint32_t i = 0; i < section.fde_count(); ++i) {
        auto fde = section.fde(i);
        REQUIRE(fde);
        auto fres = section.fres(*fde);
        REQUIRE(fres);
        const bool mask = fde->pc_type == sframe::PcType::Mask && fde->rep_size != 0;
        const std::uint64_t block = mask ? fde->rep_size : fde->size;
        if (fres->empty()) {
            check_pc(r, section, fde->start, name, counts);
            continue;
        }
        for (std::uint64_t base = 0; base < fde->size; base += block) {
            for (std::size_t k = 0; k < fres->size(); ++k) {
                const std::uint64_t begin = base + (*fres)[k].start;
                const std::uint64_t end = std::min<std::uint64_t>(
                    base + (k + 1 < fres->size() ? (*fres)[k + 1].start : block), fde->size);
                if (begin >= end) continue;
                ++counts.rows;
                check_pc(r, section, fde->start + begin, name, counts);
                check_pc(r, section, fde->start + end - 1, name, counts);
            }
            if (!mask) break;
        }
    }
    return counts;
}

std::vector<std::string> fixture_paths() {
    std::vector<std::string> out;
    std::istringstream manifest(
        test::read_text(test::source_dir() / "tests/fixtures/manifest.tsv"));
    for (std::string line; std::getline(manifest, line);) {
        if (line.empty() || line[0] == '#') continue;
        out.push_back(line.substr(0, line.find('\t')));
    }
    return out;
}

elf::ElfFile open_fixture(const std::string& rel) {
    auto f = elf::ElfFile::open((test::source_dir() / "tests/fixtures" / rel).string());
    if (!f) FAIL(f.error().message());
    return std::move(*f);
}

} // namespace

TEST_CASE("write_debug_frame: every fixture's SFrame rows read back through libdw") {
    elf_version(EV_CURRENT);
    std::size_t files = 0;
    std::size_t pcs = 0;
    std::map<std::string, std::size_t> by_arch;
    for (const auto& rel : fixture_paths()) {
        const elf::ElfFile program = open_fixture(rel);
        auto section = program.sframe();
        if (!section && section.error().code() == Errc::NotFound)
            continue; // no SFrame (a shared library of lld)
        if (!section) FAIL(rel << ": " << section.error().message());
        const Counts c = check_section(program, *section, std::to_string(files));
        CHECK(c.rows > 0);
        ++files;
        pcs += c.pcs;
        by_arch[std::string(section->abi().name)] += c.pcs;
    }
    CHECK(files > 100);
    CHECK(by_arch["amd64"] > 1000);
    CHECK(by_arch["aarch64"] > 100);
    CHECK(by_arch["s390x"] > 100);
    WARN("checked " << pcs << " PCs in " << files << " fixtures");
}

TEST_CASE(
    "write_debug_frame: GNU ld 2.40's SFrame v1 PC-mask FDE is written per 16-byte PLT entry") {
    // v1 stores no repeat block size; AMD64's PLT entry size is implied
    // (core/src/sframe/layout_v1.cpp), so each of the four pltN entries
    // [0x1030, 0x1070) gets the two rows (+0 CFA=rsp+8, +11 CFA=rsp+16).
    elf_version(EV_CURRENT);
    const elf::ElfFile program = open_fixture("bin/gas-2.40/plt-O2-nofp/plt");
    auto section = program.sframe();
    REQUIRE(section);
    REQUIRE(section->version() == sframe::Version::V1);
    auto frame = cfi::write_debug_frame(*section);
    REQUIRE(frame);
    CHECK(frame->skipped.empty());
    const auto mask = std::find_if(frame->functions.begin(), frame->functions.end(),
                                   [](const cfi::WrittenFunction& fn) { return fn.pc_mask; });
    REQUIRE(mask != frame->functions.end());
    CHECK(mask->start == 0x1030);
    CHECK(mask->size == 64);
    CHECK(mask->rows == 4 * 2);
    // libdw reads those rows back as lookup() gives them, in every entry.
    DebugFrameReader r(program, frame->bytes, "gas-2.40 plt");
    Counts counts;
    for (std::uint64_t entry = 0x1030; entry < 0x1070; entry += 16)
        for (std::uint64_t off : {0U, 10U, 11U, 15U}) {
            auto row = section->lookup(entry + off);
            REQUIRE(row);
            CHECK(row->cfa.offset == (off < 11 ? 8 : 16));
            check_pc(r, *section, entry + off, "gas-2.40 plt", counts);
        }
    CHECK(counts.pcs == 16);
}

TEST_CASE("write_debug_frame: rules the fixtures lack") {
    elf_version(EV_CURRENT);
    using sframe::FdeSpec;
    using sframe::FreSpec;
    auto at_cfa = [](std::int32_t off) {
        return RegRule{Kind::AtCfa, 0, off, RegRule::Source::Fre};
    };
    auto fre = [](std::uint32_t start, CfaRule cfa, RegRule ra, RegRule fp) {
        FreSpec f;
        f.start = start;
        f.cfa = cfa;
        f.ra = ra;
        f.fp = fp;
        return f;
    };

    SECTION("x86-64: flexible FDEs, odd offsets, register rules, signal frame, PC mask") {
        const elf::ElfFile program = open_fixture("bin/gas-2.47/recurse-O2-nofp-static");
        sframe::WriterOptions opt;
        opt.version = sframe::Version::V3;
        opt.abi = sframe::AbiArch::Amd64Little;
        sframe::Writer w(opt);
        // DRAP: CFA = *(r10 + 0)... then rbp-based with FP saved at an odd offset.
        FdeSpec drap;
        drap.start = 0x401000;
        drap.size = 0x40;
        drap.fde_type = sframe::FdeType::Flex;
        drap.fres.push_back(
            fre(0, CfaRule{7, 8, false}, at_cfa(-8), RegRule::same_value(RegRule::Source::Fre)));
        drap.fres.push_back(
            fre(4, CfaRule{10, 0, false}, at_cfa(-8), RegRule::same_value(RegRule::Source::Fre)));
        drap.fres.push_back(fre(9, CfaRule{6, -8, true}, at_cfa(-8), at_cfa(-16)));
        drap.fres.push_back(fre(20, CfaRule{6, 12, false}, at_cfa(-8), at_cfa(-20)));
        drap.fres.push_back(fre(30, CfaRule{7, 8, false},
                                RegRule{Kind::AtReg, 6, 8, RegRule::Source::Fre},
                                RegRule{Kind::ValReg, 3, 0, RegRule::Source::Fre}));
        drap.fres.push_back(fre(34, CfaRule{7, 16, false}, at_cfa(-8),
                                RegRule{Kind::ValReg, 12, 24, RegRule::Source::Fre}));
        w.add(drap);
        FdeSpec sig;
        sig.start = 0x401040;
        sig.size = 0x10;
        sig.signal = true;
        sig.fres.push_back(fre(0, CfaRule{7, 160, false}, at_cfa(-8), at_cfa(-48)));
        w.add(sig);
        FdeSpec plt;
        plt.start = 0x401060;
        plt.size = 0x40;
        plt.pc_type = sframe::PcType::Mask;
        plt.rep_size = 16;
        plt.fres.push_back(fre(0, CfaRule{7, 8, false}, at_cfa(-8), RegRule::same_value()));
        plt.fres.push_back(fre(11, CfaRule{7, 16, false}, at_cfa(-8), RegRule::same_value()));
        w.add(plt);
        FdeSpec outermost;
        outermost.start = 0x4010a0;
        outermost.size = 0x10;
        outermost.fres.push_back(
            fre(0, CfaRule{7, 8, false}, RegRule::undefined(), RegRule::same_value()));
        w.add(outermost);
        auto bytes = w.write();
        if (!bytes) FAIL(bytes.error().message());
        auto section = sframe::Section::parse(*bytes, 0x400000);
        REQUIRE(section);
        const Counts c = check_section(program, *section, "x86");
        CHECK(c.rows == 6 + 1 + 8 + 1);
        CHECK(c.pcs == 2 * c.rows);
    }
    SECTION("x86-64: more kinds of first row than the writer makes CIEs for") {
        // FDEs that start alike share a CIE holding their first row; past 64
        // such CIEs, an FDE refers to the CIE without one and writes its
        // first row itself. Both kinds read back as SFrame gives them.
        const elf::ElfFile program = open_fixture("bin/gas-2.47/recurse-O2-nofp-static");
        sframe::WriterOptions opt;
        opt.version = sframe::Version::V3;
        opt.abi = sframe::AbiArch::Amd64Little;
        sframe::Writer w(opt);
        constexpr std::uint32_t kinds = 80;
        for (std::uint32_t i = 0; i < 2 * kinds; ++i) {
            FdeSpec f;
            f.start = 0x401000 + 0x20 * i;
            f.size = 0x20;
            const auto first = static_cast<std::int32_t>(8 + 8 * (i % kinds));
            f.fres.push_back(fre(0, CfaRule{7, first, false}, at_cfa(-8),
                                 RegRule::same_value(RegRule::Source::Fre)));
            f.fres.push_back(fre(4, CfaRule{7, first + 8, false}, at_cfa(-8), at_cfa(-16)));
            w.add(f);
        }
        auto bytes = w.write();
        if (!bytes) FAIL(bytes.error().message());
        auto section = sframe::Section::parse(*bytes, 0x400000);
        REQUIRE(section);
        const Counts c = check_section(program, *section, "x86 CIEs");
        CHECK(c.rows == 2 * 2 * kinds);
        // The CIEs (32-bit .debug_frame entries whose CIE_id is all ones):
        // 64 with a first row, and the one without.
        auto frame = cfi::write_debug_frame(*section);
        REQUIRE(frame);
        const auto& b = frame->bytes;
        auto u32 = [&b](std::size_t at) {
            return std::uint32_t{b[at]} | std::uint32_t{b[at + 1]} << 8 |
                   std::uint32_t{b[at + 2]} << 16 | std::uint32_t{b[at + 3]} << 24;
        };
        std::size_t cies = 0;
        std::size_t fdes = 0;
        for (std::size_t at = 0; at + 8 <= b.size();) {
            const std::uint32_t length = u32(at);
            REQUIRE(length >= 4);
            REQUIRE(length <= b.size() - at - 4);
            ++(u32(at + 4) == 0xffffffffU ? cies : fdes);
            at += 4 + std::size_t{length};
        }
        CHECK(cies == 65);
        CHECK(fdes == 2 * kinds);
    }
    SECTION("AArch64: signed return addresses, key B, RA in the link register") {
        const elf::ElfFile program = open_fixture("bin/gas-2.47-aarch64/recurse-O2-nofp-static");
        sframe::WriterOptions opt;
        opt.version = sframe::Version::V3;
        opt.abi = sframe::AbiArch::AArch64Little;
        sframe::Writer w(opt);
        FdeSpec f;
        f.start = 0x400100;
        f.size = 0x30;
        f.pauth_key = sframe::PauthKey::B;
        f.fres.push_back(fre(0, CfaRule{31, 0, false}, RegRule::same_value(RegRule::Source::Fre),
                             RegRule::same_value()));
        FreSpec signed_fre = fre(4, CfaRule{31, 0, false},
                                 RegRule::same_value(RegRule::Source::Fre), RegRule::same_value());
        signed_fre.mangled_ra = true;
        f.fres.push_back(signed_fre);
        FreSpec saved = fre(8, CfaRule{31, 32, false}, at_cfa(-24), at_cfa(-32));
        saved.mangled_ra = true;
        f.fres.push_back(saved);
        f.fres.push_back(fre(40, CfaRule{31, 0, false}, RegRule::same_value(RegRule::Source::Fre),
                             RegRule::same_value()));
        w.add(f);
        auto bytes = w.write();
        if (!bytes) FAIL(bytes.error().message());
        auto section = sframe::Section::parse(*bytes, 0x400000);
        REQUIRE(section);
        // libdw does not report the signing state (DW_CFA_AARCH64_negate_ra_state
        // is skipped by it), so only the rules are checked here.
        const Counts c = check_section(program, *section, "aarch64");
        CHECK(c.rows == 4);
    }
    SECTION("s390x: big-endian, SP = CFA - 160, RA saved in a register") {
        const elf::ElfFile program = open_fixture("bin/gas-2.47-s390x/recurse-O2-nofp-static");
        sframe::WriterOptions opt;
        opt.version = sframe::Version::V3;
        opt.abi = sframe::AbiArch::S390xBig;
        sframe::Writer w(opt);
        FdeSpec f;
        f.start = 0x1000400;
        f.size = 0x40;
        f.fde_type = sframe::FdeType::Flex;
        f.fres.push_back(fre(0, CfaRule{15, 160, false},
                             RegRule{Kind::ValReg, 14, 0, RegRule::Source::Fre},
                             RegRule::same_value(RegRule::Source::Fre)));
        f.fres.push_back(fre(6, CfaRule{15, 160, false},
                             RegRule{Kind::ValReg, 0, 0, RegRule::Source::Fre},
                             RegRule{Kind::ValReg, 1, 0, RegRule::Source::Fre}));
        f.fres.push_back(fre(12, CfaRule{15, 320, false}, at_cfa(-48), at_cfa(-72)));
        w.add(f);
        auto bytes = w.write();
        if (!bytes) FAIL(bytes.error().message());
        auto section = sframe::Section::parse(*bytes, 0x1000000);
        REQUIRE(section);
        const Counts c = check_section(program, *section, "s390x");
        CHECK(c.rows == 3);
    }
}

TEST_CASE("write_debug_frame: the process's entry function ends the stack where SFrame lacks it") {
    // crt1.o's _start is hand-written and carries no SFrame; its own CFI says
    // the RA is undefined there (glibc's start.S), and so must the FDE the
    // writer adds for it. Where SFrame covers the entry, SFrame's rows stay.
    elf_version(EV_CURRENT);
    std::size_t added = 0;
    std::size_t covered = 0;
    for (const auto& rel : fixture_paths()) {
        INFO(rel);
        const elf::ElfFile program = open_fixture(rel);
        const auto entry = program.entry_function();
        if (rel.ends_with(".so")) {
            CHECK_FALSE(entry.has_value()); // a library's e_entry is no process's start
            continue;
        }
        REQUIRE(entry.has_value());
        CHECK(entry->name == "_start");
        CHECK(entry->value == program.entry());
        CHECK(entry->size > 0);
        auto section = program.sframe();
        if (!section) continue;
        cfi::DebugFrameOptions options;
        options.entry_function = cfi::FunctionRange{entry->value, entry->size};
        auto frame = cfi::write_debug_frame(*section, options);
        REQUIRE(frame);
        const auto n =
            std::count_if(frame->functions.begin(), frame->functions.end(),
                          [](const cfi::WrittenFunction& w) { return w.entry_function; });
        if (section->lookup(entry->value)) {
            CHECK(n == 0);
            ++covered;
            continue;
        }
        REQUIRE(n == 1);
        const auto& w =
            *std::find_if(frame->functions.begin(), frame->functions.end(),
                          [](const cfi::WrittenFunction& f) { return f.entry_function; });
        CHECK(w.start == entry->value);
        CHECK(w.size == entry->size);
        DebugFrameReader r(program, frame->bytes, "entry-" + std::to_string(added));
        const Abi& abi = section->abi();
        for (const std::uint64_t pc : {entry->value, entry->value + entry->size - 1}) {
            Dwarf_Frame* raw = nullptr;
            REQUIRE(dwarf_cfi_addrframe(r.cfi(), pc, &raw) == 0);
            std::unique_ptr<Dwarf_Frame, void (*)(void*)> f(raw, std::free);
            Dwarf_Addr start = 0;
            Dwarf_Addr end = 0;
            bool signal = true;
            CHECK(dwarf_frame_info(f.get(), &start, &end, &signal) == abi.ra_reg);
            CHECK(start == entry->value);
            CHECK(end == entry->value + entry->size);
            CHECK_FALSE(signal);
            // The CFA at a function's first instruction, as the compilers'
            // CIEs and glibc's _start CFI say (x86-64: rsp + 8).
            Dwarf_Op* ops = nullptr;
            std::size_t nops = 0;
            REQUIRE(dwarf_frame_cfa(f.get(), &ops, &nops) == 0);
            const auto cfa = evaluate(ops, nops, 0);
            REQUIRE(cfa.has_value());
            CHECK(cfa->v == expected_cfa(CfaRule{abi.sp_reg, entry_cfa_offset(abi), false}));
            CHECK(libdw_rule(f.get(), abi.ra_reg, 0).what == Where::What::Undefined);
            for (const std::uint16_t reg : untracked_callee_saved(abi))
                CHECK(libdw_rule(f.get(), reg, 0).what == Where::What::Undefined);
        }
        // Past the function, the entry's FDE does not reach.
        Dwarf_Frame* past = nullptr;
        if (dwarf_cfi_addrframe(r.cfi(), entry->value + entry->size, &past) == 0) {
            std::unique_ptr<Dwarf_Frame, void (*)(void*)> f(past, std::free);
            Dwarf_Addr start = 0;
            Dwarf_Addr end = 0;
            bool signal = false;
            dwarf_frame_info(f.get(), &start, &end, &signal);
            CHECK(start >= entry->value + entry->size);
        }
        ++added;
    }
    CHECK(added > 50);
    WARN(added << " entry functions written, " << covered << " covered by SFrame");
}

TEST_CASE("write_debug_frame: the entry FDE stops where SFrame's rows start") {
    // Two FDEs over one PC would leave the choice to the reader: SFrame's
    // rows stay alone wherever SFrame has some.
    elf_version(EV_CURRENT);
    const elf::ElfFile program = open_fixture("bin/gas-2.40/recurse-O2-nofp-noeh");
    auto section = program.sframe();
    REQUIRE(section);
    auto first = section->fde(0);
    REQUIRE(first);
    const auto entry_fdes = [](const cfi::DebugFrame& f) {
        std::vector<cfi::WrittenFunction> out;
        std::copy_if(f.functions.begin(), f.functions.end(), std::back_inserter(out),
                     [](const cfi::WrittenFunction& w) { return w.entry_function; });
        return out;
    };
    cfi::DebugFrameOptions options;
    // Overlapping the first SFrame FDE from below: cut at its start.
    options.entry_function = cfi::FunctionRange{first->start - 4, 8};
    auto frame = cfi::write_debug_frame(*section, options);
    REQUIRE(frame);
    auto written = entry_fdes(*frame);
    REQUIRE(written.size() == 1);
    CHECK(written[0].start == first->start - 4);
    CHECK(written[0].size == 4);
    // Starting inside an SFrame FDE: none.
    options.entry_function = cfi::FunctionRange{first->start + 1, 8};
    frame = cfi::write_debug_frame(*section, options);
    REQUIRE(frame);
    CHECK(entry_fdes(*frame).empty());
    // No size, or a range past the address space: none.
    for (const auto bad :
         {cfi::FunctionRange{first->start - 4, 0}, cfi::FunctionRange{UINT64_MAX - 3, 8}}) {
        options.entry_function = bad;
        frame = cfi::write_debug_frame(*section, options);
        REQUIRE(frame);
        CHECK(entry_fdes(*frame).empty());
    }
}

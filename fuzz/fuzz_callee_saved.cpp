// SPDX-License-Identifier: MIT
// The callee-saved register analysis on arbitrary code and rows of every ABI
// it reads. The input is
//
//   0x00 u8   number of rows (value % 17) and the ABI ((value / 17) % 4:
//             amd64, aarch64, aarch64_be, s390x)
//   0x01      that many (u16 code offset, i8 CFA offset / 8), little-endian:
//             the row CFA = SP + 8 * value holds from that offset to the
//             next row's (rows in input order; offsets past the code ignored)
//   then      the code, at code_vaddr
//
// The input's own bytes are the file's read-only data (CodeFacts), where a
// switch's table may be read (x86_64_switch_table.hpp).
//
// Properties: the analysis ends (Errc::Unsupported past its limits is the
// only error), stays within its visit limit, gives only "same value", a CFA
// slot or unknown, nothing outside the code, and keeps a rule table no larger
// than one change per instruction; an Analyser that lives across inputs (its
// decoding memo and x86-64 forms learnt from every input before) gives the
// same rules at every address; for x86-64 code, a decode with a memo that
// lives across inputs gives the same instructions as Capstone's.
#include "../core/src/callee_saved/decode_memo.hpp"
#include "../core/src/callee_saved/instruction.hpp"
#include "sfunwind/callee_saved/function_rules.hpp"
#include "support.hpp"

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <vector>

using namespace sfunwind;
using fuzz::require;

namespace {

constexpr std::uint64_t code_vaddr = 0x401000;

struct InputRow {
    std::uint64_t begin;
    std::int32_t cfa;
};

} // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
    if (size < 1) return 0;
    const std::size_t count = data[0] % 17;
    const Abi* abis[] = {&abi_amd64(), &abi_aarch64(ByteOrder::Little),
                         &abi_aarch64(ByteOrder::Big), &abi_s390x()};
    const Abi& abi = *abis[(data[0] / 17) % 4];
    std::size_t at = 1;
    std::vector<InputRow> rows;
    for (std::size_t i = 0; i < count && at + 3 <= size; ++i, at += 3) {
        const auto offset = static_cast<std::uint64_t>(data[at] | (data[at + 1] << 8));
        const auto cfa = static_cast<std::int32_t>(static_cast<std::int8_t>(data[at + 2])) * 8;
        rows.push_back({code_vaddr + offset, cfa});
    }
    const std::span<const std::uint8_t> code(data + std::min(at, size), size - std::min(at, size));
    std::sort(rows.begin(), rows.end(),
              [](const InputRow& a, const InputRow& b) { return a.begin < b.begin; });
    const callee_saved::RowAt row_at = [&](std::uint64_t pc) -> std::optional<Row> {
        const InputRow* hit = nullptr;
        for (const auto& r : rows)
            if (r.begin <= pc) hit = &r;
        if (hit == nullptr || pc >= code_vaddr + code.size()) return std::nullopt;
        Row row;
        row.pc_begin = hit->begin;
        row.pc_end = pc + 1;
        row.cfa = CfaRule{abi.sp_reg, hit->cfa, false};
        if (abi.fixed_ra_offset != 0) row.ra = RegRule::at_cfa(abi.fixed_ra_offset);
        return row;
    };
    if (abi.arch == Arch::X86_64) {
        namespace d = callee_saved::detail;
        static d::DecodeMemo memo;
        const auto tracked = untracked_callee_saved(abi);
        d::Code plain;
        d::Code remembered;
        require(d::decode_x86_64(code_vaddr, code, tracked, plain, nullptr) ==
                    d::decode_x86_64(code_vaddr, code, tracked, remembered, &memo),
                "the memo does not change whether Capstone decodes");
        require(plain == remembered, "the memo gives the instructions Capstone decodes");
    }
    callee_saved::CodeFacts facts;
    facts.read_only_data = [&](std::uint64_t vaddr,
                               std::uint64_t n) -> std::optional<std::span<const std::uint8_t>> {
        if (vaddr < code_vaddr || vaddr - code_vaddr > code.size() ||
            n > code.size() - (vaddr - code_vaddr))
            return std::nullopt;
        return code.subspan(vaddr - code_vaddr, n);
    };
    auto f = callee_saved::FunctionRules::analyse(abi, code_vaddr, code, row_at, {}, facts);
    static callee_saved::Analyser analyser;
    auto remembered = analyser.analyse(abi, code_vaddr, code, row_at, {}, facts);
    require(f.has_value() == remembered.has_value(), "the memo does not change the outcome");
    if (!f) {
        require(f.error().code() == Errc::Unsupported, "only a limit makes the analysis fail",
                f.error().message());
        return 0;
    }
    require(f->instruction_starts() == remembered->instruction_starts(),
            "the memo decodes the same instructions");
    require(f->stats().visits <= callee_saved::Limits{}.max_visits, "the visit limit holds");
    require(f->instruction_starts().size() <= code.size(), "at most one instruction per byte");
    for (std::uint64_t pc = code_vaddr; pc < code_vaddr + code.size() + 2; ++pc) {
        for (const std::uint16_t reg : f->registers()) {
            const RegRule r = f->at(pc, reg);
            const RegRule m = remembered->at(pc, reg);
            require(r.kind == m.kind && r.offset == m.offset, "the memo gives the same rules",
                    std::to_string(pc));
            require(r.kind == RegRule::Kind::SameValue || r.kind == RegRule::Kind::AtCfa ||
                        r.kind == RegRule::Kind::Undefined,
                    "a rule is same value, a CFA slot or unknown");
            if (pc >= code_vaddr + code.size())
                require(r.kind == RegRule::Kind::Undefined, "nothing is known outside the code",
                        std::to_string(pc));
        }
    }
    return 0;
}

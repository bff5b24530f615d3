// SPDX-License-Identifier: MIT
#include "sfunwind/check/callee_saved_check.hpp"

#include "sfunwind/callee_saved/function_rules.hpp"
#include "sfunwind/callee_saved/module_rules.hpp"
#include "sfunwind/row.hpp"
#include "sfunwind/sframe/section.hpp"

#include <algorithm>
#include <array>
#include <optional>
#include <span>

namespace sfunwind::check {
namespace {

std::string name_at(const elf::ElfFile& file, std::uint64_t pc) {
    if (const elf::Symbol* s = file.symbol_for(pc)) return s->name;
    return to_hex(pc);
}

} // namespace

Expected<CalleeSavedReport> check_callee_saved(const elf::ElfFile& file,
                                               const CalleeSavedOptions& options) {
    auto section = file.sframe();
    if (!section) return std::move(section).error();
    auto cfi = cfi::CfiTable::open(file, options.cfi_source);
    if (!cfi) return std::move(cfi).error();
    const Abi& abi = section->abi();
    if (!callee_saved::supported(abi))
        return Error(Errc::Unsupported, file.name() +
                                            ": callee-saved registers are not recovered "
                                            "from " +
                                            std::string(abi.name) + " code");

    CalleeSavedReport report;
    report.file = file.name();
    report.abi = std::string(abi.name);
    const callee_saved::RowAt rows = callee_saved::rows_from(&*section);

    const callee_saved::CodeAt code = [&](std::uint64_t vaddr, std::uint64_t size) {
        return file.loaded_bytes(vaddr, size);
    };
    const callee_saved::CodeFacts facts = callee_saved::module_facts(file, abi, code, rows);
    const std::uint32_t n = section->fde_count();
    std::array<RegRule, callee_saved::FunctionRules::max_registers> got{};
    callee_saved::Analyser analyser;
    for (std::uint32_t i = 0; i < n; ++i) {
        if (options.progress) options.progress(i, n);
        auto fde = section->fde(i);
        if (!fde || fde->size == 0) continue;
        // Only functions the CFI describes too can be checked.
        auto first = cfi->at(fde->start);
        if (!first) continue;
        auto bytes = file.loaded_bytes(fde->start, fde->size);
        auto declined = [&](std::string why) {
            ++report.declined_total;
            if (report.declined.size() < options.max_listed)
                report.declined.push_back({fde->start, name_at(file, fde->start), std::move(why)});
        };
        if (!bytes) {
            declined("its code is not in the file");
            continue;
        }
        auto rules = analyser.analyse(abi, fde->start, *bytes, rows, {}, facts);
        if (!rules) {
            declined(rules.error().message());
            continue;
        }
        ++report.functions;
        report.unreached_seeds += rules->stats().unreached;
        report.switch_tables += rules->stats().switch_tables;
        report.anchor_conflicts += rules->stats().anchor_conflicts;
        report.memory_bytes += rules->memory_bytes();
        report.largest_function_bytes =
            std::max<std::uint64_t>(report.largest_function_bytes, fde->size);
        const auto regs = rules->registers();
        const std::span<RegRule> out(got.data(), std::min(regs.size(), got.size()));
        // One CFI row serves every instruction up to its end.
        std::optional<cfi::CfiRow> row;
        for (const std::uint64_t pc : rules->instruction_starts()) {
            if (!row || pc < row->begin || pc >= row->end) {
                auto r = cfi->at(pc);
                if (!r) {
                    row.reset();
                    continue;
                }
                row = std::move(*r);
            }
            // Padding no path runs is never a frame's pc: not compared.
            if (rules->never_run(pc)) {
                ++report.padding_instructions;
                continue;
            }
            ++report.instructions;
            rules->at(pc, out);
            for (std::size_t k = 0; k < out.size() && k < row->callee_saved.size(); ++k) {
                const auto& c = row->callee_saved[k];
                if (!c.state.representable) {
                    ++report.counts.not_compared;
                    continue;
                }
                // Swift code's CFI leaves out the registers of Swift's
                // conventions where a function need not preserve them
                // (LLVM's callee-saved lists without them), which libdw
                // reports as the same value, the psABI's default.
                if (c.rule.kind == RegRule::Kind::SameValue &&
                    std::find(facts.call_clobbered.begin(), facts.call_clobbered.end(), c.reg) !=
                        facts.call_clobbered.end()) {
                    ++report.counts.not_preserved;
                    continue;
                }
                ++report.counts.compared;
                // libdw reports a register the CFI does not mention as
                // undefined; for a callee-saved register the psABI's reading
                // (and GDB's, and LLDB's) is "same value" (DWARF 5 section
                // 6.4.1 leaves unmentioned registers to the ABI).
                RegRule cfi_rule = c.rule;
                if (cfi_rule.kind == RegRule::Kind::Undefined)
                    cfi_rule = RegRule::same_value(RegRule::Source::Fre);
                if (out[k].kind == RegRule::Kind::Undefined) {
                    ++report.counts.unknown;
                } else if (same_rule(out[k], cfi_rule)) {
                    ++report.counts.equal;
                } else if ((cfi_rule.kind == RegRule::Kind::AtCfa &&
                            rules->slot_at(pc, k) == cfi_rule.offset) ||
                           (cfi_rule.kind == RegRule::Kind::ValReg && cfi_rule.offset == 0 &&
                            rules->copy_at(pc, k) == cfi_rule.reg)) {
                    // The register still holds the value the CFI's slot
                    // does, or the CFI's register holds a copy the analysis
                    // proved.
                    ++report.counts.equivalent;
                } else {
                    ++report.counts.wrong;
                    if (report.wrong.size() < options.max_listed)
                        report.wrong.push_back({pc, name_at(file, fde->start),
                                                register_name(abi, c.reg), describe(out[k], abi),
                                                describe(cfi_rule, abi)});
                }
            }
        }
    }
    if (options.progress) options.progress(n, n);
    return report;
}

} // namespace sfunwind::check

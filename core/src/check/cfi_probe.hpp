// SPDX-License-Identifier: MIT
// Evaluating the CFI at one PC with concrete values, for rules that have no
// Row form (the x86-64 PLT's CFA is a DWARF expression of the PC). libdw
// executes the CFA program but has no public DWARF expression evaluator;
// libdwfl's unwinder has one. So the probe gives libdwfl a thread whose
// registers and memory are a fixed model (register_value(), memory_value())
// and lets it take one step from `pc`: the caller's SP, PC and FP it finds
// are what the CFI says there. An SFrame Row is evaluated on the same model
// (evaluate_row()) and the two are compared as numbers.
//
// One model is a single point: two rules that differ only for other register
// values would look equal. Registers are far apart and memory reads give
// values unlike any register, so the rules found in real CFI (reg + offset,
// a PC-dependent offset, one dereference) cannot collide.
#pragma once

#include "sfunwind/abi.hpp"
#include "sfunwind/elf/elf_file.hpp"
#include "sfunwind/error.hpp"
#include "sfunwind/row.hpp"

#include <cstdint>
#include <memory>
#include <optional>

namespace sfunwind::check::detail {

// What one unwind step gives: the CFA, and the caller's RA and FP values;
// nullopt when the rules leave them undefined.
struct FrameValues {
    std::uint64_t cfa = 0;
    bool outermost = false; // RA undefined: no caller
    std::optional<std::uint64_t> ra;
    std::optional<std::uint64_t> fp;
};

// The model: every DWARF register r holds register_value(r) (the PC
// register holds the PC), and the 8 bytes at address a read as
// memory_value(a).
std::uint64_t register_value(std::uint16_t reg);
std::uint64_t memory_value(std::uint64_t address);

// The values `row` gives on the model at `pc`. nullopt when the row reads
// something the model cannot give (an unknown register kind).
std::optional<FrameValues> evaluate_row(const Row& row, const Abi& abi, std::uint64_t pc);

// The rules that give `values` on the model (the inverse of evaluate_row):
// CFA = SP or FP + offset; RA and FP the same value (FP only), or read from
// CFA + offset. nullopt when the values are not of those forms.
std::optional<Row> rules_from_values(const FrameValues& values, const Abi& abi);

class CfiProbe {
  public:
    // A libdwfl session over the file's image (link-time addresses, bias 0).
    static Expected<CfiProbe> open(const elf::ElfFile& file, const Abi& abi);

    CfiProbe(CfiProbe&&) noexcept;
    CfiProbe& operator=(CfiProbe&&) noexcept;
    ~CfiProbe(); // NOLINT(performance-trivially-destructible): Impl is complete in the .cpp only

    // One step of libdwfl's CFI unwinder from `pc` on the model.
    Expected<FrameValues> step(std::uint64_t pc);

  private:
    struct Impl;
    explicit CfiProbe(std::unique_ptr<Impl> impl);
    std::unique_ptr<Impl> impl_;
};

} // namespace sfunwind::check::detail

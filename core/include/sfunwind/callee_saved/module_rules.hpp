// SPDX-License-Identifier: MIT
// The callee-saved register analysis of one module, per function, cached;
// the caller's values of those registers in one frame; and their values in
// every frame of a whole backtrace. What every debugger adapter and the CLI
// call: the analysis itself is function_rules.hpp.
#pragma once

#include "sfunwind/abi.hpp"
#include "sfunwind/callee_saved/function_rules.hpp"
#include "sfunwind/unwind/backtrace.hpp"
#include "sfunwind/unwind/backtrace_comparison.hpp"
#include "sfunwind/unwind/row_source.hpp"
#include "sfunwind/unwind/step.hpp"

#include <algorithm>
#include <array>
#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <span>
#include <unordered_map>
#include <vector>

namespace sfunwind::callee_saved {

// PT_DYNAMIC (gABI, "Program Header"): here so that this header needs no
// <elf.h>.
inline constexpr std::uint32_t pt_dynamic = 2;

class ModuleRules {
  public:
    static constexpr std::size_t default_max_functions = 4096;

    // `rows` gives the module's rows at link-time PCs. Without
    // facts.never_returns and facts.returns, add_call_facts() answers.
    // `analyser` decodes the code, remembering the encodings and forms it
    // has seen (Analyser): the modules of one process may share one, as
    // their code shares its prologues' and calls' forms, when one thread at
    // a time asks them for functions; without it the module makes its own.
    ModuleRules(const Abi& abi, CodeAt code, RowAt rows, CodeFacts facts = {},
                std::size_t max_functions = default_max_functions,
                std::shared_ptr<Analyser> analyser = nullptr);

    // Whether the analysis covers this ABI at all.
    bool supported() const noexcept { return callee_saved::supported(*abi_); }
    // The analysis of the function [start, start + size) (link-time), made
    // on first use; null when it was declined (no code, a limit).
    const FunctionRules* function(std::uint64_t start, std::uint32_t size);
    // Functions analysed so far (declined ones included) and the bytes their
    // rule tables keep.
    std::size_t functions() const noexcept { return cache_.size(); }
    std::size_t memory_bytes() const noexcept { return memory_; }

  private:
    const Abi* abi_;
    CodeAt code_;
    RowAt rows_;
    CodeFacts facts_;
    std::size_t max_functions_;
    std::unordered_map<std::uint64_t, std::unique_ptr<FunctionRules>> cache_;
    std::size_t memory_ = 0;
    std::shared_ptr<Analyser> analyser_;
};

// Sets facts.never_returns and facts.returns: whether the function that
// starts at link-time `target` never returns (never_returns() below), or
// returns: its code holds a return instruction (the caller's compiler could
// not have known it not to return, so the code after the call is where it
// does), found in the first bytes of an epilogue (a later row that restores
// the entry CFA) or, where no row gives the frame back, anywhere; or an
// epilogue ends with a jump to a function that returns (a tail call; a
// function that never returns may end by jumping to another that never
// returns, so an epilogue alone is no answer). Each target's answers are
// found once for every analysis of one module; they may be called from
// several threads.
void add_call_facts(CodeFacts& facts, const Abi& abi, CodeAt code, RowAt rows);

// Whether the file holds Swift code, whose calls may change callee-saved
// registers (swift_call_clobbered()): Swift's linker support object
// (swiftrt.o, linked into every Swift program and library on ELF
// platforms) gives each one the swift5_* metadata sections (swift5_typeref,
// swift5_protocols, ...), empty or not.
template <class File> bool holds_swift_code(const File& file) {
    for (const auto& section : file.sections())
        if (section.name.starts_with("swift5_")) return true;
    return false;
}

// What a module's file tells of how its code is entered (CodeFacts), the
// one place every consumer takes it from: exception landing pads only when
// it has .gcc_except_table (the LSDA that GCC's personality routine reads:
// without it no call has a landing pad), then each function's call sites
// from its .eh_frame FDE's LSDA where it has one (ElfFile's
// exception_call_sites(), read at the first use; `file` must outlive the
// facts), which call targets never return or do (add_call_facts()),
// which callee-saved registers calls may change (Swift code), and where its
// bytes cannot change (switch tables): its read-only segments, unless its
// dynamic section asks for text relocations, or it has a PT_DYNAMIC segment
// but no dynamic section that could be read to tell.
template <class File>
CodeFacts module_facts(const File& file, const Abi& abi, CodeAt code, RowAt rows) {
    CodeFacts facts;
    facts.landing_pads = file.has_section(".gcc_except_table");
    const auto dynamic = file.dynamic_info();
    const bool has_dynamic =
        std::any_of(file.program_headers().begin(), file.program_headers().end(),
                    [](const auto& ph) { return ph.type == pt_dynamic; });
    if (!dynamic.text_relocations && (dynamic.read || !has_dynamic))
        facts.read_only_data = [&file](std::uint64_t vaddr, std::uint64_t size) {
            return file.read_only_bytes(vaddr, size);
        };
    if (holds_swift_code(file)) {
        const auto swift = swift_call_clobbered(abi);
        facts.call_clobbered.assign(swift.begin(), swift.end());
    }
    add_call_facts(facts, abi, std::move(code), std::move(rows));
    if (facts.landing_pads) {
        // Read at the first function analysed (elf::ExceptionCallSites).
        facts.call_sites = [&file](std::uint64_t start) -> std::optional<std::vector<CallSite>> {
            const auto sites = file.exception_call_sites().of(start);
            if (!sites) return std::nullopt;
            std::vector<CallSite> out;
            out.reserve(sites->size());
            for (const auto& s : *sites)
                out.push_back({s.begin, s.end, s.landing_pad});
            return out;
        };
    }
    return facts;
}

// The analysis of one module whose code `file` holds at link-time addresses
// and whose rows `rows` gives, with the file's facts (module_facts()): what
// the CLI and each debugger adapter build per module, with one `analyser`
// for all of a process's modules (ModuleRules). The callbacks keep `file`
// and `rows` alive.
template <class FilePtr>
std::unique_ptr<ModuleRules> module_rules(FilePtr file, std::shared_ptr<const RowSource> rows,
                                          std::shared_ptr<Analyser> analyser = nullptr) {
    const Abi& abi = rows->abi();
    CodeAt code = [file](std::uint64_t vaddr, std::uint64_t size) {
        return file->loaded_bytes(vaddr, size);
    };
    RowAt row_at = rows_from(std::move(rows));
    CodeFacts facts = module_facts(*file, abi, code, row_at);
    return std::make_unique<ModuleRules>(abi, std::move(code), std::move(row_at), std::move(facts),
                                         ModuleRules::default_max_functions, std::move(analyser));
}

// Whether the function that starts at link-time `target` can never return
// to its caller: its code (its SFrame FDE's range) decodes whole and has no
// return, no indirect jump and no jump out of it (a tail call). A call to
// it has no fall-through (GCC puts the next block right after a call to a
// noreturn function). Anything not proven is "may return", and so is a
// function whose SFrame rows restore the entry CFA after its first row (an
// epilogue: entry_cfa()), which is then not decoded.
bool never_returns(const Abi& abi, const CodeAt& code, const RowAt& rows, std::uint64_t target);

// The caller's value of one callee-saved register in one frame.
struct SavedRegister {
    enum class Kind : std::uint8_t {
        NotSaved,  // unknown: debuggers show "not saved"
        SameValue, // the frame's own value of the register is the caller's
        Value,     // read from the frame's save slot: `value`
    };
    std::uint16_t reg = 0; // DWARF number
    Kind kind = Kind::NotSaved;
    std::uint64_t value = 0;
};

// The caller's callee-saved registers for a frame of a function the
// analysis covers: `lookup_pc` is the frame's link-time lookup address
// (FrameAddress::lookup_address() minus the module's bias), `cfa` the
// frame's CFA. A slot that cannot be read gives NotSaved. Fills at most
// out.size() entries (registers() order); returns how many.
std::size_t recover(const FunctionRules& rules, std::uint64_t lookup_pc, std::uint64_t cfa,
                    MemoryReader& memory, std::span<SavedRegister> out);

// The analysis of the function a backtrace frame is in (from its module and
// row), or null where there is none.
using RulesOfFrame = std::function<const FunctionRules*(const Frame& frame)>;

// One frame's own values of the registers a walk follows (walk_values()'s
// `registers`, same order); nullopt where unknown.
struct FrameValues {
    // Whether the values come from the analysis: frame 0 (its live
    // registers) and every frame whose callee frame the analysis covered.
    // Elsewhere every value is unknown.
    bool analysed = false;
    std::array<std::optional<std::uint64_t>, FunctionRules::max_registers> values{};
};

// Each frame's values of `registers` along a whole backtrace, outward from
// frame 0's `initial` values (registers order; nullopt where unknown). The
// value of frame i+1 is recover() on frame i's function at frame i's CFA:
// the slot's value, frame i's own value for "same value" (unknown if that
// is), or unknown. One entry per frame; at most FunctionRules::max_registers
// registers are followed.
std::vector<FrameValues> walk_values(std::span<const Frame> frames,
                                     std::span<const std::uint16_t> registers,
                                     std::span<const std::optional<std::uint64_t>> initial,
                                     const RulesOfFrame& rules_of, MemoryReader& memory);

// A register whose value the walk recovered and another unwinder (the
// reference: CFI, a debugger's own unwinder) gives differently, in the same
// frame.
struct RegisterDifference {
    std::size_t frame = 0;
    std::uint16_t reg = 0; // DWARF number
    std::uint64_t sframe = 0;
    std::uint64_t reference = 0;
};

// walk_values()'s values against the reference's. Only (frame, register)
// pairs the reference has a value for count; "unknown" ones are those the
// walk declined, which is not a difference.
struct RegisterComparison {
    std::size_t compared = 0;
    std::size_t equal = 0;
    std::size_t unknown = 0;
    std::vector<RegisterDifference> differences;
};

// `recovered`: walk_values() of `registers`; `reference`: per frame, the
// reference's values of `registers` in that order (nullopt where it has
// none; a shorter list is as many nullopts); `frames`: the frames'
// comparison (compare_backtraces()). Compared from frame 1, as frame 0's
// values are the thread's own in both, and only in analysed frames whose
// PCs agree: frames at different PCs are already a difference, their
// registers say nothing more.
RegisterComparison
compare_values(std::span<const FrameValues> recovered,
               std::span<const std::vector<std::optional<std::uint64_t>>> reference,
               std::span<const FrameMatch> frames, std::span<const std::uint16_t> registers);

} // namespace sfunwind::callee_saved

// SPDX-License-Identifier: MIT
// The callee-saved register analysis (function_rules.hpp) in the form the
// .debug_frame writer takes (cfi::DebugFrameOptions::callee_saved): for each
// function, the rules at every instruction where they change. The writer
// needs neither Capstone nor this library; this adapter joins the two.
#pragma once

#include "sfunwind/abi.hpp"
#include "sfunwind/callee_saved/function_rules.hpp"
#include "sfunwind/callee_saved/module_rules.hpp"
#include "sfunwind/cfi/dwarf_writer.hpp"
#include "sfunwind/sframe/section.hpp"

#include <cstdint>
#include <vector>

namespace sfunwind::callee_saved {

// The rules of one analysed function, from its start to `end` (link-time):
// one change at the start, then one at each instruction whose rules differ
// from the previous instruction's, and one at decoded_end() when the decode
// stopped early (every register unknown from there).
std::vector<cfi::CalleeSavedChange> debug_frame_changes(const FunctionRules& rules,
                                                        std::uint64_t end);

// Analyses each function the writer asks about, once (no rules are cached:
// the writer asks for each FDE once; one Analyser serves them all), with `facts` (a module's:
// module_facts()). Functions that are declined (no code, a limit, an ABI
// not supported()) get no changes. `code` and `rows` as for ModuleRules;
// they must outlive the writer's use of the result.
cfi::CalleeSavedRules debug_frame_rules(const Abi& abi, CodeAt code, RowAt rows,
                                        CodeFacts facts = {});

// A function the writer will ask about (link-time start and size).
struct FunctionRange {
    std::uint64_t start = 0;
    std::uint64_t size = 0;
};

// The same answers, analysed ahead on `threads` threads (0: one per core, at
// most 8; the caller's counts as one; one per 64 functions at most, so that
// a small library's translation starts none): `functions` lists the functions in
// the order the writer asks for them (its FDE order). Worker threads, which
// live as long as the result, analyse the next ones, at most 64 per thread
// ahead of the writer's last request; the caller's thread analyses too
// while the function it asks for is not ready. Each thread has an Analyser
// (function_rules.hpp): encodings it has decoded are not decoded again. A
// request for a function not listed, or listed but asked before, is
// analysed on its own. `code`, `rows` and `facts` are called from those
// threads.
cfi::CalleeSavedRules debug_frame_rules(const Abi& abi, CodeAt code, RowAt rows,
                                        std::vector<FunctionRange> functions, unsigned threads = 0,
                                        CodeFacts facts = {});

// What cfi::write_debug_frame(section, ...) takes for `section`: its rows,
// and its functions (FDE order, PC-mask FDEs left out) analysed ahead on
// `threads` threads as above. `section` and `code` must outlive the result.
cfi::CalleeSavedRules debug_frame_rules(const sframe::Section& section, CodeAt code,
                                        unsigned threads = 0, CodeFacts facts = {});

// The same for the module `file` (an elf::ElfFile) whose SFrame section is
// `section`, with the file's facts (module_facts(): what GDB's and the CLI's
// analyses take, so that every debugger shows the same values), on every
// core (or `threads`): what the LLDB plugin writes. Both must outlive the
// result.
template <class File>
cfi::CalleeSavedRules module_debug_frame_rules(const File& file, const sframe::Section& section,
                                               unsigned threads = 0) {
    const CodeAt code = [&file](std::uint64_t vaddr, std::uint64_t size) {
        return file.loaded_bytes(vaddr, size);
    };
    return debug_frame_rules(section, code, threads,
                             module_facts(file, section.abi(), code, rows_from(&section)));
}

} // namespace sfunwind::callee_saved

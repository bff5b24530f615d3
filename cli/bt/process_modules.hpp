// SPDX-License-Identifier: MIT
// The ELF modules mapped into a target (program, shared libraries, vdso):
// where each is loaded, its unwind rows (SFrame, or ppc64 traceback tables) if it
// has any, and its symbols.
// Modules without SFrame are kept too, so that frames in them are named and
// a walk that reaches them can say where it left the covered code.
#pragma once

#include "proc_maps.hpp"
#include "sfunwind/callee_saved/module_rules.hpp"
#include "sfunwind/elf/elf_file.hpp"
#include "sfunwind/elf/module_rows.hpp"
#include "sfunwind/sframe/section.hpp"
#include "sfunwind/unwind/frame_address.hpp"
#include "sfunwind/unwind/module_set.hpp"
#include "sfunwind/unwind/step.hpp"

#include <cstdint>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <sys/types.h>
#include <vector>

namespace sfunwind::cli::bt {

struct ProcessModule {
    std::string path;        // as the target names it (maps, link map)
    std::uint64_t begin = 0; // runtime range of its mappings
    std::uint64_t end = 0;
    std::uint64_t bias = 0; // runtime address - link-time address
    // The file, its unwind rows (SFrame, or ppc64 traceback tables) and how
    // they were found.
    elf::ModuleRows table;
    // Why the module has no rows ("no SFrame section", "cannot open ..."),
    // or a placement problem ("load bias guessed").
    std::string problem;
    // Where its functions keep rbx, r12-r15 (x86-64 modules with rows and
    // code); null otherwise. Shared: the analysis caches per function, and
    // walks of every thread use it.
    std::shared_ptr<callee_saved::ModuleRules> callee_saved;

    const elf::ElfFile* elf() const noexcept { return table.file.get(); }

    std::string short_name() const; // the path's last component
};

struct SymbolName {
    std::string name;         // empty when no symbol covers the address
    std::uint64_t offset = 0; // from the symbol's start
};

class ProcessModules {
  public:
    void add(ProcessModule module);
    // The module whose mappings hold a runtime address, or null.
    const ProcessModule* find(std::uint64_t addr) const;
    const std::vector<ProcessModule>& all() const noexcept { return modules_; }

    // The modules that have unwind rows, for sfunwind::backtrace().
    ModuleSet sframe_modules() const;
    // The function containing a frame's address (looked up where
    // FrameAddress says: a return address at its call).
    SymbolName symbol(FrameAddress address) const;
    // What decodes the code for every module's callee-saved analysis
    // (callee_saved::ModuleRules): the walks run on one thread.
    const std::shared_ptr<callee_saved::Analyser>& analyser() const noexcept { return analyser_; }

  private:
    std::vector<ProcessModule> modules_; // sorted by begin
    std::shared_ptr<callee_saved::Analyser> analyser_ = std::make_shared<callee_saved::Analyser>();
};

// Reads the file, finds and parses its SFrame section; failures are recorded
// in `problem`, never fatal: a module without SFrame is still a module. The
// callee-saved analysis decodes with `analyser` (ProcessModules::analyser()).
void load_module_file(ProcessModule& m, const std::string& open_path,
                      std::shared_ptr<callee_saved::Analyser> analyser);
void load_module_image(ProcessModule& m, std::span<const std::uint8_t> image,
                       std::shared_ptr<callee_saved::Analyser> analyser);

// The modules of a live process from /proc/PID/maps: every mapped ELF file,
// and the vdso read from the process's memory.
ProcessModules modules_from_maps(pid_t pid, const std::vector<MapEntry>& maps,
                                 MemoryReader& memory);

} // namespace sfunwind::cli::bt

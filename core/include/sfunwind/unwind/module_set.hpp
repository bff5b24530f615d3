// SPDX-License-Identifier: MIT
// The SFrame sections of a process's modules (the program, shared libraries)
// and where each is loaded: a runtime PC maps to its module, and to the
// link-time PC that the module's Section is searched with.
#pragma once

#include "sfunwind/sframe/section.hpp"
#include "sfunwind/unwind/row_source.hpp"

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

namespace sfunwind {

// A module as an unwinder sees it: its unwind rows and where it is placed.
struct Module {
    std::string name;
    std::uint64_t bias = 0;  // runtime address - link-time address
    std::uint64_t begin = 0; // runtime range covered by the module's code
    std::uint64_t end = 0;
    // The module's rows (SFrame, or e.g. ppc64 traceback tables), owning the
    // table and the bytes it refers to; null when the module has none.
    std::shared_ptr<const RowSource> rows;

    Expected<Row> lookup(std::uint64_t link_pc) const;
    const Abi* abi() const noexcept { return rows ? &rows->abi() : nullptr; }
    // The SFrame section behind the rows, or null.
    const sframe::Section* sframe() const noexcept { return rows ? rows->sframe() : nullptr; }
};

class ModuleSet {
  public:
    ModuleSet() = default;
    // These modules, sorted once (stably: modules that start at the same
    // address keep their order, as add() keeps it). add() moves the
    // modules after the new one's place, so adding n modules costs n^2
    // moves when they come in descending order, as a process's libraries
    // usually do (mmap places each below the last).
    explicit ModuleSet(std::vector<Module> modules);
    void add(Module module);
    // The module whose [begin, end) holds the runtime address, or null.
    const Module* find(std::uint64_t pc) const noexcept;
    const std::vector<Module>& modules() const noexcept { return modules_; }
    void clear() noexcept { modules_.clear(); }

  private:
    std::vector<Module> modules_; // sorted by begin
};

} // namespace sfunwind

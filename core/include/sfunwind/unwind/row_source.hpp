// SPDX-License-Identifier: MIT
// Anything that gives a Row for a link-time PC: an SFrame section, PowerPC64
// traceback tables. Module sets, backtraces and the debugger adapters step
// through this interface, so every unwind-table format is used the same way.
#pragma once

#include "sfunwind/abi.hpp"
#include "sfunwind/error.hpp"
#include "sfunwind/row.hpp"

#include <cstdint>
#include <memory>
#include <string>

namespace sfunwind {

class RowSource {
  public:
    virtual ~RowSource() = default;
    virtual Expected<Row> lookup(std::uint64_t link_pc) const = 0;
    virtual const Abi& abi() const noexcept = 0;
    // "SFrame v3", "ppc64 traceback tables": for status displays.
    virtual std::string kind() const = 0;
};

// Adapts a table type with lookup() and abi() (sframe::Section,
// ppc64::TracebackIndex) to RowSource, sharing ownership of it.
template <typename Table> class RowSourceOf final : public RowSource {
  public:
    RowSourceOf(std::shared_ptr<const Table> table, std::string kind)
        : table_(std::move(table)), kind_(std::move(kind)) {}
    Expected<Row> lookup(std::uint64_t link_pc) const override { return table_->lookup(link_pc); }
    const Abi& abi() const noexcept override { return table_->abi(); }
    std::string kind() const override { return kind_; }
    const Table& table() const noexcept { return *table_; }

  private:
    std::shared_ptr<const Table> table_;
    std::string kind_;
};

} // namespace sfunwind

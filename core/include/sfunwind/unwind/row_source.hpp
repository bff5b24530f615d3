// SPDX-License-Identifier: MIT
// Anything that gives a Row for a link-time PC: an SFrame section, PowerPC64
// traceback tables. Module sets, backtraces and the debugger adapters step
// through this interface, so every unwind-table format is used the same way.
#pragma once

#include "sfunwind/abi.hpp"
#include "sfunwind/error.hpp"
#include "sfunwind/row.hpp"
#include "sfunwind/sframe/section.hpp"

#include <cstdint>
#include <memory>
#include <string>
#include <type_traits>
#include <utility>

namespace sfunwind {

class RowSource {
  public:
    virtual ~RowSource() = default;
    virtual Expected<Row> lookup(std::uint64_t link_pc) const = 0;
    virtual const Abi& abi() const noexcept = 0;
    // "SFrame v3", "ppc64 traceback tables": for status displays.
    virtual std::string kind() const = 0;
    // The SFrame section behind the rows, or null (another format).
    virtual const sframe::Section* sframe() const noexcept { return nullptr; }
};

// Adapts a table type with lookup() and abi() (sframe::Section,
// ppc64::TracebackIndex) to RowSource, sharing ownership of it and of the
// bytes it refers to (`owner`: an ElfFile, a buffer read from the target).
template <typename Table> class RowSourceOf final : public RowSource {
  public:
    RowSourceOf(std::shared_ptr<const Table> table, std::string kind,
                std::shared_ptr<const void> owner = {})
        : table_(std::move(table)), kind_(std::move(kind)), owner_(std::move(owner)) {}
    Expected<Row> lookup(std::uint64_t link_pc) const override { return table_->lookup(link_pc); }
    const Abi& abi() const noexcept override { return table_->abi(); }
    std::string kind() const override { return kind_; }
    const sframe::Section* sframe() const noexcept override {
        if constexpr (std::is_same_v<Table, sframe::Section>) return table_.get();
        return nullptr;
    }
    const Table& table() const noexcept { return *table_; }

  private:
    std::shared_ptr<const Table> table_;
    std::string kind_;
    std::shared_ptr<const void> owner_;
};

// The rows of an SFrame section whose bytes `owner` keeps alive; kind()
// names the version ("SFrame v2").
std::shared_ptr<const RowSource> sframe_rows(sframe::Section section,
                                             std::shared_ptr<const void> owner);

} // namespace sfunwind

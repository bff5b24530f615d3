// SPDX-License-Identifier: MIT
#include "sfunwind/elf/module_rows.hpp"

#include "sfunwind/ppc64/index.hpp"

#include <algorithm>

namespace sfunwind::elf {
namespace {

ModuleRows unreadable(Error error) {
    ModuleRows t;
    t.error = std::move(error);
    return t;
}

// Traceback tables of a ppc64 file with no .sframe (64-bit PowerPC ELF ABI
// 3.3: GCC writes one after every function by default). Without any, the
// module has no table: Errc::NotFound.
void open_traceback_tables(ModuleRows& t) {
    auto index = ppc64::TracebackIndex::build(*t.file);
    if (!index || index->by_symbols().tables.empty()) {
        t.error = Error(Errc::NotFound,
                        t.file->name() + ": no SFrame section and no traceback tables" +
                            (index ? std::string() : " (" + index.error().message() + ")"));
        return;
    }
    t.error.reset();
    t.rows = std::make_shared<const RowSourceOf<ppc64::TracebackIndex>>(
        std::make_shared<const ppc64::TracebackIndex>(std::move(*index)), "ppc64 traceback tables",
        t.file);
}

} // namespace

ModuleRows open_module_rows(std::shared_ptr<const ElfFile> file) {
    ModuleRows t;
    t.file = std::move(file);
    auto where = t.file->find_sframe();
    if (where) {
        t.where = *where;
        auto section = t.file->sframe();
        if (!section) {
            // A .sframe that does not parse is damaged, whatever the code.
            Error e = std::move(section).error();
            t.error = e.code() == Errc::NotFound ? Error(Errc::Malformed, e.what(), e.where()) : e;
            return t;
        }
        t.rows = sframe_rows(std::move(*section), t.file);
        return t;
    }
    if (where.error().code() != Errc::NotFound) {
        t.error = std::move(where).error();
        return t;
    }
    t.error = Error(Errc::NotFound, "no SFrame section");
    const auto abi = t.file->abi();
    if (abi && abi->arch == Arch::Ppc64) open_traceback_tables(t);
    return t;
}

ModuleRows open_module_rows(const std::string& path) {
    // One descriptor for the headers and the SFrame section's first reads.
    auto file = ElfFile::open(path, true);
    if (!file) return unreadable(std::move(file).error());
    ModuleRows rows = open_module_rows(std::make_shared<const ElfFile>(std::move(*file)));
    rows.file->close_descriptor();
    return rows;
}

ModuleRows open_module_rows(std::span<const std::uint8_t> image, const std::string& name) {
    auto file = ElfFile::from_bytes(image, name);
    if (!file) return unreadable(std::move(file).error());
    return open_module_rows(std::make_shared<const ElfFile>(std::move(*file)));
}

} // namespace sfunwind::elf

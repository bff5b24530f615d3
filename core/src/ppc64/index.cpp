// SPDX-License-Identifier: MIT
// TracebackIndex: finding traceback tables in an ELF file and turning them
// into Rows (see sfunwind/ppc64/index.hpp for the rules and their sources).
#include "sfunwind/ppc64/index.hpp"

#include <algorithm>
#include <cstdio>
#include <elf.h>
#include <map>

namespace sfunwind::ppc64 {
namespace {

// The executable bytes: SHF_EXECINSTR sections when the file has section
// headers (tighter than segments, which may also hold read-only data),
// else the PF_X load segments.
std::vector<CodeRange> code_ranges(const elf::ElfFile& file) {
    std::vector<CodeRange> out;
    const auto image = file.image();
    // Empty when the file could not be read whole: no code to scan.
    if (image.empty()) return out;
    const ByteOrder order = file.byte_order();
    for (const auto& s : file.sections())
        if ((s.flags & SHF_EXECINSTR) != 0 && (s.flags & SHF_ALLOC) != 0 && s.in_file && s.size > 0)
            out.push_back({s.name, s.vaddr, ByteView(image.subspan(s.offset, s.size), order)});
    if (out.empty()) {
        std::size_t i = 0;
        for (const auto& seg : file.load_segments()) {
            if ((seg.flags & PF_X) != 0 && seg.offset <= image.size() && seg.filesz > 0) {
                const auto n = std::min<std::uint64_t>(seg.filesz, image.size() - seg.offset);
                out.push_back({"PT_LOAD[" + std::to_string(i) + "]", seg.vaddr,
                               ByteView(image.subspan(seg.offset, n), order)});
            }
            ++i;
        }
    }
    std::sort(out.begin(), out.end(),
              [](const CodeRange& a, const CodeRange& b) { return a.vaddr < b.vaddr; });
    return out;
}

// Function symbols by code address. ELFv1 (64-bit PowerPC ELF ABI 1.9,
// "Function descriptors"): a function symbol's value is its descriptor in
// .opd, whose first doubleword is the entry point.
std::vector<Function> functions_of(const elf::ElfFile& file, bool& descriptors) {
    const elf::SectionInfo* opd = file.section(".opd");
    std::optional<ByteView> opd_view;
    if (opd != nullptr && opd->in_file) {
        if (auto b = file.section_bytes(".opd")) opd_view = ByteView(*b, file.byte_order());
    }
    descriptors = false;
    std::map<std::uint64_t, Function> by_start;
    for (const auto& sym : file.function_symbols()) {
        Function f;
        f.start = sym.value;
        f.size = sym.size;
        if (opd_view && sym.value >= opd->vaddr && sym.value - opd->vaddr < opd->size) {
            std::uint64_t entry = 0;
            if (!opd_view->load(sym.value - opd->vaddr, entry)) continue; // descriptor cut short
            f.descriptor = sym.value;
            f.start = entry;
            descriptors = true;
        }
        auto [it, fresh] = by_start.try_emplace(f.start, f);
        if (!fresh) it->second.size = std::max(it->second.size, f.size);
        it->second.names.push_back(sym.name);
        if (fresh) it->second.names.erase(it->second.names.begin(), it->second.names.end() - 1);
    }
    std::vector<Function> out;
    out.reserve(by_start.size());
    for (auto& [start, f] : by_start)
        out.push_back(std::move(f));
    return out;
}

// One rule run per distinct Row, for pc_begin/pc_end and fre_index.
struct RowAt {
    Row row;
    FrameState state;
    FrameAnalysis::Origin origin;
};

RowAt row_at(const std::optional<FrameAnalysis>& analysis, const TracebackTable& table,
             std::uint64_t pc) {
    RowAt r{};
    r.state = analysis ? analysis->state_at(pc) : body_state(table);
    r.origin = analysis ? analysis->origin_at(pc) : FrameAnalysis::Origin::Unreached;
    apply_rules(r.state, table, r.row);
    return r;
}

bool is_all_zero(const TracebackTable& t) {
    return t.lang == 0 && !t.globalink && !t.is_eprol && !t.has_tboff && !t.int_proc &&
           !t.has_ctl && !t.tocless && !t.fp_present && !t.int_handl && !t.name_present &&
           !t.uses_alloca && !t.saves_cr && !t.saves_lr && !t.stores_bc && !t.fixup &&
           t.fp_saved == 0 && t.gpr_saved == 0 && t.fixedparms == 0 && t.floatparms == 0 &&
           !t.parmsonstk;
}

bool same_rules(const Row& a, const Row& b) {
    return a.cfa.reg == b.cfa.reg && a.cfa.offset == b.cfa.offset && a.cfa.deref == b.cfa.deref &&
           a.ra == b.ra && a.fp == b.fp && a.topmost_only == b.topmost_only;
}

} // namespace

const char* to_string(FoundTable::StartSource source) noexcept {
    switch (source) {
    case FoundTable::StartSource::TbOffset:
        return "tb_offset";
    case FoundTable::StartSource::Symbol:
        return "symbol";
    case FoundTable::StartSource::Unknown:
        return "unknown";
    }
    return "?";
}

Expected<TracebackIndex> TracebackIndex::build(const elf::ElfFile& file,
                                               const IndexOptions& options) {
    if (file.machine() != EM_PPC64)
        return Error(Errc::Unsupported, file.name() +
                                            ": not a 64-bit PowerPC ELF file (e_machine " +
                                            std::to_string(file.machine()) + ")");
    TracebackIndex index;
    index.abi_ = &abi_ppc64(file.byte_order());
    index.options_ = options;
    index.code_ = code_ranges(file);
    if (index.code_.empty()) return Error(Errc::NotFound, file.name() + ": no executable code");
    index.functions_ = functions_of(file, index.descriptors_);
    return index;
}

const CodeRange* TracebackIndex::range_of(std::uint64_t pc) const {
    auto it = std::upper_bound(code_.begin(), code_.end(), pc,
                               [](std::uint64_t v, const CodeRange& r) { return v < r.vaddr; });
    if (it == code_.begin()) return nullptr;
    --it;
    return pc - it->vaddr < it->bytes.size() ? &*it : nullptr;
}

const Function* TracebackIndex::function_at(std::uint64_t pc) const {
    auto it = std::upper_bound(functions_.begin(), functions_.end(), pc,
                               [](std::uint64_t v, const Function& f) { return v < f.start; });
    if (it == functions_.begin()) return nullptr;
    --it;
    return pc - it->start < it->size ? &*it : nullptr;
}

Expected<FoundTable> TracebackIndex::find(std::uint64_t pc) const {
    const CodeRange* range = range_of(pc);
    if (range == nullptr)
        return Error(Errc::NotFound, "no executable code at " + to_hex(pc), Address{pc});
    const ByteView& code = range->bytes;
    const std::uint64_t first = (pc - range->vaddr) & ~std::uint64_t{3};
    const std::uint64_t limit = std::min<std::uint64_t>(code.size(), first + options_.max_scan);
    const Function* sym = function_at(pc);
    // The next function symbol after the PC: a zero word at or past it
    // belongs to that function (or a later one), so the PC's function has no
    // table. This also catches symbols of size 0 (crtstuff.c is built with
    // -finhibit-size-directive, which also turns GCC's traceback tables off).
    auto next_it = std::upper_bound(functions_.begin(), functions_.end(), pc & ~std::uint64_t{3},
                                    [](std::uint64_t v, const Function& f) { return v < f.start; });
    const Function* next_sym = next_it == functions_.end() ? nullptr : &*next_it;

    FoundTable found;
    std::optional<Error> last_problem;
    for (std::uint64_t off = first; off + 4 <= limit; off += 4) {
        std::uint32_t word = 1;
        (void)code.load(off, word);
        if (word != 0) continue;
        const std::uint64_t at = range->vaddr + off;
        if (sym != nullptr && sym->size > 0 && at >= sym->start + sym->size)
            return Error(Errc::NotFound,
                         "no traceback table in " + sym->names.front() + " [" + to_hex(sym->start) +
                             ", " + to_hex(sym->start + sym->size) + "), which holds " +
                             to_hex(pc) + ": the first zero word after it is at " + to_hex(at) +
                             (last_problem ? " (" + last_problem->what() + ")" : std::string()),
                         Address{pc});
        if (next_sym != nullptr && at >= next_sym->start)
            return Error(Errc::NotFound,
                         "no traceback table between " + to_hex(pc) + " and the next function, " +
                             next_sym->names.front() + " at " + to_hex(next_sym->start),
                         Address{pc});
        auto table = decode_table(code, range->vaddr, off, options_.decode);
        if (!table) {
            last_problem = std::move(table).error();
            ++found.skipped_zero_words;
            continue;
        }
        found.table = std::move(*table);
        if (auto start = found.table.function_start()) {
            if (*start > pc)
                return Error(Errc::NotFound,
                             to_hex(pc) + " is between functions: the next traceback table, at " +
                                 to_hex(at) + ", is for the function at " + to_hex(*start),
                             Address{pc});
            found.function_start = start;
            found.start_source = FoundTable::StartSource::TbOffset;
        } else if (sym != nullptr) {
            found.function_start = sym->start;
            found.start_source = FoundTable::StartSource::Symbol;
        }
        if (found.function_start) {
            auto it =
                std::lower_bound(functions_.begin(), functions_.end(), *found.function_start,
                                 [](const Function& f, std::uint64_t v) { return f.start < v; });
            if (it != functions_.end() && it->start == *found.function_start) found.function = &*it;
        }
        return found;
    }
    std::string why = "no traceback table within " + to_hex(limit - first) + " bytes after " +
                      to_hex(pc) + " in " + range->name;
    if (last_problem) why += " (last zero word rejected: " + last_problem->what() + ")";
    return Error(Errc::NotFound, why, Address{pc});
}

bool TracebackIndex::never_returns(std::uint64_t target) const {
    const Function* f = function_at(target);
    if (f == nullptr) return false;
    const CodeRange* range = range_of(f->start);
    if (range == nullptr) return false;
    std::uint64_t end = f->start + f->size;
    if (auto found = find(f->start)) end = std::min(end, found->table.address);
    constexpr std::uint64_t max_bytes = std::uint64_t{64} * 1024;
    if (end <= f->start || end - f->start > max_bytes) return false;
    for (std::uint64_t pc = f->start; pc < end; pc += 4) {
        std::uint32_t word = 0;
        if (!range->bytes.load(pc - range->vaddr, word)) return false;
        const unsigned op = word >> 26;
        const bool link = (word & 1U) != 0;
        if (op == 19 && !link) {
            const unsigned xo = (word >> 1) & 0x3ffU;
            if (xo == 16 || xo == 528) return false; // bclr, bcctr
        }
        if ((op == 18 || op == 16) && !link) {
            // b / bc: a branch that leaves the function is a tail call.
            std::int64_t disp = 0;
            if (op == 18) {
                const std::uint32_t v = word & 0x03fffffcU;
                disp = (v & 0x02000000U) != 0 ? static_cast<std::int64_t>(v) - 0x04000000
                                              : std::int64_t{v};
            } else {
                disp = std::int16_t(word & 0xfffcU);
            }
            const std::uint64_t to = (word & 2U) != 0 ? static_cast<std::uint64_t>(disp)
                                                      : pc + static_cast<std::uint64_t>(disp);
            if (to < f->start || to >= end) return false;
        }
    }
    return true;
}

Expected<FrameAnalysis> TracebackIndex::analyse(const FoundTable& found) const {
    const CodeRange* range = range_of(*found.function_start);
    if (range == nullptr)
        return Error(Errc::NotFound, "no executable code at " + to_hex(*found.function_start),
                     *found.function_start);
    struct Calls final : CallTargets {
        explicit Calls(const TracebackIndex& i) : index(i) {}
        bool never_returns(std::uint64_t target) const override {
            return index.never_returns(target);
        }
        const TracebackIndex& index;
    } calls(*this);
    return FrameAnalysis::run(range->bytes, range->vaddr, *found.function_start, found.table,
                              options_.analysis, &calls);
}

Expected<std::vector<RowDetail>> TracebackIndex::rows(const FoundTable& found, Split split) const {
    if (!found.function_start)
        return Error(Errc::NotFound,
                     "the function of the traceback table at " + to_hex(found.table.address) +
                         " has no known start (no tb_offset, no symbol)",
                     Address{found.table.address});
    std::optional<FrameAnalysis> analysis;
    std::optional<Error> why;
    auto a = analyse(found);
    if (a)
        analysis = std::move(*a);
    else
        why = std::move(a).error();

    std::vector<RowDetail> out;
    const std::uint64_t start = *found.function_start;
    const std::uint64_t end = found.table.address;
    for (std::uint64_t pc = start; pc < end; pc += 4) {
        RowAt r = row_at(analysis, found.table, pc);
        if (!out.empty() && same_rules(out.back().row, r.row) && out.back().origin == r.origin &&
            (split == Split::Rules || out.back().state == r.state)) {
            out.back().row.pc_end = pc + 4;
            continue;
        }
        RowDetail d;
        d.row = r.row;
        d.row.pc_begin = pc;
        d.row.pc_end = pc + 4;
        d.row.func_start = start;
        d.row.func_size = static_cast<std::uint32_t>(end - start);
        d.row.fre_index = static_cast<std::uint32_t>(out.size());
        d.found = found;
        d.state = r.state;
        d.origin = r.origin;
        d.analysis_error = why;
        out.push_back(std::move(d));
    }
    return out;
}

Expected<RowDetail> TracebackIndex::lookup_detail(std::uint64_t pc) const {
    auto found = find(pc);
    if (!found) return std::move(found).error();
    const std::uint64_t at = pc & ~std::uint64_t{3};
    // find() scans from the PC's own word, so the PC can be the table's zero
    // word: data, not an instruction, with no rules of its own (rows() ends
    // before it too).
    if (at == found->table.address)
        return Error(Errc::NotFound,
                     to_hex(pc) +
                         " is the traceback table's zero word, not inside its function's code",
                     Address{pc});
    if (!found->function_start) {
        // No start, so no analysis: the body state, from the PC to the table.
        RowDetail d;
        d.found = std::move(*found);
        d.state = body_state(d.found.table);
        apply_rules(d.state, d.found.table, d.row);
        d.row.pc_begin = at;
        d.row.pc_end = d.found.table.address;
        d.row.func_start = at;
        d.row.func_size = static_cast<std::uint32_t>(d.found.table.address - at);
        d.analysis_error = Error(
            Errc::NotFound, "the function start is unknown (no tb_offset, no symbol)", Address{pc});
        return d;
    }
    if (pc != at) {
        // A return address minus one, inside a call: the state after it.
        auto a = analyse(*found);
        if (a && a->is_call_at(at)) {
            RowDetail d;
            d.state = a->state_after(at);
            d.origin = a->origin_at(at);
            apply_rules(d.state, found->table, d.row);
            d.row.pc_begin = at;
            d.row.pc_end = at + 4;
            d.row.func_start = *found->function_start;
            d.row.func_size =
                static_cast<std::uint32_t>(found->table.address - *found->function_start);
            d.found = std::move(*found);
            return d;
        }
    }
    // Rows of the whole function, then the run that holds the PC. Functions
    // are small; the analysis is bounded by AnalysisLimits.
    auto all = rows(*found);
    if (!all) return std::move(all).error();
    for (auto& d : *all) {
        if (at < d.row.pc_begin || at >= d.row.pc_end) continue;
        RowDetail out = std::move(d);
        return out;
    }
    return Error(Errc::NotFound, to_hex(pc) + " is not inside its function's code", Address{pc});
}

Expected<Row> TracebackIndex::lookup(std::uint64_t pc) const {
    auto d = lookup_detail(pc);
    if (!d) return std::move(d).error();
    return d->row;
}

Listing TracebackIndex::by_symbols() const {
    Listing out;
    for (const auto& f : functions_) {
        auto found = find(f.start);
        if (!found) {
            out.problems.emplace_back(found.error().code(),
                                      f.names.front() + ": " + found.error().what(), f.start);
            continue;
        }
        if (found->function_start && *found->function_start != f.start)
            out.problems.emplace_back(Errc::Malformed,
                                      f.names.front() + ": the traceback table at " +
                                          to_hex(found->table.address) + " gives function start " +
                                          to_hex(*found->function_start) + ", the symbol " +
                                          to_hex(f.start),
                                      f.start);
        out.tables.push_back(std::move(*found));
    }
    return out;
}

Listing TracebackIndex::by_scan() const {
    Listing out;
    for (const auto& range : code_) {
        const ByteView& code = range.bytes;
        std::uint64_t resume = 0; // end of the previous table: a new function starts at or after it
        std::uint32_t previous = 0;
        for (std::uint64_t off = 0; off + 4 <= code.size(); off += 4) {
            std::uint32_t word = 1;
            (void)code.load(off, word);
            const std::uint32_t before = previous;
            previous = word;
            // A function's code never ends with a zero word, so a zero word
            // after another one is padding, not a table.
            if (word != 0 || before == 0) continue;
            auto table = decode_table(code, range.vaddr, off, options_.decode);
            if (!table) {
                out.problems.push_back(std::move(table).error());
                continue;
            }
            FoundTable found;
            found.table = std::move(*table);
            if (auto start = found.table.function_start()) {
                if (*start < range.vaddr + resume) {
                    out.problems.emplace_back(Errc::Malformed,
                                              "traceback table at " + to_hex(found.table.address) +
                                                  ": tb_offset puts the function start " +
                                                  to_hex(*start) + " inside the previous function",
                                              Address{found.table.address});
                    continue;
                }
                found.function_start = start;
                found.start_source = FoundTable::StartSource::TbOffset;
            } else if (const Function* f = function_at(found.table.address)) {
                found.function_start = f->start;
                found.start_source = FoundTable::StartSource::Symbol;
            }
            if (found.function_start) {
                auto it = std::lower_bound(
                    functions_.begin(), functions_.end(), *found.function_start,
                    [](const Function& f, std::uint64_t v) { return f.start < v; });
                if (it != functions_.end() && it->start == *found.function_start)
                    found.function = &*it;
            } else if (found.table.size == optional_offset && is_all_zero(found.table)) {
                // Twelve zero bytes are the whole table of a frameless leaf
                // under -mtraceback=part, and also the zero padding after a
                // linker stub (ppc64 .plt_call stubs): without a symbol,
                // nothing tells them apart.
                out.problems.emplace_back(
                    Errc::NotFound,
                    "zero words at " + to_hex(found.table.address) +
                        " after code that no function symbol covers: padding, or an "
                        "all-zero table",
                    Address{found.table.address});
                continue;
            }
            const std::uint64_t next = (off + found.table.size + 3) & ~std::uint64_t{3};
            out.tables.push_back(std::move(found));
            resume = next;
            previous = 0; // a table needs code before it, not another table
            off = next - 4;
        }
    }
    return out;
}

} // namespace sfunwind::ppc64

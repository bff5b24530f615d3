// SPDX-License-Identifier: MIT
#include "module_table.hpp"

#include "sfunwind/ppc64/index.hpp"

#include <algorithm>
#include <cstdio>

namespace sfunwind::gdb {
namespace {

// Beyond this many recorded caller frames the memo is dropped and frames
// fall back to the row-based choice (a runaway unwind of a corrupt stack
// must not grow GDB without bound).
constexpr std::size_t max_recorded_callers = std::size_t{1} << 20;

// The link-time range the FDEs cover: PCs outside it are declined without a
// search. FDEs whose range wraps or is empty are skipped; other damage is
// found by the lookups, which report it.
void text_range(const sframe::Section& section, std::uint64_t& begin, std::uint64_t& end) {
    begin = ~std::uint64_t{0};
    end = 0;
    // From the FDE records alone: fde() would read every FDE's FREs too
    // (a section read on demand).
    for (std::uint32_t i = 0; i < section.fde_count(); ++i) {
        const auto range = section.function_range(i);
        if (!range || range->size == 0 || range->start + range->size < range->start) continue;
        begin = std::min(begin, range->start);
        end = std::max(end, range->start + range->size);
    }
    if (begin > end) begin = end = 0;
}

// The key ids_ finds a placed module by: its table.
const void* table_key(const Module& m) noexcept {
    return m.rows.get();
}

// Traceback tables count functions and cover the executable sections:
// lookups outside a function's code fail on their own; the range only lets
// the unwinder decline PCs in no executable section at once.
void describe_traceback_tables(OpenModule& m) {
    const auto* tables = dynamic_cast<const RowSourceOf<ppc64::TracebackIndex>*>(m.rows.get());
    if (tables == nullptr) return;
    const ppc64::TracebackIndex& index = tables->table();
    m.functions = static_cast<std::uint32_t>(
        std::min<std::size_t>(index.by_symbols().tables.size(), 0xffffffff));
    m.text_begin = ~std::uint64_t{0};
    m.text_end = 0;
    for (const auto& code : index.code()) {
        m.text_begin = std::min(m.text_begin, code.vaddr);
        m.text_end = std::max(m.text_end, code.vaddr + code.bytes.size());
    }
}

} // namespace

ModuleTable& table() {
    static ModuleTable instance;
    return instance;
}

Expected<std::int32_t> ModuleTable::add(OpenModule module) {
    if (modules_.size() >= 0x7fffffff) return Error(Errc::Unsupported, "too many modules");
    if (const sframe::Section* s = module.sframe())
        text_range(*s, module.text_begin, module.text_end);
    else
        describe_traceback_tables(module);
    modules_.push_back(std::move(module));
    return static_cast<std::int32_t>(modules_.size() - 1);
}

Expected<std::int32_t> ModuleTable::open_file(const std::string& path) {
    elf::ModuleRows t = elf::open_module_rows(path);
    if (!t.rows) return *t.error;
    OpenModule m;
    m.name = path;
    m.elf = t.file.get();
    m.rows = std::move(t.rows);
    const elf::ElfFile* file = m.elf;
    const std::shared_ptr<const RowSource> rows = m.rows;
    if (file != nullptr) {
        std::shared_ptr<callee_saved::ModuleRules> analysis =
            callee_saved::module_rules(file, rows, analyser_);
        if (analysis->supported()) m.callee_saved = std::move(analysis);
    }
    return add(std::move(m));
}

Expected<std::int32_t> ModuleTable::open_bytes(std::span<const std::uint8_t> bytes,
                                               std::uint64_t vaddr, std::string name) {
    auto copy = std::make_shared<std::vector<std::uint8_t>>(bytes.begin(), bytes.end());
    auto section = sframe::Section::parse(*copy, vaddr);
    if (!section)
        return Error(section.error().code(), name + ": " + section.error().what(),
                     section.error().where());
    OpenModule m;
    m.name = std::move(name);
    m.rows = sframe_rows(std::move(*section), copy);
    return add(std::move(m));
}

const OpenModule* ModuleTable::get(std::int32_t id) const noexcept {
    if (id < 0 || static_cast<std::size_t>(id) >= modules_.size() ||
        !modules_[static_cast<std::size_t>(id)].is_open())
        return nullptr;
    return &modules_[static_cast<std::size_t>(id)];
}

Status ModuleTable::place(std::int32_t id, std::uint64_t bias) {
    if (get(id) == nullptr) return Error(Errc::NotFound, "no module with id " + std::to_string(id));
    auto& m = modules_[static_cast<std::size_t>(id)];
    m.placed = true;
    m.bias = bias;
    placed_changed_ = true;
    return ok();
}

Status ModuleTable::unplace(std::int32_t id) {
    if (get(id) == nullptr) return Error(Errc::NotFound, "no module with id " + std::to_string(id));
    modules_[static_cast<std::size_t>(id)].placed = false;
    placed_changed_ = true;
    return ok();
}

void ModuleTable::reset() {
    // Ids stay unique for the life of the process: closed slots keep no table.
    for (auto& m : modules_)
        m = OpenModule{};
    // No module is open: the index is empty now, and drops its references
    // to the modules' tables at once.
    placed_.clear();
    ids_.clear();
    placed_changed_ = false;
    new_stop();
}

const ModuleSet& ModuleTable::placed() const noexcept {
    if (!placed_changed_) return placed_;
    try {
        std::vector<Module> placed;
        ids_.clear();
        for (std::size_t i = 0; i < modules_.size(); ++i) {
            const auto& m = modules_[i];
            if (!m.placed || !m.is_open() || m.text_end <= m.text_begin) continue;
            Module mod;
            mod.name = m.name;
            mod.bias = m.bias;
            mod.begin = m.text_begin + m.bias;
            mod.end = m.text_end + m.bias;
            mod.rows = m.rows;
            ids_[table_key(mod)] = static_cast<std::int32_t>(i);
            placed.push_back(std::move(mod));
        }
        placed_ = ModuleSet(std::move(placed));
        placed_changed_ = false;
    } catch (...) {
        // No memory to index them: no module is placed until a later call
        // can index them, so frames are declined, never unwound with a
        // module's bias from before.
        ids_.clear();
        placed_.clear();
    }
    return placed_;
}

std::int32_t ModuleTable::module_at(std::uint64_t pc) const noexcept {
    const Module* m = placed().find(pc);
    if (m == nullptr) return -1;
    auto it = ids_.find(table_key(*m));
    return it == ids_.end() ? -1 : it->second;
}

const Abi* ModuleTable::abi() const noexcept {
    const auto& mods = placed().modules();
    return mods.empty() ? nullptr : mods.front().abi();
}

const Abi* ModuleTable::abi_at(std::uint64_t pc) const noexcept {
    const ModuleSet& set = placed();
    const Module* m = set.find(pc);
    if (m == nullptr && pc != 0) m = set.find(FrameAddress::return_address(pc).lookup_address());
    return m == nullptr ? nullptr : m->abi();
}

Expected<FoundRow> ModuleTable::lookup(std::uint64_t pc) const {
    const Module* m = placed().find(pc);
    if (m == nullptr)
        return Error(Errc::NotFound, "no module with SFrame covers " + to_hex(pc), Address{pc});
    auto row = m->lookup(pc - m->bias);
    if (!row) return Error(row.error().code(), m->name + ": " + row.error().message(), Address{pc});
    FoundRow out;
    out.row = *row;
    out.module = ids_.at(table_key(*m));
    out.bias = m->bias;
    out.abi = m->abi();
    return out;
}

// Which PC to look a frame up at. GDB does not tell its unwinders whether
// the next (newer) frame is a normal one (then this frame's PC is a return
// address: look up PC - 1, spec v3 appendix A) or a signal trampoline or the
// sentinel (then it is exact). What is known, in order:
//  - level 0 is the topmost frame (Python gives the level; the JIT reader
//    interface does not);
//  - frames this table's steps produced: callers, unless the step's row was
//    a signal frame;
//  - the topmost frame Python saw at the last stop.
// Other frames were produced by GDB's own unwinders: the caller of a libc
// frame (abort), the frame a signal interrupted (after GDB's sigtramp
// unwinder), or the first real frame above inline frames. For those both
// PCs are tried: they only differ where PC starts a new row. A PC that
// starts a function while PC - 1 lies in another one is taken as a return
// address past a noreturn call (the usual case: a call to abort() ending a
// function); any other row start as an exact PC (a signal landing there).
Expected<FrameLookup> ModuleTable::lookup_frame(std::uint64_t pc, std::uint64_t sp,
                                                std::int32_t level) const {
    auto exact = [&](bool topmost) -> Expected<FrameLookup> {
        auto found = lookup(pc);
        if (!found) return std::move(found).error();
        return FrameLookup{*found, topmost};
    };
    const std::uint64_t call_site = FrameAddress::return_address(pc).lookup_address();
    auto caller = [&]() -> Expected<FrameLookup> {
        auto found = lookup(call_site);
        if (!found) return std::move(found).error();
        return FrameLookup{*found, false};
    };
    if (level == 0 || pc == 0) return exact(true);
    if (auto it = callers_.find(FrameKey{pc, sp}); it != callers_.end())
        return it->second ? exact(true) : caller();
    if (topmost_ && *topmost_ == FrameKey{pc, sp}) return exact(true);

    auto at_pc = lookup(pc);
    auto before = lookup(call_site);
    if (!before) return at_pc ? exact(true) : std::move(at_pc).error();
    if (!at_pc) return caller();
    const Row& a = at_pc->row;
    const Row& b = before->row;
    const bool same_row = at_pc->module == before->module && a.fde_index == b.fde_index &&
                          a.fre_index == b.fre_index && a.pc_begin == b.pc_begin;
    if (same_row) return FrameLookup{*at_pc, true};
    const bool starts_function = a.pc_begin == a.func_start && a.fre_index == 0 && !a.pc_mask;
    const bool other_function = at_pc->module != before->module || a.fde_index != b.fde_index;
    if (starts_function && other_function) return FrameLookup{*before, false};
    return FrameLookup{*at_pc, true};
}

void ModuleTable::record_caller(const FrameRegs& caller, std::int32_t level, bool interrupted) {
    if (callers_.size() >= max_recorded_callers) callers_.clear();
    callers_[FrameKey{caller.pc, caller.sp}] = interrupted;
    latest_caller_ = LatestCaller{caller, level};
}

const ModuleTable::LatestCaller*
ModuleTable::produced(std::int32_t level, std::uint64_t pc,
                      std::optional<std::uint64_t> sp) const noexcept {
    if (!latest_caller_ || latest_caller_->regs.pc != pc) return nullptr;
    if (level >= 1) return latest_caller_->level == level ? &*latest_caller_ : nullptr;
    if (level == 0 || !sp || *sp != latest_caller_->regs.sp) return nullptr;
    if (topmost_ && *topmost_ == FrameKey{pc, *sp}) return nullptr;
    return &*latest_caller_;
}

std::optional<FrameRegs>
ModuleTable::produced_caller(std::int32_t level, std::uint64_t pc,
                             std::optional<std::uint64_t> sp) const noexcept {
    const LatestCaller* latest = produced(level, pc, sp);
    if (latest == nullptr) return std::nullopt;
    return latest->regs;
}

void ModuleTable::record_caller_saved(std::span<const callee_saved::SavedRegister> saved) {
    if (!latest_caller_) return;
    const std::size_t n = std::min(saved.size(), latest_caller_->saved.size());
    std::copy_n(saved.begin(), n, latest_caller_->saved.begin());
    latest_caller_->saved_count = n;
}

std::span<const callee_saved::SavedRegister>
ModuleTable::produced_saved(std::int32_t level, std::uint64_t pc,
                            std::optional<std::uint64_t> sp) const noexcept {
    const LatestCaller* latest = produced(level, pc, sp);
    if (latest == nullptr) return {};
    return std::span<const callee_saved::SavedRegister>(latest->saved.data(), latest->saved_count);
}

void ModuleTable::new_stop() noexcept {
    chunk_.reset();
    callers_.clear();
    latest_caller_.reset();
    topmost_.reset();
}

void ModuleTable::set_topmost(std::uint64_t pc, std::uint64_t sp) noexcept {
    topmost_ = FrameKey{pc, sp};
}

} // namespace sfunwind::gdb

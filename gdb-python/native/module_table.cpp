// SPDX-License-Identifier: MIT
#include "module_table.hpp"

#include "sfunwind/ppc64/index.hpp"

#include <algorithm>
#include <cstdio>

namespace sfunwind::gdb {
namespace {

std::string hex(std::uint64_t v) {
    char buf[24];
    std::snprintf(buf, sizeof buf, "0x%llx", static_cast<unsigned long long>(v));
    return buf;
}

// Beyond this many recorded caller frames the memo is dropped and frames
// fall back to the row-based choice (a runaway unwind of a corrupt stack
// must not grow GDB without bound).
constexpr std::size_t max_recorded_callers = std::size_t{1} << 20;

// The link-time range the FDEs cover: PCs outside it are declined without a
// search. Bad FDEs are skipped here; lookups report them.
void text_range(const sframe::Section& section, std::uint64_t& begin, std::uint64_t& end) {
    begin = ~std::uint64_t{0};
    end = 0;
    for (std::uint32_t i = 0; i < section.fde_count(); ++i) {
        auto fde = section.fde(i);
        if (!fde || fde->size == 0) continue;
        begin = std::min(begin, fde->start);
        end = std::max(end, fde->end());
    }
    if (begin > end) begin = end = 0;
}

// The key ids_ finds a placed module by: its table.
const void* table_key(const Module& m) noexcept {
    return m.section ? static_cast<const void*>(m.section.get())
                     : static_cast<const void*>(m.rows.get());
}

// A 64-bit PowerPC file without SFrame: its traceback tables (64-bit
// PowerPC ELF ABI 3.3), which GCC writes after every function by default.
// NotFound when no function symbol leads to a table (-mtraceback=no).
Expected<OpenModule> open_traceback_tables(const std::string& path,
                                           std::shared_ptr<const elf::ElfFile> elf) {
    auto index = ppc64::TracebackIndex::build(*elf);
    if (!index) return std::move(index).error();
    const std::size_t tables = index->by_symbols().tables.size();
    if (tables == 0)
        return Error(Errc::NotFound, path + ": no SFrame section and no traceback tables");
    OpenModule m;
    m.name = path;
    m.elf = elf.get();
    m.owner = std::move(elf);
    m.functions = static_cast<std::uint32_t>(std::min<std::size_t>(tables, 0xffffffff));
    // Lookups outside a function's code fail on their own; the range only
    // lets the unwinder decline PCs in no executable section at once.
    m.text_begin = ~std::uint64_t{0};
    for (const auto& code : index->code()) {
        m.text_begin = std::min(m.text_begin, code.vaddr);
        m.text_end = std::max(m.text_end, code.vaddr + code.bytes.size());
    }
    auto shared = std::make_shared<const ppc64::TracebackIndex>(std::move(*index));
    m.rows = std::make_shared<const RowSourceOf<ppc64::TracebackIndex>>(std::move(shared),
                                                                        "ppc64 traceback tables");
    return m;
}

} // namespace

std::string OpenModule::kind() const {
    if (section)
        return "SFrame v" + std::to_string(static_cast<unsigned>(section->header().version));
    return rows ? rows->kind() : "closed";
}

ModuleTable& table() {
    static ModuleTable instance;
    return instance;
}

Expected<std::int32_t> ModuleTable::add(OpenModule module) {
    if (modules_.size() >= 0x7fffffff) return Error(Errc::Unsupported, "too many modules");
    if (module.section) text_range(*module.section, module.text_begin, module.text_end);
    modules_.push_back(std::move(module));
    return static_cast<std::int32_t>(modules_.size() - 1);
}

Expected<std::int32_t> ModuleTable::open_file(const std::string& path) {
    auto file = elf::ElfFile::open(path);
    if (!file) return std::move(file).error();
    auto elf = std::make_shared<elf::ElfFile>(std::move(*file));
    auto section = elf->sframe();
    if (!section) {
        // Only a file that has no SFrame at all falls back to traceback
        // tables: a damaged .sframe is reported, not replaced.
        const auto abi = elf->abi();
        if (section.error().code() != Errc::NotFound || !abi || abi->arch != Arch::Ppc64)
            return std::move(section).error();
        auto tables = open_traceback_tables(path, elf);
        if (!tables) return std::move(tables).error();
        return add(std::move(*tables));
    }
    OpenModule m;
    m.name = path;
    m.elf = elf.get();
    m.owner = elf;
    m.section = std::make_shared<const sframe::Section>(std::move(*section));
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
    m.owner = copy;
    m.section = std::make_shared<const sframe::Section>(std::move(*section));
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
    rebuild();
    return ok();
}

Status ModuleTable::unplace(std::int32_t id) {
    if (get(id) == nullptr) return Error(Errc::NotFound, "no module with id " + std::to_string(id));
    modules_[static_cast<std::size_t>(id)].placed = false;
    rebuild();
    return ok();
}

void ModuleTable::reset() {
    // Ids stay unique for the life of the process: closed slots keep no table.
    for (auto& m : modules_)
        m = OpenModule{};
    rebuild();
    new_stop();
}

void ModuleTable::rebuild() {
    placed_.clear();
    ids_.clear();
    for (std::size_t i = 0; i < modules_.size(); ++i) {
        const auto& m = modules_[i];
        if (!m.placed || !m.is_open() || m.text_end <= m.text_begin) continue;
        Module mod;
        mod.name = m.name;
        mod.bias = m.bias;
        mod.begin = m.text_begin + m.bias;
        mod.end = m.text_end + m.bias;
        mod.owner = m.owner;
        mod.section = m.section;
        mod.rows = m.rows;
        ids_[table_key(mod)] = static_cast<std::int32_t>(i);
        placed_.add(std::move(mod));
    }
}

std::int32_t ModuleTable::module_at(std::uint64_t pc) const noexcept {
    const Module* m = placed_.find(pc);
    if (m == nullptr) return -1;
    auto it = ids_.find(table_key(*m));
    return it == ids_.end() ? -1 : it->second;
}

const Abi* ModuleTable::abi() const noexcept {
    const auto& mods = placed_.modules();
    return mods.empty() ? nullptr : mods.front().abi();
}

const Abi* ModuleTable::abi_at(std::uint64_t pc) const noexcept {
    const Module* m = placed_.find(pc);
    if (m == nullptr && pc != 0) m = placed_.find(pc - 1);
    return m == nullptr ? nullptr : m->abi();
}

Expected<FoundRow> ModuleTable::lookup(std::uint64_t pc) const {
    const Module* m = placed_.find(pc);
    if (m == nullptr)
        return Error(Errc::NotFound, "no module with SFrame covers " + hex(pc), Address{pc});
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
    auto caller = [&]() -> Expected<FrameLookup> {
        auto found = lookup(pc - 1);
        if (!found) return std::move(found).error();
        return FrameLookup{*found, false};
    };
    if (level == 0 || pc == 0) return exact(true);
    if (auto it = callers_.find(FrameKey{pc, sp}); it != callers_.end())
        return it->second ? exact(true) : caller();
    if (topmost_ && *topmost_ == FrameKey{pc, sp}) return exact(true);

    auto at_pc = lookup(pc);
    auto before = lookup(pc - 1);
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

std::optional<FrameRegs> ModuleTable::produced_caller(std::int32_t level,
                                                      std::uint64_t pc) const noexcept {
    if (level < 1 || !latest_caller_ || latest_caller_->level != level ||
        latest_caller_->regs.pc != pc)
        return std::nullopt;
    return latest_caller_->regs;
}

void ModuleTable::new_stop() noexcept {
    callers_.clear();
    latest_caller_.reset();
    topmost_.reset();
}

void ModuleTable::set_topmost(std::uint64_t pc, std::uint64_t sp) noexcept {
    topmost_ = FrameKey{pc, sp};
}

} // namespace sfunwind::gdb

// SPDX-License-Identifier: MIT
#include "process_modules.hpp"

#include <algorithm>
#include <cstdio>
#include <fstream>
#include <map>
#include <sys/stat.h>
#include <unistd.h>

namespace sfunwind::cli::bt {
namespace {

// Mapped data files (locale archives, fonts, caches) are common and can be
// large: look at the magic before reading a whole file as ELF.
bool looks_like_elf(const std::string& path) {
    std::ifstream in(path, std::ios::binary);
    char magic[4] = {};
    return in.read(magic, sizeof magic) && magic[0] == 0x7f && magic[1] == 'E' && magic[2] == 'L' &&
           magic[3] == 'F';
}

// The kernel maps a PT_LOAD segment at page granularity: its first page's
// file offset is the mapping's offset, at runtime address bias + the
// segment's page-aligned vaddr.
std::optional<std::uint64_t> bias_of(const elf::ElfFile& file, const MapEntry& e,
                                     std::uint64_t page) {
    for (const auto& seg : file.load_segments())
        if ((seg.offset & ~(page - 1)) == e.offset) return e.start - (seg.vaddr & ~(page - 1));
    return std::nullopt;
}

std::string map_files_path(pid_t pid, const MapEntry& e) {
    char range[48];
    std::snprintf(range, sizeof range, "%llx-%llx", static_cast<unsigned long long>(e.start),
                  static_cast<unsigned long long>(e.end));
    return "/proc/" + std::to_string(pid) + "/map_files/" + range;
}

} // namespace

std::string ProcessModule::short_name() const {
    const auto slash = path.rfind('/');
    return slash == std::string::npos ? path : path.substr(slash + 1);
}

namespace {

// The analysis reads the function's code from the file at link-time
// addresses, as the rows give them; the lambdas keep the file and rows alive.
void add_callee_saved(ProcessModule& m, std::shared_ptr<callee_saved::Analyser> analyser) {
    std::shared_ptr<const elf::ElfFile> file = m.table.file;
    std::shared_ptr<const RowSource> rows = m.table.rows;
    if (!file || !rows) return;
    std::shared_ptr<callee_saved::ModuleRules> analysis =
        callee_saved::module_rules(file, rows, std::move(analyser));
    if (analysis->supported()) m.callee_saved = std::move(analysis);
}

// A damaged .sframe says so; "no SFrame section" stays as it is.
void take_table(ProcessModule& m, elf::ModuleRows table,
                std::shared_ptr<callee_saved::Analyser> analyser) {
    m.table = std::move(table);
    m.problem = m.table.damaged() && m.table.where ? "unusable SFrame section: " + m.table.problem()
                                                   : m.table.problem();
    add_callee_saved(m, std::move(analyser));
}

} // namespace

void load_module_file(ProcessModule& m, const std::string& open_path,
                      std::shared_ptr<callee_saved::Analyser> analyser) {
    take_table(m, elf::open_module_rows(open_path), std::move(analyser));
}

void load_module_image(ProcessModule& m, std::span<const std::uint8_t> image,
                       std::shared_ptr<callee_saved::Analyser> analyser) {
    take_table(m, elf::open_module_rows(image, m.path), std::move(analyser));
}

void ProcessModules::add(ProcessModule module) {
    auto at = std::upper_bound(modules_.begin(), modules_.end(), module.begin,
                               [](std::uint64_t b, const ProcessModule& m) { return b < m.begin; });
    modules_.insert(at, std::move(module));
}

const ProcessModule* ProcessModules::find(std::uint64_t addr) const {
    auto it = std::upper_bound(modules_.begin(), modules_.end(), addr,
                               [](std::uint64_t a, const ProcessModule& m) { return a < m.begin; });
    if (it == modules_.begin()) return nullptr;
    --it;
    return addr < it->end ? &*it : nullptr;
}

ModuleSet ProcessModules::sframe_modules() const {
    ModuleSet set;
    for (const auto& m : modules_) {
        if (!m.table.rows) continue;
        Module mod;
        mod.name = m.short_name();
        mod.bias = m.bias;
        mod.begin = m.begin;
        mod.end = m.end;
        mod.rows = m.table.rows;
        set.add(std::move(mod));
    }
    return set;
}

SymbolName ProcessModules::symbol(FrameAddress address) const {
    const std::uint64_t at = address.lookup_address();
    const ProcessModule* m = find(at);
    if (m == nullptr || m->elf() == nullptr) return {};
    const elf::Symbol* sym = m->elf()->symbol_for(at - m->bias);
    if (sym == nullptr) return {};
    return {sym->name, address.address() - m->bias - sym->value};
}

ProcessModules modules_from_maps(pid_t pid, const std::vector<MapEntry>& maps,
                                 MemoryReader& memory) {
    const auto page = static_cast<std::uint64_t>(::sysconf(_SC_PAGESIZE));
    // Each file once, however many mappings it has (by device and inode, so
    // that a file replaced on disk is not confused with the mapped one).
    std::map<std::string, std::vector<const MapEntry*>> files;
    std::vector<std::string> order;
    ProcessModules out;
    for (const auto& e : maps) {
        if (e.path == "[vdso]") {
            ProcessModule m;
            m.path = "[vdso]";
            m.begin = e.start;
            m.end = e.end;
            // The vdso is a few pages; anything larger is not a vdso.
            if (e.end - e.start > (std::uint64_t{1} << 20)) continue;
            std::vector<std::uint8_t> image(static_cast<std::size_t>(e.end - e.start));
            if (!memory.read(e.start, image)) {
                m.problem = "cannot read the vdso from process " + std::to_string(pid);
            } else {
                load_module_image(m, image, out.analyser());
                if (m.elf() != nullptr) m.bias = e.start - m.elf()->link_base();
            }
            out.add(std::move(m));
            continue;
        }
        if (e.path.empty() || e.path[0] != '/' || e.inode == 0) continue;
        const std::string key = e.dev + ":" + std::to_string(e.inode) + ":" + e.path;
        auto& list = files[key];
        if (list.empty()) order.push_back(key);
        list.push_back(&e);
    }
    for (const auto& key : order) {
        const auto& list = files[key];
        const MapEntry& first = *list.front();
        // Open the path when it is still the mapped file; otherwise (deleted,
        // replaced, another mount namespace) the kernel's link to the mapping.
        std::string open_path = first.path;
        struct stat st {};
        if (first.deleted || ::stat(first.path.c_str(), &st) != 0 ||
            static_cast<std::uint64_t>(st.st_ino) != first.inode)
            open_path = map_files_path(pid, first);
        if (!looks_like_elf(open_path)) continue;
        ProcessModule m;
        m.path = first.path;
        m.begin = first.start;
        m.end = first.end;
        for (const MapEntry* e : list) {
            m.begin = std::min(m.begin, e->start);
            m.end = std::max(m.end, e->end);
        }
        load_module_file(m, open_path, out.analyser());
        if (m.elf() != nullptr) {
            std::optional<std::uint64_t> bias;
            for (const MapEntry* e : list)
                if ((bias = bias_of(*m.elf(), *e, page))) break;
            if (bias) {
                m.bias = *bias;
            } else {
                m.bias = m.begin - m.elf()->link_base();
                if (m.problem.empty())
                    m.problem = "no mapping matches a PT_LOAD segment; load bias guessed";
            }
        }
        out.add(std::move(m));
    }
    return out;
}

} // namespace sfunwind::cli::bt

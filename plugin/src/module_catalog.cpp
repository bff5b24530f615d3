// SPDX-License-Identifier: MIT
#include "module_catalog.hpp"

#include <algorithm>
#include <cstdio>
#include <limits>
#include <lldb/API/SBAddress.h>
#include <lldb/API/SBError.h>
#include <lldb/API/SBFileSpec.h>
#include <lldb/API/SBProcess.h>
#include <lldb/API/SBSection.h>
#include <lldb/API/SBSymbol.h>
#include <string>

namespace sfunwind::lldb_plugin {
namespace {

constexpr std::uint64_t invalid_address = std::numeric_limits<std::uint64_t>::max();

std::string path_of(const lldb::SBFileSpec& spec) {
    char buf[4096];
    const std::uint32_t n = spec.GetPath(buf, sizeof buf);
    return n > 0 && n < sizeof buf ? std::string(buf, n) : std::string();
}

// Where LLDB loaded the module: the bias and address range from the load
// addresses of its top-level sections (ELF segments in LLDB's object file).
void locate(lldb::SBTarget& target, TargetModule& m) {
    std::uint64_t lo = invalid_address;
    std::uint64_t hi = 0;
    // Without a process LLDB shows file addresses (as `image show-unwind`
    // does): the module counts as loaded at its link-time addresses.
    const bool live = target.GetProcess().IsValid();
    const std::size_t n = m.module.GetNumSections();
    for (std::size_t i = 0; i < n; ++i) {
        lldb::SBSection s = m.module.GetSectionAtIndex(i);
        const std::uint64_t load = live ? s.GetLoadAddress(target) : s.GetFileAddress();
        const std::uint64_t size = s.GetByteSize();
        if (load == invalid_address || size == 0) continue;
        if (!live && s.GetPermissions() == 0) continue; // not allocated: no address
        if (!m.loaded) m.bias = load - s.GetFileAddress();
        m.loaded = true;
        lo = std::min(lo, load);
        hi = std::max(hi, load + size);
    }
    if (m.loaded) {
        m.begin = lo;
        m.end = hi;
    }
}

} // namespace

std::string uuid_key(const std::string& uuid) {
    std::string key;
    for (const char c : uuid) {
        if ((c >= '0' && c <= '9') || (c >= 'a' && c <= 'f'))
            key += c;
        else if (c >= 'A' && c <= 'F')
            key += static_cast<char>(c - 'A' + 'a');
    }
    return key;
}

std::shared_ptr<const elf::ModuleRows>
ModuleCatalog::file(const std::string& path, const std::string& uuid,
                    std::shared_ptr<const elf::ElfFile> opened) {
    const std::string key = path + '\n' + uuid_key(uuid);
    {
        const std::lock_guard lock(mutex_);
        if (auto it = files_.find(key); it != files_.end()) return it->second;
        // Without a UUID (a library the program needs, known by its path
        // alone), the file read for that path under its UUID will do.
        if (uuid.empty())
            for (auto it = files_.lower_bound(path + '\n');
                 it != files_.end() && it->first.compare(0, path.size() + 1, path + '\n') == 0;
                 ++it)
                if (it->first.find('\n', path.size() + 1) == std::string::npos) return it->second;
    }
    // Read outside the lock: a large file must not stall the other thread.
    auto parsed = std::make_shared<const elf::ModuleRows>(
        opened ? elf::open_module_rows(std::move(opened)) : elf::open_module_rows(path));
    const std::lock_guard lock(mutex_);
    auto [it, inserted] = files_.emplace(key, parsed);
    if (inserted && broken(*parsed) && reported_.insert(path).second)
        new_problems_.push_back(path + ": SFrame section skipped: " + parsed->problem());
    return it->second;
}

std::shared_ptr<const elf::ModuleRows> ModuleCatalog::memory_file(lldb::SBTarget& target,
                                                                  const TargetModule& m) {
    const std::string key = m.path + '\n' + uuid_key(m.uuid) + "\nmemory";
    {
        const std::lock_guard lock(mutex_);
        if (auto it = files_.find(key); it != files_.end()) return it->second;
    }
    elf::ModuleRows out;
    const std::uint64_t header = m.module.GetObjectFileHeaderAddress().GetLoadAddress(target);
    // The vdso is one small mapping that holds the whole file, headers included.
    constexpr std::uint64_t max_image = 1U << 20;
    if (header == invalid_address || header < m.begin || m.end - header > max_image) {
        out.error = Error(Errc::NotFound, "no file, and no small in-memory image");
    } else {
        // LLDB's range ends with the last loaded section; the section
        // headers, which are not loaded, follow it in the same page (the
        // x86-64 vdso: 5410 bytes of sections, headers at 0x15e0). The
        // mapping is whole pages: read to the end of the page when it can be.
        constexpr std::uint64_t page = 4096;
        const std::uint64_t size = m.end - header;
        std::vector<std::uint8_t> image((size + page - 1) / page * page);
        lldb::SBError error;
        std::size_t got = target.GetProcess().ReadMemory(header, image.data(), image.size(), error);
        if (got != image.size() || error.Fail()) {
            image.resize(size);
            error.Clear();
            got = target.GetProcess().ReadMemory(header, image.data(), image.size(), error);
        }
        if (got == image.size() && error.Success()) {
            out = elf::open_module_rows(image, m.name);
            if (out.error && out.error->code() == Errc::NotFound && out.file)
                out.error = Error(Errc::NotFound, "no SFrame section (read from memory)");
            // An image shorter than its section headers is not a damaged
            // SFrame section: nothing in it says there is one.
            else if (out.error && out.error->code() == Errc::Truncated)
                out.error = Error(Errc::NotFound, "no SFrame section found: the in-memory image (" +
                                                      std::to_string(image.size()) +
                                                      " bytes) ends before its section headers");
        } else {
            out.error = Error(Errc::MemoryUnreadable, "cannot read the image of " + m.name);
        }
    }
    auto parsed = std::make_shared<const elf::ModuleRows>(std::move(out));
    const std::lock_guard lock(mutex_);
    auto [it, inserted] = files_.emplace(key, parsed);
    if (inserted && broken(*parsed) && reported_.insert(key).second)
        new_problems_.push_back(m.name + ": SFrame section skipped: " + parsed->problem());
    return it->second;
}

namespace {

// A module's identity as LLDB knows it: its file's path and name, and its UUID.
bool identify(const lldb::SBModule& module, TargetModule& m) {
    if (!module.IsValid()) return false;
    m.module = module;
    const lldb::SBFileSpec spec = module.GetFileSpec();
    m.path = path_of(spec);
    m.name = spec.GetFilename() != nullptr ? spec.GetFilename() : m.path;
    if (const char* uuid = module.GetUUIDString()) m.uuid = uuid;
    return true;
}

} // namespace

std::vector<TargetModule> ModuleCatalog::module_files(lldb::SBTarget& target) {
    std::vector<TargetModule> out;
    const std::uint32_t n = target.GetNumModules();
    for (std::uint32_t i = 0; i < n; ++i) {
        TargetModule m;
        if (!identify(target.GetModuleAtIndex(i), m)) continue;
        m.table = file(m.path, m.uuid);
        out.push_back(std::move(m));
    }
    return out;
}

std::vector<TargetModule> ModuleCatalog::modules(lldb::SBTarget& target) {
    return modules(target, [](const TargetModule&) { return true; });
}

std::vector<TargetModule>
ModuleCatalog::modules(lldb::SBTarget& target,
                       const std::function<bool(const TargetModule&)>& wanted) {
    std::vector<TargetModule> out;
    const std::uint32_t n = target.GetNumModules();
    out.reserve(n);
    for (std::uint32_t i = 0; i < n; ++i) {
        TargetModule m;
        if (!identify(target.GetModuleAtIndex(i), m) || !wanted(m)) continue;
        locate(target, m);
        m.table = file(m.path, m.uuid);
        if (!m.table->file && m.loaded && !m.path.empty() && m.path.front() == '[' &&
            target.GetProcess().IsValid())
            m.table = memory_file(target, m);
        out.push_back(std::move(m));
    }
    return out;
}

std::vector<std::string> ModuleCatalog::take_new_problems() {
    const std::lock_guard lock(mutex_);
    return std::exchange(new_problems_, {});
}

ModuleSet sframe_module_set(const std::vector<TargetModule>& modules) {
    ModuleSet set;
    for (const auto& m : modules) {
        if (!m.loaded || !m.table->rows) continue;
        Module mod;
        mod.name = m.name;
        mod.bias = m.bias;
        mod.begin = m.begin;
        mod.end = m.end;
        mod.rows = m.table->rows;
        set.add(std::move(mod));
    }
    return set;
}

std::string symbol_at(lldb::SBTarget& target, FrameAddress address) {
    lldb::SBAddress addr = target.ResolveLoadAddress(address.lookup_address());
    return symbol_text(target, addr.GetSymbol(), address.address());
}

std::string symbol_text(lldb::SBTarget& target, lldb::SBSymbol sym, std::uint64_t pc) {
    if (!sym.IsValid() || sym.GetName() == nullptr) return {};
    const std::uint64_t start = sym.GetStartAddress().GetLoadAddress(target);
    std::string s = sym.GetName();
    if (start != invalid_address && pc >= start && pc != start) {
        char buf[24];
        std::snprintf(buf, sizeof buf, "+0x%llx", static_cast<unsigned long long>(pc - start));
        s += buf;
    }
    return s;
}

} // namespace sfunwind::lldb_plugin

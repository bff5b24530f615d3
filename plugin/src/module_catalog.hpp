// SPDX-License-Identifier: MIT
// The modules of an LLDB target as the core needs them: where each is loaded
// (from LLDB's section load addresses) and its SFrame section, read from the
// file LLDB itself uses for the module. Parsed files are cached across
// commands, keyed by path and UUID; a module whose SFrame section is broken
// is reported once and then skipped (issue 4: errors never kill the session).
#pragma once

#include "sfunwind/elf/elf_file.hpp"
#include "sfunwind/elf/module_rows.hpp"
#include "sfunwind/sframe/section.hpp"
#include "sfunwind/unwind/frame_address.hpp"
#include "sfunwind/unwind/module_set.hpp"

#include <cstdint>
#include <functional>
#include <lldb/API/SBModule.h>
#include <lldb/API/SBSymbol.h>
#include <lldb/API/SBTarget.h>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <set>
#include <string>
#include <vector>

namespace sfunwind::lldb_plugin {

// A table whose file was read but whose unwind table is damaged (reported
// once, see take_new_problems), as opposed to a module with none.
inline bool broken(const elf::ModuleRows& table) {
    return table.file && table.damaged();
}

struct TargetModule {
    lldb::SBModule module;
    std::string path;    // the local file LLDB reads the module from
    std::string name;    // its last component
    std::string uuid;    // LLDB's UUID string (the GNU build-id), may be empty
    bool loaded = false; // LLDB knows where it is in the process
    std::uint64_t bias = 0;
    std::uint64_t begin = 0;
    std::uint64_t end = 0;
    // The file, its unwind rows and how they were found (read once per file).
    std::shared_ptr<const elf::ModuleRows> table;
};

class ModuleCatalog {
  public:
    // Every module of the target, in LLDB's order, with its file. Thread-safe.
    // Asking LLDB for a module's sections makes it look for the module's
    // symbol file first (SBModule::GetNumSections does), so this is not for
    // code that must run before that lookup.
    std::vector<TargetModule> modules(lldb::SBTarget& target);
    // The same for the modules `wanted` accepts, asked with each module's
    // identity (path, name, UUID, its SBModule) before anything else: the
    // others are neither located nor read (a stop hook's listing of 300
    // libraries already settled costs LLDB's section calls for each).
    std::vector<TargetModule> modules(lldb::SBTarget& target,
                                      const std::function<bool(const TargetModule&)>& wanted);
    // The modules' files only (path, UUID, parsed file; not located): asks
    // LLDB nothing that would make it look for symbols or touch the process.
    std::vector<TargetModule> module_files(lldb::SBTarget& target);
    // Broken sections found since the last call, one message each, once per file.
    std::vector<std::string> take_new_problems();
    // The parsed file of one path (cached); never null. An empty `uuid`
    // takes the path's file cached under any UUID.
    // `opened`, when given, is that path already opened by the caller, used
    // when the path is not cached yet.
    std::shared_ptr<const elf::ModuleRows>
    file(const std::string& path, const std::string& uuid,
         std::shared_ptr<const elf::ElfFile> opened = nullptr);
    // The same for a module that exists only in the process's memory (the
    // vdso): its image is read from there.
    std::shared_ptr<const elf::ModuleRows> memory_file(lldb::SBTarget& target,
                                                       const TargetModule& m);

  private:
    std::mutex mutex_;
    std::map<std::string, std::shared_ptr<const elf::ModuleRows>> files_; // path + '\n' + uuid
    std::set<std::string> reported_;
    std::vector<std::string> new_problems_;
};

// LLDB spells a UUID "B3FDAC27-2868-..."; the debuginfod responder and the
// plugin's own reads have the build-id as lowercase hex: one key for both.
std::string uuid_key(const std::string& uuid);

// The loaded modules that have SFrame, for sfunwind::backtrace().
ModuleSet sframe_module_set(const std::vector<TargetModule>& modules);

// "name+0x12" for a frame's runtime address (looked up where FrameAddress
// says: a return address at its call), or "" when LLDB has no symbol there.
std::string symbol_at(lldb::SBTarget& target, FrameAddress address);

// "name+0x12" for `pc` in `symbol`, or "" for an invalid symbol.
std::string symbol_text(lldb::SBTarget& target, lldb::SBSymbol symbol, std::uint64_t pc);

} // namespace sfunwind::lldb_plugin

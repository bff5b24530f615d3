// SPDX-License-Identifier: MIT
// The modules GDB's side of sfunwind knows (each an unwind table and where it
// is loaded), and which frames the unwinder itself produced. One table per
// process: the Python unwinder and the JIT reader both read it.
//
// A module's table is its SFrame section; a 64-bit PowerPC file without one
// uses its traceback tables (ppc64::TracebackIndex) instead. Both give Rows
// through sfunwind::Module::lookup(), and every frame is stepped alike.
#pragma once

#include "sfunwind/callee_saved/module_rules.hpp"
#include "sfunwind/elf/elf_file.hpp"
#include "sfunwind/elf/module_rows.hpp"
#include "sfunwind/error.hpp"
#include "sfunwind/row.hpp"
#include "sfunwind/sframe/section.hpp"
#include "sfunwind/unwind/frame_address.hpp"
#include "sfunwind/unwind/module_set.hpp"
#include "sfunwind/unwind/row_source.hpp"
#include "sfunwind/unwind/step.hpp"
#include "stack_chunk.hpp"

#include <array>
#include <cstdint>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <unordered_map>
#include <vector>

namespace sfunwind::gdb {

struct OpenModule {
    std::string name;
    // The module's rows (elf::open_module_rows(): its SFrame section, or
    // ppc64 traceback tables), owning the bytes; null once closed.
    std::shared_ptr<const RowSource> rows;
    std::uint32_t functions = 0;       // traceback tables: functions with a table
    const elf::ElfFile* elf = nullptr; // kept alive by `rows`; null for bytes
    std::uint64_t text_begin = 0;      // link-time range the table covers
    std::uint64_t text_end = 0;
    // Where its functions keep the callee-saved registers (from the file's
    // code); null for modules from bytes and ABIs the analysis does not cover.
    std::shared_ptr<callee_saved::ModuleRules> callee_saved;
    bool placed = false;
    std::uint64_t bias = 0;

    bool is_open() const noexcept { return rows != nullptr; }
    const Abi& abi() const noexcept { return rows->abi(); }
    const sframe::Section* sframe() const noexcept { return rows ? rows->sframe() : nullptr; }
    // "SFrame v2", "ppc64 traceback tables".
    std::string kind() const { return rows ? rows->kind() : "closed"; }
};

// A row found for a run-time PC, with the module it came from.
struct FoundRow {
    Row row; // link-time addresses
    std::int32_t module = -1;
    std::uint64_t bias = 0;
    const Abi* abi = nullptr;
};

// How a frame's row is looked up (FrameAddress): the topmost frame
// and a frame a signal interrupted are at their exact PC with every register
// live; a caller's PC is a return address, looked up at PC - 1.
struct FrameLookup {
    FoundRow found;
    bool topmost = false;
};

class ModuleTable {
  public:
    // Whether steps recover the callee-saved registers (`sframe
    // callee-saved on|off`; on by default).
    bool recover_callee_saved = true;

    Expected<std::int32_t> open_file(const std::string& path);
    Expected<std::int32_t> open_bytes(std::span<const std::uint8_t> bytes, std::uint64_t vaddr,
                                      std::string name);
    const OpenModule* get(std::int32_t id) const noexcept;
    Status place(std::int32_t id, std::uint64_t bias);
    Status unplace(std::int32_t id);
    void reset();

    // The placed module covering a run-time PC, or -1.
    std::int32_t module_at(std::uint64_t pc) const noexcept;
    // The ABI of the placed modules (the first one's), if any is placed.
    const Abi* abi() const noexcept;
    // The ABI of the placed module covering run-time `pc`, or else `pc` - 1
    // (a return address), if any.
    const Abi* abi_at(std::uint64_t pc) const noexcept;
    Expected<FoundRow> lookup(std::uint64_t pc) const;

    // Chooses between pc and pc - 1 for a frame with registers (pc, sp) at
    // GDB frame level `level` (-1: unknown). See module_table.cpp.
    Expected<FrameLookup> lookup_frame(std::uint64_t pc, std::uint64_t sp,
                                       std::int32_t level) const;

    // Records the caller frame a step produced, at GDB frame level `level`
    // (-1: unknown), so that it is looked up as a caller when GDB asks to
    // unwind it (`interrupted`: the row was a signal frame, so the caller's
    // registers are all live), and so that its SP and FP need not be read
    // back from GDB (produced_caller).
    void record_caller(const FrameRegs& caller, std::int32_t level, bool interrupted);
    // The caller's callee-saved registers that step gave GDB (kind Value or
    // NotSaved), recorded with the latest caller: the next frame's "same
    // value" registers are these, without reading them back from GDB.
    void record_caller_saved(std::span<const callee_saved::SavedRegister> saved);
    // The latest caller is the frame GDB asks about when its PC is the
    // caller's and either its level is the one recorded (>= 1; the Python
    // path knows levels, not SPs) or, level unknown (-1, the JIT reader),
    // its SP is the caller's and it is not the topmost frame: at one stop a
    // (pc, sp) names one frame, and GDB took that frame's registers from the
    // step's output.
    std::span<const callee_saved::SavedRegister>
    produced_saved(std::int32_t level, std::uint64_t pc,
                   std::optional<std::uint64_t> sp = std::nullopt) const noexcept;
    // The registers of that caller, when it is the frame asked about.
    std::optional<FrameRegs>
    produced_caller(std::int32_t level, std::uint64_t pc,
                    std::optional<std::uint64_t> sp = std::nullopt) const noexcept;
    // Forgets the registers of the latest caller (produced_caller) and the
    // stack bytes, but not which frames are callers.
    void forget_stack() noexcept {
        latest_caller_.reset();
        chunk_.clear();
    }
    // Forgets the recorded frames: the inferior ran, so a recorded (pc, sp)
    // may now be a topmost frame.
    void new_stop() noexcept;
    void set_topmost(std::uint64_t pc, std::uint64_t sp) noexcept;
    // The stack bytes read for the current run of frames, shared by both
    // paths (only one is on at a time); new_stop(), reset() and
    // forget_stack() clear them.
    StackChunk& stack_chunk() noexcept { return chunk_; }

  private:
    Expected<std::int32_t> add(OpenModule module);
    // The placed modules, indexed again after a change: Python places a
    // program's modules one call each, and indexing at each call made
    // placing n modules cost n^2 (33 us a library with 300 of them).
    const ModuleSet& placed() const noexcept;

    struct FrameKey {
        std::uint64_t pc;
        std::uint64_t sp;
        bool operator==(const FrameKey&) const = default;
    };
    struct FrameKeyHash {
        std::size_t operator()(const FrameKey& k) const noexcept {
            return std::hash<std::uint64_t>{}(k.pc * 0x9e3779b97f4a7c15ULL ^ k.sp);
        }
    };

    std::vector<OpenModule> modules_; // index = module id
    // Shared by every module's callee-saved analysis: GDB asks for frames
    // from one thread, and the modules' code repeats the same forms.
    std::shared_ptr<callee_saved::Analyser> analyser_ = std::make_shared<callee_saved::Analyser>();
    // placed() makes them when `placed_changed_`: GDB calls the table from
    // one thread.
    mutable ModuleSet placed_;
    // Module id by the placed module's table (its section or row source).
    mutable std::unordered_map<const void*, std::int32_t> ids_;
    mutable bool placed_changed_ = false;
    // The callers the steps produced since the stop (true: interrupted),
    // and the latest one with its registers and level.
    std::unordered_map<FrameKey, bool, FrameKeyHash> callers_;
    struct LatestCaller {
        FrameRegs regs;
        std::int32_t level = -1;
        std::array<callee_saved::SavedRegister, callee_saved::FunctionRules::max_registers> saved{};
        std::size_t saved_count = 0;
    };
    std::optional<LatestCaller> latest_caller_;
    std::optional<FrameKey> topmost_;
    StackChunk chunk_;
    const LatestCaller* produced(std::int32_t level, std::uint64_t pc,
                                 std::optional<std::uint64_t> sp) const noexcept;
};

// The table of this process (GDB's).
ModuleTable& table();

} // namespace sfunwind::gdb

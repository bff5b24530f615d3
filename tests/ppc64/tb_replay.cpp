// SPDX-License-Identifier: MIT
// Test driver for the live PowerPC64 test (tests/ppc64/live.sh): unwinds
// stops that gdb_dump.py recorded under qemu (registers + stack bytes) with
// the traceback tables alone (ppc64::TracebackIndex rows + step()), and
// compares every frame's PC and SP with GDB's DWARF CFI backtrace of the
// same stop.
//
//   tb_replay FIXTURE STOPS.jsonl   compare; exit 0 when every stop matches
//   tb_replay --entry FIXTURE NAME  print the code address of a function
//                                   (ELFv1 symbols name .opd descriptors)
#include "sfunwind/elf/elf_file.hpp"
#include "sfunwind/ppc64/index.hpp"
#include "sfunwind/unwind/backtrace.hpp"
#include "sfunwind/unwind/step.hpp"

#include <algorithm>
#include <cinttypes>
#include <cstdio>
#include <exception>
#include <fstream>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

using namespace sfunwind;
using nlohmann::json;

namespace {

std::uint64_t num(const json& j) {
    return std::stoull(j.get<std::string>(), nullptr, 0);
}

std::vector<std::uint8_t> unhex(const std::string& s) {
    std::vector<std::uint8_t> out(s.size() / 2);
    for (std::size_t i = 0; i < out.size(); ++i)
        out[i] = static_cast<std::uint8_t>(std::stoul(s.substr(2 * i, 2), nullptr, 16));
    return out;
}

class DumpMemory final : public MemoryReader {
  public:
    DumpMemory(std::uint64_t base, std::vector<std::uint8_t> bytes)
        : base_(base), bytes_(std::move(bytes)) {}
    bool read(std::uint64_t addr, std::span<std::uint8_t> out) override {
        if (addr < base_ || addr - base_ > bytes_.size() ||
            bytes_.size() - (addr - base_) < out.size())
            return false;
        std::copy_n(bytes_.begin() + static_cast<std::ptrdiff_t>(addr - base_), out.size(),
                    out.begin());
        return true;
    }

  private:
    std::uint64_t base_;
    std::vector<std::uint8_t> bytes_;
};

// r0-r31 of the stopped thread, for rules that name a GPR (RA in r0 after
// mflr r0) in the topmost frame.
class DumpRegisters final : public RegisterSource {
  public:
    explicit DumpRegisters(const json& regs) : regs_(regs) {}
    std::optional<std::uint64_t> get(std::uint16_t reg) override {
        const std::string name = "r" + std::to_string(reg);
        if (reg < 32 && regs_.contains(name)) return num(regs_[name]);
        return std::nullopt;
    }

  private:
    const json& regs_;
};

struct OurFrame {
    std::uint64_t pc, sp, fp;
    std::string row;
};

} // namespace

namespace {

int run(int argc, char** argv) {
    if (argc == 4 && std::string(argv[1]) == "--entry") {
        auto file = elf::ElfFile::open(argv[2]);
        if (!file) return std::fprintf(stderr, "%s\n", file.error().message().c_str()), 2;
        auto index = ppc64::TracebackIndex::build(*file);
        if (!index) return std::fprintf(stderr, "%s\n", index.error().message().c_str()), 2;
        for (const auto& f : index->functions())
            if (std::find(f.names.begin(), f.names.end(), argv[3]) != f.names.end())
                return std::printf("%s\n", to_hex(f.start).c_str()), 0;
        return std::fprintf(stderr, "no function %s\n", argv[3]), 2;
    }
    if (argc != 3) {
        std::fprintf(stderr,
                     "usage: tb_replay FIXTURE STOPS.jsonl | tb_replay --entry FIXTURE NAME\n");
        return 2;
    }
    auto file = elf::ElfFile::open(argv[1]);
    if (!file) return std::fprintf(stderr, "%s\n", file.error().message().c_str()), 2;
    auto index = ppc64::TracebackIndex::build(*file);
    if (!index) return std::fprintf(stderr, "%s\n", index.error().message().c_str()), 2;
    const Abi& abi = index->abi();

    std::ifstream in(argv[2]);
    std::size_t stops = 0, matched = 0, frames_compared = 0, r31_compared = 0, r31_equal = 0;
    std::size_t leaf_stops = 0, leaf_matched = 0;
    for (std::string line; std::getline(in, line);) {
        if (line.empty()) continue;
        const json stop = json::parse(line);
        ++stops;
        const json& regs = stop["regs"];
        DumpMemory memory(num(stop["stack_base"]), unhex(stop["stack"].get<std::string>()));
        DumpRegisters extra(regs);

        std::vector<OurFrame> ours;
        FrameRegs r;
        r.pc = num(regs["pc"]);
        r.sp = num(regs["r1"]);
        r.fp = num(regs["r31"]);
        r.ra = num(regs["lr"]);
        std::string end = "frame limit";
        bool outermost = false; // ours ended at the end of the stack, not on an error
        for (bool topmost = true; ours.size() < 64; topmost = false) {
            auto row = index->lookup(FrameAddress::of_frame(r.pc, topmost).lookup_address());
            ours.push_back({r.pc, r.sp, r.fp, row ? describe(*row, abi) : row.error().message()});
            if (!row) {
                end = row.error().message();
                break;
            }
            auto next = step(*row, abi, r, topmost, memory, topmost ? &extra : nullptr);
            if (!next) {
                end = next.error().message();
                break;
            }
            if (next->outermost()) {
                end = std::string("outermost frame: ") + to_string(next->end);
                outermost = true;
                break;
            }
            r = *next->caller;
            r.ra.reset();
        }

        // GDB shows the end of the stack as a last frame with PC 0 (the
        // return address __libc_start_main found in its LR save slot); step()
        // reports it as the outermost frame. Compare the frames before it.
        const json& gdb = stop["gdb_frames"];
        std::size_t n = gdb.size();
        const bool gdb_outermost = n > 0 && num(gdb[n - 1]["pc"]) == 0;
        if (gdb_outermost) --n;
        std::string problem;
        for (std::size_t k = 0; k < n && problem.empty(); ++k) {
            if (k >= ours.size()) {
                problem = "frame " + std::to_string(k) + " missing: ours ended after " +
                          std::to_string(ours.size()) + " frames: " + end;
                break;
            }
            const std::uint64_t pc = num(gdb[k]["pc"]);
            ++frames_compared;
            if (ours[k].pc != pc)
                problem = "frame " + std::to_string(k) + " pc " + to_hex(ours[k].pc) + ", GDB " +
                          to_hex(pc);
            if (problem.empty() && !gdb[k]["sp"].is_null() && ours[k].sp != num(gdb[k]["sp"]))
                problem = "frame " + std::to_string(k) + " sp " + to_hex(ours[k].sp) + ", GDB " +
                          to_hex(num(gdb[k]["sp"]));
            if (problem.empty() && !gdb[k]["r31"].is_null()) {
                ++r31_compared;
                r31_equal += ours[k].fp == num(gdb[k]["r31"]) ? 1U : 0U;
            }
            if (!problem.empty() && k > 0)
                problem +=
                    " (row used in frame " + std::to_string(k - 1) + ": " + ours[k - 1].row + ")";
        }
        // Ours must not claim more frames than GDB found.
        if (problem.empty() && ours.size() > n)
            problem = "ours has " + std::to_string(ours.size() - n) + " frames more than GDB's " +
                      std::to_string(n) + "; next pc " + to_hex(ours[n].pc);
        if (problem.empty() && gdb_outermost && !outermost)
            problem = "GDB reached the end of the stack, ours stopped on: " + end;
        const bool in_leaf = !gdb.empty() && gdb[0]["name"].is_string() && gdb[0]["name"] == "leaf";
        leaf_stops += in_leaf ? 1U : 0U;
        if (problem.empty()) {
            ++matched;
            leaf_matched += in_leaf ? 1U : 0U;
        } else {
            std::string names;
            for (const auto& f : gdb)
                names += (names.empty() ? "" : " < ") +
                         (f["name"].is_string() ? f["name"].get<std::string>() : "?");
            std::printf("MISMATCH stop %d at %s: %s\n  GDB: %s\n", stop["stop"].get<int>(),
                        to_hex(num(regs["pc"])).c_str(), problem.c_str(), names.c_str());
        }
    }
    std::printf("%s: %zu stops, %zu match GDB's CFI backtrace (%zu frames compared; r31 equal in "
                "%zu of %zu); "
                "%zu stops in leaf, %zu match\n",
                argv[1], stops, matched, frames_compared, r31_equal, r31_compared, leaf_stops,
                leaf_matched);
    return stops > 0 && matched == stops ? 0 : 1;
}

} // namespace

int main(int argc, char** argv) {
    try {
        return run(argc, argv);
    } catch (const std::exception& e) { // a malformed stops file (JSON, hex)
        std::fprintf(stderr, "tb_replay: %s\n", e.what());
        return 2;
    }
}

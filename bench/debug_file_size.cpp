// SPDX-License-Identifier: MIT
// What the LLDB plugin's debug file costs for a module: the SFrame rows
// translated into .debug_frame (with the callee-saved rules, as the plugin
// does by default) and the debug file written (elf::write_debug_file), each
// timed, with the sizes per MB of the module and of its .sframe.
//
//   sfunwind_bench_debug_file [--rounds N] [--out DIR] [--no-callee-saved] [--threads N] MODULE...
//
// --no-callee-saved: without the callee-saved rules (`sframe callee-saved
// off` in the plugin), whose analysis of every function's instructions is
// most of the translation time.
// --threads N: the analysis on N threads (default, and 0: every core, as
// the plugin). With 1, each function meets the decode memos in the same state
// in every run, so that Callgrind's instruction counts repeat exactly (with
// more, which thread takes which function varies).
//
// One line per module: module and .sframe sizes, .debug_frame and debug file
// sizes, the best of N rounds (default 3) for the translation and for the
// write, and the ratios. The file gets the empty compile unit wherever the
// module has no DWARF (the writer's default), where the plugin leaves it out
// of modules with few symbols (plugin/src/debug_file_cache.cpp): a few
// hundred bytes more on those.
#include "sfunwind/callee_saved/debug_frame_rules.hpp"
#include "sfunwind/cfi/dwarf_writer.hpp"
#include "sfunwind/elf/debug_file_writer.hpp"
#include "sfunwind/elf/module_rows.hpp"

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <exception>
#include <filesystem>
#include <limits>
#include <optional>
#include <string>
#include <vector>

using namespace sfunwind;

namespace {

double since(std::chrono::steady_clock::time_point t0) {
    return std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
}

cfi::CalleeSavedRules rules_for(const elf::ModuleRows& m, unsigned threads) {
    // As the LLDB plugin does (plugin/src/debug_file_cache.cpp).
    return callee_saved::module_debug_frame_rules(*m.file, *m.sframe(), threads);
}

int measure(const std::string& path, int rounds, const std::string& out_dir, bool callee_saved,
            unsigned threads) {
    const elf::ModuleRows m = elf::open_module_rows(path);
    if (m.file == nullptr || m.sframe() == nullptr) {
        std::fprintf(stderr, "%s: no SFrame section: %s\n", path.c_str(), m.problem().c_str());
        return 1;
    }
    const double mb = 1024.0 * 1024.0;
    const double module_mb = static_cast<double>(std::filesystem::file_size(path)) / mb;
    const double sframe_mb = static_cast<double>(m.sframe()->used_size()) / mb;
    const std::string out =
        out_dir + "/" + std::filesystem::path(path).filename().string() + ".debug";
    double best_frame = std::numeric_limits<double>::max();
    double best_write = best_frame;
    std::uint64_t frame_bytes = 0;
    std::uint64_t file_bytes = 0;
    for (int r = 0; r < rounds; ++r) {
        auto t0 = std::chrono::steady_clock::now();
        cfi::DebugFrameOptions options;
        if (callee_saved && callee_saved::supported(m.sframe()->abi()))
            options.callee_saved = rules_for(m, threads);
        auto frame = cfi::write_debug_frame(*m.sframe(), options);
        if (!frame) {
            std::fprintf(stderr, "%s: %s\n", path.c_str(), frame.error().message().c_str());
            return 1;
        }
        best_frame = std::min(best_frame, since(t0));
        elf::DebugFileContents contents;
        contents.debug_frame = frame->bytes;
        for (const auto& fn : frame->functions)
            if (!fn.pc_mask)
                contents.functions.push_back(
                    {"__sframe_fde_" + std::to_string(fn.start), fn.start, fn.size});
        t0 = std::chrono::steady_clock::now();
        auto written = elf::write_debug_file(*m.file, contents, out);
        if (!written) {
            std::fprintf(stderr, "%s\n", written.error().message().c_str());
            return 1;
        }
        best_write = std::min(best_write, since(t0));
        frame_bytes = frame->bytes.size();
        file_bytes = std::filesystem::file_size(out);
    }
    std::printf("%s: module %.2f MB, .sframe %.3f MB, .debug_frame %.3f MB, debug file %.3f MB "
                "(%.4f MB per MB of module, %.2f per MB of .sframe); translation %.1f ms "
                "(%.1f ms per MB of .sframe), write %.1f ms (%.2f ms per MB of module)\n",
                path.c_str(), module_mb, sframe_mb, static_cast<double>(frame_bytes) / mb,
                static_cast<double>(file_bytes) / mb,
                static_cast<double>(file_bytes) / mb / module_mb,
                static_cast<double>(file_bytes) / mb / sframe_mb, best_frame,
                best_frame / sframe_mb, best_write, best_write / module_mb);
    return 0;
}

int run(int argc, char** argv) {
    int rounds = 3;
    std::string out_dir = std::filesystem::temp_directory_path().string();
    bool callee_saved = true;
    unsigned threads = 0;
    std::vector<std::string> modules;
    for (int i = 1; i < argc; ++i) {
        const std::string a = argv[i];
        if (a == "--no-callee-saved") {
            callee_saved = false;
        } else if (a == "--rounds" && i + 1 < argc) {
            rounds = std::max(1, std::atoi(argv[++i]));
        } else if (a == "--out" && i + 1 < argc) {
            out_dir = argv[++i];
        } else if (a == "--threads" && i + 1 < argc) {
            threads = static_cast<unsigned>(std::max(0, std::atoi(argv[++i])));
        } else {
            modules.push_back(a);
        }
    }
    if (modules.empty()) {
        std::fprintf(stderr,
                     "usage: %s [--rounds N] [--out DIR] [--no-callee-saved] [--threads N] "
                     "MODULE...\n",
                     argv[0]);
        return 2;
    }
    int status = 0;
    for (const auto& m : modules)
        status |= measure(m, rounds, out_dir, callee_saved, threads);
    return status;
}

} // namespace

int main(int argc, char** argv) {
    try {
        return run(argc, argv);
    } catch (const std::exception& e) {
        std::fprintf(stderr, "sfunwind_bench_debug_file: %s\n", e.what());
        return 1;
    }
}

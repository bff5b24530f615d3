// SPDX-License-Identifier: MIT
#include "sfunwind/callee_saved/debug_frame_rules.hpp"

#include <algorithm>
#include <memory>
#include <thread>
#include <unordered_map>
#include <utility>

namespace sfunwind::callee_saved {

std::vector<cfi::CalleeSavedChange> debug_frame_changes(const FunctionRules& rules,
                                                        std::uint64_t end) {
    std::vector<cfi::CalleeSavedChange> out;
    const std::size_t n = rules.registers().size();
    std::vector<RegRule> now(n);
    // The rules change only where FunctionRules' table does.
    for (const std::uint64_t pc : rules.change_starts()) {
        if (pc >= end) break;
        rules.at(pc, now);
        if (out.empty() || out.back().rules != now) out.push_back({pc, now});
    }
    const std::uint64_t decoded_end = rules.decoded_end();
    if (!out.empty() && decoded_end < end &&
        std::any_of(out.back().rules.begin(), out.back().rules.end(),
                    [](const RegRule& r) { return r.kind != RegRule::Kind::Undefined; }))
        out.push_back({decoded_end, std::vector<RegRule>(n, RegRule::undefined())});
    return out;
}

namespace {

std::vector<cfi::CalleeSavedChange> changes_of(const Abi& abi, const CodeAt& code,
                                               const RowAt& rows, const CodeFacts& facts,
                                               std::uint64_t start, std::uint64_t size) {
    if (!supported(abi)) return {};
    const auto bytes = code(start, size);
    if (!bytes) return {};
    auto analysed = FunctionRules::analyse(abi, start, *bytes, rows, {}, facts);
    if (!analysed) return {};
    return debug_frame_changes(*analysed, start + size);
}

// The functions in the writer's order and the answers of the batch analysed
// last.
struct Ahead {
    const Abi* abi = nullptr;
    CodeAt code;
    RowAt rows;
    CodeFacts facts;
    std::vector<FunctionRange> functions;
    std::unordered_map<std::uint64_t, std::size_t> index; // by start: the first listed
    unsigned threads = 1;
    std::size_t batch_begin = 0;
    std::vector<std::vector<cfi::CalleeSavedChange>> batch;

    // Functions per thread in a batch: enough to keep the threads busy
    // between batches, few enough that the answers waiting for the writer
    // stay small (a few KB each).
    static constexpr std::size_t per_thread = 64;

    void analyse_batch(std::size_t begin) {
        const std::size_t end =
            std::min(functions.size(), begin + per_thread * std::size_t{threads});
        batch.assign(end - begin, {});
        batch_begin = begin;
        auto work = [this, begin, end](std::size_t first) {
            for (std::size_t i = begin + first; i < end; i += threads) {
                // An analysis that cannot finish (out of memory) leaves the
                // function without rules: unknown, never wrong.
                try {
                    batch[i - begin] =
                        changes_of(*abi, code, rows, facts, functions[i].start, functions[i].size);
                } catch (...) {
                    batch[i - begin].clear();
                }
            }
        };
        std::vector<std::thread> pool;
        try {
            for (unsigned t = 1; t < threads; ++t)
                pool.emplace_back(work, t);
        } catch (...) {
            // No more threads: the ones started and this one do the rest.
        }
        work(0);
        for (std::size_t t = 0; t < pool.size(); ++t)
            pool[t].join();
        // The shares of threads that could not be started.
        for (std::size_t t = pool.size() + 1; t < threads; ++t)
            work(t);
    }

    std::vector<cfi::CalleeSavedChange> get(std::uint64_t start, std::uint64_t size) {
        const auto it = index.find(start);
        if (it == index.end() || functions[it->second].size != size)
            return changes_of(*abi, code, rows, facts, start, size);
        const std::size_t i = it->second;
        if (i < batch_begin || i - batch_begin >= batch.size()) analyse_batch(i);
        return std::move(batch[i - batch_begin]);
    }
};

} // namespace

cfi::CalleeSavedRules debug_frame_rules(const Abi& abi, CodeAt code, RowAt rows, CodeFacts facts) {
    return [&abi, code = std::move(code), rows = std::move(rows), facts = std::move(facts)](
               std::uint64_t start, std::uint64_t size) -> std::vector<cfi::CalleeSavedChange> {
        return changes_of(abi, code, rows, facts, start, size);
    };
}

cfi::CalleeSavedRules debug_frame_rules(const Abi& abi, CodeAt code, RowAt rows,
                                        std::vector<FunctionRange> functions, unsigned threads,
                                        CodeFacts facts) {
    auto ahead = std::make_shared<Ahead>();
    ahead->abi = &abi;
    ahead->code = std::move(code);
    ahead->rows = std::move(rows);
    ahead->facts = std::move(facts);
    ahead->functions = std::move(functions);
    ahead->index.reserve(ahead->functions.size());
    for (std::size_t i = 0; i < ahead->functions.size(); ++i)
        ahead->index.emplace(ahead->functions[i].start, i);
    if (threads == 0) threads = std::max(1U, std::min(8U, std::thread::hardware_concurrency()));
    ahead->threads = threads;
    return [ahead](std::uint64_t start, std::uint64_t size) -> std::vector<cfi::CalleeSavedChange> {
        return ahead->get(start, size);
    };
}

cfi::CalleeSavedRules debug_frame_rules(const sframe::Section& section, CodeAt code,
                                        unsigned threads, CodeFacts facts) {
    std::vector<FunctionRange> functions;
    functions.reserve(section.fde_count());
    for (std::uint32_t i = 0; i < section.fde_count(); ++i)
        if (auto fde = section.fde(i); fde && fde->pc_type != sframe::PcType::Mask)
            functions.push_back({fde->start, fde->size});
    return debug_frame_rules(section.abi(), std::move(code), rows_from(&section),
                             std::move(functions), threads, std::move(facts));
}

} // namespace sfunwind::callee_saved

// SPDX-License-Identifier: MIT
#include "sfunwind/callee_saved/debug_frame_rules.hpp"

#include <algorithm>
#include <condition_variable>
#include <limits>
#include <memory>
#include <mutex>
#include <thread>
#include <unordered_map>
#include <utility>

namespace sfunwind::callee_saved {

std::vector<cfi::CalleeSavedChange> debug_frame_changes(const FunctionRules& rules,
                                                        std::uint64_t end) {
    std::vector<cfi::CalleeSavedChange> out;
    const std::size_t n = std::min(rules.registers().size(), max_untracked_callee_saved);
    std::array<RegRule, max_untracked_callee_saved> now{};
    const std::span<const RegRule> rules_now(now.data(), n);
    // The rules change only where FunctionRules' table does.
    const std::vector<std::uint64_t> starts = rules.change_starts();
    out.reserve(starts.size() + 1);
    for (const std::uint64_t pc : starts) {
        if (pc >= end) break;
        rules.at(pc, std::span<RegRule>(now.data(), n));
        cfi::CalleeSavedChange::Rules list(rules_now);
        if (out.empty() || !(out.back().rules == list)) out.push_back({pc, list});
    }
    const std::uint64_t decoded_end = rules.decoded_end();
    bool any_known = false;
    if (!out.empty())
        for (std::size_t i = 0; i < n; ++i)
            any_known = any_known || out.back().rules[i].kind != RegRule::Kind::Undefined;
    if (any_known && decoded_end < end) {
        now.fill(RegRule::undefined());
        out.push_back({decoded_end, cfi::CalleeSavedChange::Rules(rules_now)});
    }
    return out;
}

namespace {

std::vector<cfi::CalleeSavedChange> changes_of(Analyser& analyser, const Abi& abi,
                                               const CodeAt& code, const RowAt& rows,
                                               const CodeFacts& facts, std::uint64_t start,
                                               std::uint64_t size) {
    if (!supported(abi)) return {};
    const auto bytes = code(start, size);
    if (!bytes) return {};
    auto analysed = analyser.analyse(abi, start, *bytes, rows, {}, facts);
    if (!analysed) return {};
    return debug_frame_changes(*analysed, start + size);
}

// The functions in the writer's order, analysed ahead of its requests by
// worker threads that live as long as it asks, each with its Analyser (and
// so its decoding memo). The writer's thread works too while the function
// it asks for is not ready. Workers stay at most `window` functions ahead
// of the writer: the answers waiting for it stay small (a few KB each).
class Ahead {
  public:
    Ahead(const Abi& abi, CodeAt code, RowAt rows, CodeFacts facts,
          std::vector<FunctionRange> functions, unsigned threads)
        : abi_(&abi), code_(std::move(code)), rows_(std::move(rows)), facts_(std::move(facts)),
          functions_(std::move(functions)), state_(functions_.size(), State::Waiting),
          answers_(functions_.size()), window_(per_thread * std::size_t{threads}) {
        index_.reserve(functions_.size());
        for (std::size_t i = 0; i < functions_.size(); ++i)
            index_.emplace(functions_[i].start, i);
        // A thread for every window's worth of functions at most: a small
        // library's few functions take less time than starting a thread
        // and its memo (300 small libraries started 300 threads in LLDB's
        // first start).
        threads = static_cast<unsigned>(
            std::clamp<std::size_t>(functions_.size() / per_thread, 1, threads));
        try {
            // Room first: a thread that started must never be dropped joinable.
            workers_.reserve(threads);
            for (unsigned t = 1; t < threads; ++t)
                workers_.emplace_back([this] { work(); });
        } catch (...) {
            // No more threads: the ones started and the writer's do the rest.
        }
    }
    ~Ahead() {
        {
            const std::lock_guard<std::mutex> lock(mutex_);
            stopping_ = true;
        }
        room_.notify_all();
        for (auto& w : workers_)
            w.join();
    }
    Ahead(const Ahead&) = delete;
    Ahead& operator=(const Ahead&) = delete;

    std::vector<cfi::CalleeSavedChange> get(std::uint64_t start, std::uint64_t size) {
        const auto it = index_.find(start);
        if (it == index_.end() || functions_[it->second].size != size)
            return analyse(writer_analyser_, start, size);
        const std::size_t i = it->second;
        std::unique_lock<std::mutex> lock(mutex_);
        if (state_[i] == State::Taken) {
            // Asked again (FDEs that repeat a function): analysed again.
            lock.unlock();
            return analyse(writer_analyser_, start, size);
        }
        asked_ = std::max(asked_, i + 1);
        room_.notify_all();
        while (state_[i] != State::Done) {
            // Not started: the writer's thread analyses it; started: the
            // writer's thread helps with the next ones, or waits.
            const std::size_t j = state_[i] == State::Waiting ? i : claim();
            if (j == functions_.size()) {
                ready_.wait(lock);
                continue;
            }
            run(j, writer_analyser_, lock);
        }
        state_[i] = State::Taken;
        return std::move(answers_[i]);
    }

  private:
    enum class State : std::uint8_t { Waiting, Running, Done, Taken };

    // Functions per thread in the window: enough to keep the threads busy,
    // few enough that the answers waiting stay small.
    static constexpr std::size_t per_thread = 64;

    std::vector<cfi::CalleeSavedChange> analyse(Analyser& analyser, std::uint64_t start,
                                                std::uint64_t size) {
        // An analysis that cannot finish (out of memory) leaves the
        // function without rules: unknown, never wrong.
        try {
            return changes_of(analyser, *abi_, code_, rows_, facts_, start, size);
        } catch (...) {
            return {};
        }
    }

    // The next function no thread has started, within the window; the
    // number of functions when there is none. Called with the lock held.
    std::size_t claim() {
        while (next_ < functions_.size() && state_[next_] != State::Waiting)
            ++next_;
        if (next_ == functions_.size() || next_ >= asked_ + window_) return functions_.size();
        return next_;
    }

    // Analyses function j with the lock released.
    void run(std::size_t j, Analyser& analyser, std::unique_lock<std::mutex>& lock) {
        state_[j] = State::Running;
        lock.unlock();
        auto answer = analyse(analyser, functions_[j].start, functions_[j].size);
        lock.lock();
        answers_[j] = std::move(answer);
        state_[j] = State::Done;
        ready_.notify_all();
    }

    void work() {
        Analyser analyser;
        std::unique_lock<std::mutex> lock(mutex_);
        for (;;) {
            if (stopping_) return;
            const std::size_t j = claim();
            if (j == functions_.size()) {
                if (next_ == functions_.size()) return;
                room_.wait(lock);
                continue;
            }
            run(j, analyser, lock);
        }
    }

    const Abi* abi_;
    CodeAt code_;
    RowAt rows_;
    CodeFacts facts_;
    std::vector<FunctionRange> functions_;
    std::unordered_map<std::uint64_t, std::size_t> index_; // by start: the first listed
    Analyser writer_analyser_;

    std::mutex mutex_;
    std::condition_variable ready_; // a function is done
    std::condition_variable room_;  // the writer asked for one: the window moved
    std::vector<State> state_;
    std::vector<std::vector<cfi::CalleeSavedChange>> answers_;
    std::size_t window_;
    std::size_t next_ = 0;  // no function before it is Waiting
    std::size_t asked_ = 0; // one past the furthest function the writer asked for
    bool stopping_ = false;
    std::vector<std::thread> workers_;
};

} // namespace

cfi::CalleeSavedRules debug_frame_rules(const Abi& abi, CodeAt code, RowAt rows, CodeFacts facts) {
    return [&abi, code = std::move(code), rows = std::move(rows), facts = std::move(facts),
            analyser = std::make_shared<Analyser>()](
               std::uint64_t start, std::uint64_t size) -> std::vector<cfi::CalleeSavedChange> {
        return changes_of(*analyser, abi, code, rows, facts, start, size);
    };
}

cfi::CalleeSavedRules debug_frame_rules(const Abi& abi, CodeAt code, RowAt rows,
                                        std::vector<FunctionRange> functions, unsigned threads,
                                        CodeFacts facts) {
    if (threads == 0) threads = std::max(1U, std::min(8U, std::thread::hardware_concurrency()));
    auto ahead = std::make_shared<Ahead>(abi, std::move(code), std::move(rows), std::move(facts),
                                         std::move(functions), threads);
    return [ahead](std::uint64_t start, std::uint64_t size) -> std::vector<cfi::CalleeSavedChange> {
        return ahead->get(start, size);
    };
}

cfi::CalleeSavedRules debug_frame_rules(const sframe::Section& section, CodeAt code,
                                        unsigned threads, CodeFacts facts) {
    std::vector<FunctionRange> functions;
    functions.reserve(section.fde_count());
    std::uint64_t low = std::numeric_limits<std::uint64_t>::max();
    std::uint64_t high = 0;
    std::uint64_t covered = 0;
    for (std::uint32_t i = 0; i < section.fde_count(); ++i)
        if (auto fde = section.fde(i); fde && fde->pc_type != sframe::PcType::Mask) {
            functions.push_back({fde->start, fde->size});
            low = std::min(low, fde->start);
            high = std::max(high, fde->end());
            covered += fde->size;
        }
    // Every function's code is read: at once, where the functions fill most
    // of their range, rather than a piece per function (a reader that
    // reads on demand, elf::ElfFile, then reads it in one go instead of
    // thousands; nothing when the range is not one piece of the file).
    if (high > low && covered >= (high - low) / 2) (void)code(low, high - low);
    return debug_frame_rules(section.abi(), std::move(code), rows_from(&section),
                             std::move(functions), threads, std::move(facts));
}

} // namespace sfunwind::callee_saved

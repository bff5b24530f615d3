// SPDX-License-Identifier: MIT
#include "sfunwind/callee_saved/module_rules.hpp"

#include "instruction.hpp"
#include "sfunwind/bytes.hpp"

#include <algorithm>
#include <array>
#include <memory>
#include <mutex>
#include <optional>

namespace sfunwind::callee_saved {

ModuleRules::ModuleRules(const Abi& abi, CodeAt code, RowAt rows, CodeFacts facts,
                         std::size_t max_functions, std::shared_ptr<Analyser> analyser)
    : abi_(&abi), code_(std::move(code)), rows_(std::move(rows)), facts_(std::move(facts)),
      max_functions_(std::max<std::size_t>(max_functions, 1)),
      analyser_(analyser ? std::move(analyser) : std::make_shared<Analyser>()) {
    if (!facts_.never_returns && !facts_.returns) add_call_facts(facts_, *abi_, code_, rows_);
}

const FunctionRules* ModuleRules::function(std::uint64_t start, std::uint32_t size) {
    if (auto it = cache_.find(start); it != cache_.end()) return it->second.get();
    if (!supported()) return nullptr;
    // A bounded cache: a program's hot functions are few, and the analysis
    // of one is cheap to redo.
    if (cache_.size() >= max_functions_) {
        cache_.clear();
        memory_ = 0;
    }
    std::unique_ptr<FunctionRules> made;
    if (auto bytes = code_(start, size)) {
        if (auto rules = analyser_->analyse(*abi_, start, *bytes, rows_, {}, facts_)) {
            made = std::make_unique<FunctionRules>(std::move(*rules));
            memory_ += made->memory_bytes();
        }
    }
    return cache_.emplace(start, std::move(made)).first->second.get();
}

namespace {

// How a call to the function at a target ends, as far as its rows and code
// tell (never_returns() below and add_call_facts()).
enum class CallEnd : std::uint8_t { Returns, NeverReturns, Unknown };

// How one function ends, and the functions it ends by jumping to (tail
// calls), where it does not return itself.
struct FunctionEnd {
    CallEnd end = CallEnd::Unknown;
    std::vector<std::uint64_t> tail_calls;
};

// What is asked: whether the function never returns (an epilogue row
// answers "no" without reading its code), or whether it returns.
enum class Question : std::uint8_t { NeverReturns, Returns };

FunctionEnd function_end(const Abi& abi, const CodeAt& code, const RowAt& rows,
                         std::uint64_t target, Question question) {
    FunctionEnd out;
    const auto row = rows(target);
    if (!row || row->func_start != target || row->func_size == 0) return out;
    const std::uint64_t end = target + row->func_size;
    const auto note_tail_call = [&](const detail::Instruction& in) {
        if (in.flow == detail::Flow::Jump && (in.target < target || in.target >= end) &&
            std::find(out.tail_calls.begin(), out.tail_calls.end(), in.target) ==
                out.tail_calls.end())
            out.tail_calls.push_back(in.target);
    };
    // A later row with the entry CFA rule gives the frame back, as an
    // epilogue does before a return or before a tail call: a return
    // instruction at its start (or in its first bytes) says the function
    // returns, without decoding the rest; the analysis of one function asks
    // this of every function it calls, and most of them return. A tail call
    // says so only if its target returns: a function that never returns may
    // end by jumping to another that never returns (GDB's error paths), and
    // the code after a call to it may then be a switch's case. Epilogues
    // that do not start with a return are decoded a few at most (a PLT's
    // rows are thousands of them). The walk is bounded: each row starts
    // past the one before.
    constexpr unsigned max_rows = 4096;
    constexpr std::uint64_t max_epilogue_bytes = 64;
    constexpr unsigned max_decoded_epilogues = 4;
    unsigned epilogues = 0;
    bool epilogue_leaves = false; // an epilogue jumps out of the function
    std::uint64_t pc = row->pc_end;
    for (unsigned n = 0; n < max_rows && pc > target && pc < end; ++n) {
        const auto later = rows(pc);
        if (!later || later->func_start != target || later->pc_end <= pc) break;
        if (entry_cfa(*later, abi)) {
            // Not "never returns": the question needs no more. Whether it
            // returns is asked far less often (by functions with a switch
            // table or landing pads), and reads the epilogue.
            if (question == Question::NeverReturns) return out;
            const std::uint64_t size = std::min({later->pc_end, end, pc + max_epilogue_bytes}) - pc;
            const auto bytes = code(pc, size);
            if (bytes && detail::starts_with_return(abi, *bytes)) {
                out.end = CallEnd::Returns;
                return out;
            }
            if (++epilogues > max_decoded_epilogues) return out;
            detail::Code epilogue;
            if (bytes && detail::decode(abi, pc, *bytes, {}, epilogue))
                for (const auto& in : epilogue.instructions) {
                    if (in.returns) {
                        out.end = CallEnd::Returns;
                        return out;
                    }
                    note_tail_call(in);
                    if (in.flow == detail::Flow::Indirect || in.flow == detail::Flow::Jump)
                        epilogue_leaves = true;
                }
        }
        pc = later->pc_end;
    }
    // An epilogue that jumps out returns where its target does. One that
    // neither returns nor jumps (`push rax; pop rax` at an entry gives the
    // frame back too, in the rows) says nothing: the code is decoded whole.
    if (epilogue_leaves) return out;
    const auto bytes = code(target, row->func_size);
    if (!bytes) return out;
    detail::Code decoded;
    if (!detail::decode(abi, target, *bytes, {}, decoded) || decoded.instructions.empty())
        return out;
    const auto& insns = decoded.instructions;
    // Undecoded bytes may hold a return.
    if (insns.back().address + insns.back().size != end) return out;
    bool leaves = false;
    for (const auto& in : insns) {
        // A return instruction: the compiler that made the call could not
        // have known the function not to return, so the code after the call
        // is where it does.
        if (in.returns) {
            out.end = CallEnd::Returns;
            return out;
        }
        const bool jumps = in.flow == detail::Flow::Jump || in.flow == detail::Flow::Branch;
        if (in.flow == detail::Flow::Indirect ||
            (jumps && (in.target < target || in.target >= end)))
            leaves = true;
        note_tail_call(in);
    }
    out.end = leaves ? CallEnd::Unknown : CallEnd::NeverReturns;
    return out;
}

// A function returns where it returns itself or where a function it ends by
// jumping to does (a few of them, breadth first: no recursion on the code).
CallEnd call_end(const Abi& abi, const CodeAt& code, const RowAt& rows, std::uint64_t target,
                 Question question) {
    if (!supported(abi)) return CallEnd::Unknown;
    constexpr std::size_t max_functions = 8;
    std::vector<std::uint64_t> functions{target};
    for (std::size_t i = 0; i < functions.size() && i < max_functions; ++i) {
        const FunctionEnd e = function_end(abi, code, rows, functions[i], question);
        if (e.end == CallEnd::Returns) return CallEnd::Returns;
        if (i == 0 && e.end == CallEnd::NeverReturns) return CallEnd::NeverReturns;
        for (const std::uint64_t t : e.tail_calls)
            if (std::find(functions.begin(), functions.end(), t) == functions.end())
                functions.push_back(t);
    }
    return CallEnd::Unknown;
}

} // namespace

void add_call_facts(CodeFacts& facts, const Abi& abi, CodeAt code, RowAt rows) {
    // One answer per question and function of the module at most (a target
    // is a function start). Computed outside the lock: two threads may both
    // compute one answer, which is the same.
    struct Cache {
        std::mutex mutex;
        std::array<std::unordered_map<std::uint64_t, CallEnd>, 2> known; // by Question
    };
    auto cache = std::make_shared<Cache>();
    auto ends = [&abi, code = std::move(code), rows = std::move(rows),
                 cache = std::move(cache)](std::uint64_t target, Question question) {
        auto& known = cache->known[static_cast<std::size_t>(question)];
        {
            const std::lock_guard lock(cache->mutex);
            if (auto it = known.find(target); it != known.end()) return it->second;
        }
        const CallEnd answer = call_end(abi, code, rows, target, question);
        const std::lock_guard lock(cache->mutex);
        known.emplace(target, answer);
        return answer;
    };
    facts.never_returns = [ends](std::uint64_t target) {
        return ends(target, Question::NeverReturns) == CallEnd::NeverReturns;
    };
    facts.returns = [ends](std::uint64_t target) {
        return ends(target, Question::Returns) == CallEnd::Returns;
    };
}

bool never_returns(const Abi& abi, const CodeAt& code, const RowAt& rows, std::uint64_t target) {
    return call_end(abi, code, rows, target, Question::NeverReturns) == CallEnd::NeverReturns;
}

std::size_t recover(const FunctionRules& rules, std::uint64_t lookup_pc, std::uint64_t cfa,
                    MemoryReader& memory, std::span<SavedRegister> out) {
    const auto regs = rules.registers();
    const std::size_t n = std::min({out.size(), regs.size(), FunctionRules::max_registers});
    std::array<RegRule, FunctionRules::max_registers> found{};
    rules.at(lookup_pc, std::span<RegRule>(found.data(), n));
    // Each saved register's slot address, unless it wraps (then it is not
    // read).
    std::array<std::optional<std::uint64_t>, FunctionRules::max_registers> slots{};
    for (std::size_t i = 0; i < n; ++i) {
        if (found[i].kind != RegRule::Kind::AtCfa) continue;
        const std::int32_t offset = found[i].offset;
        const std::uint64_t slot = cfa + static_cast<std::uint64_t>(std::int64_t{offset});
        if (offset < 0 ? slot <= cfa : slot >= cfa) slots[i] = slot;
    }
    // The slots lie together in the frame's register save area: one read
    // of the range that holds them all costs a bridge one request (GDB's
    // JIT reader: a target read each) instead of one per register.
    std::uint64_t low = ~std::uint64_t{0}, high = 0;
    for (std::size_t i = 0; i < n; ++i) {
        if (slots[i] && *slots[i] <= ~std::uint64_t{0} - 8) {
            low = std::min(low, *slots[i]);
            high = std::max(high, *slots[i] + 8);
        }
    }
    constexpr std::uint64_t max_span = 256;
    std::array<std::uint8_t, max_span> area{};
    const bool have_area = low < high && high - low <= max_span &&
                           memory.read(low, std::span<std::uint8_t>(area.data(), high - low));
    for (std::size_t i = 0; i < n; ++i) {
        SavedRegister& s = out[i];
        s = SavedRegister{regs[i], SavedRegister::Kind::NotSaved, 0};
        if (found[i].kind == RegRule::Kind::SameValue) {
            s.kind = SavedRegister::Kind::SameValue;
        } else if (found[i].kind == RegRule::Kind::AtCfa) {
            const auto& slot = slots[i];
            if (!slot) continue;
            std::array<std::uint8_t, 8> bytes{};
            bool read = false;
            if (have_area && *slot >= low && *slot - low <= high - low - 8) {
                std::copy_n(area.begin() + static_cast<std::ptrdiff_t>(*slot - low), 8,
                            bytes.begin());
                read = true;
            } else {
                // One slot unreadable need not hide the others.
                read = memory.read(*slot, bytes);
            }
            std::uint64_t value = 0;
            // In the target's byte order (s390x: big-endian).
            if (read && ByteView(bytes, rules.byte_order()).load(0, value)) {
                s.kind = SavedRegister::Kind::Value;
                s.value = value;
            }
        }
    }
    return n;
}

std::vector<FrameValues> walk_values(std::span<const Frame> frames,
                                     std::span<const std::uint16_t> registers,
                                     std::span<const std::optional<std::uint64_t>> initial,
                                     const RulesOfFrame& rules_of, MemoryReader& memory) {
    using Kind = SavedRegister::Kind;
    const std::size_t n = std::min(registers.size(), FunctionRules::max_registers);
    std::vector<FrameValues> out(frames.size());
    if (frames.empty()) return out;
    out[0].analysed = true;
    for (std::size_t k = 0; k < n && k < initial.size(); ++k)
        out[0].values[k] = initial[k];
    for (std::size_t i = 0; i + 1 < frames.size(); ++i) {
        const Frame& f = frames[i];
        // A signal frame's caller is the interrupted code, whose registers
        // the kernel saved in the signal frame: nothing the trampoline's
        // instructions tell.
        if (f.module == nullptr || !f.row || f.row->signal_frame) continue;
        const FunctionRules* rules = rules_of(f);
        if (rules == nullptr) continue;
        std::array<SavedRegister, FunctionRules::max_registers> saved{};
        const std::size_t got =
            recover(*rules, f.address.lookup_address() - f.module->bias, f.cfa, memory, saved);
        FrameValues& next = out[i + 1];
        next.analysed = true;
        for (std::size_t k = 0; k < n; ++k) {
            for (std::size_t s = 0; s < got; ++s) {
                if (saved[s].reg != registers[k]) continue;
                if (saved[s].kind == Kind::Value)
                    next.values[k] = saved[s].value;
                else if (saved[s].kind == Kind::SameValue)
                    next.values[k] = out[i].values[k];
            }
        }
    }
    return out;
}

RegisterComparison
compare_values(std::span<const FrameValues> recovered,
               std::span<const std::vector<std::optional<std::uint64_t>>> reference,
               std::span<const FrameMatch> frames, std::span<const std::uint16_t> registers) {
    RegisterComparison c;
    const std::size_t n = std::min(registers.size(), FunctionRules::max_registers);
    const std::size_t nf = std::min({recovered.size(), reference.size(), frames.size()});
    for (std::size_t i = 1; i < nf; ++i) {
        if (!recovered[i].analysed || !frames[i].pc) continue;
        const auto& theirs = reference[i];
        for (std::size_t k = 0; k < n && k < theirs.size(); ++k) {
            if (!theirs[k]) continue;
            ++c.compared;
            const auto& ours = recovered[i].values[k];
            if (!ours)
                ++c.unknown;
            else if (*ours == *theirs[k])
                ++c.equal;
            else
                c.differences.push_back({i, registers[k], *ours, *theirs[k]});
        }
    }
    return c;
}

} // namespace sfunwind::callee_saved

// SPDX-License-Identifier: MIT
// Addresses are strings ("0x7ffd..."): JSON numbers lose precision above
// 2^53 in most readers.
#include "options.hpp"
#include "report.hpp"
#include "sfunwind/row.hpp"

#include <nlohmann/json.hpp>
#include <optional>
#include <span>
#include <string>

namespace sfunwind::cli::bt {
namespace {

using nlohmann::json;

json module_json(const ProcessModule& m) {
    json j{{"path", m.path},
           {"begin", to_hex(m.begin)},
           {"end", to_hex(m.end)},
           {"bias", to_hex(m.bias)}};
    if (const sframe::Section* s = m.table.sframe()) {
        j["sframe"] = {{"version", static_cast<unsigned>(s->version())},
                       {"fdes", s->fde_count()},
                       {"where", m.table.where ? m.table.where->name : ""}};
    } else {
        j["sframe"] = nullptr;
    }
    if (m.table.rows && !m.table.sframe()) j["rows"] = m.table.rows->kind();
    if (!m.problem.empty()) j["problem"] = m.problem;
    return j;
}

// {"rbx": "0x5", "r12": null, ...}: null where unknown.
json registers_json(const Abi& abi, std::span<const std::optional<std::uint64_t>> values) {
    const auto regs = untracked_callee_saved(abi);
    json j = json::object();
    for (std::size_t k = 0; k < regs.size() && k < values.size(); ++k)
        j[register_name(abi, regs[k])] = values[k] ? json(to_hex(*values[k])) : json(nullptr);
    return j;
}

json sframe_json(const Report& r, const ThreadWalk& t) {
    json frames = json::array();
    const Backtrace& bt = t.sframe;
    for (std::size_t i = 0; i < bt.frames.size(); ++i) {
        const Frame& f = bt.frames[i];
        const SymbolName sym = frame_symbol(r, f.address);
        const ProcessModule* m = r.modules->find(f.address.lookup_address());
        json j{{"index", i},
               {"pc", to_hex(f.regs.pc)},
               {"sp", to_hex(f.regs.sp)},
               {"fp", to_hex(f.regs.fp)}};
        j["symbol"] = sym.name.empty() ? json(nullptr) : json(sym.name);
        if (!sym.name.empty()) j["offset"] = to_hex(sym.offset);
        j["module"] = m != nullptr ? json(m->short_name()) : json(nullptr);
        j["cfa"] = i + 1 < bt.frames.size() ? json(to_hex(f.cfa)) : json(nullptr);
        j["row"] = f.row ? json(describe(*f.row, r.abi)) : json(nullptr);
        if (i < t.saved.size() && t.saved[i].analysed)
            j["callee_saved"] = registers_json(r.abi, t.saved[i].values);
        frames.push_back(std::move(j));
    }
    return {
        {"frames", std::move(frames)},
        {"end",
         {{"kind", to_string(t.end)}, {"message", t.end_message}, {"code", bt.stop.code_name()}}}};
}

json cfi_json(const Report& r, const CfiBacktrace& cfi) {
    json frames = json::array();
    for (std::size_t i = 0; i < cfi.frames.size(); ++i) {
        const CfiFrame& f = cfi.frames[i];
        json j{{"index", i}, {"pc", to_hex(f.pc)}, {"activation", f.activation}};
        j["sp"] = f.sp ? json(to_hex(*f.sp)) : json(nullptr);
        j["fp"] = f.fp ? json(to_hex(*f.fp)) : json(nullptr);
        j["symbol"] = f.symbol.empty() ? json(nullptr) : json(f.symbol);
        if (!f.symbol.empty()) j["offset"] = to_hex(f.symbol_offset);
        j["module"] = f.module.empty() ? json(nullptr) : json(f.module);
        if (!f.callee_saved.empty()) j["callee_saved"] = registers_json(r.abi, f.callee_saved);
        frames.push_back(std::move(j));
    }
    return {{"frames", std::move(frames)},
            {"end_error", cfi.end_error.empty() ? json(nullptr) : json(cfi.end_error)}};
}

json registers_comparison_json(const Abi& abi, const RegisterComparison& c) {
    json differences = json::array();
    for (const auto& d : c.differences)
        differences.push_back({{"frame", d.frame},
                               {"register", register_name(abi, d.reg)},
                               {"sframe", to_hex(d.sframe)},
                               {"cfi", to_hex(d.reference)}});
    return {{"compared", c.compared},
            {"equal", c.equal},
            {"unknown", c.unknown},
            {"differ", c.differences.size()},
            {"differences", std::move(differences)}};
}

json comparison_json(const Report& r, const CfiComparison& c) {
    json frames = json::array();
    for (const auto& m : c.result.frames) {
        json j{{"equal", m.equal()}, {"pc", m.pc}};
        j["sp"] = m.sp_compared ? json(m.sp) : json(nullptr);
        j["cfa"] = m.cfa_compared ? json(m.cfa) : json(nullptr);
        j["fp"] = m.fp_compared ? json(m.fp) : json(nullptr);
        frames.push_back(std::move(j));
    }
    json j{{"compared", c.result.frames.size()},
           {"equal", c.equal},
           {"agree", c.agree()},
           {"cfi_beyond", c.cfi_beyond},
           {"frames", std::move(frames)}};
    j["first_difference"] =
        c.first_difference ? json{{"frame", *c.first_difference}, {"what", c.first_difference_what}}
                           : json(nullptr);
    j["callee_saved"] =
        c.registers ? registers_comparison_json(r.abi, *c.registers) : json(nullptr);
    return j;
}

} // namespace

void print_json(const Report& r, std::FILE* out) {
    json doc;
    doc["target"] = {{"kind", r.kind}, {"program", r.program}, {"pid", r.pid}};
    if (!r.core.empty()) doc["target"]["core"] = r.core;
    doc["stop"] = r.stop;
    doc["abi"] = std::string(r.abi.name);
    json modules = json::array();
    for (const auto& m : r.modules->all())
        modules.push_back(module_json(m));
    doc["modules"] = std::move(modules);
    json threads = json::array();
    for (const auto& t : r.threads) {
        json j{{"tid", t.tid}, {"passed", t.passed(r.require_complete)}};
        j["signal"] = t.signal != 0 ? json(signal_name(t.signal)) : json(nullptr);
        if (!t.stop_detail.empty()) j["stop_detail"] = t.stop_detail;
        if (!t.error.empty()) {
            j["error"] = t.error;
        } else {
            j["sframe"] = sframe_json(r, t);
            if (t.cfi) j["cfi"] = cfi_json(r, *t.cfi);
            if (t.comparison) j["comparison"] = comparison_json(r, *t.comparison);
        }
        threads.push_back(std::move(j));
    }
    doc["threads"] = std::move(threads);
    doc["exit_status"] = r.exit_status;
    const std::string text = doc.dump(2);
    std::fprintf(out, "%s\n", text.c_str());
}

} // namespace sfunwind::cli::bt

// SPDX-License-Identifier: MIT
#include "report.hpp"

#include <map>
#include <nlohmann/json.hpp>

namespace sfunwind::cli::check {

using sfunwind::check::Coverage;
using sfunwind::check::Function;
using sfunwind::check::Report;
using sfunwind::check::Totals;
using sfunwind::check::UnreachableRow;
using Json = nlohmann::ordered_json;

namespace {

Json percent(std::uint64_t part, std::uint64_t whole) {
    if (whole == 0) return nullptr;
    return 100.0 * static_cast<double>(part) / static_cast<double>(whole);
}

Json totals(const Totals& t, bool compared) {
    Json j{{"functions", t.functions}, {"bytes", t.bytes}};
    if (compared) {
        j["functions_agreeing"] = t.functions_agreeing;
        j["breakpoints"] = t.breakpoints;
        j["breakpoints_agreeing"] = t.agreeing;
        j["agreement_percent"] = percent(t.agreeing, t.breakpoints);
        j["bytes_compared"] = t.bytes_compared;
        j["bytes_agreeing"] = t.bytes_agreeing;
        j["bytes_agreement_percent"] = percent(t.bytes_agreeing, t.bytes_compared);
    }
    return j;
}

Json function_json(const Function& fn) {
    Json j{{"name", fn.name},
           {"begin", fn.begin},
           {"end", fn.end},
           {"section", fn.section},
           {"class", sfunwind::check::to_string(fn.coverage)},
           {"sframe_fdes", fn.sframe_fdes},
           {"cfi_fdes", fn.cfi_fdes}};
    if (fn.coverage == Coverage::Both || fn.coverage == Coverage::Plt) {
        j["breakpoints"] = fn.breakpoints;
        j["breakpoints_agreeing"] = fn.agreeing;
        j["evaluated"] = fn.evaluated;
        Json findings = Json::array();
        for (const auto& f : fn.findings)
            findings.push_back({{"verdict", sfunwind::check::to_string(f.verdict)},
                                {"begin", f.pc},
                                {"end", f.end},
                                {"sframe", f.sframe},
                                {"cfi", f.cfi},
                                {"differences", f.differences},
                                {"known", f.known.empty() ? Json(nullptr) : Json(f.known)}});
        j["findings"] = std::move(findings);
    } else {
        if (fn.coverage == Coverage::CfiOnly) j["reason"] = sfunwind::check::to_string(fn.reason);
        j["detail"] = fn.detail;
    }
    return j;
}

Json file_json(const FileResult& result, const CheckOptions& options) {
    Json j{{"file", result.path}};
    if (!result.report) {
        j["error"] = result.error;
        return j;
    }
    const Report& r = *result.report;
    j["abi"] = r.abi;
    j["sframe"] = r.sframe.empty() ? Json(nullptr) : Json(r.sframe);
    j["cfi"] = r.cfi.empty() ? Json(nullptr) : Json(r.cfi);
    Json summary;
    for (Coverage c : {Coverage::Both, Coverage::Plt, Coverage::CfiOnly, Coverage::SframeOnly})
        summary[sfunwind::check::to_string(c)] =
            totals(r.total(c), c == Coverage::Both || c == Coverage::Plt);
    std::map<std::string, std::uint64_t> reasons;
    for (const Function& fn : r.functions)
        if (fn.coverage == Coverage::CfiOnly) ++reasons[sfunwind::check::to_string(fn.reason)];
    summary["cfi-only"]["reasons"] = reasons;
    j["summary"] = std::move(summary);
    const std::uint64_t compared = compared_breakpoints(r);
    j["breakpoints_compared"] = compared;
    j["disagreements"] = r.disagreements();
    j["agreement_percent"] = percent(compared - r.disagreements(), compared);
    j["breakpoints_walked"] = r.breakpoints;
    j["bytes"] = r.bytes;
    j["evaluated"] = r.evaluated;
    j["unreachable_rows"] = r.unreachable.size();
    j["problems"] = r.problems;
    j["failed"] = result.failed;
    const double s = result.seconds > 0 ? result.seconds : 1e-9;
    j["timing"] = {{"seconds", result.seconds},
                   {"breakpoints_per_second", static_cast<double>(compared) / s},
                   {"bytes_per_second", static_cast<double>(r.bytes) / s}};

    Json functions = Json::array();
    for (const Function& fn : r.functions) {
        const bool compared_class = fn.coverage == Coverage::Both || fn.coverage == Coverage::Plt;
        if ((compared_class && !fn.agrees()) || (!compared_class && options.details))
            functions.push_back(function_json(fn));
    }
    j["functions"] = std::move(functions);
    if (options.details) {
        Json rows = Json::array();
        for (const UnreachableRow& u : r.unreachable)
            rows.push_back({{"table", u.table == UnreachableRow::Table::Sframe ? "sframe" : "cfi"},
                            {"fde", u.fde},
                            {"row", u.row},
                            {"function", u.function},
                            {"begin", u.pc_begin},
                            {"end", u.pc_end},
                            {"rule", u.rule},
                            {"why", u.why}});
        j["unreachable"] = std::move(rows);
    }
    return j;
}

} // namespace

void print_json(const std::vector<FileResult>& results, const CheckOptions& options,
                std::FILE* out) {
    Json doc;
    Json files = Json::array();
    bool failed = false;
    for (const auto& r : results) {
        files.push_back(file_json(r, options));
        failed = failed || r.failed;
    }
    const FailOn& f = options.fail_on;
    Json fail_on = Json::array();
    if (f.mismatch) fail_on.push_back("mismatch");
    if (f.cfi_only) fail_on.push_back("cfi-only");
    if (f.sframe_only) fail_on.push_back("sframe-only");
    if (f.unreachable) fail_on.push_back("unreachable");
    if (f.problem) fail_on.push_back("problem");
    doc["fail_on"] = std::move(fail_on);
    doc["failed"] = failed;
    doc["files"] = std::move(files);
    const std::string text = doc.dump(2);
    std::fwrite(text.data(), 1, text.size(), out);
    std::fputc('\n', out);
}

} // namespace sfunwind::cli::check

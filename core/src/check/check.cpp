// SPDX-License-Identifier: MIT
// The comparison engine: functions as clusters of overlapping FDEs, the
// union of both tables' row starts as breakpoints, cfi::compare() at each,
// libdwfl's evaluation where the CFI has no Row form.
#include "sfunwind/check/check.hpp"

#include "cfi_probe.hpp"
#include "known_issues.hpp"
#include "missing_reason.hpp"
#include "sfunwind/cfi/row_comparison.hpp"
#include "sfunwind/row.hpp"
#include "sfunwind/sframe/section.hpp"

#include <algorithm>
#include <cstdio>
#include <optional>

namespace sfunwind::check {

const char* to_string(Coverage coverage) noexcept {
    switch (coverage) {
    case Coverage::Both:
        return "both";
    case Coverage::Plt:
        return "plt";
    case Coverage::CfiOnly:
        return "cfi-only";
    case Coverage::SframeOnly:
        return "sframe-only";
    }
    return "?";
}

const char* to_string(MissingReason reason) noexcept {
    switch (reason) {
    case MissingReason::None:
        return "none";
    case MissingReason::NoSection:
        return "no-sframe-section";
    case MissingReason::Plt:
        return "plt";
    case MissingReason::Assembly:
        return "assembly";
    case MissingReason::CfiExpression:
        return "cfi-expression";
    case MissingReason::Drap:
        return "drap";
    case MissingReason::RaRule:
        return "ra-rule";
    case MissingReason::FpRule:
        return "fp-rule";
    case MissingReason::Outermost:
        return "outermost";
    case MissingReason::SignalFrame:
        return "signal-frame";
    case MissingReason::Unknown:
        return "unknown";
    }
    return "?";
}

const char* to_string(Verdict verdict) noexcept {
    switch (verdict) {
    case Verdict::Agree:
        return "agree";
    case Verdict::AgreeEvaluated:
        return "agree-evaluated";
    case Verdict::Mismatch:
        return "mismatch";
    case Verdict::Unevaluated:
        return "unevaluated";
    case Verdict::NoSframe:
        return "no-sframe";
    case Verdict::NoCfi:
        return "no-cfi";
    case Verdict::Error:
        return "error";
    }
    return "?";
}

std::uint64_t Report::disagreements() const {
    std::uint64_t n = 0;
    for (Coverage c : {Coverage::Both, Coverage::Plt})
        n += total(c).breakpoints - total(c).agreeing;
    return n;
}

namespace {

std::string signed_text(std::int64_t v) {
    return (v < 0 ? "-" : "+") + std::to_string(v < 0 ? -v : v);
}

bool is_plt_section(const std::string& name) {
    return name == ".plt" || name == ".plt.got" || name == ".plt.sec" || name == ".iplt" ||
           name == ".plt.bnd";
}

// A PC-mask FDE with many tiny repeat blocks could ask for billions of
// breakpoints; no real PLT comes near this.
constexpr std::uint64_t max_breakpoints_per_fde = std::uint64_t{1} << 22;

struct SframeFde {
    sframe::Fde fde;
    std::vector<sframe::Fre> fres;
    bool fres_ok = false;
    std::vector<bool> used;
};

struct CfiFde {
    std::uint32_t index = 0; // in CfiTable::fdes()
    cfi::FdeRange range;
    std::vector<cfi::CfiRow> rows;
    bool rows_ok = false;
    std::string error;
    std::vector<bool> used;
};

struct Span {
    std::uint64_t begin;
    std::uint64_t end;
    bool sframe;
    std::uint32_t index; // SFrame FDE index, or index in CfiTable::fdes()
};

struct CodeSection {
    std::uint64_t begin;
    std::uint64_t end;
    std::string name;
};

// The CFI row's rules, with the DWARF text for a part that has no Row form.
std::string cfi_text(const cfi::CfiRow& c, const Abi& abi) {
    if (c.representable()) return describe(c.rules, abi);
    std::string s;
    for (const auto* st : {&c.cfa_state, &c.ra_state, &c.fp_state}) {
        if (st->representable) continue;
        if (!s.empty()) s += "; ";
        s += st->reason;
    }
    return s;
}

// A value from the probe's model in the terms of the model: "rsp+16",
// "[CFA-8]", or the number.
std::string value_text(std::uint64_t v, std::optional<std::uint64_t> cfa, const Abi& abi,
                       std::uint64_t pc) {
    auto near = [](std::uint64_t a, std::uint64_t b, std::int64_t& d) {
        d = static_cast<std::int64_t>(a - b);
        return d > -(1 << 20) && d < (1 << 20);
    };
    std::int64_t d = 0;
    // memory_value() is an involution on 48-bit addresses.
    const std::uint64_t address = detail::memory_value(v);
    if (cfa && near(address, *cfa, d)) return "[CFA" + signed_text(d) + "]";
    for (std::uint16_t r : {abi.sp_reg, abi.fp_reg})
        if (near(address, detail::register_value(r), d))
            return "[" + register_name(abi, r) + signed_text(d) + "]";
    if (cfa && near(v, *cfa, d)) return "CFA" + signed_text(d);
    for (std::uint16_t r : {abi.sp_reg, abi.fp_reg})
        if (near(v, detail::register_value(r), d)) return register_name(abi, r) + signed_text(d);
    if (v == pc) return "the PC";
    return to_hex(v);
}

// One function as check_function() passes it between its steps: the result
// being built and the FDEs of both tables that make it up.
struct FunctionGroup {
    Function fn;
    std::vector<SframeFde*> sfdes;
    std::vector<CfiFde> cfdes; // sorted by begin (the spans were)
    bool plt = false;
};

// The CFI row at a breakpoint, chosen as CfiTable::at() chooses: the last FDE
// starting at or before the PC.
struct CfiLookup {
    const cfi::CfiRow* row = nullptr;
    const cfi::CfiRow* first_row = nullptr; // of the FDE that owns the PC
    const std::string* error = nullptr;
};

Coverage coverage_of(bool plt, bool have_sframe, bool have_cfi) {
    if (plt && have_sframe && have_cfi) return Coverage::Plt;
    if (have_sframe && have_cfi) return Coverage::Both;
    if (have_cfi) return Coverage::CfiOnly;
    return Coverage::SframeOnly;
}

class Checker {
  public:
    Checker(const elf::ElfFile& file, const Options& options, const Abi& abi)
        : file_(file), options_(options), abi_(abi), languages_(file) {}

    Expected<Report> run();

  private:
    void load_sframe();
    void load_cfi();
    void find_code_sections();
    std::string section_of(std::uint64_t pc) const;
    std::vector<std::vector<Span>> clusters() const;
    void check_function(const std::vector<Span>& spans);
    CfiFde load_cfi_fde(std::uint32_t index);
    FunctionGroup gather(const std::vector<Span>& spans);
    void sframe_breakpoints(const SframeFde& s, std::vector<std::uint64_t>& bps);
    std::vector<std::uint64_t> breakpoints(const FunctionGroup& g);
    Expected<Row> sframe_row_at(const FunctionGroup& g, std::uint64_t pc);
    void explain_missing(FunctionGroup& g);
    void add_to_totals(Function fn);
    detail::CfiProbe* probe();
    void compare_at(Function& fn, std::uint64_t pc, std::uint64_t end, const Expected<Row>& srow,
                    const cfi::CfiRow* crow, const cfi::CfiRow* first_row,
                    const std::string* cfi_error);
    void add_finding(Function& fn, Finding f);
    void evaluated_breakpoints(const cfi::CfiRow& row, std::vector<std::uint64_t>& bps);
    void evaluate(Function& fn, Finding& f, detail::CfiProbe& probe, std::uint64_t pc,
                  const Row& srow, const cfi::CfiRow& crow);
    void unreachable_rows(const std::vector<SframeFde*>& sfdes, const std::vector<CfiFde>& cfdes);

    const elf::ElfFile& file_;
    const Options& options_;
    const Abi& abi_;
    detail::SourceLanguages languages_;
    Report report_;

    std::optional<sframe::Section> section_;
    std::string sframe_error_;
    std::vector<std::optional<SframeFde>> sfdes_; // by FDE index
    std::optional<cfi::CfiTable> cfi_;
    std::string no_cfi_why_;
    std::vector<CodeSection> code_sections_;

    std::optional<detail::CfiProbe> probe_;
    bool probe_tried_ = false;
    std::string probe_error_;
};

void Checker::load_sframe() {
    auto s = file_.sframe();
    if (!s) {
        if (s.error().code() != Errc::NotFound) {
            sframe_error_ = "the SFrame section cannot be read: " + s.error().message();
            report_.problems.push_back(sframe_error_);
        }
        return;
    }
    section_.emplace(std::move(*s));
    const auto& h = section_->header();
    report_.sframe = "SFrame v" + std::to_string(static_cast<unsigned>(h.version));
    if (h.sorted()) report_.sframe += ", sorted";
    if (h.pcrel()) report_.sframe += ", PC-relative starts";
    report_.sframe +=
        ", " + std::to_string(h.num_fdes) + " FDEs, " + std::to_string(h.num_fres) + " FREs";

    sfdes_.resize(section_->fde_count());
    for (std::uint32_t i = 0; i < section_->fde_count(); ++i) {
        auto fde = section_->fde(i);
        if (!fde) {
            report_.problems.push_back(".sframe: FDE " + std::to_string(i) + ": " +
                                       fde.error().message());
            continue;
        }
        SframeFde s_fde;
        s_fde.fde = *fde;
        auto fres = section_->fres(*fde);
        if (fres) {
            s_fde.fres = std::move(*fres);
            s_fde.fres_ok = true;
            s_fde.used.assign(s_fde.fres.size(), false);
        } else {
            report_.problems.push_back(".sframe: FDE " + std::to_string(i) + " (" +
                                       to_hex(fde->start) + "): " + fres.error().message());
        }
        sfdes_[i] = std::move(s_fde);
    }
}

void Checker::load_cfi() {
    auto t = cfi::CfiTable::open(file_, options_.cfi_source);
    if (!t) {
        no_cfi_why_ = t.error().message();
        if (t.error().code() != Errc::NotFound) report_.problems.push_back("CFI: " + no_cfi_why_);
        return;
    }
    cfi_.emplace(std::move(*t));
    report_.cfi = cfi::to_string(cfi_->source());
    for (const auto& e : cfi_->fde_errors())
        report_.problems.push_back("CFI: " + e.message());
}

void Checker::find_code_sections() {
    for (const auto& s : file_.sections()) {
        constexpr std::uint64_t alloc_exec = 0x2 | 0x4; // SHF_ALLOC | SHF_EXECINSTR
        if ((s.flags & alloc_exec) == alloc_exec && s.size > 0)
            code_sections_.push_back({s.vaddr, s.vaddr + s.size, s.name});
    }
    std::sort(code_sections_.begin(), code_sections_.end(),
              [](const CodeSection& a, const CodeSection& b) { return a.begin < b.begin; });
}

std::string Checker::section_of(std::uint64_t pc) const {
    auto it = std::upper_bound(code_sections_.begin(), code_sections_.end(), pc,
                               [](std::uint64_t p, const CodeSection& s) { return p < s.begin; });
    if (it == code_sections_.begin()) return {};
    --it;
    return pc < it->end ? it->name : std::string();
}

// Overlapping FDE ranges of both tables, merged. An empty FDE (size 0)
// covers no PC and forms its own group, so its rows show up as unreachable.
std::vector<std::vector<Span>> Checker::clusters() const {
    std::vector<Span> spans;
    for (std::uint32_t i = 0; i < sfdes_.size(); ++i)
        if (sfdes_[i]) spans.push_back({sfdes_[i]->fde.start, sfdes_[i]->fde.end(), true, i});
    if (cfi_)
        for (std::uint32_t i = 0; i < cfi_->fdes().size(); ++i)
            spans.push_back({cfi_->fdes()[i].begin, cfi_->fdes()[i].end, false, i});
    std::stable_sort(spans.begin(), spans.end(),
                     [](const Span& a, const Span& b) { return a.begin < b.begin; });
    std::vector<std::vector<Span>> out;
    std::vector<std::vector<Span>> empty;
    std::uint64_t end = 0;
    for (const Span& s : spans) {
        if (s.begin == s.end) {
            empty.push_back({s});
        } else if (out.empty() || s.begin >= end) {
            out.push_back({s});
            end = s.end;
        } else {
            out.back().push_back(s);
            end = std::max(end, s.end);
        }
    }
    out.insert(out.end(), empty.begin(), empty.end());
    std::stable_sort(out.begin(), out.end(), [](const auto& a, const auto& b) {
        return a.front().begin < b.front().begin;
    });
    return out;
}

detail::CfiProbe* Checker::probe() {
    if (!options_.evaluate) return nullptr;
    if (!probe_tried_) {
        probe_tried_ = true;
        auto p = detail::CfiProbe::open(file_, abi_);
        if (p)
            probe_.emplace(std::move(*p));
        else
            probe_error_ = p.error().message();
    }
    return probe_ ? &*probe_ : nullptr;
}

void Checker::add_finding(Function& fn, Finding f) {
    // Adjacent breakpoints with the same story make one finding.
    if (!fn.findings.empty()) {
        Finding& last = fn.findings.back();
        if (last.end == f.pc && last.verdict == f.verdict && last.sframe == f.sframe &&
            last.cfi == f.cfi && last.differences == f.differences) {
            last.end = f.end;
            return;
        }
    }
    fn.findings.push_back(std::move(f));
}

// A CFI rule without a Row form may depend on the PC itself (the PLT's CFA
// does): libdwfl evaluates it at every byte, every possible instruction
// start, and each place where its value changes is a breakpoint, as if the
// CFI had a row starting there.
void Checker::evaluated_breakpoints(const cfi::CfiRow& row, std::vector<std::uint64_t>& bps) {
    std::optional<std::string> last;
    for (std::uint64_t pc = row.begin; pc < row.end && pc - row.begin < options_.evaluate_bytes;
         ++pc) {
        auto v = probe_->step(pc);
        std::string now;
        if (!v) {
            now = v.error().what();
        } else if (auto rules = detail::rules_from_values(*v, abi_)) {
            now = describe(*rules, abi_);
        } else {
            // Values relative to the model's SP: equal values, equal string.
            const auto sp = detail::register_value(abi_.sp_reg);
            now = std::to_string(v->cfa - sp) + "," + std::to_string(v->ra.value_or(0) - sp) + "," +
                  std::to_string(v->fp.value_or(0) - sp) + (v->outermost ? ",outermost" : "");
        }
        if (last && *last != now) bps.push_back(pc);
        last = std::move(now);
    }
}

// The CFI rule has no Row form: libdwfl evaluates it at this PC, the values
// are turned back into rules where they have the simple forms (the PLT's
// CFA is SP+8 or SP+16, depending on the PC) and compared as rules, else as
// values.
void Checker::evaluate(Function& fn, Finding& f, detail::CfiProbe& probe, std::uint64_t pc,
                       const Row& srow, const cfi::CfiRow& crow) {
    auto cv = probe.step(pc);
    const auto sv = detail::evaluate_row(srow, abi_, pc);
    if (!cv || !sv) {
        f.verdict = Verdict::Unevaluated;
        f.differences.push_back(cv ? "the SFrame row cannot be evaluated" : cv.error().message());
        return;
    }
    ++fn.evaluated;
    ++report_.evaluated;
    if (auto rules = detail::rules_from_values(*cv, abi_)) {
        cfi::CfiRow evaluated = crow;
        evaluated.rules.cfa = rules->cfa;
        evaluated.rules.ra = rules->ra;
        evaluated.rules.fp = rules->fp;
        evaluated.cfa_state = evaluated.ra_state = evaluated.fp_state = cfi::RuleState{};
        f.cfi = describe(evaluated.rules, abi_) + " (libdwfl's value of: " + f.cfi + ")";
        for (const auto& d : cfi::compare(evaluated, srow, abi_))
            f.differences.push_back(d.message + " (CFI evaluated at this PC)");
        f.verdict = f.differences.empty() ? Verdict::AgreeEvaluated : Verdict::Mismatch;
        return;
    }
    const auto& c = *cv;
    const auto& s = *sv;
    if (c.outermost != s.outermost) {
        f.differences.push_back(std::string("RA: CFI evaluates to ") +
                                (c.outermost ? "undefined" : "a value") + ", SFrame " +
                                (s.outermost ? "undefined" : "a value"));
    } else if (!c.outermost) {
        if (c.cfa != s.cfa)
            f.differences.push_back("CFA: CFI evaluates to " +
                                    value_text(c.cfa, std::nullopt, abi_, pc) + " here, SFrame " +
                                    value_text(s.cfa, std::nullopt, abi_, pc));
        auto reg = [&](const char* name, const std::optional<std::uint64_t>& a,
                       const std::optional<std::uint64_t>& b) {
            if (a == b) return;
            f.differences.push_back(std::string(name) + ": CFI evaluates to " +
                                    (a ? value_text(*a, c.cfa, abi_, pc) : "undefined") +
                                    " here, SFrame " +
                                    (b ? value_text(*b, s.cfa, abi_, pc) : "undefined"));
        };
        reg("RA", c.ra, s.ra);
        reg("FP", c.fp, s.fp);
    }
    f.verdict = f.differences.empty() ? Verdict::AgreeEvaluated : Verdict::Mismatch;
}

void Checker::compare_at(Function& fn, std::uint64_t pc, std::uint64_t end,
                         const Expected<Row>& srow, const cfi::CfiRow* crow,
                         const cfi::CfiRow* first_row, const std::string* cfi_error) {
    const bool compared = fn.coverage == Coverage::Both || fn.coverage == Coverage::Plt;
    if (!compared) return;
    ++fn.breakpoints;
    fn.bytes_compared += end - pc;
    Finding f;
    f.pc = pc;
    f.end = end;
    const bool have_s = srow.has_value();
    if (have_s)
        f.sframe = describe(*srow, abi_);
    else
        f.sframe = srow.error().message();
    if (crow != nullptr)
        f.cfi = cfi_text(*crow, abi_);
    else if (cfi_error != nullptr)
        f.cfi = *cfi_error;
    else
        f.cfi = "no CFI FDE covers " + to_hex(pc);

    // Either side failing to read is an error of the input, not a verdict.
    if ((!have_s && srow.error().code() != Errc::NotFound) ||
        (crow == nullptr && cfi_error != nullptr)) {
        f.verdict = Verdict::Error;
    } else if (!have_s && crow == nullptr) {
        return; // a hole in both (between FDEs of one group): nothing to compare
    } else if (!have_s) {
        f.verdict = Verdict::NoSframe;
    } else if (crow == nullptr) {
        f.verdict = Verdict::NoCfi;
    } else {
        const auto diffs = cfi::compare(*crow, *srow, abi_);
        const bool hard = std::any_of(diffs.begin(), diffs.end(),
                                      [](const cfi::Difference& d) { return !d.unrepresentable; });
        if (diffs.empty()) {
            f.verdict = Verdict::Agree;
        } else if (hard) {
            f.verdict = Verdict::Mismatch;
            for (const auto& d : diffs)
                f.differences.push_back(d.message);
        } else if (detail::CfiProbe* p = probe()) {
            evaluate(fn, f, *p, pc, *srow, *crow);
        } else {
            f.verdict = Verdict::Unevaluated;
            for (const auto& d : diffs)
                f.differences.push_back(d.message);
            if (!probe_error_.empty()) f.differences.push_back("not evaluated: " + probe_error_);
        }
        if (f.verdict == Verdict::Mismatch && section_)
            f.known = detail::known_issue({abi_, fn.section, first_row}, *srow, *crow);
    }
    if (agrees(f.verdict)) {
        ++fn.agreeing;
        fn.bytes_agreeing += end - pc;
        return;
    }
    add_finding(fn, std::move(f));
}

CfiFde Checker::load_cfi_fde(std::uint32_t index) {
    CfiFde c;
    c.index = index;
    c.range = cfi_->fdes()[index];
    auto rows = cfi_->rows(c.range);
    if (rows) {
        c.rows = std::move(*rows);
        c.rows_ok = true;
        c.used.assign(c.rows.size(), false);
    } else {
        c.error = rows.error().message();
        report_.problems.push_back("CFI: " + c.error);
    }
    return c;
}

FunctionGroup Checker::gather(const std::vector<Span>& spans) {
    FunctionGroup g;
    Function& fn = g.fn;
    fn.begin = spans.front().begin;
    fn.end = spans.front().end;
    bool mask = false;
    for (const Span& s : spans) {
        fn.end = std::max(fn.end, s.end);
        if (s.sframe) {
            fn.sframe_fdes.push_back(s.index);
            g.sfdes.push_back(&*sfdes_[s.index]);
            mask = mask || sfdes_[s.index]->fde.pc_type == sframe::PcType::Mask;
        } else {
            fn.cfi_fdes.push_back(s.index);
            g.cfdes.push_back(load_cfi_fde(s.index));
        }
    }
    fn.section = section_of(fn.begin);
    if (const elf::Symbol* sym = file_.symbol_for(fn.begin);
        sym != nullptr && sym->value == fn.begin)
        fn.name = sym->name;
    else if (!fn.section.empty())
        fn.name = fn.section;
    else
        fn.name = to_hex(fn.begin);
    g.plt = mask || is_plt_section(fn.section);
    fn.coverage = coverage_of(g.plt, !g.sfdes.empty(), !g.cfdes.empty());
    return g;
}

// The start of every row of one SFrame FDE, once per repetition for a
// SFRAME_FDE_TYPE_PCMASK FDE (its FRE starts are offsets within rep_size).
void Checker::sframe_breakpoints(const SframeFde& s, std::vector<std::uint64_t>& bps) {
    const sframe::Fde& f = s.fde;
    bps.push_back(f.start);
    bps.push_back(f.end());
    const bool repeats = f.pc_type == sframe::PcType::Mask && f.rep_size != 0;
    const std::uint64_t step = repeats ? f.rep_size : f.size;
    std::uint64_t added = 0;
    for (std::uint64_t base = f.start;
         base < f.end() && step != 0 && added < max_breakpoints_per_fde; base += step) {
        for (const auto& fre : s.fres) {
            if (repeats && fre.start >= f.rep_size) continue;
            const std::uint64_t pc = base + fre.start;
            if (pc < f.end()) {
                bps.push_back(pc);
                ++added;
            }
        }
    }
    if (added >= max_breakpoints_per_fde)
        report_.problems.push_back(
            ".sframe: FDE " + std::to_string(f.index) + " (" + to_hex(f.start) + "): more than " +
            std::to_string(max_breakpoints_per_fde) + " breakpoints; only the first are checked");
}

// Breakpoints: every row start of both tables, and every FDE boundary; sorted,
// unique and inside the function.
std::vector<std::uint64_t> Checker::breakpoints(const FunctionGroup& g) {
    std::vector<std::uint64_t> bps{g.fn.begin};
    for (const SframeFde* s : g.sfdes)
        sframe_breakpoints(*s, bps);
    const bool compared = g.fn.coverage == Coverage::Both || g.fn.coverage == Coverage::Plt;
    for (const CfiFde& c : g.cfdes) {
        bps.push_back(c.range.begin);
        bps.push_back(c.range.end);
        for (const auto& r : c.rows) {
            bps.push_back(r.begin);
            if (!r.representable() && compared && probe() != nullptr) evaluated_breakpoints(r, bps);
        }
    }
    std::sort(bps.begin(), bps.end());
    bps.erase(std::unique(bps.begin(), bps.end()), bps.end());
    while (!bps.empty() && bps.back() >= g.fn.end)
        bps.pop_back();
    return bps;
}

// The SFrame row at `pc`, marked as used.
Expected<Row> Checker::sframe_row_at(const FunctionGroup& g, std::uint64_t pc) {
    Expected<Row> srow =
        section_ ? section_->lookup(pc) : Expected<Row>(Error(Errc::NotFound, "no .sframe"));
    if (srow && srow->fde_index < sfdes_.size() && sfdes_[srow->fde_index] &&
        srow->fre_index < sfdes_[srow->fde_index]->used.size())
        sfdes_[srow->fde_index]->used[srow->fre_index] = true;
    if (!srow && srow.error().code() == Errc::NotFound) {
        // Say why in the terms of the group's SFrame FDEs.
        srow = Error(Errc::NotFound,
                     g.sfdes.empty() ? "no SFrame FDE" : "no SFrame FDE covers " + to_hex(pc));
    }
    return srow;
}

// The CFI row at `pc` among the group's FDEs, marked as used.
CfiLookup cfi_row_at(std::vector<CfiFde>& cfdes, std::uint64_t pc) {
    CfiLookup out;
    auto after =
        std::upper_bound(cfdes.begin(), cfdes.end(), pc,
                         [](std::uint64_t p, const CfiFde& c) { return p < c.range.begin; });
    CfiFde* owner = after == cfdes.begin() ? nullptr : &*std::prev(after);
    if (owner != nullptr && pc < owner->range.end) {
        if (!owner->rows_ok) {
            out.error = &owner->error;
        } else {
            auto it =
                std::upper_bound(owner->rows.begin(), owner->rows.end(), pc,
                                 [](std::uint64_t p, const cfi::CfiRow& r) { return p < r.begin; });
            if (it != owner->rows.begin()) {
                --it;
                if (pc < it->end) {
                    out.row = &*it;
                    owner->used[static_cast<std::size_t>(it - owner->rows.begin())] = true;
                }
            }
        }
    }
    out.first_row = owner != nullptr && !owner->rows.empty() ? &owner->rows.front() : nullptr;
    return out;
}

// Why a function is in one table only.
void Checker::explain_missing(FunctionGroup& g) {
    Function& fn = g.fn;
    if (fn.coverage == Coverage::CfiOnly) {
        std::vector<cfi::CfiRow> rows;
        for (const CfiFde& c : g.cfdes)
            rows.insert(rows.end(), c.rows.begin(), c.rows.end());
        auto m = detail::classify_missing(
            rows, abi_, section_ ? std::optional(section_->version()) : std::nullopt, languages_);
        fn.reason = m.reason;
        fn.detail = m.detail;
        if (!section_ && !sframe_error_.empty()) fn.detail = sframe_error_;
        if (g.plt && section_) {
            fn.reason = MissingReason::Plt;
            fn.detail =
                "linker-made stubs in " + fn.section + ": the linker wrote no SFrame FDE for them";
        }
    } else if (fn.coverage == Coverage::SframeOnly) {
        fn.detail = cfi_ ? "no CFI FDE covers it" : "the file has no CFI (" + no_cfi_why_ + ")";
        if (g.plt)
            fn.detail = "linker-made stubs" + (fn.section.empty() ? "" : " in " + fn.section) +
                        "; " + fn.detail;
    }
}

void Checker::add_to_totals(Function fn) {
    Totals& t = report_.totals[static_cast<std::size_t>(fn.coverage)];
    ++t.functions;
    t.bytes += fn.size();
    t.breakpoints += fn.breakpoints;
    t.agreeing += fn.agreeing;
    t.bytes_compared += fn.bytes_compared;
    t.bytes_agreeing += fn.bytes_agreeing;
    if ((fn.coverage == Coverage::Both || fn.coverage == Coverage::Plt) && fn.agrees())
        ++t.functions_agreeing;
    report_.bytes += fn.size();
    report_.functions.push_back(std::move(fn));
}

void Checker::check_function(const std::vector<Span>& spans) {
    FunctionGroup g = gather(spans);
    const std::vector<std::uint64_t> bps = breakpoints(g);
    for (std::size_t i = 0; i < bps.size(); ++i) {
        const std::uint64_t pc = bps[i];
        const std::uint64_t end = i + 1 < bps.size() ? bps[i + 1] : g.fn.end;
        ++report_.breakpoints;
        const Expected<Row> srow = sframe_row_at(g, pc);
        const CfiLookup c = cfi_row_at(g.cfdes, pc);
        compare_at(g.fn, pc, end, srow, c.row, c.first_row, c.error);
    }
    explain_missing(g);
    unreachable_rows(g.sfdes, g.cfdes);
    add_to_totals(std::move(g.fn));
}

void Checker::unreachable_rows(const std::vector<SframeFde*>& sfdes,
                               const std::vector<CfiFde>& cfdes) {
    for (const SframeFde* s : sfdes) {
        const sframe::Fde& f = s->fde;
        const bool repeats = f.pc_type == sframe::PcType::Mask && f.rep_size != 0;
        const std::uint64_t limit = repeats ? f.rep_size : f.size;
        for (std::size_t k = 0; k < s->fres.size(); ++k) {
            if (s->used[k]) continue;
            const auto& fre = s->fres[k];
            const std::uint64_t next = k + 1 < s->fres.size() ? s->fres[k + 1].start : limit;
            UnreachableRow u;
            u.table = UnreachableRow::Table::Sframe;
            u.fde = f.index;
            u.row = static_cast<std::uint32_t>(k);
            u.function = f.start;
            u.pc_begin = f.start + fre.start;
            u.pc_end = f.start + std::max<std::uint64_t>(next, fre.start);
            auto row = section_->row(f, fre, u.row, std::max<std::uint64_t>(next, fre.start));
            u.rule = row ? describe(*row, abi_) : row.error().message();
            if (f.size == 0)
                u.why = "its FDE is empty (size 0)";
            else if (fre.start >= limit)
                u.why = "it starts at +" + to_hex(fre.start) + ", at or past the end of its " +
                        (repeats ? "repeat block (" : "function (") + std::to_string(limit) +
                        " bytes)";
            else if (auto other = section_->find_fde(u.pc_begin); other && other->index != f.index)
                u.why = "FDE " + std::to_string(other->index) + " (" + to_hex(other->start) +
                        ") overlaps it and lookups find that one";
            else
                u.why = "no lookup returns it";
            report_.unreachable.push_back(std::move(u));
        }
    }
    for (const CfiFde& c : cfdes) {
        for (std::size_t k = 0; k < c.rows.size(); ++k) {
            if (c.used[k]) continue;
            const auto& r = c.rows[k];
            UnreachableRow u;
            u.table = UnreachableRow::Table::Cfi;
            u.fde = c.index;
            u.row = static_cast<std::uint32_t>(k);
            u.function = c.range.begin;
            u.pc_begin = r.begin;
            u.pc_end = r.end;
            u.rule = cfi_text(r, abi_);
            u.why = "another CFI FDE overlapping it is found first";
            report_.unreachable.push_back(std::move(u));
        }
    }
}

Expected<Report> Checker::run() {
    report_.file = file_.name();
    report_.abi = std::string(abi_.name);
    load_sframe();
    load_cfi();
    if (!section_ && !cfi_) {
        std::string why = file_.name() + ": neither an SFrame section nor CFI to check";
        if (!report_.problems.empty()) why += " (" + report_.problems.front() + ")";
        return Error(Errc::NotFound, why);
    }
    find_code_sections();
    const auto groups = clusters();
    for (std::size_t i = 0; i < groups.size(); ++i) {
        check_function(groups[i]);
        if (options_.progress) options_.progress(i + 1, groups.size());
    }
    if (!probe_error_.empty() && report_.evaluated == 0)
        for (const auto& fn : report_.functions)
            if (std::any_of(fn.findings.begin(), fn.findings.end(),
                            [](const Finding& f) { return f.verdict == Verdict::Unevaluated; })) {
                report_.problems.push_back("CFI expressions not evaluated: " + probe_error_);
                break;
            }
    return std::move(report_);
}

} // namespace

Expected<Report> check(const elf::ElfFile& file, const Options& options) {
    const auto abi = file.abi();
    if (!abi)
        return Error(Errc::Unsupported, file.name() + ": no sfunwind ABI for ELF machine " +
                                            std::to_string(file.machine()));
    Checker checker(file, options, *abi);
    return checker.run();
}

} // namespace sfunwind::check

// SPDX-License-Identifier: MIT
#include "options.hpp"
#include "report.hpp"
#include "sfunwind/row.hpp"

#include <optional>
#include <string>

namespace sfunwind::cli::bt {
namespace {

std::string pc_text(std::uint64_t v) {
    char buf[24];
    std::snprintf(buf, sizeof buf, "0x%016llx", static_cast<unsigned long long>(v));
    return buf;
}

std::string symbol_text(const std::string& name, std::uint64_t offset) {
    return name.empty() ? "??" : name + "+" + to_hex(offset);
}

std::string module_text(const Report& r, FrameAddress address) {
    const ProcessModule* m = r.modules->find(address.lookup_address());
    return m != nullptr ? m->short_name() : "?";
}

void print_cfi_frame(const CfiFrame& f, const std::optional<std::uint64_t>& cfa, std::FILE* out) {
    std::fprintf(out, "%s in %s (%s) ", pc_text(f.pc).c_str(),
                 symbol_text(f.symbol, f.symbol_offset).c_str(),
                 f.module.empty() ? "?" : f.module.c_str());
    if (cfa) std::fprintf(out, " cfa=%s", to_hex(*cfa).c_str());
    if (f.sp) std::fprintf(out, " sp=%s", to_hex(*f.sp).c_str());
    if (f.fp) std::fprintf(out, " fp=%s", to_hex(*f.fp).c_str());
}

std::string verdict(const FrameMatch& m) {
    if (m.equal()) {
        std::string fields = "pc";
        if (m.sp_compared) fields += " sp";
        if (m.cfa_compared) fields += " cfa";
        if (m.fp_compared) fields += " fp";
        return "agrees (" + fields + ")";
    }
    std::string bad;
    if (!m.pc) bad += " pc";
    if (!m.sp) bad += " sp";
    if (!m.cfa) bad += " cfa";
    if (!m.fp) bad += " fp";
    return "DIFFERS:" + bad;
}

// "    rbx=0x5 r12=<not saved> ...": a frame's own values, as recovered.
void print_registers(const Report& r, const callee_saved::FrameValues& v, std::FILE* out) {
    const auto regs = untracked_callee_saved(r.abi);
    std::string line = "   ";
    for (std::size_t k = 0; k < regs.size() && k < v.values.size(); ++k)
        line += " " + register_name(r.abi, regs[k]) + "=" +
                (v.values[k] ? to_hex(*v.values[k]) : std::string("<not saved>"));
    std::fprintf(out, "%s\n", line.c_str());
}

void print_register_differences(const Report& r, const RegisterComparison& c, std::size_t frame,
                                std::FILE* out) {
    for (const auto& d : c.differences)
        if (d.frame == frame)
            std::fprintf(out, "     DIFFERS: %s %s (SFrame) vs %s (CFI)\n",
                         register_name(r.abi, d.reg).c_str(), to_hex(d.sframe).c_str(),
                         to_hex(d.reference).c_str());
}

void print_modules(const Report& r, std::FILE* out) {
    if (r.verbose) {
        std::fprintf(out, "Modules:\n");
        for (const auto& m : r.modules->all()) {
            std::fprintf(out, "  %s-%s bias %s  %s  ", pc_text(m.begin).c_str(),
                         pc_text(m.end).c_str(), to_hex(m.bias).c_str(), m.path.c_str());
            if (const sframe::Section* s = m.table.sframe())
                std::fprintf(out, "SFrame v%u (%s, %u FDEs)", static_cast<unsigned>(s->version()),
                             m.table.where ? m.table.where->name.c_str() : "?", s->fde_count());
            else if (m.table.rows)
                std::fprintf(out, "%s", m.table.rows->kind().c_str());
            else
                std::fprintf(out, "no SFrame: %s",
                             m.problem.empty() ? "unknown" : m.problem.c_str());
            if (m.table.rows && !m.problem.empty()) std::fprintf(out, " (%s)", m.problem.c_str());
            std::fputc('\n', out);
        }
        return;
    }
    std::string with;
    std::size_t without = 0;
    for (const auto& m : r.modules->all()) {
        if (m.table.rows)
            with += (with.empty() ? "" : ", ") + m.short_name();
        else
            ++without;
    }
    std::fprintf(out, "Modules with SFrame: %s; %zu without (-v lists them)\n",
                 with.empty() ? "none" : with.c_str(), without);
}

void print_thread(const Report& r, const ThreadWalk& t, std::FILE* out) {
    std::fprintf(out, "\nThread %d", static_cast<int>(t.tid));
    if (t.signal != 0)
        std::fprintf(out, " (%s%s%s)", signal_name(t.signal).c_str(),
                     t.stop_detail.empty() ? "" : ", ", t.stop_detail.c_str());
    std::fputs(":\n", out);
    if (!t.error.empty()) {
        std::fprintf(out, "  cannot unwind: %s\n", t.error.c_str());
        return;
    }
    const Backtrace& bt = t.sframe;
    for (std::size_t i = 0; i < bt.frames.size(); ++i) {
        const Frame& f = bt.frames[i];
        const SymbolName sym = frame_symbol(r, f.address);
        std::fprintf(out, "#%-3zu %s in %s (%s) ", i, pc_text(f.regs.pc).c_str(),
                     symbol_text(sym.name, sym.offset).c_str(), module_text(r, f.address).c_str());
        if (i + 1 < bt.frames.size()) std::fprintf(out, " cfa=%s", to_hex(f.cfa).c_str());
        std::fprintf(out, " sp=%s fp=%s", to_hex(f.regs.sp).c_str(), to_hex(f.regs.fp).c_str());
        if (f.row) std::fprintf(out, "  [row: %s]", describe(*f.row, r.abi).c_str());
        std::fputc('\n', out);
        if (r.print_registers && i < t.saved.size() && t.saved[i].analysed)
            print_registers(r, t.saved[i], out);
        if (t.cfi && t.comparison && i == t.cfi->frames.size() &&
            t.comparison->first_difference == i) {
            std::fprintf(out, "CFI  (no frame: %s)  <-- first difference\n",
                         t.cfi->end_error.empty() ? "CFI ended" : t.cfi->end_error.c_str());
        }
        if (t.cfi && t.comparison && i < t.comparison->result.frames.size()) {
            const FrameMatch& m = t.comparison->result.frames[i];
            std::fputs("CFI  ", out);
            print_cfi_frame(t.cfi->frames[i], t.comparison->cfi[i].cfa, out);
            std::fprintf(out, "  %s%s\n", verdict(m).c_str(),
                         t.comparison->first_difference == i ? "  <-- first difference" : "");
            if (t.comparison->registers)
                print_register_differences(r, *t.comparison->registers, i, out);
        }
    }
    std::fprintf(out, "  SFrame walk ended at #%zu: %s\n",
                 bt.frames.empty() ? 0 : bt.frames.size() - 1, t.end_message.c_str());
    if (!t.cfi) return;
    for (std::size_t i = bt.frames.size(); i < t.cfi->frames.size(); ++i) {
        std::fprintf(out, "#%-3zu (CFI only) ", i);
        print_cfi_frame(t.cfi->frames[i], std::nullopt, out);
        std::fputc('\n', out);
    }
    std::fprintf(out, "  CFI walk (libdwfl): %zu frame%s, %s\n", t.cfi->frames.size(),
                 t.cfi->frames.size() == 1 ? "" : "s",
                 t.cfi->end_error.empty() ? "ended at the outermost frame"
                                          : ("ended: " + t.cfi->end_error).c_str());
    const CfiComparison& c = *t.comparison;
    std::fprintf(out, "  Compared %zu frames with CFI: %zu agree", c.result.frames.size(), c.equal);
    if (c.first_difference)
        std::fprintf(out, "; first difference at #%zu: %s", *c.first_difference,
                     c.first_difference_what.c_str());
    if (c.cfi_beyond != 0 && t.end != WalkEnd::Outermost)
        std::fprintf(out, "; CFI continues %zu frame%s past SFrame's last", c.cfi_beyond,
                     c.cfi_beyond == 1 ? "" : "s");
    std::fputc('\n', out);
    if (const auto& rc = c.registers)
        std::fprintf(out,
                     "  Compared %zu callee-saved register values with CFI (frames #1 on): %zu "
                     "equal, %zu unknown to SFrame, %zu differ\n",
                     rc->compared, rc->equal, rc->unknown, rc->differences.size());
}

} // namespace

void print_text(const Report& r, std::FILE* out) {
    if (r.kind == "core")
        std::fprintf(out, "Core %s of %s (pid %d): %s\n", r.core.c_str(), r.program.c_str(),
                     static_cast<int>(r.pid), r.stop.c_str());
    else
        std::fprintf(out, "%s %s (pid %d): %s\n", r.kind == "program" ? "Program" : "Process",
                     r.program.c_str(), static_cast<int>(r.pid), r.stop.c_str());
    print_modules(r, out);
    std::size_t failed = 0;
    for (const auto& t : r.threads) {
        print_thread(r, t, out);
        if (!t.passed(r.require_complete)) ++failed;
    }
    std::fprintf(out, "\n%zu thread%s: %zu passed, %zu failed\n", r.threads.size(),
                 r.threads.size() == 1 ? "" : "s", r.threads.size() - failed, failed);
}

} // namespace sfunwind::cli::bt

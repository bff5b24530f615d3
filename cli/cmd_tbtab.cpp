// SPDX-License-Identifier: MIT
// `sfunwind tbtab`: PowerPC64 traceback tables (64-bit PowerPC ELF ABI 3.3).
#include "commands.hpp"
#include "input.hpp"
#include "sfunwind/cfi/cfi_table.hpp"
#include "sfunwind/elf/elf_file.hpp"
#include "sfunwind/ppc64/cfi_check.hpp"
#include "sfunwind/ppc64/index.hpp"

#include <cinttypes>
#include <cstdio>
#include <optional>
#include <string>

namespace sfunwind::cli {

namespace {
constexpr const char* help =
    R"(usage: sfunwind tbtab [--json] [--scan] [--rows] [--check [--equivalent]] FILE [PC...]

Print the traceback tables of a 64-bit PowerPC ELF file (big-endian ELFv1 or
little-endian ELFv2): for each function, where its table is, where the
function starts (from tb_offset, or from the symbol table), its name and
every field of the table.

  --scan        find tables by scanning the executable sections instead of
                starting from each function symbol
  --rows        also print each function's unwind rows (CFA, RA and r31
                rules by instruction range)
  --check       compare the rows with the DWARF CFI (.eh_frame/.debug_frame)
                at every instruction that both describe; print differences
  --equivalent  with --check, also print rows that differ in form only
  --json        one JSON document instead of text
  PC...         print the row at each link-time PC instead of the tables

Exit status: 0 success, 1 when --check finds differences or a PC has no
row, 2 on usage or input errors.
)";

struct Options {
    bool json = false, scan = false, rows = false, check = false, equivalent = false;
    std::string path;
    std::vector<std::uint64_t> pcs;
};

std::string json_string(const std::string& s) {
    std::string out = "\"";
    for (const char ch : s) {
        const auto c = static_cast<unsigned char>(ch);
        if (c == '"' || c == '\\') {
            out += '\\';
            out += ch;
        } else if (c < 0x20 || c >= 0x7f) {
            char buf[8];
            std::snprintf(buf, sizeof buf, "\\u%04x", c);
            out += buf;
        } else {
            out += ch;
        }
    }
    return out + "\"";
}

// parminfo read left to right (ABI 3.3.2): 0 a fixed-point parameter, 10 a
// single-precision and 11 a double-precision floating-point one.
std::string parameters(const ppc64::TracebackTable& t) {
    if (!t.parminfo) return "";
    std::string out;
    unsigned fixed = t.fixedparms, floating = t.floatparms;
    int bit = 31;
    auto add = [&out](const char* p) { out += out.empty() ? p : std::string(", ") + p; };
    while (fixed + floating > 0 && bit >= 0) {
        const auto at = [&](int b) {
            return ((*t.parminfo >> static_cast<unsigned>(b)) & 1U) != 0;
        };
        if (!at(bit)) {
            if (fixed == 0) break;
            --fixed;
            add("i");
            bit -= 1;
        } else {
            if (floating == 0 || bit == 0) break;
            --floating;
            add(at(bit - 1) ? "d" : "f");
            bit -= 2;
        }
    }
    if (fixed + floating > 0) add("..."); // more parameters than the word describes
    return out;
}

std::string function_name(const ppc64::FoundTable& f) {
    if (f.function != nullptr) return f.function->names.front();
    if (f.table.name) return *f.table.name;
    return "";
}

void print_text(const ppc64::FoundTable& f) {
    const auto& t = f.table;
    std::printf("table %s size %u function %s (%s) <%s>\n", to_hex(t.address).c_str(), t.size,
                f.function_start ? to_hex(*f.function_start).c_str() : "?",
                ppc64::to_string(f.start_source), function_name(f).c_str());
    std::printf(
        "  version=%u lang=%u (%s)%s\n", t.version, t.lang, ppc64::language_name(t.lang).c_str(),
        t.mandatory_reversed ? " mandatory fields byte-reversed (glibc powerpc64le .quad)" : "");
    std::printf(
        "  globalink=%d is_eprol=%d has_tboff=%d int_proc=%d has_ctl=%d tocless=%d fp_present=%d "
        "log_abort=%d\n",
        t.globalink, t.is_eprol, t.has_tboff, t.int_proc, t.has_ctl, t.tocless, t.fp_present,
        t.log_abort);
    std::printf(
        "  int_handl=%d name_present=%d uses_alloca=%d cl_dis_inv=%u saves_cr=%d saves_lr=%d\n",
        t.int_handl, t.name_present, t.uses_alloca, t.cl_dis_inv, t.saves_cr, t.saves_lr);
    std::printf(
        "  stores_bc=%d fixup=%d fp_saved=%u spare3=%u gpr_saved=%u fixedparms=%u floatparms=%u "
        "parmsonstk=%d\n",
        t.stores_bc, t.fixup, t.fp_saved, t.spare3, t.gpr_saved, t.fixedparms, t.floatparms,
        t.parmsonstk);
    std::string opt;
    if (t.parminfo) opt += " parminfo=" + to_hex(*t.parminfo) + " (" + parameters(t) + ")";
    if (t.tb_offset) opt += " tb_offset=" + to_hex(*t.tb_offset);
    if (t.hand_mask) opt += " hand_mask=" + std::to_string(*t.hand_mask);
    if (t.ctl_info) {
        opt += " ctl_info=" + std::to_string(*t.ctl_info) + " ctl_info_disp=[";
        for (std::size_t i = 0; i < t.ctl_info_disp.size(); ++i)
            opt += (i ? "," : "") + std::to_string(t.ctl_info_disp[i]);
        opt += "]";
    }
    if (t.name) opt += " name_len=" + std::to_string(t.name->size()) + " name=\"" + *t.name + "\"";
    if (t.alloca_reg) opt += " alloca_reg=r" + std::to_string(*t.alloca_reg);
    if (!opt.empty()) std::printf(" %s\n", opt.c_str());
}

std::string table_json(const ppc64::FoundTable& f) {
    const auto& t = f.table;
    auto b = [](bool v) { return v ? std::string("true") : std::string("false"); };
    auto u = [](unsigned v) { return std::to_string(v); };
    std::string s = "{\"address\": " + json_string(to_hex(t.address)) + ", \"size\": " + u(t.size);
    s += ", \"function_start\": " +
         (f.function_start ? json_string(to_hex(*f.function_start)) : std::string("null"));
    s += ", \"start_from\": " + json_string(ppc64::to_string(f.start_source));
    s += ", \"symbols\": [";
    if (f.function != nullptr)
        for (std::size_t i = 0; i < f.function->names.size(); ++i)
            s += (i ? ", " : "") + json_string(f.function->names[i]);
    s += "], \"version\": " + u(t.version) + ", \"lang\": " + u(t.lang) +
         ", \"language\": " + json_string(ppc64::language_name(t.lang));
    s += ", \"globalink\": " + b(t.globalink) + ", \"is_eprol\": " + b(t.is_eprol) +
         ", \"has_tboff\": " + b(t.has_tboff) + ", \"int_proc\": " + b(t.int_proc) +
         ", \"has_ctl\": " + b(t.has_ctl) + ", \"tocless\": " + b(t.tocless) +
         ", \"fp_present\": " + b(t.fp_present) + ", \"log_abort\": " + b(t.log_abort) +
         ", \"int_handl\": " + b(t.int_handl) + ", \"name_present\": " + b(t.name_present) +
         ", \"uses_alloca\": " + b(t.uses_alloca) + ", \"cl_dis_inv\": " + u(t.cl_dis_inv) +
         ", \"saves_cr\": " + b(t.saves_cr) + ", \"saves_lr\": " + b(t.saves_lr) +
         ", \"stores_bc\": " + b(t.stores_bc) + ", \"fixup\": " + b(t.fixup) +
         ", \"fp_saved\": " + u(t.fp_saved) + ", \"spare3\": " + u(t.spare3) +
         ", \"gpr_saved\": " + u(t.gpr_saved) + ", \"fixedparms\": " + u(t.fixedparms) +
         ", \"floatparms\": " + u(t.floatparms) + ", \"parmsonstk\": " + b(t.parmsonstk);
    s += ", \"parminfo\": " + (t.parminfo ? std::to_string(*t.parminfo) : std::string("null"));
    s += ", \"parameters\": " + (t.parminfo ? json_string(parameters(t)) : std::string("null"));
    s += ", \"tb_offset\": " + (t.tb_offset ? std::to_string(*t.tb_offset) : std::string("null"));
    s += ", \"hand_mask\": " + (t.hand_mask ? std::to_string(*t.hand_mask) : std::string("null"));
    s += ", \"ctl_info\": " + (t.ctl_info ? std::to_string(*t.ctl_info) : std::string("null"));
    s += ", \"ctl_info_disp\": [";
    for (std::size_t i = 0; i < t.ctl_info_disp.size(); ++i)
        s += (i ? ", " : "") + std::to_string(t.ctl_info_disp[i]);
    s += "], \"name\": " + (t.name ? json_string(*t.name) : std::string("null"));
    s +=
        ", \"alloca_reg\": " + (t.alloca_reg ? std::to_string(*t.alloca_reg) : std::string("null"));
    s += ", \"mandatory_reversed\": " + b(t.mandatory_reversed) + "}";
    return s;
}

const char* origin_name(ppc64::FrameAnalysis::Origin o) {
    switch (o) {
    case ppc64::FrameAnalysis::Origin::Code:
        return "code";
    case ppc64::FrameAnalysis::Origin::Indirect:
        return "code via bctr";
    case ppc64::FrameAnalysis::Origin::Unreached:
        return "table";
    case ppc64::FrameAnalysis::Origin::Conflict:
        return "table (conflict)";
    case ppc64::FrameAnalysis::Origin::Data:
        return "jump table data";
    case ppc64::FrameAnalysis::Origin::Padding:
        return "padding";
    }
    return "?";
}

std::string row_text(const ppc64::RowDetail& d, const Abi& abi) {
    return "[" + to_hex(d.row.pc_begin) + ", " + to_hex(d.row.pc_end) + ") " +
           describe(d.row, abi) + " (from " + origin_name(d.origin) + ")";
}

std::string row_json(const ppc64::RowDetail& d, const Abi& abi) {
    return "{\"begin\": " + json_string(to_hex(d.row.pc_begin)) +
           ", \"end\": " + json_string(to_hex(d.row.pc_end)) +
           ", \"rules\": " + json_string(describe(d.row, abi)) +
           ", \"from\": " + json_string(origin_name(d.origin)) + "}";
}

const char* verdict_name(ppc64::CfiCheckEntry::Verdict v) {
    switch (v) {
    case ppc64::CfiCheckEntry::Verdict::Same:
        return "same";
    case ppc64::CfiCheckEntry::Verdict::Equivalent:
        return "equivalent";
    case ppc64::CfiCheckEntry::Verdict::Different:
        return "different";
    case ppc64::CfiCheckEntry::Verdict::Outermost:
        return "outermost";
    }
    return "?";
}

std::optional<Options> parse(const Args& args, bool& help_asked) {
    Options o;
    bool have_file = false;
    for (const auto& a : args) {
        if (a == "--help" || a == "-h") {
            help_asked = true;
        } else if (a == "--json") {
            o.json = true;
        } else if (a == "--scan") {
            o.scan = true;
        } else if (a == "--rows") {
            o.rows = true;
        } else if (a == "--check") {
            o.check = true;
        } else if (a == "--equivalent") {
            o.equivalent = true;
        } else if (a.size() > 1 && a[0] == '-') {
            std::fprintf(stderr, "sfunwind tbtab: unknown option '%s'\n", a.c_str());
            return std::nullopt;
        } else if (!have_file) {
            o.path = a;
            have_file = true;
        } else {
            auto pc = parse_address(a);
            if (!pc) {
                std::fprintf(stderr, "sfunwind tbtab: bad address '%s'\n", a.c_str());
                return std::nullopt;
            }
            o.pcs.push_back(*pc);
        }
    }
    if (help_asked) return o;
    if (!have_file) {
        std::fputs(help, stderr);
        return std::nullopt;
    }
    if (o.equivalent && !o.check) {
        std::fputs("sfunwind tbtab: --equivalent only applies with --check\n", stderr);
        return std::nullopt;
    }
    return o;
}

int lookup_pcs(const ppc64::TracebackIndex& index, const Options& o) {
    int status = exit_ok;
    std::string json = "[";
    for (std::size_t i = 0; i < o.pcs.size(); ++i) {
        const std::uint64_t pc = o.pcs[i];
        auto d = index.lookup_detail(pc);
        if (!d) {
            status = exit_finding;
            if (o.json)
                json += std::string(i ? ", " : "") + "{\"pc\": " + json_string(to_hex(pc)) +
                        ", \"error\": " + json_string(d.error().message()) + "}";
            else
                std::printf("%s: %s\n", to_hex(pc).c_str(), d.error().message().c_str());
            continue;
        }
        if (o.json)
            json += std::string(i ? ", " : "") + "{\"pc\": " + json_string(to_hex(pc)) +
                    ", \"function\": " + json_string(function_name(d->found)) +
                    ", \"table\": " + json_string(to_hex(d->found.table.address)) +
                    ", \"row\": " + row_json(*d, index.abi()) + "}";
        else
            std::printf("%s <%s>: table %s, rows %s\n", to_hex(pc).c_str(),
                        function_name(d->found).c_str(), to_hex(d->found.table.address).c_str(),
                        row_text(*d, index.abi()).c_str());
    }
    if (o.json) std::printf("%s]\n", json.c_str());
    return status;
}

} // namespace

int run_tbtab(const Args& args) {
    bool help_asked = false;
    auto o = parse(args, help_asked);
    if (help_asked) {
        std::fputs(help, stdout);
        return exit_ok;
    }
    if (!o) return exit_usage;

    auto file = elf::ElfFile::open(o->path);
    if (!file) {
        std::fprintf(stderr, "sfunwind tbtab: %s\n", file.error().message().c_str());
        return exit_usage;
    }
    auto index = ppc64::TracebackIndex::build(*file);
    if (!index) {
        std::fprintf(stderr, "sfunwind tbtab: %s\n", index.error().message().c_str());
        return exit_usage;
    }
    if (!o->pcs.empty()) return lookup_pcs(*index, *o);

    const ppc64::Listing listing = o->scan ? index->by_scan() : index->by_symbols();
    const Abi& abi = index->abi();
    std::uint64_t with_tboff = 0, with_name = 0;
    for (const auto& f : listing.tables) {
        with_tboff += f.table.tb_offset ? 1U : 0U;
        with_name += f.table.name ? 1U : 0U;
    }

    std::optional<ppc64::CfiCheckResult> check;
    if (o->check) {
        auto cfi = cfi::CfiTable::open(*file);
        if (!cfi) {
            std::fprintf(stderr, "sfunwind tbtab: --check: %s\n", cfi.error().message().c_str());
            return exit_usage;
        }
        ppc64::CfiCheckOptions co;
        co.keep_equivalent = o->equivalent;
        check = ppc64::check_against_cfi(*index, listing, *cfi, co);
    }

    if (o->json) {
        std::string s = "{\"file\": " + json_string(o->path) +
                        ", \"abi\": " + json_string(std::string(abi.name)) +
                        ", \"descriptors\": " + (index->uses_descriptors() ? "true" : "false") +
                        ", \"found_by\": " + json_string(o->scan ? "scan" : "symbols") +
                        ", \"tables\": [";
        for (std::size_t i = 0; i < listing.tables.size(); ++i) {
            std::string t = table_json(listing.tables[i]);
            if (o->rows) {
                t.pop_back();
                t += ", \"rows\": [";
                if (auto rows = index->rows(listing.tables[i]))
                    for (std::size_t k = 0; k < rows->size(); ++k)
                        t += (k ? ", " : "") + row_json((*rows)[k], abi);
                t += "]}";
            }
            s += (i ? ", " : "") + t;
        }
        s += "], \"problems\": [";
        for (std::size_t i = 0; i < listing.problems.size(); ++i)
            s += (i ? ", " : "") + json_string(listing.problems[i].message());
        s += "], \"summary\": {\"tables\": " + std::to_string(listing.tables.size()) +
             ", \"with_tb_offset\": " + std::to_string(with_tboff) +
             ", \"with_name\": " + std::to_string(with_name) +
             ", \"problems\": " + std::to_string(listing.problems.size()) + "}";
        if (check) {
            s += ", \"check\": {\"functions\": " + std::to_string(check->functions) +
                 ", \"instructions\": " + std::to_string(check->instructions) +
                 ", \"same\": " + std::to_string(check->same) +
                 ", \"equivalent\": " + std::to_string(check->equivalent) +
                 ", \"different\": " + std::to_string(check->different) +
                 ", \"outermost\": " + std::to_string(check->outermost) +
                 ", \"unanalysed\": " + std::to_string(check->unanalysed) +
                 ", \"unanalysed_different\": " + std::to_string(check->unanalysed_different) +
                 ", \"without_cfi\": " + std::to_string(check->without_cfi) + ", \"entries\": [";
            for (std::size_t i = 0; i < check->entries.size(); ++i) {
                const auto& e = check->entries[i];
                s += std::string(i ? ", " : "") + "{\"pc\": " + json_string(to_hex(e.pc)) +
                     ", \"function\": " + json_string(e.function) +
                     ", \"verdict\": " + json_string(verdict_name(e.verdict)) +
                     ", \"message\": " + json_string(e.message) + "}";
            }
            s += "]}";
        }
        std::printf("%s}\n", s.c_str());
    } else {
        std::printf("%s: %s, %s\n", o->path.c_str(), std::string(abi.name).c_str(),
                    index->uses_descriptors() ? "ELFv1 function descriptors"
                                              : "no function descriptors");
        for (const auto& f : listing.tables) {
            print_text(f);
            if (o->rows) {
                auto rows = index->rows(f);
                if (!rows)
                    std::printf("  rows: %s\n", rows.error().message().c_str());
                else
                    for (const auto& d : *rows)
                        std::printf("  %s\n", row_text(d, abi).c_str());
            }
        }
        for (const auto& p : listing.problems)
            std::printf("problem: %s\n", p.message().c_str());
        std::printf("%zu tables (%" PRIu64 " with tb_offset, %" PRIu64
                    " with a name) found by %s; %zu problems\n",
                    listing.tables.size(), with_tboff, with_name,
                    o->scan ? "scanning the code" : "symbol", listing.problems.size());
        if (check) {
            for (const auto& e : check->entries)
                std::printf("%s %s <%s>: %s\n", verdict_name(e.verdict), to_hex(e.pc).c_str(),
                            e.function.c_str(), e.message.c_str());
            std::printf("check against CFI: %" PRIu64 " functions, %" PRIu64
                        " instructions: %" PRIu64 " same, %" PRIu64 " equivalent, %" PRIu64
                        " different, %" PRIu64 " outermost, %" PRIu64 " not analysed (%" PRIu64
                        " of them different); %" PRIu64 " instructions without CFI\n",
                        check->functions, check->instructions, check->same, check->equivalent,
                        check->different, check->outermost, check->unanalysed,
                        check->unanalysed_different, check->without_cfi);
        }
    }
    return check && check->different > 0 ? exit_finding : exit_ok;
}

} // namespace sfunwind::cli

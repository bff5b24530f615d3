// SPDX-License-Identifier: MIT
// CfiTable: libdw's CFI (dwarf_getcfi_elf for .eh_frame, dwarf_getcfi for
// .debug_frame) queried per PC; rules are translated by dwarf_rules.cpp and
// FDEs enumerated by fde_list.cpp.
#include "sfunwind/cfi/cfi_table.hpp"

#include "dwarf_rules.hpp"
#include "fde_list.hpp"

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <elfutils/libdw.h>
#include <limits>

namespace sfunwind::cfi {
namespace {

// dwarf_cfi_addrframe's result is malloc'd (libdw.h).
struct FrameDeleter {
    void operator()(Dwarf_Frame* frame) const noexcept { std::free(frame); }
};
using FramePtr = std::unique_ptr<Dwarf_Frame, FrameDeleter>;

std::string libdw_message() {
    const char* m = dwarf_errmsg(-1);
    return m != nullptr ? m : "unknown libdw error";
}

} // namespace

const char* to_string(Source source) noexcept {
    switch (source) {
    case Source::EhFrame:
        return ".eh_frame";
    case Source::DebugFrame:
        return ".debug_frame";
    case Source::EhFrameThenDebugFrame:
        return ".eh_frame+.debug_frame";
    }
    return "?";
}

struct CfiTable::Impl {
    std::string file_name;
    Abi abi{};
    Source source = Source::EhFrame;
    Dwarf_CFI* eh = nullptr;    // from dwarf_getcfi_elf: released with dwarf_cfi_end
    Dwarf* dwarf = nullptr;     // from dwarf_begin_elf: owns `debug`
    Dwarf_CFI* debug = nullptr; // from dwarf_getcfi: never released by itself
    std::vector<FdeRange> fdes;
    std::vector<Error> errors;

    Impl() = default;
    Impl(const Impl&) = delete;
    Impl& operator=(const Impl&) = delete;
    ~Impl() {
        if (eh != nullptr) dwarf_cfi_end(eh);
        if (dwarf != nullptr) dwarf_end(dwarf);
    }

    Dwarf_CFI* cfi_of(Source s) const { return s == Source::DebugFrame ? debug : eh; }
    const FdeRange* fde_for(std::uint64_t pc) const;
    Expected<CfiRow> row_in(Source s, std::uint64_t pc) const;
    RuleState register_rule(Dwarf_Frame* frame, int regno, RegRule& out) const;
};

const FdeRange* CfiTable::Impl::fde_for(std::uint64_t pc) const {
    auto it = std::upper_bound(fdes.begin(), fdes.end(), pc,
                               [](std::uint64_t p, const FdeRange& f) { return p < f.begin; });
    if (it == fdes.begin()) return nullptr;
    --it;
    return pc < it->end ? &*it : nullptr;
}

RuleState CfiTable::Impl::register_rule(Dwarf_Frame* frame, int regno, RegRule& out) const {
    Dwarf_Op ops_mem[3];
    Dwarf_Op* ops = nullptr;
    std::size_t nops = 0;
    if (dwarf_frame_register(frame, regno, ops_mem, &ops, &nops) != 0) {
        out = RegRule::undefined();
        return {false, "libdw cannot give the rule: " + libdw_message()};
    }
    auto t = detail::translate_register(ops, nops);
    out = t.rule;
    return t.state;
}

Expected<CfiRow> CfiTable::Impl::row_in(Source s, std::uint64_t pc) const {
    Dwarf_CFI* cfi = cfi_of(s);
    const FdeRange* fde = fde_for(pc);
    if (cfi == nullptr)
        return Error(Errc::NotFound, file_name + ": no " + to_string(s) + " CFI", Address{pc});
    Dwarf_Frame* raw = nullptr;
    const int failed = dwarf_cfi_addrframe(cfi, pc, &raw);
    FramePtr frame(raw); // also when it failed: libdw.h promises nothing then
    if (failed != 0) {
        // A PC inside an FDE we enumerated that libdw cannot evaluate is a
        // broken FDE; otherwise nothing covers the PC.
        if (fde != nullptr && fde->source == s)
            return Error(Errc::Malformed,
                         file_name + ": " + to_string(s) + ": cannot evaluate the CFI at " +
                             to_hex(pc) + ": " + libdw_message(),
                         Address{pc});
        return Error(Errc::NotFound,
                     file_name + ": " + to_string(s) + ": no FDE covers " + to_hex(pc),
                     Address{pc});
    }

    CfiRow row;
    row.source = s;
    Dwarf_Addr start = 0;
    Dwarf_Addr end = 0;
    bool signal = false;
    const int ra = dwarf_frame_info(frame.get(), &start, &end, &signal);
    if (ra < 0)
        return Error(Errc::Malformed,
                     file_name + ": " + to_string(s) + ": no frame information at " + to_hex(pc) +
                         ": " + libdw_message(),
                     Address{pc});
    row.begin = start;
    row.end = end;
    if (fde != nullptr && fde->source == s) {
        row.fde_begin = fde->begin;
        row.fde_end = fde->end;
        row.rules.fde_index = static_cast<std::uint32_t>(fde - fdes.data());
    }

    Row& r = row.rules;
    r.pc_begin = start;
    r.pc_end = end;
    r.func_start = row.fde_begin;
    r.func_size = static_cast<std::uint32_t>(std::min<std::uint64_t>(
        row.fde_end - row.fde_begin, std::numeric_limits<std::uint32_t>::max()));
    r.signal_frame = signal;

    Dwarf_Op* ops = nullptr;
    std::size_t nops = 0;
    if (dwarf_frame_cfa(frame.get(), &ops, &nops) != 0) {
        row.cfa_state = {false, "libdw cannot give the CFA rule: " + libdw_message()};
    } else {
        auto t = detail::translate_cfa(ops, nops);
        r.cfa = t.rule;
        row.cfa_state = t.state;
    }
    // The RA is the CIE's return-address column (DWARF 5 section 6.4.1).
    if (ra > std::numeric_limits<std::uint16_t>::max()) {
        row.ra_state = {false, "return-address column " + std::to_string(ra) + " out of range"};
        r.ra = RegRule::undefined();
    } else {
        row.ra_column = static_cast<std::uint16_t>(ra);
        row.ra_state = register_rule(frame.get(), ra, r.ra);
    }
    row.fp_state = register_rule(frame.get(), abi.fp_reg, r.fp);
    const auto untracked = untracked_callee_saved(abi);
    row.callee_saved.resize(untracked.size());
    for (std::size_t i = 0; i < untracked.size(); ++i) {
        CfiRow::Register& c = row.callee_saved[i];
        c.reg = untracked[i];
        c.state = register_rule(frame.get(), c.reg, c.rule);
    }

    r.outermost = row.ra_state.representable && r.ra.kind == RegRule::Kind::Undefined;
    auto other_register = [&](std::uint16_t reg) { return reg != abi.sp_reg && reg != abi.fp_reg; };
    r.topmost_only =
        (row.cfa_state.representable && other_register(r.cfa.reg)) ||
        (row.ra_state.representable && r.ra.reads_register() && other_register(r.ra.reg)) ||
        (row.fp_state.representable && r.fp.reads_register() && other_register(r.fp.reg));
    return row;
}

CfiTable::CfiTable(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}
CfiTable::CfiTable(CfiTable&&) noexcept = default;
CfiTable& CfiTable::operator=(CfiTable&&) noexcept = default;
CfiTable::~CfiTable() = default;

Expected<CfiTable> CfiTable::open(const elf::ElfFile& file, Source which) {
    const auto abi = file.abi();
    if (!abi)
        return Error(Errc::Unsupported, file.name() + ": no sfunwind ABI for ELF machine " +
                                            std::to_string(file.machine()));
    auto impl = std::make_unique<Impl>();
    impl->file_name = file.name();
    impl->abi = *abi;
    ::Elf* elf = file.libelf_handle();

    std::vector<FdeRange> eh_fdes;
    std::vector<FdeRange> debug_fdes;
    if (which != Source::DebugFrame) {
        if (auto bytes = detail::eh_frame_bytes(file, impl->errors)) {
            impl->eh = dwarf_getcfi_elf(elf);
            if (impl->eh == nullptr) {
                impl->errors.emplace_back(Errc::Malformed, file.name() + ": libdw cannot read " +
                                                               bytes->name + ": " +
                                                               libdw_message());
            } else {
                auto listing = detail::list_fdes(file, *bytes, Source::EhFrame);
                eh_fdes = std::move(listing.fdes);
                for (auto& e : listing.errors)
                    impl->errors.push_back(std::move(e));
            }
        }
    }
    if (which != Source::EhFrame) {
        if (auto bytes = detail::debug_frame_bytes(file)) {
            impl->dwarf = dwarf_begin_elf(elf, DWARF_C_READ, nullptr);
            if (impl->dwarf != nullptr) impl->debug = dwarf_getcfi(impl->dwarf);
            if (impl->debug == nullptr) {
                impl->errors.emplace_back(
                    Errc::Malformed,
                    file.name() + ": libdw cannot read .debug_frame: " + libdw_message());
            } else {
                auto listing = detail::list_fdes(file, *bytes, Source::DebugFrame);
                debug_fdes = std::move(listing.fdes);
                for (auto& e : listing.errors)
                    impl->errors.push_back(std::move(e));
            }
        }
    }
    if (impl->eh == nullptr && impl->debug == nullptr) {
        std::string what = file.name() + ": no usable " + to_string(which) + " CFI";
        if (!impl->errors.empty()) what += " (" + impl->errors.front().message() + ")";
        return Error(Errc::NotFound, what);
    }
    impl->source = impl->eh != nullptr && impl->debug != nullptr ? Source::EhFrameThenDebugFrame
                   : impl->eh != nullptr                         ? Source::EhFrame
                                                                 : Source::DebugFrame;

    auto by_begin = [](const FdeRange& a, const FdeRange& b) { return a.begin < b.begin; };
    std::stable_sort(eh_fdes.begin(), eh_fdes.end(), by_begin);
    impl->fdes = eh_fdes;
    for (const auto& d : debug_fdes) {
        // .eh_frame wins where both describe a PC (at() asks it first).
        auto it = std::lower_bound(eh_fdes.begin(), eh_fdes.end(), d.end,
                                   [](const FdeRange& f, std::uint64_t e) { return f.begin < e; });
        const bool overlaps = it != eh_fdes.begin() && std::prev(it)->end > d.begin;
        if (!overlaps) impl->fdes.push_back(d);
    }
    std::stable_sort(impl->fdes.begin(), impl->fdes.end(), by_begin);
    return CfiTable(std::move(impl));
}

Source CfiTable::source() const noexcept {
    return impl_->source;
}
const Abi& CfiTable::abi() const noexcept {
    return impl_->abi;
}
const std::vector<FdeRange>& CfiTable::fdes() const noexcept {
    return impl_->fdes;
}
const std::vector<Error>& CfiTable::fde_errors() const noexcept {
    return impl_->errors;
}

Expected<CfiRow> CfiTable::at(std::uint64_t pc) const {
    if (const FdeRange* fde = impl_->fde_for(pc)) return impl_->row_in(fde->source, pc);
    // Not enumerated (an encoding fde_list does not read, say): libdw may
    // still find it.
    Expected<CfiRow> row =
        impl_->row_in(impl_->eh != nullptr ? Source::EhFrame : Source::DebugFrame, pc);
    if (!row && row.error().code() == Errc::NotFound && impl_->eh != nullptr &&
        impl_->debug != nullptr)
        return impl_->row_in(Source::DebugFrame, pc);
    return row;
}

Expected<std::vector<CfiRow>> CfiTable::rows(const FdeRange& fde) const {
    std::vector<CfiRow> out;
    std::uint64_t pc = fde.begin;
    // Each step moves to the end of a row, which libdw puts at the next
    // advance_loc or the FDE end: at most one step per CFA instruction.
    while (pc < fde.end) {
        auto row = impl_->row_in(fde.source, pc);
        if (!row) return std::move(row).error();
        if (row->end <= pc || row->begin > pc)
            return Error(Errc::Malformed,
                         impl_->file_name + ": " + to_string(fde.source) + ": the row at " +
                             to_hex(pc) + " spans [" + to_hex(row->begin) + ", " +
                             to_hex(row->end) + ")",
                         Address{pc});
        // After DW_CFA_restore_state, libdw (0.188) reports the start of the
        // row that was remembered, not of the restored one: the row really
        // starts where the previous one ended.
        row->begin = pc;
        row->rules.pc_begin = pc;
        row->rules.fre_index = static_cast<std::uint32_t>(out.size());
        pc = std::min(row->end, fde.end);
        out.push_back(std::move(*row));
    }
    return out;
}

} // namespace sfunwind::cfi

// SPDX-License-Identifier: MIT
// `sframe show-unwind -a ADDR | -n NAME`: the SFrame rows of the function at
// an address, laid out like LLDB's `image show-unwind` prints an UnwindPlan.
#include "command.hpp"
#include "display.hpp"
#include "sb_target.hpp"
#include "sfunwind/row.hpp"

#include <array>
#include <lldb/API/SBFrame.h>
#include <lldb/API/SBProcess.h>
#include <lldb/API/SBSymbol.h>
#include <lldb/API/SBSymbolContext.h>
#include <lldb/API/SBSymbolContextList.h>
#include <lldb/API/SBThread.h>
#include <lldb/lldb-defines.h>
#include <string>

namespace sfunwind::lldb_plugin {
namespace {

constexpr std::array<OptionSpec, 2> show_options{{
    {'a', "address", true},
    {'n', "name", true},
}};

// The value of an address argument: a number, or $reg of the selected frame.
std::optional<std::uint64_t> address_argument(lldb::SBTarget& target, const std::string& word) {
    if (auto n = parse_number(word)) return n;
    if (word.size() > 1 && word[0] == '$') {
        lldb::SBFrame frame = target.GetProcess().GetSelectedThread().GetSelectedFrame();
        if (!frame.IsValid()) return std::nullopt;
        if (word == "$pc") return frame.GetPC();
        if (word == "$sp") return frame.GetSP();
        lldb::SBValue v = frame.FindRegister(word.c_str() + 1);
        lldb::SBError error;
        const std::uint64_t value = v.IsValid() ? v.GetValueAsUnsigned(error, 0) : 0;
        if (!v.IsValid() || error.Fail()) return std::nullopt;
        return value;
    }
    return std::nullopt;
}

bool show(lldb::SBTarget& target, const std::vector<TargetModule>& modules, std::uint64_t addr,
          bool mark_addr, lldb::SBCommandReturnObject& result) {
    const TargetModule* mod = nullptr;
    for (const auto& m : modules)
        if (m.loaded && addr >= m.begin && addr < m.end) mod = &m;
    if (mod == nullptr) {
        result.Printf("%s: not in any loaded module\n", to_hex(addr).c_str());
        return false;
    }
    if (!mod->table->sframe()) {
        result.Printf("%s: %s has no usable SFrame section (%s)\n", to_hex(addr).c_str(),
                      mod->name.c_str(), mod->table->problem().c_str());
        return false;
    }
    const sframe::Section& section = *mod->table->sframe();
    const std::uint64_t link_pc = addr - mod->bias;
    auto fde = section.find_fde(link_pc);
    if (!fde) {
        result.Printf("%s (link-time %s in %s): %s\n", to_hex(addr).c_str(),
                      to_hex(link_pc).c_str(), mod->name.c_str(), fde.error().message().c_str());
        return false;
    }
    const std::uint64_t begin = fde->start + mod->bias;
    std::string fn = symbol_at(target, FrameAddress::instruction_pointer(begin));
    result.Printf(
        "SFrame unwind rows for %s in %s: FDE %u, [%s-%s) (link-time [%s-%s)), SFrame %s\n",
        fn.empty() ? "??" : fn.c_str(), mod->name.c_str(), fde->index, to_hex(begin).c_str(),
        to_hex(begin + fde->size).c_str(), to_hex(fde->start).c_str(), to_hex(fde->end()).c_str(),
        version_name(section.version()));
    result.Printf("  %s FDE, %s FREs, %u FREs%s%s\n",
                  fde->fde_type == sframe::FdeType::Flex ? "flexible" : "default",
                  fde->pc_type == sframe::PcType::Mask ? "PC-mask" : "PC-increment", fde->num_fres,
                  fde->signal ? ", signal frame" : "",
                  fde->pauth_key == sframe::PauthKey::B ? ", PAuth key B" : "");
    // SFrame v1 stores no repeat block size; the core implies the ABI's PLT
    // entry size, or none (sframe/section.hpp, Fde::rep_size).
    const std::string stored =
        std::string("SFrame ") + version_name(section.version()) + " stores no size";
    if (fde->pc_type == sframe::PcType::Mask && fde->rep_size == 0)
        result.Printf(
            "  no repeat block size (%s, and none is implied for %s): no row can be looked up\n",
            stored.c_str(), std::string(section.abi().name).c_str());
    else if (fde->pc_type == sframe::PcType::Mask)
        result.Printf("  the rows repeat every %u bytes (PC %% %u selects the row)%s\n",
                      fde->rep_size, fde->rep_size,
                      fde->rep_size_implied ? ("; implied: " + stored).c_str() : "");
    auto fres = section.fres(*fde);
    if (!fres) {
        result.Printf("  cannot read the FREs: %s\n", fres.error().message().c_str());
        return false;
    }
    if (fres->empty()) {
        auto row = section.lookup(fde->start);
        result.Printf("  no FREs: %s\n",
                      row ? describe(*row, section.abi()).c_str() : row.error().message().c_str());
        return true;
    }
    const bool repeats = fde->pc_type == sframe::PcType::Mask && fde->rep_size != 0;
    const std::uint64_t span = repeats ? fde->rep_size : fde->size;
    // The rows are listed for the first repeat block; the address is marked
    // on the row that holds it in its own block.
    const std::uint64_t block = repeats && addr >= begin ? (addr - begin) / span * span : 0;
    for (std::uint32_t i = 0; i < fres->size(); ++i) {
        const std::uint64_t next = i + 1 < fres->size() ? (*fres)[i + 1].start : span;
        auto row = section.row(*fde, (*fres)[i], i, next);
        const std::uint64_t at = begin + (*fres)[i].start;
        std::string marker;
        if (mark_addr && addr >= at + block && addr < begin + block + next)
            marker = "  <-- " + to_hex(addr);
        if (row)
            result.Printf("row[%u]: %s (+%u): %s%s\n", i, addr16(at).c_str(), (*fres)[i].start,
                          describe(*row, section.abi()).c_str(), marker.c_str());
        else
            result.Printf("row[%u]: %s (+%u): <%s>\n", i, addr16(at).c_str(), (*fres)[i].start,
                          row.error().message().c_str());
    }
    return true;
}

class ShowUnwindCommand final : public Command {
  public:
    using Command::Command;

  protected:
    std::span<const OptionSpec> options() const override { return show_options; }

    bool run(lldb::SBDebugger& debugger, const ParsedArgs& args,
             lldb::SBCommandReturnObject& result) override {
        lldb::SBTarget target = debugger.GetSelectedTarget();
        if (!target.IsValid()) {
            result.SetError("sframe show-unwind: no target");
            return false;
        }
        const bool by_addr = args.has("address");
        const bool by_name = args.has("name");
        if (by_addr == by_name || !args.positional.empty()) {
            result.SetError("sframe show-unwind: give exactly one of -a ADDRESS or -n NAME (usage: "
                            "sframe show-unwind -a ADDRESS | -n NAME)");
            return false;
        }
        const auto modules = session_.catalog.modules(target);
        std::vector<std::uint64_t> addrs;
        if (by_addr) {
            const auto a = address_argument(target, *args.get("address"));
            if (!a) {
                result.SetError(
                    ("sframe show-unwind: not an address: '" + *args.get("address") + "'").c_str());
                return false;
            }
            addrs.push_back(*a);
        } else {
            lldb::SBSymbolContextList list = target.FindSymbols(args.get("name")->c_str());
            for (std::uint32_t i = 0; i < list.GetSize(); ++i) {
                lldb::SBSymbol sym = list.GetContextAtIndex(i).GetSymbol();
                const std::uint64_t a = sym.GetStartAddress().GetLoadAddress(target);
                if (a != LLDB_INVALID_ADDRESS) addrs.push_back(a);
            }
            if (addrs.empty()) {
                result.SetError(
                    ("sframe show-unwind: no loaded symbol named '" + *args.get("name") + "'")
                        .c_str());
                return false;
            }
        }
        bool any = false;
        for (const std::uint64_t a : addrs)
            any = show(target, modules, a, by_addr, result) || any;
        if (!any) result.SetStatus(lldb::eReturnStatusFailed);
        return any;
    }
};

} // namespace

lldb::SBCommandPluginInterface* make_show_unwind_command(Session& s) {
    return new ShowUnwindCommand(s);
}

} // namespace sfunwind::lldb_plugin

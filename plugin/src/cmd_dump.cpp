// SPDX-License-Identifier: MIT
// `sframe dump [MODULE]`: a module's SFrame section in objdump --sframe's
// layout (the core's sframe::dump()).
#include "command.hpp"
#include "sfunwind/sframe/dump.hpp"

#include <array>
#include <lldb/API/SBFileSpec.h>

namespace sfunwind::lldb_plugin {
namespace {

constexpr std::array<OptionSpec, 0> dump_options{};

class DumpCommand final : public Command {
  public:
    using Command::Command;

  protected:
    std::span<const OptionSpec> options() const override { return dump_options; }

    bool run(lldb::SBDebugger& debugger, const ParsedArgs& args,
             lldb::SBCommandReturnObject& result) override {
        lldb::SBTarget target = debugger.GetSelectedTarget();
        if (!target.IsValid()) {
            result.SetError("sframe dump: no target");
            return false;
        }
        if (args.positional.size() > 1) {
            result.SetError("sframe dump: give at most one module");
            return false;
        }
        const auto modules = session_.catalog.modules(target);
        std::string wanted;
        if (!args.positional.empty()) {
            wanted = args.positional.front();
        } else if (const char* exe = target.GetExecutable().GetFilename()) {
            wanted = exe;
        }
        const TargetModule* found = nullptr;
        for (const auto& m : modules)
            if (m.name == wanted || m.path == wanted) found = &m;
        if (found == nullptr) {
            result.SetError(
                ("sframe dump: no module named '" + wanted + "' (see 'image list')").c_str());
            return false;
        }
        if (!found->table->sframe()) {
            result.SetError(
                ("sframe dump: " + found->name + ": " + found->table->problem()).c_str());
            return false;
        }
        sframe::DumpOptions opt;
        if (found->table->where) opt.section_name = found->table->where->name;
        result.Printf("%s:\n%s", found->path.c_str(),
                      sframe::dump(*found->table->sframe(), opt).c_str());
        return true;
    }
};

} // namespace

lldb::SBCommandPluginInterface* make_dump_command(Session& s) {
    return new DumpCommand(s);
}

} // namespace sfunwind::lldb_plugin

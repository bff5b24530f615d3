// SPDX-License-Identifier: MIT
#include "command.hpp"

#include <exception>
#include <string>

namespace sfunwind::lldb_plugin {

bool Command::DoExecute(lldb::SBDebugger debugger, char** argv,
                        lldb::SBCommandReturnObject& result) {
    try {
        auto args = parse_args(argv, options());
        std::string bad;
        if (!args)
            bad = args.error().message();
        else if (args->positional.size() > max_positional_)
            bad = "unexpected argument '" + args->positional[max_positional_] + "'";
        if (!bad.empty()) {
            std::string line = name_ + ": " + bad;
            if (!usage_.empty()) line += " (usage: " + usage_ + ")";
            result.SetError(line.c_str());
            return false;
        }
        const bool ok = run(debugger, *args, result);
        for (const auto& problem : session_.catalog.take_new_problems())
            result.AppendWarning(("sframe: " + problem).c_str());
        // LLDB leaves a plugin command's status at "started" (not a
        // success) unless the command sets it.
        if (ok)
            result.SetStatus(lldb::eReturnStatusSuccessFinishResult);
        else if (result.GetStatus() != lldb::eReturnStatusFailed)
            result.SetStatus(lldb::eReturnStatusFailed);
        return ok;
    } catch (const std::exception& e) {
        result.SetError((std::string("sframe: internal error: ") + e.what()).c_str());
    } catch (...) {
        result.SetError("sframe: internal error");
    }
    return false;
}

} // namespace sfunwind::lldb_plugin

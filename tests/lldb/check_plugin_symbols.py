#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""The LLDB plugin's undefined symbols are all provided at load time.

The plugin is not linked against liblldb (one build loads in LLDB 19 and
23), so it cannot be linked with --no-undefined: a symbol that no library it
names defines would only show as "undefined symbol" when LLDB loads it.
Every undefined symbol must be a versioned one (glibc, libstdc++, libgcc,
libelf's ELFUTILS_*) or part of the SB API (namespace lldb), which the
liblldb that loads the plugin provides.

usage: check_plugin_symbols.py PLUGIN
The last line is "N passed, M failed".
"""

import subprocess
import sys


def main():
    plugin = sys.argv[1]
    out = subprocess.run(["nm", "-D", "--undefined-only", plugin], capture_output=True, text=True,
                         check=True).stdout
    names = [line.split()[-1] for line in out.splitlines() if line.split() and line.split()[0] == "U"]
    demangled = subprocess.run(["c++filt"], input="\n".join(names), capture_output=True, text=True,
                               check=True).stdout.splitlines()
    bad = [f"{n} ({d})" for n, d in zip(names, demangled) if "@" not in n and not d.startswith("lldb::")]
    lldb = sum(1 for d in demangled if d.startswith("lldb::"))
    print(f"{len(names)} undefined symbols: {lldb} from the SB API, {len(names) - lldb - len(bad)} versioned")
    for b in bad:
        print("FAIL no library provides " + b)
    ok = bool(names) and lldb > 0 and not bad
    print(f"{1 if ok else 0} passed, {0 if ok else 1} failed")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())

#!/usr/bin/env bash
# demo.sh: set up a Debian 12 machine, build sfunwind, and show its main job
# on a bundled program: built with GNU as 2.47 (SFrame v3), -O2 without frame
# pointers, stopping with SIGTRAP 10 calls deep, in a copy whose .eh_frame,
# .eh_frame_hdr and .debug_frame are gone (SFrame is all that is left).
#   1. GDB 13 and LLDB 19 on that program without sfunwind (a wrong or a
#      truncated stack), then with it: each backtrace is checked against the
#      same debugger's on the program's CFI build;
#   2. the command-line tool: `sfunwind bt --compare-cfi` on the CFI build
#      (SFrame beside elfutils' CFI unwind, frame by frame).
# Exit status: 0 when every sfunwind backtrace is the CFI build's.
set -euo pipefail
repo=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
cd "$repo"
scripts/setup-host.sh
cmake --preset default >/dev/null
cmake --build --preset default --target sfunwind sfunwind_gdb sfunwind_lldb -j "$(nproc)"
build=build/default
sfunwind=$build/cli/sfunwind
cfi=tests/fixtures/bin/gas-2.47/recurse-O2-nofp-static
prog=$cfi-noeh
status=0

# One line per backtrace: its functions (?? where the debugger has none),
# runs of the same function folded ("recurse x6").
fold() { awk '{ if ($0 == last) n++; else { if (NR > 1) printf "%s%s, ", last, (n > 1 ? " x" n : ""); last = $0; n = 1 } }
              END { if (NR) printf "%s%s", last, (n > 1 ? " x" n : ""); printf " (%d frame%s)\n", NR, (NR == 1 ? "" : "s") }'; }
# The frames of a `bt` as "PC FUNCTION" lines, up to main (above it, crt1's
# _start has neither SFrame nor, in the copy, CFI: each debugger guesses).
to_main() { awk '{ print } $2 == "main" { exit }'; }
gdb_frames() { sed -nE 's/^#[0-9]+ +(0x[0-9a-f]+ in )?([^ ]+) .*/\1\2/p' | sed -E 's/^(0x[0-9a-f]+) in /\1 /'; }
# shellcheck disable=SC2016 # a sed address and an LLDB backquote, not shell expansions
lldb_frames() { sed -n '/^(lldb) bt/,$p' | sed -nE 's/^[ *]*frame #[0-9]+: (0x[0-9a-f]+)( [^`]*`([^ ]+))?.*/\1 \3/p' | sed -E 's/ $/ ??/'; }
gdb_bt() { timeout 120 gdb -nx -q -batch "${@:2}" -ex run -ex bt --args "$1" trap 2>/dev/null | gdb_frames | to_main; }
lldb_bt() { timeout 120 lldb-19 -b "${@:2}" -o run -k bt "$1" -- trap 2>/dev/null | lldb_frames | to_main; }
show() {  # show LABEL FRAMES [REFERENCE]
  printf '  %-22s %s\n' "$1" "$(awk '{print $2}' <<<"$2" | fold)"
  if [[ $# -gt 2 ]]; then
    if [[ "$2" == "$3" ]]; then
      echo "  $(printf '%-22s' '') = the CFI build's backtrace to main, frame for frame (pc, function)"
    else
      echo "  $(printf '%-22s' '') DIFFERENT from the CFI build's to main: $(awk '{print $2}' <<<"$3" | fold)"
      status=1
    fi
  fi
}

echo
echo "== $prog: SFrame only (.eh_frame, .eh_frame_hdr and .debug_frame removed)"
echo "GDB $(gdb --version | head -1 | awk '{print $NF}'):"
ref=$(gdb_bt "$cfi")
show "without sfunwind:" "$(gdb_bt "$prog")"
show "with sfunwind:" "$(gdb_bt "$prog" -iex "source $build/gdb-python/sfunwind.py")" "$ref"
echo "LLDB $(lldb-19 --version | head -1 | awk '{print $3}'):"
ref=$(lldb_bt "$cfi")
show "without sfunwind:" "$(lldb_bt "$prog")"
show "with sfunwind:" "$(lldb_bt "$prog" -O "plugin load $build/plugin/libsfunwind_lldb.so")" "$ref"

echo
echo "== $sfunwind bt --compare-cfi -- $cfi"
"$sfunwind" bt --compare-cfi -- "$cfi" || status=1
exit $status

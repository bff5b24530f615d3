#!/usr/bin/env bash
# tests/ppc64/cli.sh: `sfunwind tbtab` on the PowerPC64 fixtures.
#
#   tests/ppc64/cli.sh SFUNWIND    (the sfunwind binary, e.g. build/cli/sfunwind)
#
# Checks, for each fixture: the table count and summary, that --scan finds
# the same tables, the JSON dump (names equal the symbols, tb_offset is the
# code length), a PC lookup in leaf, and --check against the CFI (no
# difference in the program's own functions). Exit status 0 when all hold.
set -euo pipefail

SFUNWIND=${1:?usage: tests/ppc64/cli.sh SFUNWIND}
HERE=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
FIX=$(cd "$HERE/../fixtures/ppc64" && pwd)
failures=0
fail() { printf 'FAIL %s\n' "$*"; failures=$((failures + 1)); }

# Tables with tb_offset (and names): glibc's assembly routines, plus the six
# functions of tbtab.c in the -mtraceback=full builds.
declare -A GLIBC_NAMED=([ppc64]=46 [ppc64le]=51)
declare -A TABLES=([ppc64]=867 [ppc64le]=965)

for bin in "$FIX"/bin/*/tbtab-*-static; do
  arch=$(basename "$(dirname "$bin")")
  name=$(basename "$bin")
  named=${GLIBC_NAMED[$arch]}
  tables=${TABLES[$arch]}
  if [[ $name == *-full-* ]]; then named=$((named + 6)); fi
  # At -O0 main calls glibc's atoi; at -O2 GCC turns it into a strtol call.
  if [[ $name == *-O0-* ]]; then tables=$((tables + 1)); fi

  out=$("$SFUNWIND" tbtab "$bin") || fail "$name: tbtab exit $?"
  want="$tables tables ($named with tb_offset, $named with a name) found by symbol; 6 problems"
  [[ $(tail -1 <<<"$out") == "$want" ]] || fail "$name: summary '$(tail -1 <<<"$out")', want '$want'"
  scan=$("$SFUNWIND" tbtab --scan "$bin" | grep -c '^table ') || true
  [[ $scan == "$tables" ]] || fail "$name: --scan found $scan tables, want $tables"

  "$SFUNWIND" tbtab --json "$bin" | python3 -c '
import json, sys
d = json.load(sys.stdin)
full = "-full-" in sys.argv[1]
fns = {t["symbols"][0]: t for t in d["tables"] if t["symbols"]}
for f in ["main", "level_1", "with_alloca", "with_fprs", "recurse", "leaf"]:
    t = fns[f]
    assert (t["name"] == f) == full, (f, t["name"])
    if full:
        assert int(t["address"], 16) - int(t["function_start"], 16) == t["tb_offset"], f
        assert t["start_from"] == "tb_offset", f
    else:
        assert t["tb_offset"] is None and t["start_from"] == "symbol", f
for t in d["tables"]:
    if t["name"] is not None:
        assert t["name"] in t["symbols"], (t["name"], t["symbols"])
assert fns["leaf"]["stores_bc"] == ("-O0-" in sys.argv[1])
' "$name" || fail "$name: JSON checks"

  leaf=$("$SFUNWIND" tbtab --json "$bin" | python3 -c '
import json, sys
d = json.load(sys.stdin)
print([t["function_start"] for t in d["tables"] if "leaf" in t["symbols"]][0])')
  row=$("$SFUNWIND" tbtab "$bin" "$leaf") || fail "$name: lookup exit $?"
  [[ $row == *"<leaf>"*"CFA=r1+0 RA=same FP=same topmost-only"* ]] || fail "$name: leaf entry row: $row"

  # `sfunwind lookup` reads a ppc64 file without .sframe through its
  # traceback tables (the core's unwind-table opener, as the debuggers do):
  # every instruction of the program's functions has tbtab's rules.
  pcs=$("$SFUNWIND" tbtab --json "$bin" | python3 -c '
import json, sys
d = json.load(sys.stdin)
for t in d["tables"]:
    if set(t["symbols"]) & {"main", "level_1", "with_alloca", "with_fprs", "recurse", "leaf"}:
        start = int(t["function_start"], 16)
        for pc in range(start, int(t["address"], 16), 4):
            print(hex(pc))')
  npcs=$(wc -w <<<"$pcs")
  rules() { sed -E 's/^(0x[0-9a-f]+).*(CFA=[^(]*[^ (]).*$/\1 \2/'; }
  # shellcheck disable=SC2086
  got=$("$SFUNWIND" lookup "$bin" $pcs | rules) || fail "$name: lookup exit $?"
  # shellcheck disable=SC2086
  want=$("$SFUNWIND" tbtab "$bin" $pcs | rules)
  if [[ $npcs -lt 100 || $got != "$want" || $(grep -c 'ppc64 traceback tables' <<<"$("$SFUNWIND" lookup "$bin" $pcs)") != "$npcs" ]]; then
    fail "$name: lookup and tbtab give different rules over $npcs PCs: $(diff <(echo "$got") <(echo "$want") | head -3)"
  fi

  set +e
  check=$("$SFUNWIND" tbtab --check "$bin")
  status=$?
  set -e
  [[ $status -le 1 ]] || fail "$name: --check exit $status"
  grep -q '^check against CFI: ' <<<"$check" || fail "$name: no check summary"
  if grep -E '^different .*<(main|level_1|with_alloca|with_fprs|recurse|leaf)>' <<<"$check"; then
    fail "$name: the program's functions differ from their CFI"
  fi
  printf 'ok %s/%s: %s; lookup = tbtab at %s PCs\n' "$arch" "$name" "$(tail -1 <<<"$check")" "$npcs"
done
[[ $failures -eq 0 ]]

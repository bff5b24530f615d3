#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# Inside a throw-away root (tests/package/test_package.sh): apt installs the
# package, check_installed.py debugs the fixtures with the installed
# debuggers, then apt removes and purges it, and no file it brought (or a
# debugger wrote next to its files) may be left.
#
# usage: in_root.sh DEB LLDB FIXTURE...
set -uo pipefail
deb=$1 lldb=$2; shift 2
repo=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
failed=0
fail() { echo "FAIL  $*"; failed=$((failed + 1)); }
ok() { echo "ok    $*"; }
verdict() {  # verdict STATUS WHAT-IF-0 WHAT-OTHERWISE
  if (($1 == 0)); then ok "$2"; else fail "$3"; fi
}

# shellcheck disable=SC1091 # the root's own file
echo "root: $(. /etc/os-release && echo "$PRETTY_NAME"), $(gdb --version | head -1), $($lldb --version | head -1)"
if dpkg-query -W -f '${db:Status-Abbrev}' sfunwind 2>/dev/null | grep -q '^i'; then
  echo "FAIL  sfunwind is installed in this root already"; exit 1
fi
# Paths the package brings that were not here before: all must go again.
mapfile -t new_paths < <(dpkg-deb -c "$deb" | awk '{print $6}' | sed 's#^\./#/#; s#/$##' | grep . |
                         while read -r p; do [[ -e "$p" || -L "$p" ]] || echo "$p"; done)

if apt-get install -y --no-install-recommends "$deb" >/tmp/apt-install.log 2>&1; then
  ok "apt-get install ./$(basename "$deb")"
else
  cat /tmp/apt-install.log; echo "FAIL  apt-get install"; exit 1
fi

python3 "$repo/tests/package/check_installed.py" --gdb gdb --lldb "$lldb" --work /tmp/sfunwind-check "$@" ||
  fail "debugging with the installed package"

# The library as a CMake user gets it: find_package(sfunwind) from /usr.
consumer=/tmp/sfunwind-consumer
fixture="$repo/tests/fixtures/bin/gas-2.40/recurse-O2-nofp-noeh"
if cmake -S "$repo/tests/package/consumer" -B "$consumer" >/tmp/consumer.log 2>&1 &&
   cmake --build "$consumer" >>/tmp/consumer.log 2>&1; then
  out=$("$consumer/consumer" "$fixture" 2>&1)
  [[ "$out" == "fdes 9" ]]; verdict $? "find_package(sfunwind): a program reads the 9 FDEs of $(basename "$fixture")" \
    "the consumer program: $out"
else
  cat /tmp/consumer.log; fail "find_package(sfunwind) and build against the package"
fi

leftover() {  # the package's new paths still present
  local p
  for p in "${new_paths[@]}"; do [[ -e "$p" || -L "$p" ]] && echo "$p"; done
}
if apt-get remove -y sfunwind >/tmp/apt-remove.log 2>&1; then ok "apt-get remove"; else cat /tmp/apt-remove.log; fail "apt-get remove"; fi
left=$(leftover)
[[ -z "$left" ]]; verdict $? "nothing left after remove (${#new_paths[@]} paths)" "left after remove: $left"
# With no conffiles, remove leaves dpkg nothing to purge (it forgets the
# package at once); purge whatever dpkg still knows.
if ! dpkg-query -W sfunwind >/dev/null 2>&1; then
  ok "after remove dpkg keeps nothing to purge"
elif apt-get purge -y sfunwind >/tmp/apt-purge.log 2>&1; then
  ok "apt-get purge"
else
  cat /tmp/apt-purge.log; fail "apt-get purge"
fi
left=$(leftover)
[[ -z "$left" ]]; verdict $? "nothing left after purge" "left after purge: $left"
status=$(dpkg-query -W -f '${db:Status-Abbrev}' sfunwind 2>/dev/null || true)
[[ -z "$status" || "$status" == un* ]]; verdict $? "dpkg knows no sfunwind after purge" "dpkg status after purge: $status"
# The debuggers start clean again (no file of the package half-loaded).
out=$(gdb -batch -ex 'echo gdb-ok\n' 2>&1)
[[ "$out" == gdb-ok ]]; verdict $? "plain gdb starts silently after purge" "gdb after purge: $out"
out=$($lldb -b -o 'help sframe' 2>&1)
[[ "$out" == *"'sframe' is not a known command"* ]]
verdict $? "no sframe command in $lldb after purge" "$lldb after purge: $out"
exit $((failed > 0))

#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# tests/check/convert_objdump.sh: `sfunwind convert` output read by GNU
# objdump 2.47 (the sid chroot's, which reads SFrame v3), for fixtures of
# each architecture.
#
#   tests/check/convert_objdump.sh [--sfunwind PATH]
#
# For each fixture: remove its .sframe, convert its CFI (on the host), add
# the section back with the chroot's objcopy for that architecture, and
# require that
#   - objdump --sframe reads it without a warning or error,
#   - its dump equals `sfunwind dump` of the same file from line 3 on
#     (the first lines name the file), and
#   - `sfunwind check` finds no disagreement between it and the CFI.
# Needs root (the chroot) and a built sfunwind (default build/check/cli/sfunwind).
set -euo pipefail

HERE=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
REPO=$(cd "$HERE/../.." && pwd)
CHROOT_SH=$REPO/scripts/sid-chroot.sh
WORK=$REPO/build/check-convert-objdump
SFUNWIND=$REPO/build/check/cli/sfunwind
[[ ${1:-} == --sfunwind ]] && SFUNWIND=$2

# fixture (under tests/fixtures/bin)  binutils prefix in the chroot
CASES=(
  "gas-2.47/plt-O2-nofp/plt|"
  "gas-2.47/realign-O2-nofp|"
  "clang-23/cxx_exceptions-O2-nofp|"
  "gas-2.40/sighandler-O2-nofp|"
  "gas-2.47-aarch64/recurse-O2-nofp-pac-static|aarch64-linux-gnu-"
  "gas-2.47-s390x/sighandler-O2-nofp-static|s390x-linux-gnu-"
)

mkdir -p "$WORK"
fail=0
for c in "${CASES[@]}"; do
  rel=${c%%|*}
  prefix=${c#*|}
  name=$(echo "$rel" | tr / _)
  src=$REPO/tests/fixtures/bin/$rel
  out=$WORK/$name
  "$SFUNWIND" convert "$src" -o "$out.sframe" >/dev/null || { echo "FAIL $rel: convert"; fail=1; continue; }
  "$CHROOT_SH" run -- bash -c "
      ${prefix}objcopy --remove-section .sframe '$src' '$out.bare' &&
      ${prefix}objcopy --add-section .sframe='$out.sframe' --set-section-flags .sframe=alloc,readonly \
          '$out.bare' '$out' 2>/dev/null &&
      ${prefix}objdump --sframe '$out' >'$out.objdump' 2>'$out.objdump.err'" ||
    { echo "FAIL $rel: objcopy/objdump in the chroot"; fail=1; continue; }
  if [[ -s $out.objdump.err ]]; then
    echo "FAIL $rel: objdump said: $(head -3 "$out.objdump.err")"; fail=1; continue
  fi
  "$SFUNWIND" dump "$out" >"$out.sfunwind"
  if ! diff <(sed 1,3d "$out.objdump") <(sed 1,3d "$out.sfunwind") >"$out.diff"; then
    echo "FAIL $rel: objdump and sfunwind dump differ (see $out.diff)"; fail=1; continue
  fi
  if ! summary=$("$SFUNWIND" check --fail-on=any --no-progress "$out" | tail -1); then
    echo "FAIL $rel: check: $summary"; fail=1; continue
  fi
  echo "ok   $rel: objdump 2.47 reads $(grep -c 'func idx' "$out.objdump") FDEs; $summary"
done
exit "$fail"

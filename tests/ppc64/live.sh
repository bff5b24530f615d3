#!/usr/bin/env bash
# tests/ppc64/live.sh: unwind live PowerPC64 stops with traceback tables
# alone and compare with GDB's DWARF CFI backtraces of the same stops.
#
#   tests/ppc64/live.sh [BUILD_DIR]      (default: build)
#
# For each fixture in tests/fixtures/ppc64/bin (big-endian ELFv1 and
# little-endian ELFv2; -O2 part, -O2 full, -O0 full):
#   1. run it under `qemu-ppc64[le] -g PORT`, attach gdb-multiarch, and let
#      tests/ppc64/gdb_dump.py record stops: the SIGSEGV in leaf's body
#      (`segv` mode), and every instruction from main's entry to its return
#      (`none` mode, stepi), each with registers, stack bytes and GDB's
#      backtrace (frame PCs and r1 values, from .eh_frame);
#   2. tb_replay unwinds each stop with ppc64::TracebackIndex rows and
#      step() and compares every frame's PC and SP with GDB's.
# tb_replay is built from tests/ppc64/tb_replay.cpp against BUILD_DIR's
# core library (BUILD_DIR/core/libsfunwind.a), unless BUILD_DIR/tests/
# ppc64_tb_replay exists.
#
# Needs: gdb-multiarch, qemu-user, nlohmann-json3-dev, libdw-dev; the core
# library built in BUILD_DIR. Exit status 0 when every stop matches.
set -euo pipefail

HERE=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
REPO=$(cd "$HERE/../.." && pwd)
BUILD=${1:-$REPO/build}
FIX=$REPO/tests/fixtures/ppc64
WORK=$(mktemp -d)
QEMU_PID=
cleanup() {
  if [[ -n $QEMU_PID ]]; then kill "$QEMU_PID" 2>/dev/null || true; fi
  rm -rf "$WORK"
}
trap cleanup EXIT

log() { printf '[ppc64-live] %s\n' "$*" >&2; }
die() { printf '[ppc64-live] ERROR: %s\n' "$*" >&2; exit 2; }

for tool in gdb-multiarch qemu-ppc64 qemu-ppc64le; do
  command -v "$tool" >/dev/null || die "$tool not found (apt-get install gdb-multiarch qemu-user)"
done

REPLAY=$BUILD/tests/ppc64_tb_replay
if [[ ! -x $REPLAY ]]; then
  [[ -f $BUILD/core/libsfunwind.a ]] || die "no $BUILD/core/libsfunwind.a: build the core first"
  REPLAY=$WORK/tb_replay
  # shellcheck disable=SC2046  # pkg-config output is a word list
  g++ -std=c++20 -O1 -I"$REPO/core/include" "$HERE/tb_replay.cpp" -o "$REPLAY" \
    "$BUILD/core/libsfunwind.a" $(pkg-config --libs libdw libelf)
fi

free_port() { python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])'; }

# record BINARY QEMU MODE OUT: one gdb_dump.py session.
record() {
  local bin=$1 qemu=$2 mode=$3 out=$4 port arg
  port=$(free_port)
  arg=$mode
  [[ $mode == step ]] && arg=none
  "$qemu" -g "$port" "$bin" "$arg" 2 >/dev/null 2>&1 &
  QEMU_PID=$!
  # Wait until qemu listens. Probing with a connection would not do: the
  # gdbstub takes one client, and lets the program run when it leaves.
  for _ in $(seq 50); do
    if grep -q ":$(printf '%04X' "$port") 00000000:0000 0A" /proc/net/tcp /proc/net/tcp6 2>/dev/null; then break; fi
    sleep 0.1
  done
  TB_BINARY=$bin TB_PORT=$port TB_OUT=$out TB_MODE=$mode \
    timeout 600 gdb-multiarch -batch -nx -x "$HERE/gdb_dump.py" >"$out.gdb.log" 2>&1 || {
      cat "$out.gdb.log" >&2; die "gdb failed on $bin ($mode)"; }
  kill "$QEMU_PID" 2>/dev/null || true
  wait "$QEMU_PID" 2>/dev/null || true
  QEMU_PID=
}

status=0
for arch in ppc64 ppc64le; do
  qemu=qemu-$arch
  for bin in "$FIX"/bin/$arch/tbtab-*-static; do
    for mode in segv step; do
      out=$WORK/$(basename "$bin").$arch.$mode.jsonl
      record "$bin" "$qemu" "$mode" "$out"
      [[ -s $out ]] || die "no stops recorded for $bin ($mode)"
      printf '%-8s %-5s ' "$arch" "$mode"
      if ! "$REPLAY" "$bin" "$out"; then status=1; fi
    done
  done
done
exit $status

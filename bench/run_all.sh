#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# bench/run_all.sh: every lookup comparison in one go, then the ratios.
#
#   host (build/speed, Release, bookworm g++ 12):
#     sfunwind_bench_lookup   Google Benchmark: lookup, FDE search, parse,
#                             validate on the large sections (bench/run_lookup.sh);
#                             then under Callgrind, instructions per lookup
#                             (bench/lookup_instructions.py, when valgrind is installed)
#     sfunwind_bench_libdw    against libdw's dwarf_cfi_addrframe on .eh_frame
#     sfunwind_bench_open     open / index / validate per MB, memory per FDE
#   sid chroot (build/sid-speed, Release, gcc 16, libsframe-dev 2.47):
#     sfunwind_bench_libsframe  against GNU libsframe's sframe_find_fre, with
#                               every PC's row checked against libsframe's first
#
# Programs: the SQLite shell of tests/fixtures/large (gas 2.47, SFrame v3;
# clang 23, v2 unsorted: not for libsframe), the Lua 5.4 interpreter built
# by bench/make_lua.sh (gas 2.47, v3), build/check-large/zstd-gas-2.47
# when tests/check/large_codebase.sh has made it, and the big program's
# three files (sframe/big, lib1.so, lib2.so: gas 2.47, v3, about 32,000
# functions in all) when bench/big_program/make.sh has made them in
# BIG_PROGRAM (default /var/cache/sfunwind/big-program; run_all does not
# build it). That directory is outside the repository, so it is bind-mounted
# into the chroot (SFUNWIND_CHROOT_BINDS). And for the lookup and the open
# costs, synthetic sections of 128,000 and 1,000,000 functions, the size of
# a browser's or a game engine's (bench/synthetic_section.hpp; libsframe
# and sfunwind look up in the same bytes).
#
#   bench/run_all.sh              everything (about 12 minutes on 2 busy cores,
#                                 plus the builds the first time)
#   BUDGET_MS=500 bench/run_all.sh  shorter timing per comparison (default 1500)
#   SKIP_LOOKUP=1                 leave out the Google Benchmark suite
#   SKIP_DEBUGGERS=1              leave out the debuggers (below)
#
# Then the debuggers, each with sfunwind on an SFrame-only build against the
# same debugger on the CFI-only build (GDB 13 and LLDB 19 on the host, GDB 18
# and LLDB 23 in the chroot; builds build/speed-debuggers and
# build/sid-speed-debuggers):
#   first_bt      the big program (bench/big_program/make.sh: built the first
#                 time, about 20 minutes, then cached): time to the first
#                 backtrace and peak RSS, core and live
#                 (bench/big_program/first_bt.py)
#   many_libraries  the first backtrace of a program of 300 shared
#                 libraries, a frame in each: GDB live and from a core, LLDB
#                 live with a warm and a cold cache (bench/many_libraries.py)
#   walk          GDB: a whole `bt` with GDB's DWARF unwinder, the Python path
#                 and the native path, on the 10,000-frame recursion and at
#                 the big program's stop (tests/gdb/bench_bt.py); LLDB:
#                 `sframe bt` against LLDB's own unwind (tests/lldb/test_bench.py)
#
# Full outputs go to build/speed/run_all/; the ratio lines are printed at the
# end. Needs root (the chroot) and, the first time, the Debian mirror (Lua's
# source). Exits non-zero when a benchmark fails, e.g. when sfunwind and
# libsframe disagree on a row.
set -euo pipefail

HERE=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
REPO=$(cd "$HERE/.." && pwd)
OUT=$REPO/build/speed/run_all
BUDGET_MS=${BUDGET_MS:-1500}
JOBS=${JOBS:-2}
CHROOT=$REPO/scripts/sid-chroot.sh
BIG_PROGRAM=${BIG_PROGRAM:-/var/cache/sfunwind/big-program}

log() { printf '[run_all] %s\n' "$*" >&2; }
mkdir -p "$OUT"
cd "$REPO"

log "host build (build/speed)"
cmake -S "$REPO" -B build/speed -G Ninja -DCMAKE_BUILD_TYPE=Release -DSFUNWIND_BUILD_BENCHMARKS=ON \
  -DSFUNWIND_WERROR=ON -DSFUNWIND_BUILD_LLDB_PLUGIN=OFF -DSFUNWIND_BUILD_GDB=OFF >/dev/null
cmake --build build/speed -j"$JOBS" --target sfunwind_bench_lookup sfunwind_bench_libdw sfunwind_bench_open

log "sid chroot build (build/sid-speed)"
"$CHROOT" run -- sh -c "cd '$REPO' &&
  cmake -S . -B build/sid-speed -G Ninja -DCMAKE_BUILD_TYPE=Release -DSFUNWIND_BUILD_BENCHMARKS=ON \
    -DSFUNWIND_WERROR=ON -DSFUNWIND_BUILD_LLDB_PLUGIN=OFF -DSFUNWIND_BUILD_GDB=OFF \
    -DSFUNWIND_BUILD_TESTS=OFF -DSFUNWIND_BUILD_CLI=OFF >/dev/null &&
  cmake --build build/sid-speed -j$JOBS --target sfunwind_bench_libsframe"

log "Lua 5.4 with gas 2.47 --gsframe"
LUA=$("$HERE/make_lua.sh")
PROGRAMS=(tests/fixtures/large/sqlite3-gas-2.47 "${LUA#"$REPO"/}")
[[ -x build/check-large/zstd-gas-2.47 ]] && PROGRAMS+=(build/check-large/zstd-gas-2.47)
BIG=()
for f in big lib1.so lib2.so; do
  [[ -f $BIG_PROGRAM/sframe/$f ]] && BIG+=("$BIG_PROGRAM/sframe/$f")
done
((${#BIG[@]} > 0)) && export SFUNWIND_CHROOT_BINDS="${SFUNWIND_CHROOT_BINDS:+$SFUNWIND_CHROOT_BINDS }$BIG_PROGRAM"
ALL=("${PROGRAMS[@]}" tests/fixtures/large/sqlite3-clang-23)
# Sections of the biggest programs' size, which nothing built here reaches
# (bench/synthetic_section.hpp): 128,000 and 1,000,000 functions.
SYNTHETIC=(synthetic:128000 synthetic:1000000)

status=0
run() { # run NAME CMD...: output to $OUT/NAME.txt and the terminal
  local name=$1
  shift
  log "$name"
  if ! "$@" 2>&1 | tee "$OUT/$name.txt"; then
    log "$name FAILED"
    status=1
  fi
}

run libsframe "$CHROOT" run -- build/sid-speed/bench/sfunwind_bench_libsframe --budget-ms "$BUDGET_MS" \
  "${PROGRAMS[@]}" "${BIG[@]}" "${SYNTHETIC[@]}"
run libdw build/speed/bench/sfunwind_bench_libdw --budget-ms "$BUDGET_MS" "${ALL[@]}"
run open build/speed/bench/sfunwind_bench_open --budget-ms "$((BUDGET_MS / 2))" "${ALL[@]}" "${BIG[@]}" \
  "${SYNTHETIC[@]}"
if [[ -z ${SKIP_LOOKUP:-} ]]; then
  run lookup build/speed/bench/sfunwind_bench_lookup --benchmark_filter='^(lookup|find_fde)/' \
    --benchmark_repetitions=3 --benchmark_report_aggregates_only=true \
    --benchmark_out="$OUT/bench_lookup.json" --benchmark_out_format=json
  python3 "$HERE/summarize_lookup.py" "$OUT/bench_lookup.json" | tee "$OUT/lookup_summary.txt"
  if command -v valgrind >/dev/null; then
    run instructions python3 "$HERE/lookup_instructions.py" "sqlite3-gas-2.47 v3" "sqlite3-gas-2.47 v3 shuffled" \
      "sqlite3-clang-23 v2"
  else
    log "valgrind not installed: no instruction counts (apt-get install valgrind)"
  fi
fi

if [[ -z ${SKIP_DEBUGGERS:-} ]]; then
  log "the big program (cached after the first build)"
  BIG_DIR=$("$HERE/big_program/make.sh")
  log "host debugger modules (build/speed-debuggers)"
  cmake -S "$REPO" -B build/speed-debuggers -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo -DSFUNWIND_WERROR=ON \
    -DSFUNWIND_BUILD_TESTS=OFF -DSFUNWIND_BUILD_CLI=OFF >/dev/null
  cmake --build build/speed-debuggers -j"$JOBS" --target sfunwind_gdb sfunwind_lldb
  log "chroot debugger modules (build/sid-speed-debuggers)"
  "$CHROOT" run -- sh -c "cd '$REPO' &&
    cmake -S . -B build/sid-speed-debuggers -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo -DSFUNWIND_WERROR=ON \
      -DSFUNWIND_BUILD_TESTS=OFF -DSFUNWIND_BUILD_CLI=OFF >/dev/null &&
    cmake --build build/sid-speed-debuggers -j$JOBS --target sfunwind_gdb sfunwind_lldb"
  HOST_GDB=build/speed-debuggers/gdb-python/sfunwind.py
  HOST_LLDB=build/speed-debuggers/plugin/libsfunwind_lldb.so
  SID_GDB=build/sid-speed-debuggers/gdb-python/sfunwind.py
  SID_LLDB=build/sid-speed-debuggers/plugin/libsfunwind_lldb.so
  FIRST_BT=(python3 "$HERE/big_program/first_bt.py" --dir "$BIG_DIR" --rounds "${ROUNDS:-3}")
  # shellcheck disable=SC2317  # called through run()
  in_chroot() { SFUNWIND_CHROOT_BINDS="$BIG_DIR" "$CHROOT" run -- "$@"; }
  run first_bt_host "${FIRST_BT[@]}" --twins host- --work "$BIG_DIR/bench-host" --gdb gdb --gdb-loader "$HOST_GDB" \
    --lldb lldb-19 --lldb-plugin "$HOST_LLDB"
  run first_bt_sid in_chroot "${FIRST_BT[@]}" --work "$BIG_DIR/bench" --gdb gdb --gdb-loader "$SID_GDB" \
    --lldb lldb-23 --lldb-plugin "$SID_LLDB" --lldb-parallel-off
  run many_libraries_host env LLDB_DEBUGSERVER_PATH=/usr/lib/llvm-19/bin/lldb-server \
    python3 "$HERE/many_libraries.py" --gdb gdb --loader "$HOST_GDB" --lldb lldb-19 --lldb-plugin "$HOST_LLDB" \
    --rounds "${ROUNDS:-3}"
  run many_libraries_sid in_chroot python3 "$HERE/many_libraries.py" --gdb gdb --loader "$SID_GDB" \
    --lldb lldb-23 --lldb-plugin "$SID_LLDB" --rounds "${ROUNDS:-3}"
  run walk_gdb13_deep python3 tests/gdb/bench_bt.py --gdb gdb --loader "$HOST_GDB"
  run walk_gdb13_big python3 tests/gdb/bench_bt.py --gdb gdb --loader "$HOST_GDB" --program "$BIG_DIR/host-both/big" --repeat 40
  run walk_gdb18_deep in_chroot python3 tests/gdb/bench_bt.py --gdb gdb --loader "$SID_GDB"
  run walk_gdb18_big in_chroot python3 tests/gdb/bench_bt.py --gdb gdb --loader "$SID_GDB" --program "$BIG_DIR/both/big" --repeat 40
  run walk_lldb19 env LLDB_DEBUGSERVER_PATH=/usr/lib/llvm-19/bin/lldb-server \
    python3 tests/lldb/test_bench.py --plugin "$HOST_LLDB" --lldb lldb-19 --work build/speed-debuggers/bench-work
  run walk_lldb23 in_chroot python3 tests/lldb/test_bench.py --plugin "$SID_LLDB" --lldb lldb-23 \
    --work build/sid-speed-debuggers/bench-work
fi

echo
echo "== ratios (best of rounds, same PCs, same section; full output in ${OUT#"$REPO"/}/) =="
grep -h -E '^  sfunwind vs ' "$OUT/libsframe.txt" "$OUT/libdw.txt" | sed 's/^  //' || true
if [[ -z ${SKIP_LOOKUP:-} && -f $OUT/instructions.txt ]]; then
  echo "== instructions per lookup (Callgrind; v3 in place: the quick path; the others: the general path) =="
  cat "$OUT/instructions.txt"
fi
echo "== open / index / validate per MB, memory per FDE =="
grep -h -E '^[^ ]|ms/MB|B/FDE' "$OUT/open.txt" | grep -v 'validate found' || true
grep -h -E 'open: sframe_decode|memory beyond' "$OUT/libsframe.txt" | sed 's/^  /  libsframe comparison: /' || true
if [[ -z ${SKIP_DEBUGGERS:-} ]]; then
  echo "== first backtrace on the big program: sfunwind on the SFrame-only build / the CFI build (time, peak RSS) =="
  cat "$OUT/first_bt_host.txt" "$OUT/first_bt_sid.txt" | awk 'NR == 1 || !/CFI s/'
  echo "== first backtrace with 300 shared libraries: sfunwind on the SFrame-only build / the CFI build =="
  cat "$OUT/many_libraries_host.txt" "$OUT/many_libraries_sid.txt"
  echo "== frame walks: GDB's DWARF unwinder against the Python and native paths; LLDB's own against sframe bt =="
  for w in walk_gdb13_deep walk_gdb13_big walk_gdb18_deep walk_gdb18_big walk_lldb19 walk_lldb23; do
    echo "-- $w"
    grep -h -E '^GNU gdb|rounds$|/ dwarf =|ratio|faster|slower|per MB' "$OUT/$w.txt" || true
  done
fi
exit "$status"

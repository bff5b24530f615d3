#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# fuzz.sh: build the libFuzzer targets (CMake preset "fuzz": clang, ASan +
# UBSan), seed them (fuzz/seed.sh) and run each for SECONDS, JOBS targets at
# a time (each fuzzer is one process on one core, so JOBS = the core count
# gives each its own core).
#
# Usage: scripts/fuzz.sh [SECONDS] [TARGET...]
#   SECONDS  per target, default 60 (-max_total_time)
#   TARGET   fuzz_section fuzz_lookup fuzz_step fuzz_elf fuzz_tbtab fuzz_convert
#            fuzz_callee_saved
#            (default: all, in that order)
#
# Prints, per target, the executions, executions per second, coverage (the
# "cov:" edge count of libFuzzer's last status line) and crashes. A crash
# (or timeout, out-of-memory, leak) stops that target; its input is left in
# build/fuzz/crashes/TARGET/ and the command to reproduce it is printed. The
# script exits non-zero when any target crashed.
#
# The corpus each target grows is kept in build/fuzz/corpus/TARGET/ between
# runs; the seeds are rebuilt each time. Environment: JOBS (build
# parallelism and fuzzers at once, default: the core count), FUZZ_TIMEOUT
# (seconds one input may take, default 25).
set -uo pipefail

repo=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
cd "$repo" || exit 1
seconds=${1:-60}
shift || true
targets=("$@")
((${#targets[@]} > 0)) || targets=(fuzz_section fuzz_lookup fuzz_step fuzz_elf fuzz_tbtab fuzz_convert fuzz_callee_saved)
build=$repo/build/fuzz
timeout=${FUZZ_TIMEOUT:-25}
at_once=${JOBS:-$(nproc)}

if ! [[ "$seconds" =~ ^[0-9]+$ ]] || ((seconds == 0)); then
    echo "fuzz.sh: SECONDS must be a positive integer" >&2
    exit 2
fi

echo "=== fuzz: build (preset fuzz)"
# The preset builds with Ninja, which builds the targets in parallel (CMake's
# Makefiles build the targets named one after another). A tree another
# generator configured is configured afresh; its corpus stays.
if [[ -f "$build/CMakeCache.txt" ]] && ! grep -qx 'CMAKE_GENERATOR:INTERNAL=Ninja' "$build/CMakeCache.txt"; then
    rm -rf "$build/CMakeCache.txt" "$build/CMakeFiles"
fi
cmake --preset fuzz >/dev/null || exit 1
cmake --build --preset fuzz -j "$at_once" --target "${targets[@]}" || exit 1
echo "=== fuzz: seeds"
fuzz/seed.sh "$build/seeds" || exit 1

# Leaks inside elfutils are reported upstream, not here (fuzz/lsan.supp).
export LSAN_OPTIONS="suppressions=$repo/fuzz/lsan.supp${LSAN_OPTIONS:+:$LSAN_OPTIONS}"
results=$build/results
rm -rf "$results"
mkdir -p "$results"

# fuzz_one TARGET: run TARGET for SECONDS; write its summary line (and, on a
# crash, the details) to $results/TARGET.
fuzz_one() {
    local t=$1 corpus=$build/corpus/$1 crashes=$build/crashes/$1 log=$build/logs/$1.log
    local before rc execs rate cov found new line
    mkdir -p "$corpus" "$crashes" "$(dirname "$log")"
    before=$(find "$crashes" -type f | sort)
    "$build/fuzz/$t" -max_total_time="$seconds" -timeout="$timeout" -rss_limit_mb=4096 \
        -print_final_stats=1 -artifact_prefix="$crashes/" "$corpus" "$build/seeds/$t" >"$log" 2>&1
    rc=$?
    execs=$(sed -n 's/^stat::number_of_executed_units: *//p' "$log" | tail -n 1)
    rate=$(sed -n 's/^stat::average_exec_per_sec: *//p' "$log" | tail -n 1)
    cov=$(grep -o 'cov: [0-9]*' "$log" | tail -n 1 | cut -d' ' -f2)
    found=$(comm -13 <(echo "$before") <(find "$crashes" -type f | sort) | sed '/^$/d')
    new=$(echo -n "$found" | grep -c . || true)
    if ((rc != 0 && new == 0)); then new=1; fi # a crash libFuzzer could not save
    line=$(printf '%-13s executions %10s  exec/s %7s  cov %6s  crashes %d' "$t" "${execs:-?}" "${rate:-?}" \
        "${cov:-?}" "$new")
    {
        echo "$line"
        if ((new > 0)); then
            grep -m 3 -E 'ERROR|runtime error|property violated' "$log" | sed 's/^/    /'
            while read -r f; do
                [[ -n "$f" ]] && echo "    input: ${f#"$repo"/}   reproduce: build/fuzz/fuzz/$t ${f#"$repo"/}"
            done <<<"$found"
        fi
    } >"$results/$t"
    ((new == 0))
}

for t in "${targets[@]}"; do
    while (($(jobs -rp | wc -l) >= at_once)); do wait -n; done
    echo "=== fuzz: $t for ${seconds} s (log: build/fuzz/logs/$t.log)"
    fuzz_one "$t" &
done
wait

crashed=0
summary=()
for t in "${targets[@]}"; do
    [[ -s "$results/$t" ]] || echo "$t: no result (the fuzzer's script failed)" >"$results/$t"
    summary+=("$(cat "$results/$t")")
    grep -q 'crashes [1-9]\|no result' "$results/$t" && crashed=1
done

echo
echo "=== fuzz: summary (${seconds} s per target)"
printf '%s\n' "${summary[@]}"
if ((crashed)); then
    echo "fuzz: crashes found; inputs are in build/fuzz/crashes/"
    exit 1
fi
echo "fuzz: no crashes"

#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# fuzz.sh: build the libFuzzer targets (CMake preset "fuzz": clang, ASan +
# UBSan), seed them (fuzz/seed.sh) and run each for SECONDS, one after the
# other (never two fuzzers at once: they would share the machine's cores).
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
# parallelism, default 2), FUZZ_TIMEOUT (seconds one input may take, default 25).
set -uo pipefail

repo=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
cd "$repo"
seconds=${1:-60}
shift || true
targets=("$@")
((${#targets[@]} > 0)) || targets=(fuzz_section fuzz_lookup fuzz_step fuzz_elf fuzz_tbtab fuzz_convert fuzz_callee_saved)
build=$repo/build/fuzz
timeout=${FUZZ_TIMEOUT:-25}

[[ "$seconds" =~ ^[0-9]+$ ]] && ((seconds > 0)) || { echo "fuzz.sh: SECONDS must be a positive integer" >&2; exit 2; }

echo "=== fuzz: build (preset fuzz)"
cmake --preset fuzz >/dev/null || exit 1
cmake --build --preset fuzz -j "${JOBS:-2}" --target "${targets[@]}" || exit 1
echo "=== fuzz: seeds"
fuzz/seed.sh "$build/seeds" || exit 1

# Leaks inside elfutils are reported upstream, not here (fuzz/lsan.supp).
export LSAN_OPTIONS="suppressions=$repo/fuzz/lsan.supp${LSAN_OPTIONS:+:$LSAN_OPTIONS}"
crashed=0
summary=()
for t in "${targets[@]}"; do
    corpus=$build/corpus/$t
    crashes=$build/crashes/$t
    log=$build/logs/$t.log
    mkdir -p "$corpus" "$crashes" "$(dirname "$log")"
    before=$(find "$crashes" -type f | sort)
    echo "=== fuzz: $t for ${seconds} s (log: ${log#"$repo"/})"
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
    echo "$line"
    summary+=("$line")
    if ((new > 0)); then
        crashed=1
        grep -m 3 -E 'ERROR|runtime error|property violated' "$log" | sed 's/^/    /'
        while read -r f; do
            [[ -n "$f" ]] && echo "    input: ${f#"$repo"/}   reproduce: build/fuzz/fuzz/$t ${f#"$repo"/}"
        done <<<"$found"
    fi
done

echo
echo "=== fuzz: summary (${seconds} s per target)"
printf '%s\n' "${summary[@]}"
if ((crashed)); then
    echo "fuzz: crashes found; inputs are in build/fuzz/crashes/"
    exit 1
fi
echo "fuzz: no crashes"

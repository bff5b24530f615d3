#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# bench/run_lookup.sh: build the `bench` preset (build/bench, Release) and run
# the lookup benchmark on the large real sections of tests/fixtures/large,
# then print a short summary per section.
#
#   bench/run_lookup.sh                       everything (about a minute)
#   bench/run_lookup.sh --benchmark_filter=lookup/   any Google Benchmark flag
#
# The full results are kept in build/bench/bench_lookup.json.
set -euo pipefail

HERE=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
REPO=$(cd "$HERE/.." && pwd)
OUT=$REPO/build/bench/bench_lookup.json

cd "$REPO"
cmake --preset bench >/dev/null
cmake --build --preset bench --target sfunwind_bench_lookup
"$REPO/build/bench/bench/sfunwind_bench_lookup" --benchmark_out="$OUT" --benchmark_out_format=json "$@"
echo
python3 "$HERE/summarize_lookup.py" "$OUT"

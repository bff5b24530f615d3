#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""Prints one line per section from sfunwind_bench_lookup's JSON output
(--benchmark_out_format=json): ns per lookup, lookups/s, FDE search alone,
memory beyond the section bytes, parse and validate throughput."""
import json
import sys


def main(path):
    with open(path, encoding="utf-8") as f:
        runs = json.load(f)["benchmarks"]
    by = {}
    for r in runs:
        if r.get("run_type") == "aggregate" and r.get("aggregate_name") != "median":
            continue
        kind, label = r["run_name"].split("/", 1)
        by.setdefault(label, {})[kind] = r

    def ns(r):
        scale = {"ns": 1.0, "us": 1e3, "ms": 1e6, "s": 1e9}[r["time_unit"]]
        # CPU time, as items_per_second uses: on a shared machine the wall
        # time also counts the time other processes held the core.
        return r["cpu_time"] * scale

    head = (f"{'section':36} {'FDEs':>5} {'bytes':>7} {'ns/lookup':>9} {'Mlookup/s':>9} "
            f"{'find_fde ns':>11} {'extra B':>7} {'B/FDE':>5} {'parse MB/s':>10} {'validate MB/s':>13}")
    print(head)
    print("-" * len(head))
    for label, k in by.items():
        look, find, parse, val = (k.get(x) for x in ("lookup", "find_fde", "parse", "validate"))
        if look is None:
            continue
        fdes = look["fdes"]
        print(f"{label:36} {fdes:5.0f} {look['section_bytes']:7.0f} {ns(look):9.1f} "
              f"{look['items_per_second'] / 1e6:9.2f} "
              f"{ns(find) if find else float('nan'):11.1f} {look['extra_bytes']:7.0f} "
              f"{look['extra_bytes_per_fde']:5.2f} "
              f"{parse['bytes_per_second'] / 1e6 if parse else float('nan'):10.1f} "
              f"{val['bytes_per_second'] / 1e6 if val else float('nan'):13.1f}")
    print("times are CPU time per call; extra B = Section::extra_memory() + sizeof(Section); "
          "MB = 10^6 bytes")


if __name__ == "__main__":
    main(sys.argv[1])

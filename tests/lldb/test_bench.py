#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""Benchmark: `sframe bt` against LLDB's own bt on a 10,000-frame recursion,
and the one-time cost of translating SFrame into a debug file.

1. deep10000 (10,001 `recurse` frames) stopped at its trap; per run, in a
   fresh process (LLDB caches a stop's frames): LLDB's own unwind of every
   frame through the SB API (GetNumFrames, then each frame's pc and CFA),
   then `sframe bt --summary --json` three times (the core's walk; its own
   clock, and the command's wall time). Both must give the same number of
   frames down to main. Reported: the median times and the ratio.
2. Translation: `sframe cover` with an empty cache on the large fixtures
   (sqlite3 built by gas 2.47 and clang 23) and deep10000: milliseconds
   per MB of .sframe, and .debug_frame bytes per .sframe byte.

usage: test_bench.py --plugin libsfunwind_lldb.so --lldb lldb-19 [--work DIR]
"""

import os
import re
import shutil
import statistics
import time

import lldb_harness as H

RUNS = 3


def lldb_unwind(thread):
    t0 = time.perf_counter()
    n = thread.GetNumFrames()
    last = None
    for i in range(n):
        f = thread.GetFrameAtIndex(i)
        last = (f.GetPC(), f.GetCFA())
    return time.perf_counter() - t0, n, last


def bench_deep(s, res, label, path):
    lldb_times, sframe_times, sframe_walls = [], [], []
    counts = None
    for run in range(RUNS):
        target = s.create(path)
        try:
            s.cmd("sframe cover")
            process = s.launch(target, [])
            thread = process.GetSelectedThread()
            t_lldb, n_lldb, _ = lldb_unwind(thread)
            lldb_times.append(t_lldb)
            for _ in range(RUNS):
                t0 = time.perf_counter()
                data = s.json_cmd("sframe bt --summary --json")
                sframe_walls.append(time.perf_counter() - t0)
                sframe_times.append(data["microseconds"] / 1e6)
            counts = (n_lldb, data["frame_count"], data["stop_code"])
        finally:
            s.delete(target)
    n_lldb, n_sframe, stop = counts
    # SFrame's walk ends in libc (no SFrame) one frame above main; LLDB
    # goes on to _start: at most 3 frames more.
    res.check(label + ": sframe bt walks all 10,001 recursion frames (%d frames, LLDB %d)" % (n_sframe, n_lldb),
              n_sframe >= 10006 and 0 <= n_lldb - n_sframe <= 3 and stop == "not found", repr(counts))
    lt = statistics.median(lldb_times)
    st = statistics.median(sframe_times)
    sw = statistics.median(sframe_walls)
    print("bench %s: LLDB's own unwind of %d frames (SB API): %.1f ms; sframe bt: %.1f ms walk, %.1f ms command "
          "(%d frames); ratio LLDB / sframe bt walk = %.1fx, / command = %.1fx" %
          (label, n_lldb, lt * 1e3, st * 1e3, sw * 1e3, n_sframe, lt / st, lt / sw))
    res.stats["bench " + label + " LLDB ms"] = round(lt * 1e3, 1)
    res.stats["bench " + label + " sframe bt ms"] = round(st * 1e3, 1)
    res.stats["bench " + label + " ratio"] = round(lt / st, 1)


def bench_translation(s, res, work, paths):
    total_sframe = 0
    total_frame = 0
    total_ms = 0.0
    for path in paths:
        cache = os.path.join(work, "bench-cache-" + os.path.basename(path))
        shutil.rmtree(cache, ignore_errors=True)  # the cost of a cold cache
        target = s.create(path)
        try:
            # A new, empty cache directory after `target create` (which may
            # have had the file made in the old one, while LLDB loaded the
            # program): this command makes the file itself, synchronously,
            # and reports it. Nothing else makes files in the background.
            ok, out, err = s.cmd("sframe cover --cache-dir " + cache)
            m = re.search(r"\((\d+) bytes of \.debug_frame from (\d+) bytes of SFrame, ([0-9.]+) ms\)", out + err)
            if not res.check("translation of %s reported" % os.path.basename(path), ok and m is not None, out + err):
                continue
            frame_bytes, sframe_bytes, ms = int(m.group(1)), int(m.group(2)), float(m.group(3))
            total_sframe += sframe_bytes
            total_frame += frame_bytes
            total_ms += ms
            print("bench translation %s: %d bytes of SFrame -> %d bytes of .debug_frame (%.2f per byte), "
                  "debug file in %.1f ms" % (os.path.basename(path), sframe_bytes, frame_bytes,
                                             frame_bytes / sframe_bytes, ms))
        finally:
            s.delete(target)
    if total_sframe:
        per_mb = total_ms / (total_sframe / 1e6)
        print("bench translation: %.0f ms per MB of .sframe (%d bytes in all), %.2f bytes of .debug_frame per "
              "byte of .sframe" % (per_mb, total_sframe, total_frame / total_sframe))
        res.stats["bench translation ms per MB of sframe"] = round(per_mb)
        res.stats["bench debug_frame bytes per sframe byte"] = round(total_frame / total_sframe, 2)
        res.check("translation costs less than 5 s per MB", per_mb < 5000, "%.0f ms per MB" % per_mb)


def run(args, work, res):
    H.use_cache(work, "bench", fresh=False)
    s = H.Session(args.plugin, work)
    print("LLDB: " + s.version)
    bench_deep(s, res, "gas-2.40 deep10000 (CFI build)", H.fixture("gas-2.40", "deep10000-O2-nofp"))
    bench_deep(s, res, "gas-2.40 deep10000-noeh (plugin's CFI)", H.fixture("gas-2.40", "deep10000-O2-nofp-noeh"))
    bench_translation(s, res, work, [os.path.join(H.FIXTURES, "large", "sqlite3-gas-2.47"),
                                     os.path.join(H.FIXTURES, "large", "sqlite3-clang-23"),
                                     H.fixture("gas-2.47", "deep10000-O2-nofp-static")])


if __name__ == "__main__":
    H.main(run)

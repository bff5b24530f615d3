#!/usr/bin/env bash
# demo.sh: set up a Debian 12 machine, build sfunwind, and run its main job on
# a bundled fixture: a program built with GNU as 2.47 (SFrame v3), -O2 without
# frame pointers, that stops with SIGTRAP 10 calls deep. sfunwind unwinds it
# with SFrame and prints, beside each frame, elfutils' CFI unwind of the same
# stop. Then the same on a copy whose .eh_frame is gone: SFrame alone.
set -euo pipefail
repo=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
cd "$repo"
scripts/setup-host.sh
cmake --preset default >/dev/null
cmake --build --preset default --target sfunwind -j "$(nproc)"
sfunwind=build/default/cli/sfunwind
fixture=tests/fixtures/bin/gas-2.47/recurse-O2-nofp-static

echo
echo "== $sfunwind bt --compare-cfi -- $fixture"
"$sfunwind" bt --compare-cfi -- "$fixture"
echo
echo "== the same program with .eh_frame, .eh_frame_hdr and .debug_frame removed (SFrame only)"
"$sfunwind" bt -- "$fixture-noeh"

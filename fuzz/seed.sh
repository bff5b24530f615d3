#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# seed.sh: build the fuzz targets' seed corpora from the GNU as SFrame test
# vectors (tests/vectors/gas-sframe/*.json) and the committed fixtures
# (tests/fixtures, tests/unit/data). One directory per target under OUT.
#
# Usage: fuzz/seed.sh [OUT]     (default: build/fuzz/seeds)
set -euo pipefail

repo=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
out=${1:-$repo/build/fuzz/seeds}

# The seed directories are rebuilt from scratch; refuse to clear anything
# that does not look like one.
if [[ -e "$out" && ! -d "$out/fuzz_section" && -n "$(ls -A "$out" 2>/dev/null)" ]]; then
    echo "seed.sh: $out exists and is not a seed directory; not clearing it" >&2
    exit 1
fi
rm -rf "$out"
mkdir -p "$out"
python3 "$repo/fuzz/seed_corpus.py" --repo "$repo" --out "$out"

#!/usr/bin/env bash
# run-tests.sh: set up a Debian 12 machine and run every sfunwind test.
# This is the README's test command and what CI (.ci/run) runs.
#
# Stages (each has a time limit, and its result is printed; the last line is
# "N passed, M failed"):
#   1. host packages (scripts/setup-host.sh)
#   2. build (CMake preset "default", with line tables only for debug
#      information, SFUNWIND_DEBUG_INFO=lines: a quarter less build time)
#      and the CTest suite: unit tests on the
#      GNU as test vectors (tests/vectors) and the committed fixtures, CLI tests (sfunwind bt
#      --compare-cfi, live and on core dumps), GDB 13 and LLDB 19 tests
#   3. the CTest suite again under ASan + UBSan (preset "sanitize"), and a
#      short run of every libFuzzer target (scripts/fuzz.sh, clang, ASan +
#      UBSan; SFUNWIND_FUZZ_SECONDS per target, default 20)
#   4. the Debian sid chroot (scripts/sid-chroot.sh ensure; cached), and the
#      suites that need its tools: GDB 18, LLDB 23, programs linked against
#      sid's glibc, and the Debian package installed on the host and in the
#      chroot, each in a throw-away overlay (tests/chroot/package.sh)
#
# Environment: SFUNWIND_SKIP_CHROOT=1 skips stage 4 (for a quick local run;
# CI never sets it). JOBS=N sets build parallelism (default: nproc).
set -uo pipefail

repo=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
cd "$repo" || exit 1
jobs=${JOBS:-$(nproc)}
fuzz_seconds=${SFUNWIND_FUZZ_SECONDS:-20}
passed=0
failed=0
failures=()

# stage NAME LIMIT CMD...: LIMIT seconds at most (a few times the stage's
# time on a 2-core machine), so that a hang fails its stage, says so, and
# leaves time for the others instead of running into CI's own limit.
stage() {
  local name=$1 limit=$2; shift 2
  local t0=$SECONDS rc=0
  echo
  echo "=== $name"
  timeout --kill-after=30 "$limit" "$@" || rc=$?
  if ((rc == 0)); then
    passed=$((passed + 1))
    echo "=== $name: ok ($((SECONDS - t0)) s)"
  else
    failed=$((failed + 1))
    failures+=("$name")
    if ((rc == 124 || rc == 137)); then
      echo "=== $name: FAILED: still running after its limit of $limit s, stopped"
    else
      echo "=== $name: FAILED ($((SECONDS - t0)) s)"
    fi
  fi
}

# shellcheck disable=SC2016 # $1 and $2 are the inner shell's arguments
build_preset=(bash -c 'cmake --preset "$1" -DSFUNWIND_DEBUG_INFO=lines >/dev/null &&
                       cmake --build --preset "$1" -j "$2"' build_preset)

stage "host packages" 1800 scripts/setup-host.sh
stage "build (default)" 1200 "${build_preset[@]}" default "$jobs"
stage "ctest (default)" 900 ctest --preset default -j "$jobs"
stage "build (ASan+UBSan)" 1200 "${build_preset[@]}" sanitize "$jobs"
stage "ctest (ASan+UBSan)" 900 ctest --preset sanitize -j "$jobs"
stage "fuzz (${fuzz_seconds} s per target)" $((900 + 7 * fuzz_seconds)) scripts/fuzz.sh "$fuzz_seconds"

if [[ "${SFUNWIND_SKIP_CHROOT:-0}" != 1 ]]; then
  stage "sid chroot" 3600 scripts/sid-chroot.sh ensure
  for suite in tests/chroot/*.sh; do
    [[ -e "$suite" ]] || continue
    stage "chroot: $(basename "$suite" .sh)" 900 bash "$suite"
  done
fi

echo
if ((failed > 0)); then
  printf 'failed stages: %s\n' "${failures[*]}"
fi
echo "$passed passed, $failed failed"
((failed == 0))

# SPDX-License-Identifier: MIT
# suites.sh: sourced by the chroot suites' inner scripts (tests/chroot/*.sh)
# to run their test suites JOBS at a time. Each suite is a process or two
# (a debugger and its inferior) that mostly keeps one core busy, so with one
# suite per core a stage takes about half the time it takes one by one. The
# host's CTest runs the same suites as concurrently (ctest -j).
#
#   suite CMD...     queue CMD as a suite (queue the longest first: they
#                    start in that order, and the short ones fill in)
#   run_suites NAME  run the queued suites, JOBS at a time (default: the core
#                    count); print each suite's output whole when it ends,
#                    with its exit status and time; then "NAME: K of N suites
#                    failed". Returns non-zero if any failed.
#
# Each suite's output is kept in build/suite-logs/NAME/ (or $SUITE_LOGS/NAME),
# so that when the stage's time limit stops a hung suite its output so far
# is there to read.

queued_suites=()

suite() {
  queued_suites+=("$(printf '%q ' "$@")")
}

run_suites() {
  local name=$1 at_once=${JOBS:-$(nproc)} logs i pid failed=0 running=0 n=${#queued_suites[@]}
  local -A index_of=() started_at=()
  logs=${SUITE_LOGS:-$PWD/build/suite-logs}/$name
  rm -rf "$logs"
  mkdir -p "$logs"
  # reap: wait for the next suite to end, print its log and status.
  reap() {
    local rc=0 finished i
    wait -n -p finished || rc=$?
    running=$((running - 1))
    i=${index_of[$finished]}
    echo
    echo "--- ${queued_suites[i]}"
    cat "$logs/$i.log"
    if ((rc == 0)); then
      echo "--- ok ($((SECONDS - started_at[$finished])) s): ${queued_suites[i]}"
    else
      echo "--- FAILED: exit status $rc ($((SECONDS - started_at[$finished])) s): ${queued_suites[i]}"
      failed=$((failed + 1))
    fi
  }
  for ((i = 0; i < n; i++)); do
    while ((running >= at_once)); do reap; done
    echo "--- started: ${queued_suites[i]}(log: $logs/$i.log)"
    eval "${queued_suites[i]}" >"$logs/$i.log" 2>&1 &
    pid=$!
    index_of[$pid]=$i
    started_at[$pid]=$SECONDS
    running=$((running + 1))
  done
  while ((running > 0)); do reap; done
  echo
  echo "$name: $failed of $n suites failed"
  queued_suites=()
  ((failed == 0))
}

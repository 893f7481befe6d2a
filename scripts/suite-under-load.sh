#!/usr/bin/env bash
# Runs the whole Go suite N times in a row (default 5) with -race while a
# CPU hog keeps every core busy, and stops at the first failing run: the
# proof that the suite does not flake on a loaded machine (issue 27).
# Prints each run's time and result, and the failing run's failures.
#
# Usage: bash scripts/suite-under-load.sh [RUNS] [go test packages, default ./...]
#   AMS_TEST_DATABASE_URL, AMS_TEST_REDIS_URL, ... as for make test. Each
#   run is `make go-test` (the flags make test uses; GO_TEST_P=2 for two
#   packages at a time). Run `make test-deps` first (npm packages).
set -uo pipefail
cd "$(dirname "$0")/.."
runs="${1:-5}"
shift || true
pkgs=("${@:-./...}")
[ ${#pkgs[@]} -eq 0 ] && pkgs=(./...)

# The hog: one busy loop per core, at normal priority, ended on exit.
hogs=()
for _ in $(seq "$(nproc)"); do
  ( while :; do :; done ) &
  hogs+=($!)
done
trap 'kill "${hogs[@]}" 2>/dev/null' EXIT
echo "CPU hog: ${#hogs[@]} busy loops (pids ${hogs[*]})"

log="$(mktemp /tmp/ams-suite-under-load.XXXXXX)"
for i in $(seq "$runs"); do
  start=$SECONDS
  if make --no-print-directory go-test PKGS="${pkgs[*]}" >"$log" 2>&1; then
    echo "run $i of $runs: ok in $((SECONDS - start)) s"
  else
    echo "run $i of $runs: FAILED in $((SECONDS - start)) s"
    grep -E '^(--- FAIL|FAIL|panic:)|_test\.go:[0-9]+:' "$log" | head -60
    echo "(whole log: $log)"
    exit 1
  fi
done
rm -f "$log"
echo "$runs passed, 0 failed"

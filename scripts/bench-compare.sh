#!/usr/bin/env bash
# Runs the benchmarks a refactoring must not slow down, for a base commit
# and for the working tree, one after the other benchmark by benchmark (so
# both columns see the same machine within minutes):
#  1. go test -bench of the handler stack (http: GetMessage, SendMessage);
#  2. make bench (scripts/bench.sh): wrk against GET and POST /v1/messages;
#  3. scripts/bench-webhooks.sh phases 1 and 2: delivery throughput and
#     first-attempt latency;
#  4. scripts/bench-multi.sh for SQLite and PostgreSQL, one process each.
# Each tree runs its own scripts and binaries. Reports go to OUT (default a
# new temporary directory), one file per benchmark and tree. About 20
# minutes. Needs what the scripts need (wrk, PostgreSQL at
# $AMS_TEST_DATABASE_URL or the default).
#
# Usage: bash scripts/bench-compare.sh BASE [OUT]
set -euo pipefail
cd "$(dirname "$0")/.."
base="${1:?usage: bash scripts/bench-compare.sh BASE [OUT]}"
out="${2:-$(mktemp -d)}"
mkdir -p "$out"
before=$(mktemp -d)
git worktree add --detach "$before" "$base" >/dev/null
trap 'git worktree remove --force "$before"' EXIT
after=$(pwd)

run() { # name tree command...
  local name=$1 tree=$2
  shift 2
  echo "== $name ($tree)" >&2
  (cd "$tree" && "$@") >"$out/$name.txt" 2>"$out/$name.log"
}

for t in before after; do
  run "gobench-$t" "${!t}" go test ./http -run XXX -bench . -benchtime 3s -count 3
done
for t in before after; do
  run "bench-$t" "${!t}" env LOG_LEVEL=warn bash scripts/bench.sh 10
done
for t in before after; do
  run "webhooks-$t" "${!t}" bash scripts/bench-webhooks.sh -phases 1,2
done
for t in before after; do
  run "multi-$t" "${!t}" bash scripts/bench-multi.sh -configs sqlite:1,pg:1
done
echo "reports in $out" >&2

#!/usr/bin/env bash
# Delivery benchmark of issue 13 (docs/benchmarks.md, "Issue 13"), in one
# go: builds ams and bench/delivery into a temporary directory and measures
#  1. cross: first-attempt latency (p50/p99) of events committed by an
#     API-only process (--webhook-concurrency 0) and delivered by a second
#     process on one PostgreSQL schema, at 200 events a second for 20 s;
#  2. noisy: account A's 100 webhooks answer in 4.5 s with 1,000 deliveries
#     queued; the latency of account B's first attempts meanwhile.
# Everything runs on 127.0.0.1. The markdown report goes to stdout,
# progress to stderr. About 2 minutes.
#
# Usage: bash scripts/bench-delivery.sh [flags of bench/delivery, e.g. -phases noisy]
#   BENCH_REF=<commit>  build ams from that commit (git archive) instead of
#                       the working tree (the benchmark program is always the
#                       working tree's)
#   BENCH_DB=postgres://...  default $AMS_TEST_DATABASE_URL, else the local test database
#   BENCH_TIMEOUT=900   seconds before the whole run is stopped
set -euo pipefail
cd "$(dirname "$0")/.."

DB="${BENCH_DB:-${AMS_TEST_DATABASE_URL:-postgres://postgres@127.0.0.1:5432/test?sslmode=disable}}"
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT

src=.
label="working tree of $(git rev-parse --short HEAD 2>/dev/null || echo '?')"
if [ -n "${BENCH_REF:-}" ]; then
  src="$work/src"
  mkdir -p "$src"
  git archive "$BENCH_REF" | tar -x -C "$src"
  label="commit $(git rev-parse --short "$BENCH_REF")"
elif [ -n "$(git status --porcelain 2>/dev/null)" ]; then
  label="$label, with uncommitted changes"
fi
(cd "$src" && go build -o "$work/ams" ./cmd/ams)
go build -o "$work/bench-delivery" ./bench/delivery

timeout --kill-after=30s "${BENCH_TIMEOUT:-900}" \
  "$work/bench-delivery" -ams "$work/ams" -db "$DB" -label "$label" "$@"

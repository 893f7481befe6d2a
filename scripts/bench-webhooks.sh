#!/usr/bin/env bash
# Webhook delivery benchmark of issue 3 (docs/benchmarks.md), in one go:
# builds ams and bench/webhooks into a temporary directory and runs
#  1. throughput: 4 webhooks, 8 clients sending messages for 10 s, then the
#     drain; every (event, webhook) pair must arrive exactly once;
#  2. latency from an event's created_at to its first attempt's arrival at a
#     steady 100 messages (200 events) per second for 20 s;
#  3. a dead receiver: server memory while 100,000 deliveries wait for a
#     closed loopback port, and a healthy webhook's latency meanwhile.
# Everything runs on 127.0.0.1. The markdown report goes to stdout,
# progress to stderr.
#
# Usage: bash scripts/bench-webhooks.sh [flags of bench/webhooks, e.g. -phases 2]
#   BENCH_REF=<commit>  build ams from that commit (git archive) instead of
#                       the working tree; the benchmark program is always the
#                       working tree's bench/webhooks.
#   BENCH_TIMEOUT=1500  seconds before the whole run is stopped.
set -euo pipefail
cd "$(dirname "$0")/.."

work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT

src=.
label="working tree of $(git rev-parse --short HEAD 2>/dev/null || echo '?')"
if [ -n "${BENCH_REF:-}" ]; then
  src="$work/src"
  mkdir -p "$src"
  git archive "$BENCH_REF" | tar -x -C "$src"
  mkdir -p "$src/bench/webhooks"
  cp bench/webhooks/main.go "$src/bench/webhooks/main.go"
  label="commit $(git rev-parse --short "$BENCH_REF")"
elif [ -n "$(git status --porcelain 2>/dev/null)" ]; then
  label="$label, with uncommitted changes"
fi

(cd "$src" && go build -o "$work/ams" ./cmd/ams && go build -o "$work/bench-webhooks" ./bench/webhooks)

# The benchmark bounds each phase itself; the timeout is a last resort.
timeout --kill-after=30s "${BENCH_TIMEOUT:-1500}" \
  "$work/bench-webhooks" -ams "$work/ams" -label "$label" "$@"

#!/usr/bin/env bash
# Multi-process benchmark of issue 5 (docs/benchmarks.md, "Issue 5: several
# processes on PostgreSQL"), in one go: builds ams and bench/multi into a
# temporary directory and, for SQLite with one process and PostgreSQL with
# one, two and three `ams serve` processes on one fresh schema each (the load
# from one account, then from 16), measures
#  1. POST /v1/messages per second (p50, p99): 64 clients spread round-robin
#     over the processes, no webhooks;
#  2. mixed: deliveries per second to a loopback receiver (4 webhooks per
#     account) while 8 clients send messages for 10 s, then the drain;
#  3. backlog: deliveries per second once a backlog held at the receiver is
#     released, with no other load (the processes' delivery capacity);
# every delivery must arrive, once. Where the time goes: the CPU split
# between the ams processes, PostgreSQL, the load generator and the rest of
# the machine (/proc), what PostgreSQL's backends of ams are doing
# (pg_stat_activity by wait event and statement), and a CPU profile of the
# first ams process. The markdown report goes to stdout, progress to stderr.
# About 7 minutes.
#
# Usage: bash scripts/bench-multi.sh [flags of bench/multi, e.g. -configs pg:3 -keep]
#   BENCH_DB=postgres://...  the PostgreSQL server (default $AMS_TEST_DATABASE_URL,
#                            else postgres://postgres@127.0.0.1:5432/test?sslmode=disable);
#                            a schema bench_multi_* is made per configuration and dropped
#   BENCH_PROFILE=0          no CPU profile (the first process then runs the plain binary too)
#   BENCH_TIMEOUT=1200       seconds before the whole run is stopped
set -euo pipefail
cd "$(dirname "$0")/.."

DB="${BENCH_DB:-${AMS_TEST_DATABASE_URL:-postgres://postgres@127.0.0.1:5432/test?sslmode=disable}}"
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT

label="working tree of $(git rev-parse --short HEAD 2>/dev/null || echo '?')"
if [ -n "$(git status --porcelain 2>/dev/null)" ]; then
  label="$label, with uncommitted changes"
fi

go build -o "$work/ams" ./cmd/ams
go build -o "$work/bench-multi" ./bench/multi

prof=()
if [ "${BENCH_PROFILE:-1}" != 0 ]; then
  # The same ams with net/http/pprof on $AMS_BENCH_PPROF, added by a build
  # overlay: the working tree is not touched.
  cat >"$work/zz_bench_pprof.go" <<'GO'
package main

import (
	"net/http"
	_ "net/http/pprof"
	"os"
)

func init() {
	if addr := os.Getenv("AMS_BENCH_PPROF"); addr != "" {
		go http.ListenAndServe(addr, nil)
	}
}
GO
  printf '{"Replace":{"%s":"%s"}}\n' "$PWD/cmd/ams/zz_bench_pprof.go" "$work/zz_bench_pprof.go" >"$work/overlay.json"
  go build -overlay "$work/overlay.json" -o "$work/ams-pprof" ./cmd/ams
  prof=(-ams-pprof "$work/ams-pprof")
fi

timeout --kill-after=30s "${BENCH_TIMEOUT:-1200}" \
  "$work/bench-multi" -ams "$work/ams" "${prof[@]}" -db "$DB" -label "$label" "$@"

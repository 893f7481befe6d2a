#!/usr/bin/env bash
# What one POST /v1/messages costs on PostgreSQL (issue 33, point 3): runs
# ams serve on a fresh schema under wrk (64 connections, built-in engine,
# a new conversation each) and prints the rate, the CPU time per request
# of ams and of the whole machine (ams, PostgreSQL and wrk: on a machine
# whose cores the load fills, the rate is the cores over this figure),
# the transactions committed per request, and the rows each table got
# per request (pg_stat_user_tables).
#
# MODE=get measures the authenticated GET /v1/messages/{id} of one message
# instead (issue 33, point 3: the GET against the bare handler).
#
# Usage: AMS_BIN=/tmp/ams-X [DUR=10] [PERF=1] [MODE=get] bash scripts/bench-post-cost.sh
#   AMS_TEST_DATABASE_URL (default postgres://postgres@127.0.0.1:5432/test)
#   names the database; a schema bench_post_cost_<pid> is made and dropped.
#   PERF=1 records 5 s of the whole machine with perf into
#   /tmp/bench-post-cost.perf (perf report -i ... --sort comm,symbol).
# Run two builds one after the other, twice, alternating: absolute rates
# drift between runs on a shared machine.
set -uo pipefail
cd "$(dirname "$0")/.."
BIN=${AMS_BIN:?AMS_BIN: the ams binary to measure}
DB=${AMS_TEST_DATABASE_URL:-postgres://postgres@127.0.0.1:5432/test?sslmode=disable}
S=bench_post_cost_$$
PSQL=(psql -q -X -v ON_ERROR_STOP=1 "$DB")
command -v wrk >/dev/null || { apt-get update -qq && apt-get install -y -qq wrk >/dev/null; }
"${PSQL[@]}" -c "CREATE SCHEMA $S" >/dev/null
sep='?'; case "$DB" in *\?*) sep='&';; esac
export AMS_DATABASE_URL="$DB${sep}search_path=$S"
export AMS_SECRET_KEY=${AMS_SECRET_KEY:-$(openssl rand -base64 32)}
work=$(mktemp -d)
trap 'kill $(jobs -p) 2>/dev/null; wait 2>/dev/null; "${PSQL[@]}" -c "DROP SCHEMA $S CASCADE" >/dev/null 2>&1; rm -rf "$work"' EXIT
"$BIN" users create --email bench@example.com --plan enterprise >/dev/null
"$BIN" users update --email bench@example.com --rpm 1000000000 --rpd 1000000000 >/dev/null
KEY=$("$BIN" keys create --email bench@example.com --name bench --permissions read,messages 2>/dev/null)
AST=$("$BIN" assistants create --email bench@example.com --name Bench)
AMS_MAX_CONCURRENT_TURNS_PER_ACCOUNT=1000000 "$BIN" serve --addr 127.0.0.1:18081 --log-level warn 2>"$work/serve.log" &
PID=$!
for _ in $(seq 100); do curl -fs -o /dev/null http://127.0.0.1:18081/v1/openapi.json && break; sleep 0.1; done
cat > "$work/post.lua" <<LUA
wrk.method = "POST"
wrk.headers["Authorization"] = "Bearer $KEY"
wrk.headers["Content-Type"] = "application/json"
wrk.body = '{"assistant_id":"$AST","message":"Hello! What can you do?"}'
LUA
script=post.lua url=http://127.0.0.1:18081/v1/messages what="POST /v1/messages"
if [ "${MODE:-post}" = get ]; then
  MSG=$(curl -fs "$url" -H "Authorization: Bearer $KEY" -H 'Content-Type: application/json' \
    -d "{\"assistant_id\":\"$AST\",\"message\":\"Hello! What can you do?\"}" | sed -E 's/.*"id":"(msg_[A-Za-z0-9]+)".*/\1/')
  printf 'wrk.headers["Authorization"] = "Bearer %s"\n' "$KEY" >"$work/get.lua"
  script=get.lua url=$url/$MSG what="GET /v1/messages/{id}"
fi
wrk -t2 -c64 -d3s -s "$work/$script" "$url" >/dev/null # warm-up
ticks() { # CPU ticks (1/100 s) of ams, and busy ticks of the whole machine
  echo "$(awk '{print $14+$15}' "/proc/$PID/stat") $(awk '/^cpu / {print $2+$3+$4+$7+$8}' /proc/stat)"
}
tables() {
  psql -X -At "$DB" -c "SELECT relname, n_tup_ins, n_tup_upd, n_tup_del FROM pg_stat_user_tables WHERE schemaname = '$S' ORDER BY relname"
}
commits() { psql -X -At "$DB" -c "SELECT xact_commit FROM pg_stat_database WHERE datname = current_database()"; }
tables >"$work/t0"; x0=$(commits); read -r a0 m0 < <(ticks)
wrk -t2 -c64 -d"${DUR:-10}s" -s "$work/$script" "$url" >"$work/wrk.txt" &
if [ -n "${PERF:-}" ]; then sleep 2; perf record -a -F 499 -g -o /tmp/bench-post-cost.perf -- sleep 5 >/dev/null 2>&1; fi
wait %2
read -r a1 m1 < <(ticks)
sleep 1 # the statistics collector
tables >"$work/t1"; x1=$(commits)
n=$(awk '/requests in/ {print $1}' "$work/wrk.txt")
awk -v what="$what" -v n="$n" -v a=$((a1 - a0)) -v m=$((m1 - m0)) -v x=$((x1 - x0)) -v rps="$(awk '/Requests\/sec/ {print $2}' "$work/wrk.txt")" 'BEGIN {
  printf "%s: %d requests, %s/s\n", what, n, rps
  printf "CPU per request: ams %.3f ms, whole machine %.3f ms\n", a * 10 / n, m * 10 / n
  printf "transactions committed per request (the database'"'"'s, all clients): %.2f\n", x / n }'
join -t'|' "$work/t0" "$work/t1" | awk -F'|' -v n="$n" '{i = ($5 - $2) / n; u = ($6 - $3) / n; d = ($7 - $4) / n
  if (i + u + d > 0.01) printf "  %-24s inserted %.2f  updated %.2f  deleted %.2f per request\n", $1, i, u, d }'

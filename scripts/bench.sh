#!/usr/bin/env bash
# Load benchmark of issue 2, run on one machine in one go:
#  1. a bare net/http handler answering GET /v1/messages/{id} (bench/bare),
#  2. ams serve on SQLite: authenticated GET /v1/messages/{id},
#  3. ams serve: POST /v1/messages with the built-in engine.
# The account is on the enterprise plan with limits far above the load.
# Usage: bash scripts/bench.sh [seconds per run, default 15]
# LOG_LEVEL=warn drops the per-request access log (default: info, as ams serve).
# AMS_BIN=path runs that ams binary instead of building the working tree
# (to compare two builds in one sitting, alternating them).
set -euo pipefail
cd "$(dirname "$0")/.."
DUR="${1:-15}"
CONNS="${CONNS:-64}"
THREADS="${THREADS:-2}"

if ! command -v wrk >/dev/null; then
  apt-get update -qq && apt-get install -y -qq wrk >/dev/null
fi

work=$(mktemp -d)
trap 'kill $(jobs -p) 2>/dev/null || true; wait 2>/dev/null || true; rm -rf "$work"' EXIT
if [ -n "${AMS_BIN:-}" ]; then
  cp "$AMS_BIN" "$work/ams"
else
  go build -o "$work/ams" ./cmd/ams
fi
go build -o "$work/bare" ./bench/bare

export AMS_DATA_DIR="$work/data"
"$work/ams" users create --email bench@example.com --plan enterprise >/dev/null
"$work/ams" users update --email bench@example.com --rpm 1000000000 --rpd 1000000000 >/dev/null
KEY=$("$work/ams" keys create --email bench@example.com --name bench --permissions read,messages 2>/dev/null)
AST=$("$work/ams" assistants create --email bench@example.com --name Bench)

"$work/bare" -addr 127.0.0.1:18090 & 
# The load holds more turns at once than an account may by default.
AMS_MAX_CONCURRENT_TURNS_PER_ACCOUNT=1000000 "$work/ams" serve --addr 127.0.0.1:18080 --log-level "${LOG_LEVEL:-info}" 2>"$work/serve.log" &
for _ in $(seq 50); do
  curl -fs -o /dev/null http://127.0.0.1:18080/v1/openapi.json && curl -fs -o /dev/null http://127.0.0.1:18090/v1/messages/x && break
  sleep 0.1
done

MSG=$(curl -fs http://127.0.0.1:18080/v1/messages -H "Authorization: Bearer $KEY" -H 'Content-Type: application/json' \
  -d "{\"assistant_id\":\"$AST\",\"message\":\"Hello! What can you do?\"}" | sed -E 's/.*"id":"(msg_[A-Za-z0-9]+)".*/\1/')

cat > "$work/auth.lua" <<LUA
wrk.headers["Authorization"] = "Bearer $KEY"
LUA
cat > "$work/post.lua" <<LUA
wrk.method = "POST"
wrk.headers["Authorization"] = "Bearer $KEY"
wrk.headers["Content-Type"] = "application/json"
wrk.body = '{"assistant_id":"$AST","message":"Hello! What can you do?"}'
LUA

rps() { awk '/Requests\/sec/ {print $2}'; }
lat() { awk '/^ +Latency +[0-9]/ {print $2" avg, "$4" max"}'; }

echo "== warm-up"
wrk -t"$THREADS" -c"$CONNS" -d3s "http://127.0.0.1:18090/v1/messages/$MSG" >/dev/null
wrk -t"$THREADS" -c"$CONNS" -d3s -s "$work/auth.lua" "http://127.0.0.1:18080/v1/messages/$MSG" >/dev/null

echo "== bare net/http GET /v1/messages/{id}"
wrk -t"$THREADS" -c"$CONNS" -d"${DUR}s" --latency "http://127.0.0.1:18090/v1/messages/$MSG" | tee "$work/bare.txt"
echo "== ams GET /v1/messages/{id} (authenticated, rate-limited, SQLite)"
wrk -t"$THREADS" -c"$CONNS" -d"${DUR}s" --latency -s "$work/auth.lua" "http://127.0.0.1:18080/v1/messages/$MSG" | tee "$work/get.txt"
echo "== ams POST /v1/messages (built-in engine, new conversation each)"
wrk -t"$THREADS" -c"$CONNS" -d"${DUR}s" --latency -s "$work/post.lua" "http://127.0.0.1:18080/v1/messages" | tee "$work/post.txt"

# Every answer must have been a success for the figures to count.
for f in get post bare; do
  if grep -q "Non-2xx" "$work/$f.txt"; then echo "FAIL: $f run had non-2xx answers" >&2; exit 1; fi
done
B=$(rps <"$work/bare.txt"); G=$(rps <"$work/get.txt"); P=$(rps <"$work/post.txt")
echo
echo "| measure | requests/s | latency (avg, max) |"
echo "|---|---|---|"
echo "| bare net/http GET | $B | $(lat <"$work/bare.txt") |"
echo "| ams GET /v1/messages/{id} | $G | $(lat <"$work/get.txt") |"
echo "| ams POST /v1/messages | $P | $(lat <"$work/post.txt") |"
awk -v g="$G" -v b="$B" 'BEGIN { printf "\nGET ratio ams/bare: %.1f%%\n", 100*g/b }'

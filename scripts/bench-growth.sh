#!/usr/bin/env bash
# Growth benchmark of issue 33 (docs/benchmarks.md, "Issue 33"): for each
# engine and scale, bench/growth seeds a fresh store (SQLite in a
# temporary directory, PostgreSQL in a fresh schema it drops) with what
# the API writes (N events of history over 31 days with their finished
# jobs, attempts, turns and messages; N/10 accounts, at most 10,000, with
# a webhook each; 100,000 jobs pending for a dead receiver), checks it
# through `ams serve`'s API, and measures POST /v1/messages, the claim,
# the drain, catch-up and history pages, the purge, bytes per event and
# RSS, printing the query plans of what grows. Then a markdown table, and
# one line per engine: "growth ENGINE: claim p50 xR, drain xD (1M vs 10k rows)"
# (the largest scale run against the smallest).
#
# Usage: bash scripts/bench-growth.sh
#   GROWTH_SCALES="10k 100k"   scales (events of history): 10k 100k 1M 10M
#   GROWTH_ENGINES="sqlite pg" engines
#   GROWTH_ARGS="..."          more flags of bench/growth run (e.g. -post-duration 20s -claims 500)
#   BENCH_REF=<commit>         build ams from that commit (git archive) instead of the working tree
#   BENCH_DB=postgres://...    default $AMS_TEST_DATABASE_URL, else the local test database
#   GROWTH_TIMEOUT=<seconds>   per run; default by scale (10k 300, 100k 600, 1M 1800, 10M 7200)
# Reports go to stdout (plans included), progress to stderr. 10k and 100k
# on both engines: about 4 minutes.
set -euo pipefail
cd "$(dirname "$0")/.."

DB="${BENCH_DB:-${AMS_TEST_DATABASE_URL:-postgres://postgres@127.0.0.1:5432/test?sslmode=disable}}"
SCALES="${GROWTH_SCALES:-10k 100k}"
ENGINES="${GROWTH_ENGINES:-sqlite pg}"
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
go build -o "$work/growth" ./bench/growth

rows_of() {
  case "$1" in
    *k) echo $(( ${1%k} * 1000 )) ;;
    *M) echo $(( ${1%M} * 1000000 )) ;;
    *) echo "$1" ;;
  esac
}
timeout_of() {
  local r; r=$(rows_of "$1")
  if [ -n "${GROWTH_TIMEOUT:-}" ]; then echo "$GROWTH_TIMEOUT"
  elif [ "$r" -le 10000 ]; then echo 300
  elif [ "$r" -le 100000 ]; then echo 600
  elif [ "$r" -le 1000000 ]; then echo 1800
  else echo 7200; fi
}

echo "## Growth benchmark (issue 33)"
echo
echo "ams: $label; $(nproc) cores ($(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2- | sed 's/^ *//'))"
echo "load before the runs: $(cut -d' ' -f1-3 /proc/loadavg)"
rowsfile="$work/rows"
: >"$rowsfile"
for engine in $ENGINES; do
  for scale in $SCALES; do
    out="$work/$engine-$scale.md"
    # TMPDIR: the SQLite store goes under $work, removed on exit whatever happens.
    # shellcheck disable=SC2086
    if TMPDIR="$work" timeout --kill-after=30s "$(timeout_of "$scale")" \
      "$work/growth" run -ams "$work/ams" -label "$label" -engine "$engine" -rows "$(rows_of "$scale")" -db "$DB" ${GROWTH_ARGS:-} >"$out"; then
      :
    else
      echo "FAIL: $engine $scale (exit $?)" >&2
    fi
    grep -v '^ROW|' "$out" || true
    grep '^ROW|' "$out" | sed "s/^ROW|/$scale|/" >>"$rowsfile" || true
  done
done

echo
echo "### Table"
echo
echo "| engine | rows | accounts | events | seed s | bytes/event | POST/s | POST p50 / p99 ms | claim p50 / p99 ms | drain/s | missing / dup | catch-up p50 / p99 ms | late page p50 / p99 ms | history p50 / p99 ms | purge (1 day) ms / rows | RSS MiB |"
echo "|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|"
# scale|engine|rows|accounts|events|seed|bpe|post|p50|p99|c50|c99|drain|miss|dup|k50|k99|h50|h99|purge|purged|rss|deep50|deep99
awk -F'|' '{ printf "| %s | %s | %s | %s | %s | %s | %s | %s / %s | %s / %s | %s | %s / %s | %s / %s | %s / %s | %s / %s | %s / %s | %s |\n",
  $2, $1, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13, $14, $15, $16, $17, $23, $24, $18, $19, $20, $21, $22 }' "$rowsfile"
echo
for engine in $ENGINES; do
  # The smallest and the largest scale run of the engine.
  awk -F'|' -v e="$engine" '$2 == e { if (!n++ || $3 < minr) { minr = $3; mins = $1; minc = $11; mind = $13 }
      if ($3 > maxr) { maxr = $3; maxs = $1; maxc = $11; maxd = $13 } }
    END { if (n < 2 || minc == 0 || mind == 0) { printf "growth %s: not enough runs to compare\n", e; exit }
      printf "growth %s: claim p50 x%.1f, drain x%.2f (%s vs %s rows)\n", e, maxc / minc, maxd / mind, maxs, mins }' "$rowsfile"
done

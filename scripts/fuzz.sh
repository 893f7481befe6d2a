#!/usr/bin/env bash
# Runs every fuzz target of ams, one after the other, each for SECONDS
# (default 60), and prints per target the executions, the new interesting
# inputs, and whether it found a failing input.
#
# Usage: scripts/fuzz.sh [SECONDS] [NAME-REGEXP]
#   NAME-REGEXP picks targets by name (default: all).
#   FUZZ_PARALLEL=N runs N fuzzing workers (default: go's, one per CPU).
#
# A failing input is written by go to <package>/testdata/fuzz/<Target>/;
# once the bug is fixed, commit it there: it then runs as a seed in every
# `go test` (and so `make test`). The seed corpora always run that way;
# this script is for searching further.
set -uo pipefail
cd "$(dirname "$0")/.."
SECONDS_PER="${1:-60}"
PICK="${2:-.}"

# Every fuzz target, with its package (TestFuzzScriptListsEveryTarget in
# fuzz_script_test.go checks that none is missing).
TARGETS=(
  "./http FuzzDecodeJSON"              # JSON body decoder
  "./http FuzzCheckJSONAllocations"    # allocations of the JSON checks per input byte
  "./ssrf FuzzCheckURL"                # URL checks of webhooks and CalDAV
  "./ssrf FuzzBlocked"                 # which addresses are internal; the connect-time check
  "./clientaddr FuzzClient"           # the client address behind trusted proxies (Forwarded, X-Forwarded-For)
  "./oauth FuzzSafeReturnTo"           # return_to of the sign-in pages
  "./caldav FuzzWriteFeed"             # iCalendar export (feed)
  "./caldav FuzzReadICal"              # iCalendar import and write-back (CalDAV sync)
  "./engine/openai FuzzProviderAnswer" # LLM response and stream parsing
  "./internal/dump FuzzReader"         # ams import: the dump reader
  "./sqlite FuzzImport"                # ams import into a store: all or nothing
  "./engine/builtin FuzzReply"         # the built-in engine's replies
  "./engine/builtin FuzzWorld"         # the built-in engine's world intents
  "./. FuzzMessageJSON"                # the hand-written JSON of a message, against the reflective one
  "./. FuzzMarshalData"                # the direct JSON of event data, against json.Marshal
  "./. FuzzTurnJSON"                   # the hand-written JSON of a turn, against the reflective one
)

par=()
if [[ -n "${FUZZ_PARALLEL:-}" ]]; then par=(-parallel "$FUZZ_PARALLEL"); fi

log=$(mktemp -d)
trap 'rm -rf "$log"' EXIT
summary=()
failed=0
for entry in "${TARGETS[@]}"; do
  read -r pkg name <<<"$entry"
  [[ "$name" =~ $PICK ]] || continue
  echo "== $name ($pkg), ${SECONDS_PER}s"
  out="$log/$name.txt"
  # go minimizes each new interesting input for up to 60 s by default; on
  # the targets whose inputs are a few KB (a dump for FuzzImport and
  # FuzzReader, feed text for FuzzWriteFeed) that took most of a run, with
  # no execution meanwhile. 3 s each keeps the search going; a failing
  # input is still written, minimized as far as 3 s allow.
  extra=(-fuzzminimizetime=3s)
  go test -run '^$' -fuzz "^${name}\$" -fuzztime "${SECONDS_PER}s" "${par[@]}" "${extra[@]}" "$pkg" >"$out" 2>&1
  rc=$?
  # The last progress line: "fuzz: elapsed: 60s, execs: 123 (2/sec), new interesting: 4 (total: 40)".
  last=$(grep -E '^fuzz: elapsed: .*execs: ' "$out" | tail -1)
  execs=$(sed -nE 's/.*execs: ([0-9]+).*/\1/p' <<<"$last")
  newi=$(sed -nE 's/.*new interesting: ([0-9]+) \(total: ([0-9]+)\).*/\1 (corpus \2)/p' <<<"$last")
  if [[ $rc -eq 0 ]]; then
    found="nothing found"
  else
    failed=1
    crash=$(sed -nE 's/.*Failing input written to (.*)$/\1/p' "$out" | tail -1)
    found="FOUND: ${crash:-see the output above} "
    tail -40 "$out"
  fi
  line=$(printf '%-20s %-16s execs %-12s new interesting %-18s %s' "$name" "$pkg" "${execs:-?}" "${newi:-?}" "$found")
  echo "$line"
  summary+=("$line")
done
echo
echo "== summary (${SECONDS_PER}s per target)"
printf '%s\n' "${summary[@]}"
exit $failed

#!/usr/bin/env bash
# Runs test suites, each given as "name:command", even after one fails;
# prints how long each took, and exits non-zero at the end, naming the
# suites that failed. make test uses it.
#
# A suite whose name starts with "&" runs in the background, beside the
# suites after it (the SDKs' suites, which mostly wait on their servers and
# on rate-limit windows, beside the Go suite): its output is kept in a
# file and printed whole when it ends, so that the logs do not interleave.
# The others run one after another in the foreground.
set -u
failed=()
summary=()
total_start=$(date +%s)
logs=$(mktemp -d)
trap 'rm -rf "$logs"' EXIT
bg=() # the background suites' names, in order; suite i's files are $logs/i.*

record() { # name result secs
  summary+=("$(printf '%-16s %-6s %4d s' "$1" "$2" "$3")")
  if [ "$2" != ok ]; then failed+=("$1"); fi
  echo "==> $1: $2 in $3 s"
}

for suite in "$@"; do
  name="${suite%%:*}"
  cmd="${suite#*:}"
  if [ "${name:0:1}" = "&" ]; then
    name="${name:1}"
    i=${#bg[@]}
    bg+=("$name")
    echo "==> $name (in the background): $cmd"
    (
      start=$(date +%s)
      if bash -c "$cmd" >"$logs/$i.log" 2>&1; then echo ok; else echo FAILED; fi >"$logs/$i.result"
      echo $(( $(date +%s) - start )) >"$logs/$i.secs"
    ) &
    continue
  fi
  echo "==> $name: $cmd"
  start=$(date +%s)
  if bash -c "$cmd"; then result=ok; else result=FAILED; fi
  record "$name" "$result" $(( $(date +%s) - start ))
done
wait
for i in "${!bg[@]}"; do
  echo "==> ${bg[$i]} (ran in the background): its output"
  cat "$logs/$i.log"
  record "${bg[$i]}" "$(cat "$logs/$i.result" 2>/dev/null || echo FAILED)" "$(cat "$logs/$i.secs" 2>/dev/null || echo 0)"
done
echo
echo "Suites (total $(( $(date +%s) - total_start )) s):"
printf '  %s\n' "${summary[@]}"
if ((${#failed[@]})); then
  echo "FAILED: ${failed[*]}"
  exit 1
fi
echo "All suites passed."

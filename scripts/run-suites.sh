#!/usr/bin/env bash
# Runs test suites one after another, each given as "name:command", even
# after one fails; prints how long each took, and exits non-zero at the
# end, naming the suites that failed. make test uses it.
set -u
failed=()
summary=()
total_start=$(date +%s)
for suite in "$@"; do
  name="${suite%%:*}"
  cmd="${suite#*:}"
  echo "==> $name: $cmd"
  start=$(date +%s)
  if bash -c "$cmd"; then
    result=ok
  else
    result=FAILED
    failed+=("$name")
  fi
  secs=$(( $(date +%s) - start ))
  summary+=("$(printf '%-16s %-6s %4d s' "$name" "$result" "$secs")")
  echo "==> $name: $result in ${secs} s"
done
echo
echo "Suites (total $(( $(date +%s) - total_start )) s):"
printf '  %s\n' "${summary[@]}"
if ((${#failed[@]})); then
  echo "FAILED: ${failed[*]}"
  exit 1
fi
echo "All suites passed."

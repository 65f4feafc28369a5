# Sourced by .ci/run: each step of CI is a phase, timed on the wall clock, and one summary at the
# end says how long each took, how many tests each ran, and which grew by more than a minute
# against the budget written in docs/development.md ("CI's time budget"), so every landing shows
# where CI's 30 minutes go (issue #52).
#
#   phase NAME CMD...      runs CMD in the foreground, its output to $CI_LOGS/NAME.log, printed when
#                          it ends (whole when it failed; go test's package lines when it passed)
#   phase_bg NAME CMD...   runs CMD in the background, its output to $CI_LOGS/NAME.log, printed
#                          as above when `phase_wait` reaps it, so logs do not interleave
#   phase_wait NAME...     waits for background phases; fails if any of them failed
#   phase_summary          the table (run from .ci/run's EXIT trap, so a failed run prints it too,
#                          and the run's exit status stays its own)
#
# A phase's record is one line in $CI_LOGS/phases.tsv: name, wall seconds, exit status, CPU
# seconds (user and system, of every process it waited for: how much of two cores it took).

CI_LOGS="${CI_LOGS:-$(mktemp -d /tmp/otelcol-gym-ci.XXXXXX)}"
export CI_LOGS
: >"$CI_LOGS/phases.tsv"
ci_start=$(date +%s)
declare -A ci_pid=()

phase() {
  local name=$1 t0 rc=0
  shift
  t0=$(date +%s)
  echo "::: phase $name: $*"
  ci_timed "$name" "$@" >"$CI_LOGS/$name.log" 2>&1 </dev/null || rc=$?
  printf '%s\t%s\t%s\t%s\n' "$name" "$(($(date +%s) - t0))" "$rc" "$(ci_cpu "$name")" >>"$CI_LOGS/phases.tsv"
  ci_print_log "$name" "$rc"
  echo "::: phase $name: exit $rc after $(($(date +%s) - t0)) s"
  return "$rc"
}

phase_bg() {
  local name=$1
  shift
  echo "::: phase $name (background, log $CI_LOGS/$name.log): $*"
  (
    t0=$(date +%s) rc=0
    ci_timed "$name" "$@" >"$CI_LOGS/$name.log" 2>&1 </dev/null || rc=$?
    printf '%s\t%s\t%s\t%s\n' "$name" "$(($(date +%s) - t0))" "$rc" "$(ci_cpu "$name")" >>"$CI_LOGS/phases.tsv"
    exit "$rc"
  ) &
  ci_pid[$name]=$!
}

# ci_timed NAME CMD...: CMD in a subshell of its own, whose `times` gives the CPU seconds (user
# and system) of everything CMD ran and waited for, into $CI_LOGS/NAME.cpu.
ci_timed() {
  local name=$1
  shift
  (
    rc=0
    "$@" || rc=$?
    times >"$CI_LOGS/$name.times" # not in a pipeline: there it would be a subshell's own
    awk 'NR == 2 { n = 0; for (i = 1; i <= 2; i++) { split($i, a, /[ms]/); n += a[1] * 60 + a[2] } printf "%d\n", n }' \
      "$CI_LOGS/$name.times" >"$CI_LOGS/$name.cpu"
    exit "$rc"
  )
}

ci_cpu() { cat "$CI_LOGS/$1.cpu" 2>/dev/null || echo -; }

phase_wait() {
  local name rc failed=0
  for name in "$@"; do
    rc=0
    wait "${ci_pid[$name]}" || rc=$?
    unset "ci_pid[$name]"
    ci_print_log "$name" "$rc"
    [ "$rc" -eq 0 ] || failed=1
  done
  return "$failed"
}

# A phase's log: whole when it failed or holds no `go test` output; else go test's package lines
# (ok/FAIL), its failures, and the counts of top-level tests.
ci_print_log() {
  local name=$1 rc=$2 log="$CI_LOGS/$1.log"
  if [ "$rc" -ne 0 ] || ! grep -qE '^(ok|FAIL|\?) ' "$log"; then
    echo "::: phase $name: exit $rc; its log follows"
    cat "$log"
    echo "::: end of $name's log"
  else
    echo "::: phase $name: exit $rc; its go test lines follow (whole log: $log)"
    grep -E '^(ok|FAIL|\?|panic:) |^--- FAIL' "$log" || true
    echo "$name: $(ci_test_counts "$log")"
  fi
}

# The budget: rows "| `phase` | seconds |" in docs/development.md's "CI's time budget" table.
ci_budget() {
  awk -F'|' '/^## CI.s time budget/{on=1; next} /^## /{on=0}
    on && $2 ~ /`[a-z0-9-]+`/ { gsub(/[` ]/, "", $2); gsub(/ /, "", $3); if ($3 ~ /^[0-9]+$/) print $2 "\t" $3 }' \
    docs/development.md 2>/dev/null
}

# Top-level tests of a `go test -v` log: "--- PASS: TestX (12.34s)" at the start of a line.
ci_test_counts() {
  local log=$1
  printf '%s passed, %s failed, %s skipped (top-level tests)' \
    "$(grep -c '^--- PASS: ' "$log" || true)" "$(grep -c '^--- FAIL: ' "$log" || true)" "$(grep -c '^--- SKIP: ' "$log" || true)"
}

phase_summary() {
  # Run from the EXIT trap: nothing here may change CI's verdict (a `head` that closes a pipe
  # early must not fail the run under pipefail).
  set +e +o pipefail
  local budget total=$(($(date +%s) - ci_start))
  budget="$(ci_budget)"
  echo
  echo "=== CI phases (wall-clock seconds; background phases overlap; budget from docs/development.md) ==="
  printf '%-20s %8s %8s %6s %8s\n' phase seconds budget exit cpu-s
  local name secs rc cpu b grew=()
  while IFS=$'\t' read -r name secs rc cpu; do
    b="$(awk -F'\t' -v n="$name" '$1 == n { print $2 }' <<<"$budget")"
    printf '%-20s %8s %8s %6s %8s\n' "$name" "$secs" "${b:--}" "$rc" "${cpu:--}"
    if [ -n "$b" ] && [ "$secs" -gt $((b + 60)) ]; then grew+=("$name: ${secs} s against ${b} s (+$((secs - b)) s)"); fi
  done <"$CI_LOGS/phases.tsv"
  b="$(awk -F'\t' '$1 == "total" { print $2 }' <<<"$budget")"
  printf '%-20s %8s %8s\n' total "$total" "${b:--}"
  if [ -n "$b" ] && [ "$total" -gt $((b + 60)) ]; then grew+=("total: ${total} s against ${b} s (+$((total - b)) s)"); fi
  local log
  for log in "$CI_LOGS"/*.log; do
    [ -f "$log" ] || continue
    grep -q '^--- ' "$log" || continue
    echo "$(basename "$log" .log): $(ci_test_counts "$log"); slowest:"
    # Every level: a parallel test's parent takes 0 s, its subtests the time.
    grep -E '^ *--- (PASS|FAIL): ' "$log" | sed -E 's/^ *--- [A-Z]+: ([^ ]+) \(([0-9.]+)s\)$/\2\t\1/' | sort -rn | head -8 |
      awk -F'\t' '{ printf "  %8.1f s  %s\n", $1, $2 }'
  done
  if [ "${#grew[@]}" -gt 0 ]; then
    echo "=== BUDGET: these phases grew by more than a minute against docs/development.md:"
    printf '  %s\n' "${grew[@]}"
    echo "=== find what grew (the slowest tests above), and fix it or write the new figure down with the reason"
  fi
  if [ "$total" -gt 1800 ]; then
    echo "=== BUDGET: CI took ${total} s, past its 30 minutes (1800 s)"
  fi
}

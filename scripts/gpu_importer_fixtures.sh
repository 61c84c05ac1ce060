#!/usr/bin/env bash
# The importer's test fixtures (tests/fixtures/importers/aka_*) run by their own harnesses on a GPU, as
# AgentKernelArena would run them: each runner's correctness mode, geak_eval's harness with --correctness,
# each pytest file under pytest (where the machine has pytest; a fixture that imports a helper AgentKernelArena
# adds to its workspace, as `aka_pytest_row_scale` does `perf_helpers`, errors here). From the repository root: bash scripts/gpu_importer_fixtures.sh [OUT.md]
# Prints one row per fixture; exits 1 if any fails.
set -uo pipefail
OUT=${1:-/dev/null}
source scripts/gpu_env.sh
FIX=tests/fixtures/importers
status=0
{
  echo "| fixture | harness | result | seconds |"
  echo "|---|---|---|---|"
} | tee "$OUT"
for dir in "$FIX"/aka_*/; do
  name=$(basename "$dir")
  if [ -f "$dir/scripts/task_runner.py" ]; then
    harness="scripts/task_runner.py correctness"
    cmd=(python3 scripts/task_runner.py correctness)
  else
    test=$(cd "$dir" && ls test_*.py 2>/dev/null | head -1)
    [ -n "$test" ] || continue
    harness="pytest $test"
    if grep -q -- '--correctness' "$dir/$test"; then     # geak_eval's harness: a script with a correctness mode
      harness="$test --correctness"
      cmd=(python3 "$test" --correctness)
    elif grep -q '__main__' "$dir/$test" && ! grep -q '^def test_' "$dir/$test"; then   # a script, not pytest's
      harness="$test"
      cmd=(python3 "$test")
    elif ! python3 -c 'import pytest' 2>/dev/null; then
      echo "| $name | $harness | not run: no pytest on this machine | |" | tee -a "$OUT"
      continue
    else
      cmd=(python3 -m pytest -q -p no:cacheprovider "$test")
    fi
  fi
  start=$(date +%s%N)
  log=$(cd "$dir" && timeout 300 "${cmd[@]}" 2>&1)
  rc=$?
  tenths=$(( ($(date +%s%N) - start) / 100000000 ))
  secs="$((tenths / 10)).$((tenths % 10))"
  if [ $rc -eq 0 ]; then result="passed"; else result="FAILED (exit $rc): $(echo "$log" | tail -1 | tr '|' '/')"; status=1; fi
  echo "| $name | $harness | $result | $secs |" | tee -a "$OUT"
done
exit $status

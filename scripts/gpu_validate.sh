#!/usr/bin/env bash
# The GPU validation, run on the GPU machine from the repository root:
#   bash scripts/gpu_validate.sh OUTDIR
# 1. arena tasks check over every task on cuda (the table committed under reports/validation/)
# 2. the built-in agents baseline, solution and specialised over every task, seen + held-out
# 3. every broken fixture candidate on cuda, with the status it must get
# 4. the harness benchmarks (build times, evaluation time, run-to-run spread)
set -uo pipefail
OUT=${1:?usage: gpu_validate.sh OUTDIR}
mkdir -p "$OUT"
source scripts/gpu_env.sh
python3 -m arena device --json > "$OUT/device.json"
python3 -m arena tasks check all --device cuda --json "$OUT/check.json" --markdown "$OUT/check.md" 2>&1 | tee "$OUT/check.txt"
rm -rf /tmp/arena-validate-run
python3 -m arena run --agent baseline,solution,specialised --tasks all --device cuda --out /tmp/arena-validate-run --quiet \
  2>&1 | tee "$OUT/run.txt"
cp /tmp/arena-validate-run/records.jsonl "$OUT/records.jsonl"
python3 scripts/gpu_fixtures.py 2>&1 | tee "$OUT/fixtures.txt"
python3 scripts/gpu_bench.py builds evaluation spread 2>&1 | tee "$OUT/bench.txt"

#!/usr/bin/env bash
# The shipped kernels of the selected tasks under memory pressure, on a GPU machine, from the
# repository root:
#   bash scripts/gpu_suite.sh OUTDIR [SELECTOR] [WORKERS_PER_GPU] [SECONDS]
# The solution and specialised agents on seen + held-out + random, WORKERS_PER_GPU evaluations
# side by side on one GPU (default 12), stopped after SECONDS (default 540) and resumable
# (SUITE_RUN names the run's folder); then scripts/admission_table.py over its records: statuses
# per agent and split, the verdicts not scored (with memory admission there should be none),
# memory waits and evaluations held back from starting, roofline fractions.
set -uo pipefail
OUT=${1:?usage: gpu_suite.sh OUTDIR [SELECTOR] [WORKERS_PER_GPU] [SECONDS]}
SEL=${2:-all}
W=${3:-12}
SECS=${4:-540}
mkdir -p "$OUT"
source scripts/gpu_env.sh
RUN=${SUITE_RUN:-/tmp/arena-suite}
{ date -u +%FT%TZ; nvidia-smi --query-gpu=name,memory.total,driver_version --format=csv,noheader; } > "$OUT/machine.txt" 2>&1
# the most device memory in use, sampled every 0.5 s (MiB)
nvidia-smi --query-gpu=memory.used --format=csv,noheader,nounits -lms 500 > "$OUT/memory-used.txt" 2>/dev/null &
SMI=$!
start=$(date +%s)
timeout -s INT -k 30 "$SECS" python3 -m arena run --agent solution,specialised --tasks "$SEL" \
  --split seen,heldout,random --device cuda --workers-per-gpu "$W" --out "$RUN" --resume --quiet > "$OUT/run.txt" 2>&1
echo "exit $? after $(( $(date +%s) - start )) s" | tee -a "$OUT/run.txt"
kill $SMI 2>/dev/null
sort -n "$OUT/memory-used.txt" | tail -1 | awk '{printf "most device memory in use: %d MiB\n", $1}' | tee "$OUT/memory-summary.txt"
python3 scripts/admission_table.py "$RUN/records.jsonl" "$W" > "$OUT/suite.md" 2>&1
gzip -c "$RUN/records.jsonl" > "$OUT/records.jsonl.gz"
cat "$OUT/machine.txt" "$OUT/memory-summary.txt" "$OUT/suite.md"; tail -n 5 "$OUT/run.txt"

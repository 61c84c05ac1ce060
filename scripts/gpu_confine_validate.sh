#!/usr/bin/env bash
# Every shipped solution and specialised kernel, with the candidate's process confined, on one GPU:
#   bash scripts/gpu_confine_validate.sh OUTDIR SELECTOR [WORKERS_PER_GPU] [SECONDS] [AGENTS]
# seen + held-out + a fresh random draw, WORKERS_PER_GPU evaluations side by side (default 12), the
# seccomp filter in learning mode (a call it refuses is let through and listed in OUTDIR/learned.txt:
# an empty list means the filter, as it kills, would have given the same verdicts). Then the table
# of statuses by agent and split, the calls the allow-list lacks, and the candidate processes'
# device memory at their checks against their allowance (scripts/confine_table.py).
set -uo pipefail
OUT=${1:?usage: gpu_confine_validate.sh OUTDIR SELECTOR [WORKERS_PER_GPU] [SECONDS]}
SEL=${2:?selector}
W=${3:-12}
SECS=${4:-540}
AGENTS=${5:-solution,specialised}
mkdir -p "$OUT"
OUT=$(cd "$OUT" && pwd)
source scripts/gpu_tree.sh
export ARENA_SECCOMP_LEARN="$OUT/learned.txt"
: > "$ARENA_SECCOMP_LEARN"
RUN=/tmp/arena-confine
rm -rf "$RUN"
nvidia-smi --query-gpu=name,memory.total --format=csv,noheader | tee "$OUT/gpu.txt"
start=$(date +%s.%N)
timeout -s INT -k 30 "$SECS" python3 -m arena run --agent "$AGENTS" --tasks "$SEL" \
  --split seen,heldout,random --device cuda --workers-per-gpu "$W" --out "$RUN" --quiet > "$OUT/run.txt" 2>&1
rc=$?
end=$(date +%s.%N)
python3 -c "print(f'exit $rc after {($end - $start) / 60:.2f} min')" | tee "$OUT/time.txt"
gzip -c "$RUN/records.jsonl" > "$OUT/records.jsonl.gz"
python3 scripts/confine_table.py "$OUT/records.jsonl.gz" "$ARENA_SECCOMP_LEARN" | tee "$OUT/table.md"

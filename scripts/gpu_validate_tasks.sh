#!/usr/bin/env bash
# Validate a selection of tasks on the GPU in one pass, on the GPU machine from the repo root:
#   bash scripts/gpu_validate_tasks.sh SELECTOR OUTDIR
# (WORKERS=N: N evaluations side by side on the GPU, default 1)
# The built-in agents run once (baseline for correctness; solution and specialised timed, on
# seen, held-out and random shapes) and `arena tasks check` reuses their verdicts, adding
# the reference checks; OUTDIR gets check.md / check.json / records.jsonl / the logs.
set -uo pipefail
SEL=${1:?usage: gpu_validate_tasks.sh SELECTOR OUTDIR}
OUT=${2:?usage: gpu_validate_tasks.sh SELECTOR OUTDIR}
mkdir -p "$OUT"
source scripts/gpu_env.sh
RUN=/tmp/arena-validate/$(basename "$OUT")
rm -rf "$RUN"
W=${WORKERS:-1}
python3 -m arena run --agent baseline --no-timing --tasks "$SEL" --split seen,heldout,random --out "$RUN" --quiet \
  --workers-per-gpu "$W" \
  > "$OUT/run.txt" 2>&1
python3 -m arena run --agent solution,specialised --tasks "$SEL" --split seen,heldout,random --out "$RUN" --resume \
  --workers-per-gpu "$W" --quiet >> "$OUT/run.txt" 2>&1
cp "$RUN/records.jsonl" "$OUT/records.jsonl"
python3 -m arena tasks check "$SEL" --device cuda --from-run "$RUN" --json "$OUT/check.json" \
  --markdown "$OUT/check.md" > "$OUT/check.txt" 2>&1
tail -n 60 "$OUT/check.txt"

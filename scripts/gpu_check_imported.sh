#!/usr/bin/env bash
# `arena tasks check` on a GPU for imported tasks, on the GPU machine from the repo root:
#   bash scripts/gpu_check_imported.sh ROOTS_DIR OUTDIR
# ROOTS_DIR holds task roots kept by `scripts/import_table.py --keep` (one per source: kb1, aka, ...), each
# beside a file ROOT.sel with the ids to check, comma-separated (the complete ones). Each root goes through
# gpu_validate_tasks.sh (its baselines timed on seen and held-out, 12 evaluations side by side, then the
# reference checks); OUTDIR/ROOT gets its check.md, check.json, records and logs.
set -uo pipefail
ROOTS=${1:?usage: gpu_check_imported.sh ROOTS_DIR OUTDIR}
OUT=${2:?usage: gpu_check_imported.sh ROOTS_DIR OUTDIR}
ROOTS=$(cd "$ROOTS" && pwd)
mkdir -p "$OUT"
OUT=$(cd "$OUT" && pwd)
# On a machine of several GPUs the roots run side by side, one GPU each (CUDA_VISIBLE_DEVICES), as many at once
# as there are GPUs.
NGPU=$(nvidia-smi -L 2>/dev/null | grep -c '^GPU')
[ "$NGPU" -ge 1 ] || NGPU=1
one() {
  local sel=$1 gpu=$2 r
  r=$(basename "$sel" .sel)
  echo "== $r: $(tr ',' '\n' < "$sel" | grep -c .) tasks (GPU $gpu)"
  CUDA_VISIBLE_DEVICES=$gpu TASKS_DIR="$ROOTS/$r" SPLITS=seen,heldout WORKERS=${WORKERS:-12} \
    bash scripts/gpu_validate_tasks.sh "$(cat "$sel")" "$OUT/$r" > "$OUT/$r.log" 2>&1
  grep -E "exit|result:" "$OUT/$r/time.txt" "$OUT/$r/check.md" 2>/dev/null
}
i=0
for sel in "$ROOTS"/*.sel; do
  [ -s "$sel" ] || continue
  one "$sel" $((i % NGPU)) &
  i=$((i + 1))
  [ $((i % NGPU)) -ne 0 ] || wait
done
wait
echo "all done"

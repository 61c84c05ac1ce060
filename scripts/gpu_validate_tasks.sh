#!/usr/bin/env bash
# Validate a selection of tasks on the GPU in one pass, on the GPU machine from the repo root:
#   bash scripts/gpu_validate_tasks.sh SELECTOR OUTDIR
# (WORKERS=N: N evaluations side by side on the GPU, default 1; TASKS_DIR=DIR: the tasks of another folder,
# e.g. imported ones carried to the machine, whose baselines are then timed, as tasks with no solution need;
# SPLITS=seen,heldout: the splits run, default seen,heldout,random; TIMING_CAP=S: the baselines' timing cap per config,
# default 4 s; CHECK_JOBS=N: tasks whose reference checks run at once, default 8; DROP_DRAFTS=1: the check takes out
# the importer's drafts that fail on their own and checks again, `arena tasks check --drop-failing-drafts`)
# The built-in agents run once (baseline for correctness; solution and specialised timed, on
# seen, held-out and random shapes) and `arena tasks check` reuses their verdicts, adding
# the reference checks; OUTDIR gets check.md / check.json / records.jsonl.gz / the logs / time.txt.
# The run reads its code from a copy of the checkout (gpu_tree.sh), so it may outlast one device call.
set -uo pipefail
SEL=${1:?usage: gpu_validate_tasks.sh SELECTOR OUTDIR}
OUT=${2:?usage: gpu_validate_tasks.sh SELECTOR OUTDIR}
mkdir -p "$OUT"
OUT=$(cd "$OUT" && pwd)
TD=()
NOTIME=(--no-timing)
if [ -n "${TASKS_DIR:-}" ]; then TD=(--tasks-dir "$(cd "$TASKS_DIR" && pwd)"); NOTIME=(); fi
source scripts/gpu_tree.sh
RUN=/tmp/arena-validate/$(basename "$OUT")
rm -rf "$RUN"
W=${WORKERS:-1}
nvidia-smi --query-gpu=name,memory.total,driver_version --format=csv,noheader | tee "$OUT/gpu.txt"
mins() { python3 -c "import time; print(f'{(time.time() - $t0) / 60:.2f} min')"; }
t0=$(date +%s.%N)
python3 -m arena "${TD[@]}" run --agent baseline "${NOTIME[@]}" --tasks "$SEL" --split "${SPLITS:-seen,heldout,random}" --out "$RUN" --quiet --timing-cap "${TIMING_CAP:-4}" \
  --device cuda --workers-per-gpu "$W" > "$OUT/run.txt" 2>&1
echo "baseline exit $? after $(mins)" | tee -a "$OUT/time.txt"
python3 -m arena "${TD[@]}" run --agent solution,specialised --tasks "$SEL" --split "${SPLITS:-seen,heldout,random}" --out "$RUN" --resume \
  --device cuda --workers-per-gpu "$W" --quiet >> "$OUT/run.txt" 2>&1
echo "solution,specialised exit $? after $(mins)" | tee -a "$OUT/time.txt"
gzip -c "$RUN/records.jsonl" > "$OUT/records.jsonl.gz"
FIT=()
[ -z "${DROP_DRAFTS:-}" ] || FIT=(--drop-failing-drafts)
python3 -m arena "${TD[@]}" tasks check "$SEL" --device cuda --from-run "$RUN" --jobs "${CHECK_JOBS:-8}" "${FIT[@]}" --json "$OUT/check.json" \
  --markdown "$OUT/check.md" > "$OUT/check.txt" 2>&1
echo "tasks check exit $? after $(mins)" | tee -a "$OUT/time.txt"
tail -n 60 "$OUT/check.txt"

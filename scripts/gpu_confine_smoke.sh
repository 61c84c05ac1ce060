#!/usr/bin/env bash
# A first look at the confined processes on a GPU, from the repository root:
#   bash scripts/gpu_confine_smoke.sh OUTDIR [TASKS]
# The solution agent over a few tasks (one of each kind by default), seen split, timed, with the
# seccomp filter in learning mode (refused calls are let through and listed in OUTDIR/learned.txt);
# prints the verdicts and the calls the allow-list lacks.
set -uo pipefail
OUT=${1:?usage: gpu_confine_smoke.sh OUTDIR [TASKS]}
SEL=${2:-triton2triton/matmul_fp16,hip2hip/softmax,torch2hip/rope,triton2triton/grouped_gemm}
mkdir -p "$OUT"
source scripts/gpu_env.sh
export ARENA_SECCOMP_LEARN="$OUT/learned.txt"
: > "$ARENA_SECCOMP_LEARN"
chmod 666 "$ARENA_SECCOMP_LEARN"
rm -rf /tmp/arena-smoke
python3 -m arena run --agent solution --tasks "$SEL" --split seen --device cuda --out /tmp/arena-smoke --quiet 2>&1 | tee "$OUT/run.txt"
python3 - <<'PY' | tee "$OUT/verdicts.txt"
import sys; sys.path.insert(0, ".")
from pathlib import Path
from arena import records
for v in records.read(Path("/tmp/arena-smoke/records.jsonl")):
    print(v.task_id if hasattr(v, "task_id") else getattr(v, "task", "?"), v.split, v.status.value, v.speedup, v.build.get("sandbox"), v.build.get("sandbox_missing"), v.message[:600])
PY
echo "--- refused calls (learning mode), by count:"
sort "$ARENA_SECCOMP_LEARN" | cut -d' ' -f1 | sort | uniq -c | sort -rn | tee "$OUT/learned-summary.txt"

#!/usr/bin/env bash
# Record and replay on a GPU, from the repository root:
#   bash scripts/gpu_replay_smoke.sh OUTDIR [TASKS] [AGENTS] [SPLITS]
# The given agents (the shipped solutions by default) over a few Triton tasks and one HIP task,
# timed; prints every verdict with its speedup and message.
set -uo pipefail
OUT=${1:?usage: gpu_replay_smoke.sh OUTDIR [TASKS] [AGENTS] [SPLITS]}
SEL=${2:-triton2triton/matmul_fp16,triton2triton/log_softmax,triton2triton/grouped_gemm,triton2triton/add_layer_norm,hip2hip/softmax}
AGENTS=${3:-solution}
SPLITS=${4:-seen,heldout}
mkdir -p "$OUT"
source scripts/gpu_env.sh
rm -rf /tmp/arena-replay
python3 -m arena run --agent "$AGENTS" --tasks "$SEL" --split "$SPLITS" --device cuda --out /tmp/arena-replay --quiet 2>&1 | tail -40 | tee "$OUT/run.txt"
cp /tmp/arena-replay/records.jsonl "$OUT/records.jsonl" 2>/dev/null
python3 - <<'PY' | tee "$OUT/verdicts.txt"
import sys; sys.path.insert(0, ".")
from pathlib import Path
from arena import records
for v in records.read(Path("/tmp/arena-replay/records.jsonl")):
    print(getattr(v, "task_id", getattr(v, "task", "?")), v.agent if hasattr(v, "agent") else "", v.split, v.status.value, v.speedup, v.message[:700])
PY

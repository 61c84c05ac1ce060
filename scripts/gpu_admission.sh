#!/usr/bin/env bash
# Memory admission, measured ceilings and the starting kernel as its own candidate, in one pass
# on the GPU machine, from the repo root:
#   bash scripts/gpu_admission.sh OUTDIR [WORKERS] [STRESS_SECONDS]
# 1. `arena device --measure`: copy bandwidth and matrix-multiply throughput, kept for the roofline;
# 2. the baseline agent (the starting kernel as its own candidate) on host-bound and elementwise
#    tasks, one worker: scripts/trust_table.py over its records;
# 3. the solution and specialised agents on the tasks that move the most memory, seen + held-out
#    + random, WORKERS evaluations side by side on the one GPU (memory admission under pressure),
#    stopped after STRESS_SECONDS; statuses, memory waits and roofline fractions summarised;
# 4. `arena tasks check --from-run` on what step 3 finished.
set -uo pipefail
OUT=${1:?usage: gpu_admission.sh OUTDIR [WORKERS] [STRESS_SECONDS]}
WORKERS=${2:-12}
STRESS_S=${3:-270}
mkdir -p "$OUT"
source scripts/gpu_env.sh
{ date -u +%FT%TZ; nvidia-smi --query-gpu=name,memory.total,driver_version --format=csv,noheader; } > "$OUT/machine.txt" 2>&1
python3 -m arena device --measure > "$OUT/ceilings.txt" 2>&1

TRUST=/tmp/arena-trust
rm -rf "$TRUST"
timeout -s INT "${TRUST_S:-200}" python3 -m arena run --agent baseline --split seen,heldout --out "$TRUST" --quiet \
  --tasks hip2hip/gelu_tanh,hip2hip/hardswish_nchw,hip2hip/concat_last_dim,hip2hip/transpose_2d,torch2hip/adamw_step,torch2hip/add_rms_norm,triton2triton/kv_cache_append,triton2triton/rms_norm \
  > "$OUT/trust-run.txt" 2>&1
python3 scripts/trust_table.py "$TRUST/records.jsonl" > "$OUT/trust.md" 2>&1

HEAVY=triton2triton/cross_entropy_fwd_bwd,triton2triton/log_softmax,triton2triton/attention_decode,hip2hip/transpose_2d,triton2triton/argmax_rows,triton2triton/kl_div_rows,torch2hip/cross_entropy,triton2triton/gemv_decode,hip2hip/silu_backward,triton2triton/grouped_gemm,triton2triton/swiglu,torch2hip/swiglu,hip2hip/swiglu_fused_gate_up,torch2hip/mamba2_ssm_decode_step,triton2triton/geglu_erf_backward,torch2hip/adamw_step,hip2hip/bias_layerscale_residual,triton2triton/geglu_tanh,hip2hip/masked_mean_pooling
STRESS=/tmp/arena-stress
rm -rf "$STRESS"
timeout -s INT "$STRESS_S" python3 -m arena run --agent solution,specialised --tasks "$HEAVY" --split seen,heldout,random \
  --workers-per-gpu "$WORKERS" --out "$STRESS" --quiet > "$OUT/stress-run.txt" 2>&1
python3 scripts/admission_table.py "$STRESS/records.jsonl" "$WORKERS" > "$OUT/stress.md" 2>&1
python3 -m arena tasks check hip2hip/masked_mean_pooling --device cuda --from-run "$STRESS" > "$OUT/check.txt" 2>&1
cat "$TRUST/records.jsonl" "$STRESS/records.jsonl" | gzip > "$OUT/records.jsonl.gz"
cat "$OUT/machine.txt" "$OUT/ceilings.txt" "$OUT/trust.md" "$OUT/stress.md"; tail -n 30 "$OUT/check.txt"

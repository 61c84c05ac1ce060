#!/usr/bin/env bash
# Record and replay of HIP candidates on CUDA, on one GPU, from the repository root:
#   bash scripts/gpu_hip_replay_validate.sh OUTDIR [WORKERS_PER_GPU] [SECONDS]
# Every hip2hip and torch2hip task's shipped solution and specialised kernel on seen, held-out and a
# random draw (scripts/gpu_confine_validate.sh), then the HIP entries of the exploit catalogue.
set -uo pipefail
OUT=${1:?usage: gpu_hip_replay_validate.sh OUTDIR [WORKERS_PER_GPU] [SECONDS]}
W=${2:-12}
SECS=${3:-480}
mkdir -p "$OUT"
bash scripts/gpu_confine_validate.sh "$OUT" hip2hip,torch2hip "$W" "$SECS"
source scripts/gpu_env.sh
timeout 150 python3 scripts/gpu_exploits.py "$OUT/exploits.md" 8 \
  "$(ls tests/exploits/candidates/*.hip | xargs -n1 basename | paste -sd,)" | tail -3

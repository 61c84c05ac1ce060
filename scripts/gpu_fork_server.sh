#!/usr/bin/env bash
# Workers forked from a fork server against workers started afresh, on a GPU machine from the
# repository root:
#   bash scripts/gpu_fork_server.sh OUTDIR [SECONDS] [SELECTOR] [WORKERS_PER_GPU]
# First the exploit catalogue (12 evaluations side by side) with the fork server, every outcome as
# required; then the scale benchmark (scripts/gpu_scale.sh) twice over the same tasks, SECONDS each
# (default 180), into fresh run folders: with the fork server first, then with ARENA_FORK_SERVER=0,
# so that what the first run leaves in the harness's caches (HIP builds, Triton kernels, bytecode)
# favours the second, the one without; then both runs' records side by side (bench_scale.py compare).
set -uo pipefail
OUT=${1:?usage: gpu_fork_server.sh OUTDIR [SECONDS] [SELECTOR] [WORKERS_PER_GPU]}
SECS=${2:-180}
SEL=${3:-all}
W=${4:-6}
mkdir -p "$OUT"
source scripts/gpu_env.sh
python3 -c 'import torch, triton, platform; print("torch", torch.__version__, "triton", triton.__version__, "python", platform.python_version())' \
  | tee "$OUT/versions.txt"
start=$(date +%s)
python3 scripts/gpu_exploits.py "$OUT/exploits.md" 12 > "$OUT/exploits.txt" 2>&1
echo "exploits: exit $? after $(( $(date +%s) - start )) s" | tee -a "$OUT/exploits.txt"
for fs in 1 0; do
  SCALE_RUN=/tmp/arena-fork-$fs ARENA_FORK_SERVER=$fs bash scripts/gpu_scale.sh "$OUT/scale-fork$fs" "$W" "$SECS" "$SEL" \
    > "$OUT/scale-fork$fs.txt" 2>&1
  echo "scale with ARENA_FORK_SERVER=$fs: $(tail -1 "$OUT/scale-fork$fs/run.txt")"
done
python3 scripts/bench_scale.py compare "$OUT/scale-fork1/records.jsonl" "$OUT/scale-fork0/records.jsonl" \
  | tee "$OUT/compare.txt"

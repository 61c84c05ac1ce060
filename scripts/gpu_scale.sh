#!/usr/bin/env bash
# The scale benchmark on a GPU machine, from the repository root:
#   bash scripts/gpu_scale.sh OUTDIR [WORKERS_PER_GPU] [SECONDS] [SELECTOR]
# The baseline agent over the selected tasks (default: all) on seen + held-out, on one GPU with
# WORKERS_PER_GPU evaluations side by side (default 6; their timed rounds take the GPU one at a
# time), stopped after SECONDS (default 540) and resumable; then what was built ahead (the run's
# prebuild.jsonl: HIP builds, Triton warm-ups) and where the time went (scripts/bench_scale.py records).
set -uo pipefail
OUT=${1:?usage: gpu_scale.sh OUTDIR [WORKERS_PER_GPU] [SECONDS] [SELECTOR]}
W=${2:-6}
SECS=${3:-540}
SEL=${4:-all}
mkdir -p "$OUT"
source scripts/gpu_env.sh
RUN=${SCALE_RUN:-/tmp/arena-scale}
nvidia-smi --query-gpu=name,memory.total,clocks.sm,clocks.max.sm --format=csv | tee "$OUT/gpu.txt"
# the driver's utilisation (share of each ~1/6 s in which some kernel ran), sampled every 0.5 s
nvidia-smi --query-gpu=utilization.gpu --format=csv,noheader,nounits -lms 500 > "$OUT/util.txt" 2>/dev/null &
SMI=$!
CPU0=$(head -1 /proc/stat)
start=$(date +%s)
timeout -s INT -k 30 "$SECS" python3 -m arena run --agent baseline --tasks "$SEL" --split seen,heldout --device cuda \
  --workers-per-gpu "$W" --out "$RUN" --resume --quiet > "$OUT/run.txt" 2>&1
echo "exit $? after $(( $(date +%s) - start )) s" | tee -a "$OUT/run.txt"
kill $SMI 2>/dev/null
# the machine's CPU busy share over the run (all cores, from /proc/stat: idle and iowait are not busy)
printf '%s\n%s\n' "$CPU0" "$(head -1 /proc/stat)" | awk '{t=0; for (i=2; i<=NF; i++) t+=$i; idle=$5+$6; if (NR==1) {t0=t; i0=idle} else printf "CPU busy: %.0f%% of all cores\n", 100*(1-(idle-i0)/(t-t0))}' \
  | tee "$OUT/cpu-summary.txt"
awk '{n++; s+=$1; if ($1 >= 90) hi++} END {if (n) printf "GPU utilisation: mean %.0f%% over %d samples; %.0f%% of samples at 90%% or more\n", s/n, n, 100*hi/n}' \
  "$OUT/util.txt" | tee "$OUT/util-summary.txt"
cp "$RUN/records.jsonl" "$OUT/records.jsonl"
cp "$RUN/prebuild.jsonl" "$OUT/prebuild.jsonl" 2>/dev/null && tail -1 "$OUT/prebuild.jsonl" | tee -a "$OUT/bench.txt"
python3 scripts/bench_scale.py records "$OUT/records.jsonl" 2>&1 | tee "$OUT/bench.txt"
python3 - "$OUT/records.jsonl" <<'PY' | tee -a "$OUT/bench.txt"
import sys, collections
sys.path.insert(0, ".")
from arena import records
vs = list(records.read(__import__("pathlib").Path(sys.argv[1])))
c = collections.Counter((v.status.value) for v in vs)
print("statuses:", dict(c))
for v in vs:
    if v.status.value != "PASSED":
        print("  ", v.task_id, v.split, v.status.value, v.message[:160].replace("\n", " "))
PY

#!/usr/bin/env bash
# The exploit catalogue on the GPU, with a look inside if it has not ended in DUMP_AT seconds: every
# process (ps, nvidia-smi) and the Python stacks of every python process (py-spy, carried in .whl/).
# On the GPU machine from the repo root: bash scripts/gpu_stall_dump.sh OUTDIR [JOBS]
# (LIMIT=S: the catalogue's bound, default 300 s; DUMP_AT=S, default 150 s)
set -uo pipefail
OUT=${1:?usage: gpu_stall_dump.sh OUTDIR [JOBS]}
mkdir -p "$OUT"
source scripts/gpu_env.sh
SPY=/tmp/site/bin/py-spy
timeout -k 20 -s INT "${LIMIT:-300}" python3 scripts/gpu_exploits.py "$OUT/exploits.md" "${2:-12}" > "$OUT/exploits.log" 2>&1 &
P=$!
end=$((SECONDS + ${DUMP_AT:-150}))
while kill -0 $P 2>/dev/null && [ $SECONDS -lt $end ]; do sleep 2; done
if kill -0 $P 2>/dev/null; then
  {
    date -u; ps -eo pid,ppid,user,etimes,stat,pcpu,wchan:28,args --forest | grep -v " \["
    nvidia-smi
    for pid in $(pgrep -f "[p]ython"); do
      echo "=== $pid $(tr '\0' ' ' < /proc/$pid/cmdline | cut -c1-200)"
      timeout 20 "$SPY" dump --pid "$pid" 2>&1 | head -60
    done
  } > "$OUT/stall.txt" 2>&1
fi
wait $P; echo "exploits exit $?"
tail -n 3 "$OUT/exploits.log"

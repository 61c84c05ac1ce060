#!/usr/bin/env bash
# A GPU job that outlasts one device call, on the GPU machine from the repo root:
#   bash scripts/gpu_bg.sh start NAME 'COMMAND'   # COMMAND runs detached, from a copy of the checkout
#   bash scripts/gpu_bg.sh wait NAME SECONDS      # until it ends or SECONDS pass; prints its log's tail
# The log is /tmp/bg/NAME.log, the exit status /tmp/bg/NAME.rc once it ended. The command keeps running
# between calls while the machine stays warm (the next call must come before it is given back).
set -uo pipefail
what=${1:?usage: gpu_bg.sh start|wait NAME ...}
name=${2:?usage: gpu_bg.sh start|wait NAME ...}
mkdir -p /tmp/bg
log=/tmp/bg/$name.log rc=/tmp/bg/$name.rc
case "$what" in
  start)
    cmd=${3:?usage: gpu_bg.sh start NAME COMMAND}
    rm -f "$rc"
    tree=$(mktemp -d)/checkout
    mkdir -p "$tree" && cp -r . "$tree"/ && cd "$tree" || exit 1
    setsid nohup bash -c "$cmd; echo \$? > $rc" > "$log" 2>&1 < /dev/null &
    echo "started $name in $tree (pid $!)"
    ;;
  wait)
    secs=${3:-500}
    end=$((SECONDS + secs))
    while [ ! -e "$rc" ] && [ $SECONDS -lt $end ]; do sleep 5; done
    tail -n "${TAIL:-25}" "$log"
    if [ -e "$rc" ]; then echo "$name ended: exit $(cat "$rc")"; else echo "$name still running"; fi
    ;;
  *) echo "usage: gpu_bg.sh start|wait NAME ..." >&2; exit 2 ;;
esac

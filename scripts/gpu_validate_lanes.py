"""Validate many tasks on a GPU machine in parallel lanes (several per GPU), then check them
all in one table. On the GPU machine, from the repo root, after `source scripts/gpu_env.sh`:

    python3 scripts/gpu_validate_lanes.py OUTDIR LANES_PER_GPU SELECTOR [SELECTOR ...]

Each lane runs the built-in agents over its share of the tasks, as gpu_validate_tasks.sh
does (baseline correctness-only; solution and specialised timed on seen, held-out and
random), on one GPU (CUDA_VISIBLE_DEVICES). Then `arena tasks check` reuses all lanes'
verdicts. Lanes sharing a GPU disturb each other's timing somewhat (each speedup is still a
paired, interleaved ratio inside one process); correctness is unaffected. $TIMING_CAP
(seconds per config, default 4) bounds the timing; $REUSE (records files, ':'-separated) are
reused by the check where they evaluated the same files; past $DEADLINE_S seconds the lanes are
stopped and the check reports what was recorded. OUTDIR gets
check.md, check.json, records.jsonl and logs.tar.gz.
"""

from __future__ import annotations

import os
import shutil
import signal
import subprocess
import sys
import tarfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from arena.spec.loader import select_tasks  # noqa: E402


def gpu_count() -> int:
    out = subprocess.run(["nvidia-smi", "-L"], capture_output=True, text=True).stdout
    return max(1, sum(1 for line in out.splitlines() if line.startswith("GPU ")))


def main() -> int:
    out, per_gpu, selectors = Path(sys.argv[1]), int(sys.argv[2]), sys.argv[3:]
    cap = float(os.environ.get("TIMING_CAP", "4"))
    out.mkdir(parents=True, exist_ok=True)
    folders = []
    for sel in selectors:
        folders += [f for f in select_tasks(sel, ROOT / "tasks") if f not in folders]
    ids = [f"{f.parent.name}/{f.name}" for f in folders]
    n_gpu = gpu_count()
    lanes = max(1, min(len(ids), per_gpu * n_gpu))
    work = Path("/tmp/arena-lanes")
    shutil.rmtree(work, ignore_errors=True)
    procs = []
    for k in range(lanes):
        share = ids[k::lanes]
        run = work / f"lane{k}"
        env = {**os.environ, "CUDA_VISIBLE_DEVICES": str(k % n_gpu)}
        # the baseline is timed only where no solution's paired run times it (the check's window)
        with_sol = [i for i in share if (ROOT / "tasks" / i / "solution.py").exists()
                    or (ROOT / "tasks" / i / "solution.hip").exists()]
        no_sol = [i for i in share if i not in with_sol]
        steps = []
        if with_sol:
            steps.append(f"python3 -m arena run --agent baseline --no-timing --tasks {','.join(with_sol)} "
                         f"--split seen,heldout,random --out {run} --resume --quiet")
        if no_sol:
            steps.append(f"python3 -m arena run --agent baseline --tasks {','.join(no_sol)} "
                         f"--split seen,heldout --out {run} --resume --quiet --timing-cap {cap} "
                         f"--timing-memory {max(1.0, 60.0 / per_gpu):.1f}")
        steps.append(f"python3 -m arena run --agent solution,specialised --tasks {','.join(share)} "
                     f"--split seen,heldout,random --out {run} --resume --quiet --timing-cap {cap} "
                     f"--timing-memory {max(1.0, 60.0 / per_gpu):.1f}")
        cmd = "; ".join(steps)
        log = open(work.parent / f"arena-lane{k}.log", "w")
        procs.append((subprocess.Popen(["bash", "-c", cmd], env=env, stdout=log, stderr=subprocess.STDOUT,
                                       cwd=ROOT, start_new_session=True), log, run))
        print(f"lane {k} (GPU {k % n_gpu}): {len(share)} tasks", flush=True)
    deadline = time.monotonic() + float(os.environ.get("DEADLINE_S", "1e9"))
    for p, log, _ in procs:   # past $DEADLINE_S the lanes stop and the check reports what was recorded
        try:
            p.wait(timeout=max(1.0, deadline - time.monotonic()))
        except subprocess.TimeoutExpired:
            os.killpg(p.pid, signal.SIGKILL)
            p.wait()
        log.close()
    with open(out / "records.jsonl", "w") as rec:
        for _, _, run in procs:
            if (run / "records.jsonl").exists():
                rec.write((run / "records.jsonl").read_text())
    runs = sum((["--from-run", str(run)] for _, _, run in procs), [])
    # earlier records of the same files (same sha256) are reused by the check: $REUSE, ':'-separated
    runs += sum((["--from-run", r] for r in os.environ.get("REUSE", "").split(":") if r), [])
    check = subprocess.run([sys.executable, "-m", "arena", "tasks", "check", ",".join(ids), "--device", "cuda",
                            *runs, "--json", str(out / "check.json"), "--markdown", str(out / "check.md")],
                           cwd=ROOT, capture_output=True, text=True)
    (out / "check.txt").write_text(check.stdout + check.stderr)
    with tarfile.open(out / "logs.tar.gz", "w:gz") as tar:
        for k in range(lanes):
            log = work.parent / f"arena-lane{k}.log"
            if log.exists():
                tar.add(log, arcname=log.name)
    print(check.stdout[-6000:], check.stderr[-3000:])
    return check.returncode


if __name__ == "__main__":
    sys.exit(main())

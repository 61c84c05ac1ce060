"""Validate many tasks on a GPU machine in parallel lanes (several per GPU), then check them
all in one table. On the GPU machine, from the repo root, after `source scripts/gpu_env.sh`:

    python3 scripts/gpu_validate_lanes.py OUTDIR LANES_PER_GPU SELECTOR [SELECTOR ...]

Each lane runs the built-in agents over its share of the tasks on one GPU
(CUDA_VISIBLE_DEVICES): the baseline correctness-only where a solution's paired runs time it,
timed where none does; the solution timed on seen, held-out and random, the specialised kernel
on seen and held-out. Then the
lane runs `arena tasks check` on its own tasks, reusing its verdicts and $REUSE (records
files separated by ':') where they evaluated the same files on the same configs; the rows
are merged. Lanes sharing a GPU disturb each other's timing somewhat (each speedup is still
a paired, interleaved ratio inside one process); correctness is unaffected. $TIMING_CAP
(seconds per config, default 4) bounds the timing; past $DEADLINE_S seconds the lanes are
stopped and what was checked is reported. $CHECK_ONLY (a comma list) are only checked, from
$REUSE. OUTDIR gets check.md, check.json, check.txt,
records.jsonl and logs.tar.gz.
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

from arena.taskdef.loader import select_tasks  # noqa: E402


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
    # $CHECK_ONLY: tasks (comma list) not run again, only checked from the $REUSE records
    check_only = [i for i in os.environ.get("CHECK_ONLY", "").split(",") if i and i not in ids]
    lanes = max(1, min(len(ids), per_gpu * n_gpu))
    work = Path("/tmp/arena-lanes")
    shutil.rmtree(work, ignore_errors=True)
    procs = []
    for k in range(lanes):
        share = ids[k::lanes]
        checked = share + check_only[k::lanes]
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
        steps.append(f"python3 -m arena run --agent solution --tasks {','.join(share)} "
                     f"--split seen,heldout,random --out {run} --resume --quiet --timing-cap {cap} "
                     f"--timing-memory {max(1.0, 60.0 / per_gpu):.1f}")
        # the specialised kernel only has to be fast on seen and wrong on some held-out config
        steps.append(f"python3 -m arena run --agent specialised --tasks {','.join(share)} "
                     f"--split seen,heldout --out {run} --resume --quiet --timing-cap {cap} "
                     f"--timing-memory {max(1.0, 60.0 / per_gpu):.1f}")
        # later records win: $REUSE in its order, then this lane's fresh ones
        reuse = "".join(f" --from-run {r}" for r in os.environ.get("REUSE", "").split(":") if r)
        steps.append(f"python3 -m arena tasks check {','.join(checked)} --device cuda{reuse} --from-run {run} "
                     f"--json {run}/check.json")
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
    # each lane checked its own share on its GPU right after its runs: merge the rows
    import json
    from types import SimpleNamespace

    from arena.cli import check_markdown
    from arena.devices import detect

    rows, missing = [], []
    for _, _, run in procs:
        path = run / "check.json"
        if path.exists():
            rows += [SimpleNamespace(task_id=r["task"], **{k: r[k] for k in (
                "ok", "schema", "reference", "baseline", "solution", "specialised", "problems")},
                window_us=r["baseline_window_us"], details=r.get("details", {}))
                for r in json.loads(path.read_text())]
    done = {r.task_id for r in rows}
    missing = [i for i in ids + check_only if i not in done]
    rows += [SimpleNamespace(task_id=i, ok=False, schema="-", reference="-", baseline="-", window_us="-",
                             solution="-", specialised="-", problems=["not checked before the deadline"],
                             details={})
             for i in missing]
    rows.sort(key=lambda r: r.task_id)
    (out / "check.md").write_text(check_markdown(rows, detect("cuda")))
    (out / "check.json").write_text(json.dumps([vars(r) for r in rows], indent=1))
    summary = f"{sum(r.ok for r in rows)} of {len(rows)} tasks ok; not checked: {missing}"
    (out / "check.txt").write_text(summary + "\n" + "\n".join(f"{r.task_id}: {p}" for r in rows
                                                              for p in r.problems))
    with tarfile.open(out / "logs.tar.gz", "w:gz") as tar:
        for k in range(lanes):
            log = work.parent / f"arena-lane{k}.log"
            if log.exists():
                tar.add(log, arcname=log.name)
    print((out / "check.txt").read_text()[-6000:])
    return 0 if all(r.ok for r in rows) else 1


if __name__ == "__main__":
    sys.exit(main())

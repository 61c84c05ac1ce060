"""The pace the importers count a reference's calls at (``arena.authoring.importers.common.counted_calls``), measured:
each task's reference run at every config of the task, the least seconds of ``--runs`` runs beside its count (calls
of torch, values read on the host, bytes made), and the pace that fits them best:
    python3 scripts/reference_pace.py [--device cpu|cuda] [--tasks-dir DIR] [--runs 3] [--most 20] [--json F]
                                      SELECTOR [OUT.md]
On the CPU, the seconds are this process's CPU seconds on one thread (what the estimate stands for); on a GPU, the
clock's, the device synchronised before and after, after one run to warm it (what the harness's reference runs
take, which the estimate's limits are there to bound).
The fit is a least-squares fit of the ratio of the estimate to the measured seconds (every config weighs alike,
whatever its seconds), its constants held to zero or more. Rows: the task, its configs' calls and seconds, and the
ratio of the estimate at the committed pace (``CALL_SECONDS``, ``HOST_READ_SECONDS``, ``BYTE_SECONDS``) to the
seconds measured. A config whose first run takes more than ``--most`` CPU seconds is left out."""

from __future__ import annotations

import argparse
import datetime
import json
import os
import platform
import time
from pathlib import Path

import numpy as np
import torch


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("selector")
    ap.add_argument("out", nargs="?")
    ap.add_argument("--tasks-dir", default="tasks")
    ap.add_argument("--runs", type=int, default=3)
    ap.add_argument("--most", type=float, default=20.0)
    ap.add_argument("--device", default="cpu", choices=("cpu", "cuda"))
    ap.add_argument("--json", help="also write each config's counts and seconds here")
    ap.add_argument("--from-json", action="append", metavar="F", help="measure nothing: the table and the fit of the "
                    "configs these files of --json hold (given once each), at the pace committed now")
    ap.add_argument("--device-name", default="", help="with --from-json: the device the files were measured on")
    a = ap.parse_args()

    from arena.authoring.importers import common
    from arena.check.degeneracy import load_reference
    from arena.check.inputs import make_inputs, run_reference
    from arena.taskdef.loader import load_task, select_tasks

    torch.set_num_threads(1)

    def clock() -> float:
        if a.device == "cpu":
            return time.process_time()
        torch.cuda.synchronize()
        return time.perf_counter()

    points: list[tuple[str, str, int, int, int, float]] = []
    for f in a.from_json or []:
        points += [tuple(p) for p in json.loads(Path(f).read_text())]   # type: ignore[misc]
    for folder in ([] if a.from_json else select_tasks(a.selector, Path(a.tasks_dir))):
        try:
            task = load_task(folder)
            ref = load_reference(task)
        except Exception as exc:  # noqa: BLE001 - a task that does not load is reported, not fitted
            print(f"{folder}: {type(exc).__name__}: {exc}"[:200], flush=True)
            continue
        for split in ("smoke", "seen", "heldout"):
            for c in task.configs(split):
                env = task.env(c)
                scalars = [task.scalar_value(s, env) for s in task.scalars]
                best = float("inf")
                try:
                    ins = make_inputs(task, env, 0, a.device, ref)
                    for i in range(a.runs + (a.device == "cuda")):
                        t0 = clock()
                        run_reference(ref.reference, task, ins, scalars)
                        took = clock() - t0
                        best = min(best, took) if a.device == "cpu" or i else best
                        if took > a.most:
                            break
                    if best > a.most or best == float("inf"):
                        print(f"{task.id} {split}:{c.name}: left out, {took:.1f} s", flush=True)
                        continue
                    with common.counted_calls() as cost:
                        run_reference(ref.reference, task, ins, scalars)
                except Exception as exc:  # noqa: BLE001 - a config the reference refuses is reported, not fitted
                    print(f"{task.id} {split}:{c.name}: {type(exc).__name__}: {exc}"[:200], flush=True)
                    continue
                points.append((task.id, f"{split}:{c.name}", cost.calls, cost.host_reads, cost.bytes, best))
                print(f"{task.id} {split}:{c.name}: {cost.calls} calls, {cost.host_reads} reads, "
                      f"{cost.bytes / 1e6:.1f} MB, {best:.3f} s, estimate {cost.seconds:.3f}", flush=True)
                if a.device == "cuda":
                    del ins
                    torch.cuda.empty_cache()
        if a.json:
            Path(a.json).write_text(json.dumps(points))

    where = (f"{a.device_name or torch.cuda.get_device_name()}, the clock's seconds" if a.device == "cuda" else
             f"{platform.processor() or platform.machine()}, {os.cpu_count()} cores, CPU seconds on one thread")
    lines = [f"# The pace of counted calls on {a.device} ({datetime.date.today()})", "",
             f"{where}; " + (f"the configs of {', '.join(Path(f).name for f in a.from_json)}" if a.from_json else
                              f"python {platform.python_version()}, torch {torch.__version__}")
             + f"; the least of {a.runs} runs of each config; selector `{a.selector}`.", ""]
    lines += ["| task | configs | calls | host reads | seconds (least of runs) | estimate / measured |",
              "|---|---|---|---|---|---|"]
    by_task: dict[str, list[tuple]] = {}
    for p in points:
        by_task.setdefault(p[0], []).append(p)

    def estimate(p: tuple, k: tuple[float, float, float]) -> float:
        return p[2] * k[0] + p[3] * k[1] + p[4] * k[2]

    now = (common.CALL_SECONDS, common.HOST_READ_SECONDS, common.BYTE_SECONDS)
    for tid, ps in by_task.items():
        timed = [p for p in ps if p[5] > 0.01]      # a run of less than 10 ms is the clock's tick, not a pace
        ratios = [estimate(p, now) / p[5] for p in timed]
        lines.append(f"| {tid} | {len(ps)} | {min(p[2] for p in ps):,}-{max(p[2] for p in ps):,} | "
                     f"{min(p[3] for p in ps):,}-{max(p[3] for p in ps):,} | "
                     f"{min(p[5] for p in ps):.3f}-{max(p[5] for p in ps):.3f} | "
                     + (f"{min(ratios):.2f}-{max(ratios):.2f} ({len(ratios)})" if ratios else "- (none of 10 ms)")
                     + " |")
    timed = [p for p in points if p[5] > 0.01]
    if timed:
        x = np.array([[p[2] / p[5], p[3] / p[5], p[4] / p[5]] for p in timed])
        keep = [0, 1, 2]
        while True:       # least squares of estimate / measured - 1, a negative constant dropped and fitted again
            k, *_ = np.linalg.lstsq(x[:, keep], np.ones(len(timed)), rcond=None)
            if (k >= 0).all():
                break
            keep = [j for j, v in zip(keep, k) if v > 0]
        fit = [0.0, 0.0, 0.0]
        for j, v in zip(keep, k):
            fit[j] = float(v)
        r_now = [estimate(p, now) / p[5] for p in timed]
        r_fit = [estimate(p, tuple(fit)) / p[5] for p in timed]   # type: ignore[arg-type]
        lines += ["", f"{len(timed)} configs of 10 ms or more. At the committed pace ({now[0] * 1e6:g} us a call, "
                  f"{now[1] * 1e6:g} us a host read, {now[2] * 1e9:g} ns a byte) the estimate is "
                  f"{min(r_now):.2f}-{max(r_now):.2f} times the seconds measured (median {np.median(r_now):.2f}); "
                  f"the best fit here is {fit[0] * 1e6:.2f} us a call, {fit[1] * 1e6:.2f} us a host read, "
                  f"{fit[2] * 1e9:.3f} ns a byte, {min(r_fit):.2f}-{max(r_fit):.2f} times (median "
                  f"{np.median(r_fit):.2f})."]
    text = "\n".join(lines) + "\n"
    print(text)
    if a.out:
        Path(a.out).write_text(text)


if __name__ == "__main__":
    main()

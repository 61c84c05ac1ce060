"""Building ahead: before any GPU work, the kernel files a run already knows (the tasks'
baselines, and the solutions or specialised kernels when those are the agents) are
compiled on every CPU core.

- HIP files: built into the shared content-addressed cache (``arena.toolchain.hip``).
- Triton files: every launch their entry makes on the run's configs compiled for the
  device's GPU, in worker processes, into the file's warm folder
  (``arena.toolchain.triton_aot.warm_dir``); each evaluation's Triton cache is seeded from it.
  A file's configs already warmed (its manifest) are not compiled again.

Failures are not reported here: the evaluation that needs the file builds or compiles it
again and records why. A Triton warm-up that hangs is killed after ``TRITON_JOB_S``.
"""

from __future__ import annotations

import json
import logging
import os
import queue
import subprocess
import sys
import threading
import time
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Callable, Iterable, Sequence

from arena.devices import Device
from arena.errors import ArenaError
from arena.taskdef.loader import Config, Task, load_task, task_headers
from arena.toolchain.hip import build_hip, cache_root, toolchain_available

log = logging.getLogger(__name__)
ROLES = ("baseline", "solution", "specialised")
TRITON_JOB_S = 300.0


def warm_root() -> Path:
    """Where Triton files' kernels compiled ahead are kept: beside the HIP build cache."""
    return cache_root() / "triton-warm"


def _known_files(units: Iterable[Any], suffix: str) -> list[tuple[Task, Path, tuple[str, ...]]]:
    """(task, file, splits) for the units' own kernel files with this suffix: the baseline of
    every task, and the agent's file where the agent is one of the task's own roles."""
    found: dict[Path, tuple[Task, Path, tuple[str, ...]]] = {}
    for u in units:
        try:
            task = load_task(u.folder)
        except ArenaError:
            continue
        roles = ["baseline"] + ([u.agent] if u.agent in ROLES else [])
        for role in roles:
            f = task.kernel_file(role)
            if f is None or f.suffix != suffix:
                continue
            _, _, splits = found.get(f, (task, f, ()))
            found[f] = (task, f, splits + tuple(s for s in u.todo if s not in splits))
    return list(found.values())


def known_hip_files(units: Iterable[Any]) -> list[Path]:
    """The .hip files of the units' tasks that the built-in agents (and every timed
    baseline) will need."""
    return [f for _, f, _ in _known_files(units, ".hip")]


@dataclass
class TritonJob:
    task: Task
    path: Path
    configs: list[Config]


def known_triton_jobs(units: Iterable[Any], configs_of: Callable[[Task, Sequence[str]], dict[str, list[Config]]]
                      ) -> list[TritonJob]:
    """The Triton files of the units' tasks, each with the configs of the splits it will be
    evaluated on (``configs_of(task, splits)``, the evaluation's own choice of configs)."""
    jobs = []
    for task, f, splits in _known_files(units, ".py"):
        if task.language != "triton":
            continue
        try:
            configs = [c for cfgs in configs_of(task, splits).values() for c in cfgs]
        except ArenaError:
            continue
        jobs.append(TritonJob(task, f, configs))
    return jobs


def _serve() -> None:
    """A warm-up process (``python -m arena.toolchain.prebuild``): one job a line on stdin (the
    arguments of ``warm_file`` as JSON), one result a line on the descriptor stdout was; the
    jobs' own output goes to stderr. No GPU is touched here: Triton compiles through a driver
    that only names the target, and none is visible."""
    proto = os.fdopen(os.dup(1), "w")
    os.dup2(2, 1)
    from arena.toolchain.triton_aot import warm_file

    for line in sys.stdin:
        try:
            res = warm_file(*json.loads(line))
        except Exception as exc:  # noqa: BLE001 - reported, the next job goes on
            res = {"error": f"{type(exc).__name__}: {str(exc)[:300]}"}
        proto.write(json.dumps(res) + "\n")
        proto.flush()


def _warm_all(work: list[tuple], processes: int, job_s: float) -> list[dict[str, Any]]:
    """``warm_file(*args)`` for each args of ``work`` in up to ``processes`` warm-up processes
    that take jobs from one queue; a job over ``job_s`` has its process killed and is
    reported as an error, as is a job whose process died."""
    from arena.evaluation.processes import harness_pythonpath

    env = {**os.environ, "CUDA_VISIBLE_DEVICES": "", "HIP_VISIBLE_DEVICES": "", "PYTHONUNBUFFERED": "1"}
    env.pop("TRITON_INTERPRET", None)
    env["PYTHONPATH"] = harness_pythonpath(env)
    todo: queue.Queue = queue.Queue()
    for i, args in enumerate(work):
        todo.put((i, args))
    out: dict[int, dict[str, Any]] = {}

    def serve() -> None:
        proc = subprocess.Popen([sys.executable, "-m", "arena.toolchain.prebuild"], stdin=subprocess.PIPE,
                                stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, env=env, text=True)
        try:
            while True:
                try:
                    i, args = todo.get_nowait()
                except queue.Empty:
                    return
                timer = threading.Timer(job_s, proc.kill)
                timer.start()
                t0 = time.monotonic()
                try:
                    proc.stdin.write(json.dumps(args) + "\n")
                    proc.stdin.flush()
                    line = proc.stdout.readline()
                except OSError:
                    line = ""
                finally:
                    timer.cancel()
                if line:
                    out[i] = json.loads(line)
                    continue
                proc.kill()
                proc.wait()
                out[i] = {"error": f"timed out after {job_s:.0f} s" if time.monotonic() - t0 >= job_s
                          else f"the warm-up process died (exit {proc.returncode})"}
                return
        finally:
            try:
                proc.stdin.close()
            except OSError:
                pass
            try:
                proc.wait(timeout=10)
            except subprocess.TimeoutExpired:
                proc.kill()
                proc.wait()

    threads = [threading.Thread(target=serve, daemon=True) for _ in range(max(1, processes))]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    return [out.get(i, {"error": "no warm-up process left"}) for i in range(len(work))]


def warm_triton(jobs: list[TritonJob], device: Device, processes: int | None = None,
                job_s: float = TRITON_JOB_S) -> dict[str, Any]:
    from arena.toolchain.triton_aot import config_key, device_target, warm_dir, warmed_configs

    stats = {"files": len(jobs), "cached": 0, "warmed": 0, "failed": 0, "kernels": 0, "config_errors": 0,
             "seconds": 0.0}
    target = device_target(device)
    if target is None or not jobs:
        return stats
    start = time.perf_counter()
    root = warm_root()
    work = []
    for j in jobs:
        d = warm_dir(j.path, target, root)
        todo = [c for c in j.configs if config_key(c) not in warmed_configs(d)]
        if not todo:
            stats["cached"] += 1
            continue
        d.mkdir(parents=True, exist_ok=True)
        work.append((str(j.task.path), str(j.path), [c.as_dict() for c in todo], target, str(d)))
    if work:
        n = max(1, min(len(work), processes or os.cpu_count() or 1))
        for res in _warm_all(work, n, job_s):
            if "error" in res:
                stats["failed"] += 1
                log.debug("Triton warm-up failed: %s", res["error"])
                continue
            stats["warmed"] += 1
            stats["kernels"] += res["kernels"]
            stats["config_errors"] += len(res["errors"])
    stats["seconds"] = round(time.perf_counter() - start, 3)
    return stats


def prebuild(files: list[Path], device: Device, jobs: int | None = None) -> dict[str, Any]:
    targets = [(t, a) for t, a in device.build_targets if toolchain_available(t) is None]
    work = [(f, t, a) for f in files for t, a in targets]
    start = time.perf_counter()
    stats = {"files": len(files), "builds": len(work), "cached": 0, "built": 0, "failed": 0,
             "compile_seconds": 0.0}
    if not work:
        return {**stats, "seconds": 0.0}
    jobs = jobs or os.cpu_count() or 1
    with ThreadPoolExecutor(max_workers=jobs) as pool:
        # a task's kernel file is built with the task's headers, as its evaluation builds it
        for res in pool.map(lambda w: build_hip(w[0], target=w[1], arch=w[2], headers=task_headers(w[0].parent)),
                            work):
            key = "cached" if res.cached else "built" if res.ok else "failed"
            stats[key] += 1
            if not res.cached:
                stats["compile_seconds"] += res.seconds
    stats["seconds"] = round(time.perf_counter() - start, 3)
    stats["compile_seconds"] = round(stats["compile_seconds"], 3)
    return stats


def prebuild_units(units: Iterable[Any], device: Device, jobs: int | None = None,
                   configs_of: Callable[[Task, Sequence[str]], dict[str, list[Config]]] | None = None
                   ) -> dict[str, Any]:
    """HIP builds and Triton warm-ups side by side (each on up to ``jobs`` CPUs); returns
    {"hip": stats, "triton": stats}."""
    units = list(units)
    out: dict[str, Any] = {}

    def warm() -> None:
        try:
            out["triton"] = warm_triton(known_triton_jobs(units, configs_of), device, jobs) if configs_of else {}
        except Exception as exc:  # noqa: BLE001 - building ahead is an optimisation: the run goes on
            log.warning("the Triton warm-up stopped: %s: %s", type(exc).__name__, exc)
            out["triton"] = {"error": f"{type(exc).__name__}: {exc}"}

    triton = threading.Thread(target=warm, daemon=True)
    triton.start()
    out["hip"] = prebuild(known_hip_files(units), device, jobs)
    triton.join()
    h, t = out["hip"], out.get("triton") or {}
    log.info("built ahead: %d HIP builds in %.1f s (%d cached, %d built, %d failed); %d Triton files in %.1f s "
             "(%d cached, %d warmed, %d kernels, %d failed)", h["builds"], h["seconds"], h["cached"], h["built"],
             h["failed"], t.get("files", 0), t.get("seconds", 0.0), t.get("cached", 0), t.get("warmed", 0),
             t.get("kernels", 0), t.get("failed", 0))
    return out


if __name__ == "__main__":
    _serve()

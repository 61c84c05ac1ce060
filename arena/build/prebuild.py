"""Building ahead: the HIP files a run already knows (the tasks' baselines, solutions and
specialised kernels) are compiled on every CPU core before any GPU work, into the shared
content-addressed cache (``arena.build.hip``), so evaluations find them built. Failures
are not reported here: the evaluation that needs the file builds it again and records why.
"""

from __future__ import annotations

import logging
import os
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any, Iterable

from arena.build.hip import build_hip, toolchain_available
from arena.devices import Device
from arena.errors import ArenaError
from arena.spec.loader import load_task

log = logging.getLogger(__name__)
ROLES = ("baseline", "solution", "specialised")


def known_hip_files(units: Iterable[Any]) -> list[Path]:
    """The .hip files of the units' tasks that the built-in agents (and every timed
    baseline) will need."""
    files: list[Path] = []
    for u in units:
        try:
            task = load_task(u.folder)
        except ArenaError:
            continue
        roles = ["baseline"] + ([u.agent] if u.agent in ROLES else [])
        for role in roles:
            f = task.kernel_file(role)
            if f is not None and f.suffix == ".hip" and f not in files:
                files.append(f)
    return files


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
        for res in pool.map(lambda w: build_hip(w[0], target=w[1], arch=w[2]), work):
            key = "cached" if res.cached else "built" if res.ok else "failed"
            stats[key] += 1
            if not res.cached:
                stats["compile_seconds"] += res.seconds
    stats["seconds"] = round(time.perf_counter() - start, 3)
    stats["compile_seconds"] = round(stats["compile_seconds"], 3)
    log.info("prebuilt %d HIP builds on %d threads in %.1f s (%d cached, %d built, %d failed)", len(work), jobs,
             stats["seconds"], stats["cached"], stats["built"], stats["failed"])
    return stats


def prebuild_units(units: Iterable[Any], device: Device, jobs: int | None = None) -> dict[str, Any]:
    return prebuild(known_hip_files(units), device, jobs)

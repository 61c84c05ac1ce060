"""Harness benchmarks on the GPU machine (issue targets in brackets):
- cold and cached build time of every HIP kernel in tasks/ [<= 3 s cold, ~0 s cached];
- wall time of one task evaluation: build + correctness on seen and held-out + paired
  timing of the solution [<= 20 s];
- run-to-run spread: the same solution evaluated in two separate processes, speedup per
  config compared [within +-2%]."""

from __future__ import annotations

import json
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from arena.devices import detect  # noqa: E402
from arena.evaluation.parent import Candidate, evaluate  # noqa: E402
from arena.taskdef.loader import discover_tasks, load_task  # noqa: E402
from arena.timing.stats import median  # noqa: E402
from arena.toolchain.hip import build_hip  # noqa: E402


def builds(device) -> None:
    print("## HIP build time (nvcc, translated), cold cache then cached")
    print(f"{'file':48s} {'cold_s':>7s} {'cached_s':>9s}")
    cold_all = []
    with tempfile.TemporaryDirectory() as cache:
        for folder in discover_tasks():
            for path in sorted(folder.glob("*.hip")):
                t0 = time.perf_counter()
                a = build_hip(path, target="cuda", arch=device.arch, cache_dir=Path(cache))
                cold = time.perf_counter() - t0
                t0 = time.perf_counter()
                b = build_hip(path, target="cuda", arch=device.arch, cache_dir=Path(cache))
                cached = time.perf_counter() - t0
                cold_all.append(cold)
                status = "" if a.ok and b.cached else "  BUILD FAILED" if not a.ok else "  not cached"
                print(
                    f"{folder.parent.name + '/' + folder.name + '/' + path.name:48s} {cold:7.2f} {cached:9.4f}{status}"
                )
    print(f"median cold build {median(cold_all):.2f} s, max {max(cold_all):.2f} s")


def evaluation_time(device) -> None:
    print("\n## One task evaluation (solution; build + correctness seen+heldout + paired timing)")
    print(f"{'task':36s} {'wall_s':>7s} {'configs':>8s} {'status':>8s} {'speedup':>8s}")
    walls = []
    for folder in discover_tasks():
        task = load_task(folder)
        sol = task.kernel_file("solution")
        if sol is None:
            continue
        t0 = time.perf_counter()
        vs = evaluate(task, Candidate(task, sol, "solution"), ["seen", "heldout"], device)
        wall = time.perf_counter() - t0
        walls.append(wall)
        n = sum(len(v.configs) for v in vs)
        st = "PASSED" if all(v.status.value == "PASSED" for v in vs) else "FAILED"
        sp = [v.speedup for v in vs if v.speedup]
        print(f"{task.id:36s} {wall:7.1f} {n:8d} {st:>8s} {'/'.join(f'{s:.2f}' for s in sp):>8s}")
    print(f"median evaluation {median(walls):.1f} s, max {max(walls):.1f} s")


def spread() -> None:
    print("\n## Same solution, two processes: per-config speedups")
    print(f"{'task':36s} {'config':28s} {'run1':>7s} {'run2':>7s} {'diff%':>6s}")
    worst = 0.0
    for folder in discover_tasks():
        task = load_task(folder)
        sol = task.kernel_file("solution")
        if sol is None:
            continue
        runs = []
        for _ in range(2):
            out = subprocess.run(
                [
                    sys.executable,
                    "-m",
                    "arena",
                    "eval",
                    task.id,
                    "--kernel",
                    str(sol),
                    "--split",
                    "seen",
                    "--device",
                    "cuda",
                    "--json",
                ],
                capture_output=True,
                text=True,
                cwd=ROOT,
            )
            rec = json.loads(out.stdout.strip().splitlines()[-1])
            runs.append({c["name"]: c["speedup"] for c in rec["configs"]})
        for name in runs[0]:
            a, b = runs[0][name], runs[1][name]
            if a and b:
                d = abs(a - b) / ((a + b) / 2) * 100
                worst = max(worst, d)
                print(f"{task.id:36s} {name:28s} {a:7.3f} {b:7.3f} {d:6.2f}")
    print(f"largest run-to-run difference: {worst:.2f}%")


def main(argv: list[str]) -> int:
    """Sections to run: builds, evaluation, spread (default: all)."""
    device = detect("cuda")
    sections = argv or ["builds", "evaluation", "spread"]
    if "builds" in sections:
        builds(device)
    if "evaluation" in sections:
        evaluation_time(device)
    if "spread" in sections:
        spread()
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))

"""How fast the harness is: build times, evaluation time per task, and the share of wall time
spent in timed GPU work.

    python3 scripts/bench_scale.py builds [SELECTOR] [--jobs N]     # cold then cached HIP builds
    python3 scripts/bench_scale.py records RECORDS.jsonl [...]       # evaluation figures of a run
    python3 scripts/bench_scale.py compare RUN1.jsonl RUN2.jsonl [...]   # several runs on the tasks all finished
    python3 scripts/bench_scale.py triton [SELECTOR] [--jobs N] [--parallel P]   # Triton warm-up, on a GPU

``builds`` compiles every .hip file of the selected tasks into an empty cache (cold; one at a
time, so each time is the compiler's own, then all files again in parallel on every core),
then once more from the filled cache, for the machine's build targets (sm_90 through the
HIP->CUDA route where nvcc exists, gfx90a where hipcc exists). ``records`` reads run records
(e.g. a validation run's) and prints per-verdict evaluation wall time, per-task wall time, and
the timed GPU time (samples x median, both sides) over the evaluation wall time, where each
evaluation's time went (build, worker start, load, correctness, timing and inside it the
warm-up, the profiler, the input renewal and the timed spans; the wait for the GPU's lock),
and the run's span from the first start to the last end. ``compare`` puts several runs' records
side by side (runs stopped at a time finish different tasks): on the evaluations every run
finished, the exclusive sections, the seconds alone on the GPU, the timed device work, the
baseline's samples, the writers' and all lock waits and the evaluations' wall, summed, and the
exclusive sections by category. ``triton`` compiles the selected
tasks' Triton files (baseline, solution) ahead for this machine's GPU, as a run's prebuild
does, on seen + held-out (cold, then again from the warm folders); then each file's entry is
called once per config on the GPU in a fresh process, with an empty Triton cache and with
one seeded from the warm folder: the kernels the JIT still had to compile (new cache
entries) and the seconds the calls took, per file.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import sys
import tempfile
import time
from collections import defaultdict
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from arena.timing.stats import quantile  # noqa: E402


def builds(selector: str, jobs: int | None) -> None:
    from concurrent.futures import ThreadPoolExecutor

    from arena.taskdef.loader import select_tasks
    from arena.toolchain.hip import build_hip, toolchain_available

    files = sorted({p for f in select_tasks(selector) for p in f.glob("*.hip")})
    targets = [(t, a) for t, a in (("cuda", "sm_90"), ("rocm", "gfx90a")) if toolchain_available(t) is None]
    print(f"{len(files)} HIP files, targets {targets}, {os.cpu_count()} cores")
    for target, arch in targets:
        with tempfile.TemporaryDirectory() as cache:
            cold = []
            for f in files:
                r = build_hip(f, target=target, arch=arch, cache_dir=Path(cache))
                cold.append((r.seconds, f, r.ok))
            with tempfile.TemporaryDirectory() as cache2:
                t0 = time.perf_counter()
                with ThreadPoolExecutor(max_workers=jobs or os.cpu_count()) as pool:
                    list(pool.map(lambda f: build_hip(f, target=target, arch=arch, cache_dir=Path(cache2)), files))
                parallel = time.perf_counter() - t0
            cached = [build_hip(f, target=target, arch=arch, cache_dir=Path(cache)).seconds for f in files]
        secs = [s for s, _, ok in cold if ok]
        print(f"\n{target} {arch}: cold build per kernel median {statistics.median(secs):.2f} s, "
              f"p90 {quantile(secs, 0.9):.2f} s, max {max(secs):.2f} s ({sum(not ok for *_, ok in cold)} failed); "
              f"all {len(files)} in parallel on {jobs or os.cpu_count()} threads: {parallel:.1f} s; "
              f"cached median {statistics.median(cached) * 1000:.1f} ms")
        for s, f, _ in sorted(cold, reverse=True)[:5]:
            print(f"  slowest: {s:.2f} s {f.relative_to(ROOT)}")


def _cache_entries(d: Path) -> set[str]:
    return {e.name for e in d.iterdir() if e.is_dir()}


def _groups(d: Path) -> dict[str, int]:
    """Triton's group files (one a compiled kernel) and when each was last written."""
    return {str(g): g.stat().st_mtime_ns for g in d.glob("*/__grp__*.json")}


def first_calls(task_dir: str, path: str) -> None:
    """In a fresh process on the GPU, with $TRITON_CACHE_DIR as given: every seen and
    held-out config's call of the file's entry once; prints how many kernels the JIT compiled
    (group files it wrote into the cache)."""
    import torch

    from arena.check.inputs import DTYPES, make_inputs
    from arena.evaluation.sides import import_file
    from arena.taskdef.loader import load_task

    task = load_task(task_dir)
    cache = Path(os.environ["TRITON_CACHE_DIR"])
    before = _groups(cache)
    entry = getattr(import_file(path, "arena_candidate_bench"), task.entry)
    ref = import_file(task.reference_path, "arena_reference_bench")
    calls, errors = 0.0, {}
    for config in task.configs("seen") + task.configs("heldout"):
        env = task.env(config)
        try:
            args = [*make_inputs(task, env, 1, "cuda", ref).values(),
                    *(torch.empty(task.shape(s, env), dtype=DTYPES[s.dtype], device="cuda") for s in task.outputs),
                    *(task.scalar_value(s, env) for s in task.scalars)]
            torch.cuda.synchronize()
            t0 = time.perf_counter()
            entry(*args)
            torch.cuda.synchronize()
            calls += time.perf_counter() - t0
        except Exception as exc:  # noqa: BLE001 - reported
            errors[config.name] = f"{type(exc).__name__}: {str(exc)[:200]}"
        args = None
        torch.cuda.empty_cache()
    after = _groups(cache)
    print(
        json.dumps(
            {
                "compiled": sum(1 for g, t in after.items() if before.get(g) != t),
                "calls_s": round(calls, 3),
                "errors": errors,
            }
        )
    )


def triton(selector: str, jobs: int | None, parallel: int) -> None:
    import subprocess
    from concurrent.futures import ThreadPoolExecutor

    from arena.devices import detect
    from arena.evaluation.parent import configs_of_splits
    from arena.taskdef.loader import load_task, select_tasks
    from arena.toolchain.prebuild import known_triton_jobs, warm_root, warm_triton
    from arena.toolchain.triton_aot import device_target, seed_cache, warm_dir
    from arena.units import Unit

    dev = detect()
    target = device_target(dev)
    folders = [f for f in select_tasks(selector) if load_task(f).language == "triton"]
    units = [Unit(agent, f, 0, ("seen", "heldout")) for f in folders for agent in ("baseline", "solution")]
    tjobs = known_triton_jobs(units, lambda task, splits: configs_of_splits(task, splits, dev, None))
    print(f"{len(tjobs)} Triton files of {len(folders)} tasks, target {target}, {os.cpu_count()} cores")
    with tempfile.TemporaryDirectory() as root:
        os.environ["ARENA_CACHE_DIR"] = root
        t0 = time.perf_counter()
        cold = warm_triton(tjobs, dev, processes=jobs)
        cold_s = time.perf_counter() - t0
        again = warm_triton(tjobs, dev, processes=jobs)
        print(
            f"warm-up ahead, cold: {cold_s:.1f} s on {jobs or os.cpu_count()} processes, {cold['warmed']} files, "
            f"{cold['kernels']} kernels, {cold['failed']} failed, {cold['config_errors']} configs not warmed; "
            f"again (warm folders): {again['seconds']:.2f} s, {again['cached']} files cached"
        )

        def check(job, seeded: bool) -> dict:
            with tempfile.TemporaryDirectory() as cache:
                if seeded:
                    seed_cache(Path(cache), [job.path], target, warm_root())
                out = subprocess.run(
                    [sys.executable, __file__, "_first_calls", str(job.task.path), str(job.path)],
                    capture_output=True,
                    text=True,
                    timeout=600,
                    env={**os.environ, "TRITON_CACHE_DIR": cache},
                )
                try:
                    return json.loads(out.stdout.strip().splitlines()[-1])
                except (ValueError, IndexError):
                    return {"compiled": None, "calls_s": None, "errors": {"process": out.stderr[-300:]}}

        with ThreadPoolExecutor(max_workers=parallel) as pool:
            colds = list(pool.map(lambda j: check(j, False), tjobs))
            warms = list(pool.map(lambda j: check(j, True), tjobs))
        kernels = {j.path: len(_cache_entries(warm_dir(j.path, target, warm_root()))) for j in tjobs}
    print(
        "\n| file | kernels warmed | compiled, empty cache | compiled, seeded cache | calls, empty cache (s) "
        "| calls, seeded (s) | errors |"
    )
    print("|---|---|---|---|---|---|---|")
    for j, c, w in zip(tjobs, colds, warms):
        errs = {**c["errors"], **w["errors"]}
        print(
            f"| {j.task.id}/{j.path.name} | {kernels[j.path]} | {c['compiled']} | {w['compiled']} | {c['calls_s']} "
            f"| {w['calls_s']} | {'; '.join(f'{k}: {v}' for k, v in errs.items())[:200]} |"
        )
    ok = [(c, w) for c, w in zip(colds, warms) if c["compiled"] is not None and w["compiled"] is not None]
    print(
        f"\n{len(ok)} files: kernels compiled in the first calls, empty cache {sum(c['compiled'] for c, _ in ok)}, "
        f"seeded {sum(w['compiled'] for _, w in ok)} ({sum(1 for _, w in ok if w['compiled'] == 0)} files with "
        f"none); calls' seconds, empty cache {sum(c['calls_s'] for c, _ in ok):.1f}, seeded "
        f"{sum(w['calls_s'] for _, w in ok):.1f}; median per file {statistics.median(c['calls_s'] for c, _ in ok):.2f}"
        f" s against {statistics.median(w['calls_s'] for _, w in ok):.2f} s"
    )


def from_records(paths: list[str]) -> None:
    from arena.records import read

    vs = [v for p in paths for v in read(Path(p))]
    by_task = defaultdict(float)
    walls, timed_frac_num, timed_frac_den = [], 0.0, 0.0
    cold_builds = []
    evals = {}
    for v in vs:  # the splits of one evaluation share its wall time: count it once
        evals.setdefault((v.agent, v.task_id, v.repeat, v.started_at), v.wall_s)
    for (agent, task, _, _), w in evals.items():
        walls.append(w)
        by_task[(agent, task)] += w
    for v in vs:
        gpu_us = sum(
            (c.baseline.median_us * c.baseline.n if c.baseline else 0)
            + (c.candidate.median_us * c.candidate.n if c.candidate else 0)
            for c in v.configs
        )
        if gpu_us:
            timed_frac_num += gpu_us / 1e6
            timed_frac_den += v.wall_s / max(
                1,
                sum(
                    1
                    for u in vs
                    if (u.agent, u.task_id, u.repeat, u.started_at) == (v.agent, v.task_id, v.repeat, v.started_at)
                ),
            )
        for b in (v.build or {}).get("builds", []):
            if b.get("ok") and not b.get("cached") and b.get("seconds"):
                cold_builds.append(b["seconds"])
    tasks = defaultdict(float)
    for (agent, task), w in by_task.items():
        tasks[task] += w
    print(f"{len(vs)} verdicts of {len(evals)} evaluations, {len(tasks)} tasks")
    print(
        f"wall per evaluation (all its splits): median {statistics.median(walls):.1f} s, "
        f"p90 {quantile(walls, 0.9):.1f} s, "
        f"max {max(walls):.1f} s"
    )
    tw = list(tasks.values())
    print(
        f"wall per task (all agents and splits of the run): median {statistics.median(tw):.1f} s, "
        f"p90 {quantile(tw, 0.9):.1f} s, total {sum(tw) / 60:.1f} min of evaluation"
    )
    if timed_frac_den:
        print(
            f"timed GPU work (samples x median, both sides) / wall of timed evaluations: "
            f"{100 * timed_frac_num / timed_frac_den:.1f}%"
        )
    if cold_builds:
        print(
            f"uncached HIP builds inside evaluations: median {statistics.median(cold_builds):.2f} s, "
            f"p90 {quantile(cold_builds, 0.9):.2f} s (n={len(cold_builds)})"
        )
    phases: dict[tuple, dict[str, float]] = {}
    for v in vs:
        if v.phases:
            phases.setdefault((v.agent, v.task_id, v.repeat, v.started_at), v.phases)
    if phases:
        keys = (
            "build_s",
            "start_s",
            "load_s",
            "correctness_s",
            "timing_s",
            "lock_wait_s",
            "warm_s",
            "profiler_s",
            "refresh_s",
            "verify_s",
            "prepare_s",
            "alone_s",
            "timed_gpu_s",
            "shared_s",
            "off_gpu_s",
        )
        keys += tuple(sorted({k for p in phases.values() for k in p if k.startswith("load_") and k != "load_s"}))
        keys += tuple(sorted({k for p in phases.values() for k in p if k.startswith("alone_") and k != "alone_s"}))
        keys += tuple(sorted({k for p in phases.values() for k in p if k.startswith(("held_", "over_"))}))
        total = {k: sum(p.get(k, 0.0) for p in phases.values()) for k in keys}
        whole = sum(evals[k] for k in phases)
        print(
            f"where evaluation time went ({len(phases)} evaluations, {whole / 60:.1f} min in all; the lock wait "
            f"is inside load, correctness and timing; warm, profiler, refresh and timed_gpu inside timing; shared: "
            f"the lock held shared; off_gpu: let go inside shared sections while Triton compiled; load_*: inside "
            f"load; alone_*: inside alone, the host's time by part, served the remote steps' time in their "
            f"processes, inside step; of served, flush, call, wait (the synchronize after the call), marker and "
            f"threads (the thread checks), as those processes counted them; held_*: the shared sections by what they "
            f"were for, over_* their part past 0.1 s, which keeps a waiting writer out past its window):"
        )
        for k in keys:
            print(
                f"  {k[:-2]:16s} {total[k]:9.1f} s  {100 * total[k] / max(whole, 1e-9):5.1f}%   "
                f"median {statistics.median(p.get(k, 0.0) for p in phases.values()):.2f} s per evaluation"
            )
        n_ex = sum(p.get("exclusive_n", 0.0) for p in phases.values())
        tries = sum(p.get("failed_tries", 0.0) for p in phases.values())
        w_wait = sum(p.get("writer_wait_s", 0.0) for p in phases.values())
        print(
            f"  exclusive sections: {n_ex:.0f} ({n_ex / len(phases):.1f} per evaluation), tries that found "
            f"readers inside: {tries:.0f}; of the lock wait, {w_wait:.1f} s as a writer (readers draining), "
            f"{total['lock_wait_s'] - w_wait:.1f} s as a reader (behind writers)"
        )
        n_sh = sum(p.get("shared_n", 0.0) for p in phases.values())
        if n_sh:
            print(
                f"  shared sections: {n_sh:.0f} ({n_sh / len(phases):.1f} per evaluation), the wait as a reader "
                f"{1000 * (total['lock_wait_s'] - w_wait) / n_sh:.1f} ms a section on average"
            )
        longest = sorted(((p.get("longest_shared_s", 0.0), k[1]) for k, p in phases.items()), reverse=True)
        print("  longest shared sections: " + ", ".join(f"{t} {s:.2f} s" for s, t in longest[:6]))
    from datetime import datetime

    starts = [datetime.fromisoformat(v.started_at) for v in vs if v.started_at]
    ends = [datetime.fromisoformat(v.finished_at) for v in vs if v.finished_at]
    if starts and ends:
        span = (max(ends) - min(starts)).total_seconds()
        print(
            f"run span (first evaluation's start to the last one's end): {span / 60:.1f} min for {len(tasks)} "
            f"tasks ({span / max(1, len(tasks)):.1f} s per task); timed GPU work is "
            f"{100 * timed_frac_num / max(span, 1e-9):.1f}% of it"
        )


def compare(paths: list[str]) -> None:
    from arena.records import read

    rows = (
        ("exclusive sections", "exclusive_n", "{:.0f}"),
        ("alone on the GPU (s)", "alone_s", "{:.1f}"),
        ("timed device work (s)", "timed_gpu_s", "{:.1f}"),
        ("baseline pairs", "pairs", "{:,.0f}"),
        ("writers' wait (s)", "writer_wait_s", "{:.1f}"),
        ("lock wait, all (s)", "lock_wait_s", "{:,.0f}"),
        ("evaluations' wall (s)", "wall_s", "{:,.0f}"),
    )
    runs = []
    for p in paths:
        evals: dict[tuple, dict] = {}  # an evaluation's phases are the same in each of its splits' records
        for v in read(Path(p)):
            e = evals.setdefault(
                (v.agent, v.task_id, v.repeat),
                {**(v.phases or {}), "pairs": 0.0, "wall_s": 0.0, "category": v.category},
            )
            e["pairs"] += sum(c.baseline.n for c in v.configs if c.baseline)
            e["wall_s"] = max(e["wall_s"], v.wall_s)
        runs.append(evals)
    common = set.intersection(*(set(r) for r in runs)) if runs else set()
    names = [Path(p).name.removesuffix(".gz").removesuffix(".jsonl") for p in paths]
    print(f"{len(common)} evaluations finished in all {len(runs)} runs; their sums:\n")
    print("| | " + " | ".join(names) + " |")
    print("|---|" + "---|" * len(names))
    for label, key, fmt in rows:
        print(
            f"| {label} | "
            + " | ".join(fmt.format(sum(float(r[k].get(key) or 0.0) for k in common)) for r in runs)
            + " |"
        )
    for cat in sorted({runs[0][k]["category"] for k in common}):
        keys = [k for k in common if runs[0][k]["category"] == cat]
        print(
            f"| exclusive sections, {cat} ({len(keys)}) | "
            + " | ".join(f"{sum(float(r[k].get('exclusive_n') or 0.0) for k in keys):.0f}" for r in runs)
            + " |"
        )


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    sub = p.add_subparsers(dest="cmd", required=True)
    b = sub.add_parser("builds")
    b.add_argument("selector", nargs="?", default="all")
    b.add_argument("--jobs", type=int)
    r = sub.add_parser("records")
    r.add_argument("paths", nargs="+")
    c = sub.add_parser("compare")
    c.add_argument("paths", nargs="+")
    t = sub.add_parser("triton")
    t.add_argument("selector", nargs="?", default="triton2triton")
    t.add_argument("--jobs", type=int)
    t.add_argument("--parallel", type=int, default=8)
    f = sub.add_parser("_first_calls")
    f.add_argument("task_dir")
    f.add_argument("path")
    a = p.parse_args()
    if a.cmd == "builds":
        builds(a.selector, a.jobs)
    elif a.cmd == "triton":
        triton(a.selector, a.jobs, a.parallel)
    elif a.cmd == "_first_calls":
        first_calls(a.task_dir, a.path)
    elif a.cmd == "compare":
        compare(a.paths)
    else:
        from_records(a.paths)
    return 0


if __name__ == "__main__":
    sys.exit(main())

"""The author's validator behind ``arena tasks check``: one row per task.

A task passes when its files validate, its reference is not degenerate, its starting
point passes every config of every split, the baseline's time per config is inside the
timing window (on a GPU), a shipped solution is correct everywhere and >= 1.2x faster,
and a shipped specialised kernel is correct on seen and wrong on some held-out config.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Iterable

from arena.check.degeneracy import load_reference, reference_problems
from arena.devices import Device
from arena.errors import ArenaError
from arena.evaluation.parent import Candidate, evaluate
from arena.records import Status, Verdict
from arena.taskdef.loader import Task, load_task, validate_task_dir
from arena.timing.stats import geomean

WINDOW_US = (20.0, 50_000.0)
# a shipped solution this far past the measured roofline on a config is a sign that the task's roofline
# formula counts more work than the kernel must do (or the ceiling is wrong): the formula is to be fixed.
# The measured ceilings are torch's own copy, reduction, fill and matmul at their best
# (arena.devices.ceilings), which a well-made kernel passes: on an H100, 44 configs of 11 shipped solutions
# with exact byte formulas (elementwise streams, read-heavy reductions) ran at 0.90-1.09 of a copy's rate,
# so a bar at 90% would fail honest formulas; 110% of the best measured rate is past any of them
MAX_MEASURED_ROOFLINE = 1.10
MIN_SOLUTION_SPEEDUP = 1.2            # the solution's geometric mean over seen and held-out (TASKS.md)
MIN_SPLIT_SPEEDUP = 1.1               # ... over each of them
MIN_CONFIG_SPEEDUP = 1.0              # ... on any one config: a shipped solution is never slower than its baseline
MIN_BYTES_MEMORY_BOUND = 100e6


@dataclass
class CheckRow:
    task_id: str
    ok: bool = True
    schema: str = "ok"
    reference: str = "-"
    baseline: str = "-"
    window_us: str = "-"
    solution: str = "-"
    specialised: str = "-"
    problems: list[str] = field(default_factory=list)
    verdicts: list[Verdict] = field(default_factory=list)
    details: dict[str, Any] = field(default_factory=dict)
    out_of_memory: bool = False     # its reference checks ran out of device memory (beside other checks: again alone)

    def fail(self, problem: str) -> None:
        self.ok = False
        self.problems.append(problem)


def _summary(verdicts: list[Verdict]) -> str:
    parts = []
    for v in verdicts:
        n_ok = sum(c.status is Status.PASSED for c in v.configs)
        parts.append(f"{v.split} {n_ok}/{len(v.configs)}" if v.status is not Status.NOT_RUNNABLE
                     else f"{v.split} compiled")
    return ", ".join(parts)


def _acceptable(v: Verdict, device: Device) -> bool:
    return v.status is Status.PASSED or (not device.runs_kernels and v.status is Status.NOT_RUNNABLE)


class Evaluations:
    """Verdicts for a task's own kernels: taken from a run's records where the run
    evaluated the same file (same sha256) on the same configs of every split asked, on a
    device of the same name, else evaluated now."""

    def __init__(self, device: Device, recorded: Iterable[Verdict] = ()):
        self.device = device
        self.recorded: dict[tuple[str, str, str], Verdict] = {}
        for v in recorded:
            self.recorded[(v.agent, v.task_id, v.split)] = v
        self.reused = 0

    def get(self, task: Task, role: str, splits: list[str], *, timing: bool | None = None) -> list[Verdict]:
        cand = Candidate(task, task.kernel_file(role) if role != "baseline" else None, role)
        sha = cand.sha256()
        found = [self.recorded.get((role, task.id, s)) for s in splits]
        usable = all(v is not None and v.candidate.get("sha256") == sha and v.device.get("name") == self.device.name
                     and [(c.name, c.params) for c in v.configs] == [(c.name, dict(c.params))
                                                                     for c in task.configs(v.split)]
                     and (timing is False or v.status is not Status.PASSED or v.speedup is not None
                          or not self.device.runs_kernels) for v in found)
        if usable:
            self.reused += len(found)
            return [v for v in found if v is not None]
        return evaluate(task, cand, splits, self.device, timing=timing)


def size_problems(task: Task) -> list[str]:
    """The rules of a task's sizes alone, which any machine reads (an importer's own check too): a memory-bound task
    has a seen or held-out config that moves ``MIN_BYTES_MEMORY_BOUND`` or more."""
    if task.roofline["bound"] != "memory":
        return []
    most = max(task.roofline_for(c)[1] for s in ("seen", "heldout") for c in task.configs(s))
    return [f"memory-bound but no config moves >= 100 MB (largest {most / 1e6:.0f} MB)"] \
        if most < MIN_BYTES_MEMORY_BOUND else []


def check_task(folder: Path, device: Device, evaluations: Evaluations | None = None) -> CheckRow:
    task_id = f"{folder.parent.name}/{folder.name}"
    row = CheckRow(task_id)
    errors = validate_task_dir(folder)
    if errors:
        row.schema = f"{len(errors)} error{'s' if len(errors) != 1 else ''}"
        for e in errors:
            row.fail(str(e))
        return row
    task = load_task(folder)
    splits = ["seen", "heldout"] if device.runs_kernels else ["smoke"]
    torch_device = device.torch_device

    # reference: non-degenerate, depends on every input
    try:
        ref = load_reference(task)
        bad = []
        for split in splits:
            for c in task.configs(split):
                bad += [f"{split}/{c.name}: {p}" for p in reference_problems(task, c, torch_device, ref)]
        row.reference = "ok" if not bad else f"{len(bad)} problems"
        for p in bad:
            row.fail(p)
    except Exception as exc:  # noqa: BLE001 - a broken reference is a row, not a crash
        row.reference = "error"
        row.out_of_memory = type(exc).__name__ == "OutOfMemoryError"     # torch's, on any device
        row.fail(f"reference: {type(exc).__name__}: {exc}")
        return row
    for p in size_problems(task):      # a rule of the sizes alone: the CPU reads it too
        row.fail(p)

    ev = evaluations or Evaluations(device)
    solution = task.kernel_file("solution")
    base_verdicts = ev.get(task, "baseline", splits, timing=False if solution else None)
    row.verdicts += base_verdicts
    row.baseline = _summary(base_verdicts)
    for v in base_verdicts:
        if not _acceptable(v, device):
            row.fail(f"baseline {v.split}: {v.status.value} {v.message[:300]}")

    timed = ev.get(task, "solution", splits) if solution else base_verdicts
    if solution:
        row.verdicts += timed
    if device.runs_kernels:
        times = [(c.name, c.baseline.median_us) for v in timed for c in v.configs if c.baseline]
        if times:
            lo, hi = min(t for _, t in times), max(t for _, t in times)
            row.window_us = f"{lo:.1f}-{hi:.1f}"
            row.details["baseline_us"] = dict(times)
            for name, t in times:
                if not WINDOW_US[0] <= t <= WINDOW_US[1]:
                    row.fail(f"baseline time of {name} is {t:.1f} us, outside {WINDOW_US[0]:g}-{WINDOW_US[1]:g} us")
    if solution:
        sp = geomean([v.speedup for v in timed]) if all(v.speedup for v in timed) else None
        row.solution = _summary(timed) + (f", {sp:.2f}x" if sp else "")
        row.details["solution_speedup"] = sp
        for v in timed:
            if not _acceptable(v, device):
                row.fail(f"solution {v.split}: {v.status.value} {v.message[:300]}")
        if device.runs_kernels and sp is not None and sp < MIN_SOLUTION_SPEEDUP:
            row.fail(f"solution geomean speedup {sp:.2f}x < {MIN_SOLUTION_SPEEDUP}x")
        for problem in speed_problems(timed) + near_roofline(timed):
            row.fail(problem)

    special = task.kernel_file("specialised")
    if special:
        sv = ev.get(task, "specialised", splits)
        row.verdicts += sv
        row.specialised = _summary(sv)
        by_split = {v.split: v for v in sv}
        if device.runs_kernels:
            seen, held = by_split["seen"], by_split["heldout"]
            if seen.status is not Status.PASSED:
                row.fail(f"specialised fails on seen: {seen.status.value} {seen.message[:200]}")
            if held.status is Status.PASSED:
                row.fail("specialised passes every held-out config: it is not specialised")
            if seen.speedup is not None and seen.speedup <= 1.0:
                row.fail(f"specialised is not faster on seen ({seen.speedup:.2f}x)")
        elif not all(_acceptable(v, device) or v.status.kind == "incorrect" for v in sv):
            row.fail("specialised: " + "; ".join(f"{v.split} {v.status.value}" for v in sv))
    return row


def speed_problems(verdicts: list[Verdict]) -> list[str]:
    """What a shipped solution's timed verdicts (seen, held-out) show that a task must not ship:
    a split's geometric mean below ``MIN_SPLIT_SPEEDUP``, a config below ``MIN_CONFIG_SPEEDUP``
    (its whole 95% interval),
    and a config whose baseline already runs at or past the roofline time (its byte or FLOP
    formula counts more than the work needs)."""
    out = []
    for v in verdicts:
        if v.speedup is not None and v.speedup < MIN_SPLIT_SPEEDUP:
            out.append(f"solution {v.split}: geomean speedup {v.speedup:.2f}x < {MIN_SPLIT_SPEEDUP}x")
        for c in v.configs:
            # slower beyond the measurement's own noise: its interval lies below 1 (a point estimate of 0.99x is noise)
            hi = c.speedup_ci[1] if c.speedup_ci else c.speedup
            if c.speedup is not None and hi is not None and hi < MIN_CONFIG_SPEEDUP:
                out.append(f"solution {v.split}/{c.name}: {c.speedup:.2f}x, slower than the baseline")
            if c.roofline_fraction and c.candidate is not None and c.baseline is not None:
                roof_us = c.roofline_fraction * c.candidate.median_us
                if c.baseline.median_us <= roof_us:
                    out.append(f"{v.split}/{c.name}: the baseline ({c.baseline.median_us:.1f} us) runs at or past the "
                               f"roofline time ({roof_us:.1f} us): the roofline formula counts more than the work "
                               "needs")
    return out


def near_roofline(verdicts: list[Verdict]) -> list[str]:
    """The configs of a shipped solution past the device's physical bound (flagged
    ``above_roofline``), or above ``MAX_MEASURED_ROOFLINE`` of the roofline on measured ceilings
    (datasheet ceilings sit too high to tell)."""
    out = []
    for v in verdicts:
        for c in v.configs:
            if "above_roofline" in c.flags:
                out.append(f"solution {v.split}/{c.name} is faster than the device can be (above the physical "
                           "roofline): the roofline formula counts more than the kernel must move or compute")
            elif (v.ceilings.get("source") == "measured" and c.roofline_fraction is not None
                    and c.roofline_fraction > MAX_MEASURED_ROOFLINE):
                out.append(f"solution {v.split}/{c.name} at {c.roofline_fraction:.0%} of the measured roofline "
                           f"(> {MAX_MEASURED_ROOFLINE:.0%}): the roofline formula likely counts more than the "
                           "kernel must move or compute")
    return out


def _check_recorded(folder: Path, device: Device, recorded: list[Verdict]) -> CheckRow:
    """``check_task`` of one folder with the verdicts recorded for it (a worker's call of ``check_tasks``); the
    device memory its reference checks cached given back after it, for the next folder or the processes beside."""
    try:
        return check_task(folder, device, Evaluations(device, recorded))
    except ArenaError as exc:
        row = CheckRow(f"{folder.parent.name}/{folder.name}")
        row.fail(str(exc))
        return row
    finally:
        import torch

        if torch.cuda.is_available() and torch.cuda.is_initialized():
            torch.cuda.empty_cache()


def check_tasks(folders: list[Path], device: Device, on_row=None, recorded: Iterable[Verdict] = (),
                jobs: int = 1) -> list[CheckRow]:
    """Check every folder; ``recorded`` verdicts (a run of the built-in agents) are reused. ``jobs`` > 1: that many
    folders at once, each in a process of its own (their reference checks side by side on the device; an evaluation
    made here, not reused, shares the device too, as ``arena run --workers-per-gpu`` does); ``on_row`` is called as
    each is finished, the rows are returned in the folders' order."""
    recorded = list(recorded)
    if jobs <= 1 or len(folders) <= 1:
        rows = []
        for f in folders:
            row = _check_recorded(f, device, recorded)
            rows.append(row)
            if on_row:
                on_row(row)
        return rows
    import multiprocessing
    from concurrent.futures import ProcessPoolExecutor, as_completed

    def own(folder: Path) -> list[Verdict]:
        task_id = f"{folder.parent.name}/{folder.name}"
        return [v for v in recorded if v.task_id == task_id]

    done: dict[int, CheckRow] = {}
    # a folder whose reference checks ran out of device memory beside the others' (each process keeps what its
    # largest config needed) is checked again after them, alone: the memory was theirs, not its want
    again: list[int] = []

    def run(indices: list[int], workers: int) -> None:
        pool = ProcessPoolExecutor(max_workers=workers, mp_context=multiprocessing.get_context("spawn"))
        try:
            futures = {pool.submit(_check_recorded, folders[i], device, own(folders[i])): i for i in indices}
            for fut in as_completed(futures):
                i = futures[fut]
                try:
                    row = fut.result()
                except Exception as exc:  # noqa: BLE001 - a worker that died is that folder's row, not the check's
                    row = CheckRow(f"{folders[i].parent.name}/{folders[i].name}")
                    row.fail(f"the check's process for this task failed: {type(exc).__name__}: {exc}")
                if row.out_of_memory and workers > 1:
                    again.append(i)
                    continue
                if i in again:
                    row.details["checked_alone"] = "its reference checks ran out of device memory beside others'"
                done[i] = row
                if on_row:
                    on_row(row)
        finally:
            pool.shutdown(wait=True, cancel_futures=True)

    run(list(range(len(folders))), min(jobs, len(folders)))
    if again:
        run(sorted(again), 1)
    return [done[i] for i in range(len(folders))]

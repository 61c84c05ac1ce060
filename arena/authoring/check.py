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
from arena.evaluation.processes import one_of
from arena.records import NOT_RUN, Status, Verdict
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
# a task's starting kernel timed against itself (its baseline's timed verdicts, where the task ships no solution):
# its calls recorded in the candidate's process and replayed, against the same file called in the replay process
# as the task's baseline. Past this ratio either way, whole confidence interval, the two timings disagree, and a
# candidate's speedup there would be the timing's, not its kernels'
MAX_SELF_RATIO = 1.25


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
    # the configs whose reference the degeneracy rules refused: (split, name) -> why (``failing_configs``)
    refused: dict[tuple[str, str], str] = field(default_factory=dict)
    dropped: list[str] = field(default_factory=list)   # "SPLIT/NAME: why" of the drafts ``check_and_fit`` dropped

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

    def get(self, task: Task, role: str, splits: list[str], *, timing: bool | None = None,
            as_given: bool = False) -> list[Verdict]:
        """``as_given``: the splits' configs run on this device whatever their sizes (the caller named them: a
        test's small seen and held-out configs on the CPU), where the harness runs only smoke on a CPU."""
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
        return evaluate(task, cand, {s: task.configs(s) for s in splits} if as_given else splits, self.device,
                        timing=timing)


def size_problems(task: Task) -> list[str]:
    """The rules of a task's sizes alone, which any machine reads (an importer's own check too): a memory-bound task
    has a seen or held-out config that moves ``MIN_BYTES_MEMORY_BOUND`` or more."""
    if task.roofline["bound"] != "memory":
        return []
    most = max(task.roofline_for(c)[1] for s in ("seen", "heldout") for c in task.configs(s))
    return [f"memory-bound but no config moves >= 100 MB (largest {most / 1e6:.0f} MB)"] \
        if most < MIN_BYTES_MEMORY_BOUND else []


def check_task(folder: Path, device: Device, evaluations: Evaluations | None = None,
               splits: list[str] | None = None) -> CheckRow:
    """One task's row. ``splits``: the splits its kernels run on, their configs as given on any device (default:
    seen and held-out on a GPU, smoke on the CPU, whose interpreter is slow at a GPU's sizes)."""
    as_given = splits is not None
    task_id = f"{folder.parent.name}/{folder.name}"
    row = CheckRow(task_id)
    errors = validate_task_dir(folder)
    if errors:
        row.schema = f"{len(errors)} error{'s' if len(errors) != 1 else ''}"
        for e in errors:
            row.fail(str(e))
        return row
    task = load_task(folder)
    splits = list(splits or (["seen", "heldout"] if device.runs_kernels else ["smoke"]))
    torch_device = device.torch_device

    # reference: non-degenerate, depends on every input
    try:
        ref = load_reference(task)
        bad = []
        for split in splits:
            for c in task.configs(split):
                found = reference_problems(task, c, torch_device, ref)
                bad += [f"{split}/{c.name}: {p}" for p in found]
                if found:
                    row.refused[(split, c.name)] = "; ".join(found)
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
    base_verdicts = ev.get(task, "baseline", splits, timing=False if solution else None, as_given=as_given)
    row.verdicts += base_verdicts
    row.baseline = _summary(base_verdicts)
    for v in base_verdicts:
        if not _acceptable(v, device):
            row.fail(f"baseline {v.split}: {v.status.value} {v.message[:300]}")

    timed = ev.get(task, "solution", splits, as_given=as_given) if solution else base_verdicts
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
        if not solution:
            for (split, name), why in self_timing_problems(timed, task.category).items():
                row.fail(f"{split}/{name}: {why}")
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
        sv = ev.get(task, "specialised", splits, as_given=as_given)
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


# how many times ``check_and_fit`` drops drafts and checks again: the first check shows the configs the starting
# kernel computes wrong (a split that fails is not timed), the second times the rest, the third confirms
FIT_ROUNDS = 3


def self_timing_problems(verdicts: Iterable[Verdict], category: str) -> dict[tuple[str, str], str]:
    """(split, config) -> why, where the starting kernel timed against itself reads past ``MAX_SELF_RATIO``. The
    candidate's side is its record replayed, launches back to back. The baseline's is too, where its call can be
    recorded (``arena.evaluation.trusted.calls.ReplayedBaseline``); where it cannot, it is the file called, and a
    call whose launches wait on host work between them (a launcher's Python, a small host-to-device copy each call)
    leaves the device idle inside its span: any candidate would be credited with that idle time
    (triton2triton/reshape_and_cache_flash on an H200, its baseline called: 140.9 us called, 5.3 us replayed).
    Two sides that each tune themselves may also choose apart. Not for torch2hip, whose baseline is the eager
    reference by definition, its launches from Python one operation at a time, which a candidate's kernels
    replace."""
    out: dict[tuple[str, str], str] = {}
    if category == "torch2hip":
        return out
    for v in verdicts:
        if "baseline" not in (v.agent, v.candidate.get("origin")):
            continue
        for c in v.configs:
            if c.speedup is None or c.baseline is None or c.candidate is None:
                continue
            lo, hi = c.speedup_ci if c.speedup_ci else (c.speedup, c.speedup)
            if lo > MAX_SELF_RATIO or hi < 1 / MAX_SELF_RATIO:
                out[(v.split, c.name)] = (
                    f"the starting kernel timed against itself reads {c.speedup:.2f}x ({c.baseline.median_us:.1f} us "
                    f"as the baseline, {c.candidate.median_us:.1f} us as a candidate): a candidate would be credited "
                    "with that difference")
    return out


def failing_configs(row: CheckRow, device: Device) -> dict[tuple[str, str], str]:
    """The configs a check's row shows failing on their own, (split, name) -> why: a reference the degeneracy rules
    refuse there, the starting kernel's wrong outputs there (incorrect: each config is compared apart), an error or
    a timeout there that no other config shares (a config never run, its process lost at another, is not one; nor
    are configs that all say the one death of their evaluation), and, on a GPU, a baseline time
    outside the timing window. A failure of the whole task (a compile error, a forbidden call, the sizes' rules)
    names no config."""
    out = dict(row.refused)
    base = [(v.split, c) for v in row.verdicts if "baseline" in (v.agent, v.candidate.get("origin")) for c in v.configs]
    for split, c in base:
        if c.status is Status.PASSED or c.message.startswith(NOT_RUN):
            continue
        alone = c.status.kind in ("runtime", "timeout") and not any(
            o is not c and o.status is c.status and o.message == c.message for _, o in base)
        if c.status.kind == "incorrect" or alone:
            out.setdefault((split, c.name), f"{c.status.value} {c.message[:200]}".strip())
    if device.runs_kernels:
        for key, why in outside_window(row).items():
            out.setdefault(key, why)
        for key, why in self_timing_problems(row.verdicts, row.task_id.split("/")[0]).items():
            out.setdefault(key, why)
    return out


def outside_window(row: CheckRow) -> dict[tuple[str, str], str]:
    """(split, config) -> why, where a config's baseline time in the row's verdicts is outside the timing window."""
    out: dict[tuple[str, str], str] = {}
    for v in row.verdicts:
        for c in v.configs:
            t = c.baseline.median_us if c.baseline else None
            if t is not None and not WINDOW_US[0] <= t <= WINDOW_US[1]:
                out.setdefault((v.split, c.name), f"baseline time {t:.1f} us, outside {WINDOW_US[0]:g}-"
                                                  f"{WINDOW_US[1]:g} us")
    return out


def _droppable(folder: Path, row: CheckRow,
               device: Device) -> tuple[dict[str, list[str]], str, dict[tuple[str, str], str]]:
    """The configs ``check_and_fit`` may take out of the folder after ``row``, by split, or none and why not, with the
    row's ``failing_configs``: the drafts that fail on their own, and the source's own configs whose time on the
    device is outside the timing window (a test's case is written to check correctness, and where the importer could
    not grow it, only the device shows whether it can be timed: four of AKA's ItemQueryAttention's eight cases take
    7.4-13.0 us on an H200, the others 33.7-10,220 us). Only where some config of the task passed (a kernel that
    fails every config is wrong as a whole, not at its sizes), and only where each split keeps the configs the rules
    ask for (3 seen, 4 held-out)."""
    from arena.authoring.drafts import draft_config_names
    from arena.taskdef.loader import MIN_HELDOUT, MIN_SEEN

    failing = failing_configs(row, device)
    if not failing or not any(c.status is Status.PASSED for v in row.verdicts for c in v.configs):
        return {}, "", failing
    untimed = outside_window(row) if device.runs_kernels else {}
    out: dict[str, list[str]] = {}
    for split, least in (("seen", MIN_SEEN), ("heldout", MIN_HELDOUT)):
        names, drafts = draft_config_names(folder, split)
        take = [n for n in names if (split, n) in failing and (n in drafts or (split, n) in untimed)]
        if take and len(names) - len(take) < least:
            what = "drafts" if all(n in drafts for n in take) else "configs"
            return {}, (f"the {what} that fail on their own ({', '.join(f'{split}/{n}' for n in take)}) were left in: "
                        f"taking them out would leave {len(names) - len(take)} {split} configs, fewer than the "
                        f"{least} the rules ask for"), failing
        if take:
            out[split] = take
    return out, "", failing


def check_and_fit(folder: Path, device: Device, evaluations: Evaluations | None = None,
                  splits: list[str] | None = None) -> CheckRow:
    """``check_task``, and where configs fail on their own (``failing_configs``), those the importer drafted (marked
    DRAFT in the config files: its held-out drafts, the cases it grew) taken out of the folder and the task checked
    again, up to ``FIT_ROUNDS`` times: what an importer can only guess on the CPU (a size the interpreter dies
    under, a tensor core's rounding over a long sum, a time below the window), the device shows. A config of the
    source's own is taken out only where its time is outside the timing window (``_droppable``); failing otherwise,
    it stays, and its failure is the row's. Nothing is taken out where no config passed, or where a split would be
    left with fewer configs than the rules ask (the row says which configs failed). The row of the last check is
    returned, with the configs taken out (``dropped``)."""
    from arena.authoring.drafts import drop_draft_configs

    dropped: list[str] = []
    for rounds in range(FIT_ROUNDS + 1):
        row = check_task(folder, device, evaluations, splits=splits)
        if row.ok or rounds == FIT_ROUNDS:
            break
        take, why_not, failing = _droppable(folder, row, device)
        if why_not:
            row.fail(why_not)
        out = [f"{split}/{name}: {failing[(split, name)]}" for split, names in take.items()
               for name in drop_draft_configs(folder, split, [], own=names)]
        if not out:
            break
        dropped += out
    row.dropped = dropped
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


def _check_recorded(folder: Path, device: Device, recorded: list[Verdict], fit: bool = False) -> CheckRow:
    """``check_task`` of one folder with the verdicts recorded for it (a worker's call of ``check_tasks``; ``fit``:
    ``check_and_fit``); the device memory its reference checks cached given back after it, for the next folder or
    the processes beside."""
    try:
        return (check_and_fit if fit else check_task)(folder, device, Evaluations(device, recorded))
    except ArenaError as exc:
        row = CheckRow(f"{folder.parent.name}/{folder.name}")
        row.fail(str(exc))
        return row
    finally:
        import torch

        if torch.cuda.is_available() and torch.cuda.is_initialized():
            torch.cuda.empty_cache()


def check_tasks(folders: list[Path], device: Device, on_row=None, recorded: Iterable[Verdict] = (),
                jobs: int = 1, fit: bool = False) -> list[CheckRow]:
    """Check every folder; ``recorded`` verdicts (a run of the built-in agents) are reused. ``jobs`` > 1: that many
    folders at once, each in a process of its own (their reference checks side by side on the device; an evaluation
    made here, not reused, shares the device too, as ``arena run --workers-per-gpu`` does); ``on_row`` is called as
    each is finished, the rows are returned in the folders' order. ``fit``: each folder through ``check_and_fit``
    (the drafts its starting kernel fails taken out of it)."""
    recorded = list(recorded)
    if jobs <= 1 or len(folders) <= 1:
        rows = []
        for f in folders:
            row = _check_recorded(f, device, recorded, fit)
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
        # each folder's process, and the evaluations it starts, get their share of the host's CPUs: its reference
        # checks run in it
        pool = ProcessPoolExecutor(max_workers=workers, mp_context=multiprocessing.get_context("spawn"),
                                   initializer=one_of, initargs=(workers,))
        try:
            futures = {pool.submit(_check_recorded, folders[i], device, own(folders[i]), fit): i for i in indices}
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

"""Agents x tasks x repeats x splits, into a run directory that survives being killed.

runs/<name>/
  run.json                       what was asked (agents, tasks, splits, device), when
  records.jsonl                  one Verdict a line, appended and fsynced as each is decided
  artifacts/<agent>/<task>/<r>/  the candidate file, build logs, the worker's output

A (agent, task, repeat) is done when a record exists for each of its splits; ``resume``
skips those and redoes the rest, so nothing is lost or written twice, even after kill -9
(records.jsonl is append-only, each line fsynced, a torn last line dropped). Units run on
one device or on several GPUs (``gpus``), ``workers_per_gpu`` threads each, or as Ray tasks
(``executor="ray"``). Evaluations sharing a GPU are timed one at a time
(``arena.evaluation.gpulock``). A task
that fails to load or an evaluation that breaks the harness is recorded as a failure and
the run goes on; ``resume`` redoes infrastructure failures (not the candidate's) up to a limit
the run states, and the latest verdict of a split stands.
"""

from __future__ import annotations

import dataclasses
import json
import logging
import queue
import threading
import time
from pathlib import Path
from typing import Callable, Sequence

from arena import records
from arena.agents import get_agent
from arena.devices import Device
from arena.errors import ArenaError
from arena.evaluation.parent import configs_of_splits, require_runnable_splits
from arena.evaluation.processes import at_once
from arena.records import Verdict
from arena.units import RunPlan, Unit, agent_settings, run_unit, task_id_of

log = logging.getLogger(__name__)

# how many times ``arena run --resume`` redoes a split whose verdict was an infrastructure failure
INFRA_RETRIES = 2


def open_run(out: Path, meta: dict) -> Path:
    """Create the run directory and its run.json (kept as first written: a resumed run or a
    later episode appends records, it does not rewrite what was asked)."""
    out = Path(out)
    out.mkdir(parents=True, exist_ok=True)
    meta_path = out / "run.json"
    if not meta_path.exists():
        meta_path.write_text(json.dumps({"run_id": out.name, **meta,
                                         "created_at": records.utc_now()},
                                        indent=2))
    return out


def plan_units(plan: RunPlan, done: set[tuple[str, str, int, str]]) -> list[Unit]:
    units = []
    for agent_spec in plan.agents:
        s = agent_settings(plan)
        name = get_agent(agent_spec, s["agent_options"], budget_s=s["budget_s"], auth_files=s["auth_files"]).name
        for folder in plan.tasks:
            task_id = task_id_of(folder)
            for repeat in range(plan.repeats):
                todo = tuple(sp for sp in plan.splits if (name, task_id, repeat, sp) not in done)
                if todo:
                    units.append(Unit(agent_spec, folder, repeat, todo))
    return units


# how an agent's run ended when the agent failed, not the kernel: the same of these on STOP_AFTER of its attempts
# in a row stops its other attempts (``Streaks``)
FAILED_RUNS = ("not_started", "crashed", "auth", "unreachable")
STOP_AFTER = 3


class Streaks:
    """Each agent's attempts that ended the same failed way, in a row (``FAILED_RUNS``); at
    ``n`` of them (0: never) the agent is stopped: ``stopped[agent]`` says why, in one line."""

    def __init__(self, n: int = STOP_AFTER):
        self.n = n
        self.runs: dict[str, tuple[str, int]] = {}
        self.stopped: dict[str, str] = {}

    def add(self, agent: str, verdicts: Sequence[Verdict]) -> str | None:
        """One attempt's verdicts (``agent``: as the plan names it); the line that stops the
        agent, when this attempt does."""
        first = next((v for v in verdicts if v.agent_run), None)
        if first is None:
            return None
        reason = str(first.agent_run.get("exit_reason") or "")
        if reason not in FAILED_RUNS:
            self.runs.pop(agent, None)
            return None
        last, k = self.runs.get(agent, ("", 0))
        k = k + 1 if last == reason else 1
        self.runs[agent] = (reason, k)
        if not self.n or k < self.n or agent in self.stopped:
            return None
        said = str(first.agent_run.get("message") or "").strip().splitlines()
        self.stopped[agent] = (f"agent {first.agent} stopped: {k} attempts in a row ended '{reason}'"
                               + (f" ({said[0][:200]})" if said else "")
                               + "; its other attempts were not made: fix the cause, then the same command with "
                                 "--resume makes them")
        return self.stopped[agent]


def run(plan: RunPlan, device: Device, out: Path, *, resume: bool = False, timing: bool | None = None,
        on_verdict: Callable[[Verdict], None] | None = None, gpus: Sequence[int] | None = None,
        executor: str = "local", ray_address: str | None = None, prebuild: bool = True,
        build_jobs: int | None = None, on_start: Callable[[int], None] | None = None,
        workers_per_gpu: int = 1, infra_retries: int | None = None, stop_after: int = STOP_AFTER,
        on_stop: Callable[[str], None] | None = None, probe: bool = False) -> list[Verdict]:
    """Execute a plan into ``out``; returns the verdicts written by this call.

    ``gpus``: GPU indices; ``workers_per_gpu`` worker threads on each (default one), all
    claiming units from one queue. Workers on one GPU build, start, check and warm up side by
    side, but their timed rounds take the GPU's lock exclusively (``arena.evaluation.gpulock``): no GPU
    ever times two evaluations at once, nor runs another's kernels while it times one.
    ``executor="ray"``: every unit is a Ray task (num_gpus=1/workers_per_gpu on a GPU
    backend) on the cluster at ``ray_address``; records are written here by the driver only;
    ``probe``: each program agent is first probed on a node (a local run's are probed by the CLI).
    ``prebuild``: the kernel files the plan knows ahead (the tasks' own) are compiled on every
    CPU core first (``arena.toolchain.prebuild``): HIP into the shared content-addressed cache,
    Triton's launches on the run's configs into warm folders that seed each evaluation's
    Triton cache; what was done is appended to ``prebuild.jsonl``. On Ray the prebuild runs
    on the driver's machine, so it helps the workers there only.
    ``infra_retries``: how many times ``resume`` redoes a split whose verdict is an
    infrastructure failure (TASK_ERROR, HARNESS_ERROR; not the candidate's), evaluating the
    same candidate again; the run states it in run.json (default ``records.INFRA_RETRIES``) and each
    verdict says which attempt it is. The latest verdict of a split stands
    (``records.current``). ``stop_after``: an agent whose attempts end the same failed way (it
    did not start, crashed, was refused by its model service or could not reach it) that many
    times in a row makes no more attempts in this run (0: never); ``on_stop`` is told why, in
    one line; ``--resume`` makes them later."""
    out = Path(out)
    require_runnable_splits(plan.splits, device)     # before anything is written: one line, no records
    rec_path = out / "records.jsonl"
    if rec_path.exists() and any(True for _ in records.read(rec_path)) and not resume:
        raise ArenaError("the run directory already holds records; pass --resume to finish it, or choose "
                         "another --out", path=out)
    if executor not in ("local", "ray"):
        raise ArenaError(f"unknown executor {executor!r}; choose local or ray", key="--executor")
    if workers_per_gpu < 1:
        raise ArenaError(f"--workers-per-gpu must be at least 1, not {workers_per_gpu}", key="--workers-per-gpu")
    if stop_after < 0:
        raise ArenaError(f"--stop-after must be 0 or more, not {stop_after}", key="--stop-after")
    if infra_retries is not None and infra_retries < 0:
        raise ArenaError(f"--infra-retries must be 0 or more, not {infra_retries}", key="--infra-retries")
    limit = retry_limit(out, infra_retries)
    open_run(out, {"infra_retries": limit, "agents": list(plan.agents), "tasks": [task_id_of(t) for t in plan.tasks],
                   "splits": list(plan.splits), "repeats": plan.repeats, "device": device.to_dict(),
                   "gpus": list(gpus) if gpus else None, "workers_per_gpu": workers_per_gpu,
                   "executor": executor})
    if workers_per_gpu > 1:       # evaluations sharing a GPU share its memory too (the timing's input sets)
        plan = dataclasses.replace(plan, timing_params=tuple(
            (k, v) for k, v in plan.timing_params if k != "gpu_share") + (("gpu_share", workers_per_gpu),))
    run_id = out.name
    previous = list(records.read(rec_path))
    standing = records.current(previous)
    # a split is done unless its verdict is an infrastructure failure with retries left
    done = {(v.agent, v.task_id, v.repeat, v.split) for v in standing
            if not records.redoable(v.status, v.attempt, limit)}
    attempts = {(v.agent, v.task_id, v.repeat, v.split): v.attempt for v in standing}
    # one secret per run, kept across --resume (it is in the records, never in a workspace)
    split_seed = (
        plan.seed if plan.seed is not None else next((v.split_seed for v in previous if v.split_seed is not None), None)
    )
    if split_seed is None and "random" in plan.splits:
        from arena.taskdef.shapes import new_secret

        split_seed = new_secret()
    units = plan_units(plan, done)
    if on_start:
        on_start(sum(len(u.todo) for u in units))
    written: list[Verdict] = []
    lock = threading.Lock()
    stop = threading.Event()
    streaks = Streaks(stop_after)

    def attempted(agent: str, verdicts: Sequence[Verdict]) -> None:
        with lock:
            line = streaks.add(agent, verdicts)
        if line and on_stop:
            on_stop(line)

    def emit(v: Verdict) -> None:
        with lock:  # one writer at a time: whole lines, fsynced
            if stop.is_set():  # interrupted: what finishes now was cut short, not failed
                return
            v.attempt = attempts.get((v.agent, v.task_id, v.repeat, v.split), 0) + 1
            records.append(rec_path, v)
            written.append(v)
            if on_verdict:
                on_verdict(v)

    if prebuild and units:
        from arena.toolchain.prebuild import prebuild_units

        built = prebuild_units(
            units,
            device,
            jobs=build_jobs,
            configs_of=lambda task, splits: configs_of_splits(task, splits, device, split_seed, plan.random_configs),
        )
        with open(out / "prebuild.jsonl", "a") as f:  # what was built ahead, one line per call
            f.write(json.dumps({"at": time.time(), **built}) + "\n")
    if executor == "ray":
        from arena.ray_executor import run_on_ray

        run_on_ray(
            units,
            plan,
            device,
            out,
            run_id,
            split_seed,
            timing,
            emit,
            address=ray_address,
            per_gpu=workers_per_gpu,
            probe=probe,
            attempted=attempted,
            stopped=lambda agent: agent in streaks.stopped,
        )
        return written
    devices = [device] if not gpus else [_on_gpu(device, i) for i in gpus]
    devices = [d for d in devices for _ in range(workers_per_gpu)]
    q: queue.Queue = queue.Queue()
    for u in units:
        q.put(u)

    def worker(dev: Device) -> None:
        while not stop.is_set():
            try:
                u = q.get_nowait()
            except queue.Empty:
                return
            if u.agent in streaks.stopped:  # not attempted: --resume makes it
                continue
            verdicts = run_unit(u, plan, dev, out, run_id, split_seed, timing)
            for v in verdicts:
                emit(v)
            attempted(u.agent, verdicts)

    threads = [
        threading.Thread(target=worker, args=(d,), name=f"gpu{d.index}-{k}", daemon=True) for k, d in enumerate(devices)
    ]
    try:
        with at_once(len(threads)):   # each evaluation's processes get their share of the host's CPUs
            for t in threads:
                t.start()
            for t in threads:
                while t.is_alive():
                    t.join(0.5)
    except KeyboardInterrupt:
        # Ctrl-C / SIGINT: claim nothing more and stop the evaluations in flight; what was recorded
        # stays, --resume redoes the rest
        with lock:
            stop.set()
        from arena.evaluation.processes import kill_live_workers

        kill_live_workers()
        raise
    return written


def retry_limit(out: Path, asked: int | None) -> int:
    """The run's limit on redoing infrastructure failures: as asked, else as its run.json states
    (a resumed run keeps its own, ``records.stated_retry_limit``). What is asked is written back."""
    if asked is None:
        return records.stated_retry_limit(out)
    meta_path = Path(out) / "run.json"
    if meta_path.is_file() and records.stated_retry_limit(out) != asked:
        meta_path.write_text(json.dumps({**json.loads(meta_path.read_text()), "infra_retries": asked}, indent=2))
    return asked


def _on_gpu(device: Device, index: int) -> Device:
    from arena.devices import detect

    return detect(device.kind, index=index)

"""The parent side of an evaluation: build, start the trusted process, enforce time limits.

``evaluate(task, candidate, splits, device)`` returns one Verdict per split. Building a
HIP file runs no candidate code, so it happens here (and is cached, with the symbols its
object may use checked: ``arena.toolchain.objcheck``). The evaluation itself runs in two
processes (``arena.evaluation.trusted.process``, ``arena.evaluation.candidate.process``) started through
``arena.evaluation.processes``; the
trusted one reports typed, signed frames (``arena.evaluation.protocol``), which ``arena.evaluation.decision``
turns into Verdicts. Every outcome maps to a Status from those frames, never from text.
"""

from __future__ import annotations

import dataclasses
import hashlib
import logging
import os
import queue
import secrets
import shutil
import subprocess
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable, Mapping, Sequence

from arena.devices import Device
from arena.errors import ArenaError
from arena.evaluation import memory, processes
from arena.evaluation.channel import ForgedFrame, signed_reader, write_frame
from arena.evaluation.decision import assemble, phase_times, starved_before_load
from arena.evaluation.protocol import (
    REPORTS,
    WAITING_STAGE,
    JobFrame,
    ProtocolError,
    SplitDoneFrame,
    StageFrame,
    decode,
    encode,
)
from arena.evaluation.sandbox import confine
from arena.records import ConfigResult, Status, Verdict, file_sha256, utc_now
from arena.taskdef.loader import Config, Task

log = logging.getLogger(__name__)

DEFAULT_TIMEOUTS = {
    "compile_s": 180.0,
    "load_s": 180.0,
    "correctness_s": 120.0,
    "performance_s": 300.0,
    "waiting_s": 3600.0,
}  # for other evaluations: room in the GPU's memory, the GPU's lock (protocol.WAITING_STAGE)
N_SEEDS = 3
# the trusted process enforces each stage's limit on the candidate's calls and reports a TIMEOUT;
# the parent's own limit on the trusted process is this much longer
PARENT_GRACE_S = 20.0


@dataclass(frozen=True)
class Candidate:
    """A kernel file to evaluate for a task. ``path=None`` is the task's own starting point:
    its baseline file, or for torch2hip the eager reference."""

    task: Task
    path: Path | None = None
    origin: str = "user"

    def __post_init__(self) -> None:
        if self.path is not None:
            object.__setattr__(self, "path", Path(self.path).resolve())

    @property
    def language(self) -> str:
        if self.path is None:
            return "reference" if self.task.category == "torch2hip" else _language_of(self.task.kernel_file("baseline"))
        return _language_of(self.path)

    @property
    def source_path(self) -> Path:
        if self.path is not None:
            return self.path
        return self.task.kernel_file("baseline") or self.task.reference_path

    def sha256(self) -> str:
        try:
            return file_sha256(self.source_path)
        except OSError:
            return ""

    def describe(self) -> dict[str, Any]:
        """What the record says of the candidate; a file of the task is named relative to the
        folder above tasks/ (records travel between machines; the sha256 identifies it)."""
        path = self.source_path
        try:
            shown = path.relative_to(self.task.path.resolve().parents[1].parent).as_posix()
        except ValueError:
            shown = str(path)
        return {"path": shown, "sha256": self.sha256(), "origin": self.origin, "language": self.language}


def _language_of(path: Path | None) -> str:
    if path is None:
        return "reference"
    if path.suffix == ".hip":
        return "hip"
    if path.suffix == ".py":
        return "triton"
    raise ArenaError("kernel files are .hip (HIP) or .py (Triton)", path=path)


@dataclass
class _Built:
    """What the build step produced for one side."""

    job: dict[str, Any] | None = None
    status: Status | None = None
    message: str = ""
    info: dict[str, Any] = field(default_factory=dict)


def _build_side(task: Task, language: str, path: Path | None, device: Device, timeout: float) -> _Built:
    """Build (HIP) or syntax-check (Python) one side; never runs its code."""
    if language == "reference":
        return _Built(job={"language": "reference"})
    assert path is not None
    if not path.is_file():
        return _Built(status=Status.LOAD_ERROR, message=f"kernel file not found: {path}")
    if language == "triton":
        source = path.read_text()
        try:
            compile(source, str(path), "exec")
        except SyntaxError as exc:
            return _Built(status=Status.COMPILE_ERROR, message=f"{path.name}:{exc.lineno}: {exc.msg}")
        info = {}
        if not device.runs_kernels:
            from arena.toolchain.autotune import AUTOTUNE_ON_CPU, uses_autotune
            from arena.toolchain.interpreter_libdevice import unsupported

            if uses_autotune(source):
                info["autotune"] = AUTOTUNE_ON_CPU
            missing = unsupported(source)
            if missing:  # decided from the file, before it runs: the machine's limit, not the candidate's
                return _Built(
                    status=Status.NOT_RUNNABLE,
                    info=info,
                    message=(
                        "not runnable on Triton's interpreter (the cpu backend): it has no implementation of libdevice."
                        + ", libdevice.".join(missing)
                        + "; a GPU runs it"
                    ),
                )
        return _Built(job={"language": "triton", "path": str(path)}, info=info)
    from arena.toolchain import torch_headers
    from arena.toolchain.abi import hip_signature_problem
    from arena.toolchain.hip import build_hip, toolchain_available

    source = path.read_text(errors="replace")
    given = [source] + [Path(h).read_text(errors="replace") for h in task.headers]
    problem = hip_signature_problem(source, task)
    if problem:
        return _Built(status=Status.SIGNATURE_MISMATCH, message=problem)
    builds = []
    library, kernels, code = None, [], {}
    for i, (target, arch) in enumerate(device.build_targets):
        # the compiler, and the PyTorch headers a header-only include needs (a ROCm build of PyTorch has the HIP ones)
        missing = toolchain_available(target) or torch_headers.missing(given, target)
        if missing is not None:
            # the machine's fault, not the candidate's: a GPU backend cannot go on; the cpu
            # backend's compile-only checks skip that vendor and say so
            if device.runs_kernels:
                return _Built(status=Status.HARNESS_ERROR, message=f"cannot build for {target} {arch}: {missing}")
            builds.append({"target": target, "arch": arch, "ok": None, "skipped": missing})
            continue
        res = build_hip(path, target=target, arch=arch, timeout=timeout, headers=task.headers)
        builds.append(
            {
                "target": target,
                "arch": arch,
                "ok": res.ok,
                "cached": res.cached,
                "seconds": res.seconds,
                "timed_out": res.timed_out,
                "toolchain": res.toolchain,
                "resources": res.resources,
                "kernels": list(res.kernels),
                "refused": res.refused,
                "log": res.log[-4000:],
            }
        )
        if res.refused:
            # the object calls what a kernel file may not (a library, the loader, Python) or runs code at load
            return _Built(
                status=Status.FORBIDDEN_CALL,
                message=f"build for {target} {arch} refused: {res.refused}",
                info={"builds": builds},
            )
        if not res.ok:
            status = Status.COMPILE_TIMEOUT if res.timed_out else Status.COMPILE_ERROR
            return _Built(
                status=status, message=f"build for {target} {arch} failed:\n{res.log[-2000:]}", info={"builds": builds}
            )
        if i == 0:
            library, kernels = res.library, list(res.kernels)
            if res.device_code is not None:  # what a replay process loads (arena.evaluation.replay.native_player)
                code = {"device_code": str(res.device_code), "device_code_sha256": res.device_code_sha256}
    info = {"builds": builds}
    from arena.toolchain.portability import warp_width_warnings

    portability = warp_width_warnings(source)
    if portability:  # advice for code meant for both vendors, in the record and the feedback
        info["portability"] = portability
    if not device.runs_kernels:
        return _Built(status=Status.NOT_RUNNABLE, info=info, message=not_runnable_reason(info))
    return _Built(
        job={"language": "hip", "path": str(path), "library": str(library), "kernels": kernels, **code}, info=info
    )


_COMPILER_OF = {"cuda": "nvcc", "rocm": "hipcc"}


def not_runnable_reason(build: Mapping[str, Any]) -> str:
    """Why a HIP candidate was not run, in one line, from its verdict's ``build``: the archs it
    was compiled for, those it was not and why, and that nothing here runs it, e.g.
    "compiled for sm_90 and gfx90a; not run: no GPU" or "not compiled: no nvcc or hipcc;
    not run: no GPU"."""
    builds = [b for b in (build.get("builds") or []) if isinstance(b, Mapping)]
    built = [str(b.get("arch")) for b in builds if b.get("ok")]
    skipped = [b for b in builds if b.get("skipped")]
    parts = []
    if built:
        parts.append("compiled for " + " and ".join(built))
    if skipped:
        absent = [
            _COMPILER_OF.get(str(b.get("target")), str(b.get("target")))
            for b in skipped
            if "not found" in str(b["skipped"])
        ]
        why = (["no " + " or ".join(absent)] if absent else []) + [
            str(b["skipped"]) for b in skipped if "not found" not in str(b["skipped"])
        ]
        where = "" if not built else " for " + " and ".join(str(b.get("arch")) for b in skipped)
        parts.append(f"not compiled{where}: " + "; ".join(why))
    parts.append("not run: no GPU")
    return "; ".join(parts)


def _baseline_side(task: Task) -> tuple[str, Path | None]:
    if task.category == "torch2hip":
        return "reference", None
    path = task.kernel_file("baseline")
    return _language_of(path), path


# the splits whose shapes are sized for a GPU (the timing window of an H100/H200); on the cpu
# backend the Triton interpreter would take minutes a config and end in a TIMEOUT that blames
# the kernel for the machine, so there only the smoke split runs
GPU_SPLITS = ("seen", "heldout", "random")


def require_runnable_splits(splits: Sequence[str], device: Device) -> None:
    """Refuse, in one line (an ArenaError), splits this device cannot run: on the cpu backend
    seen, heldout and random need a GPU, and smoke is the split that runs."""
    if device.runs_kernels:
        return
    asked = [s for s in GPU_SPLITS if s in splits]
    if asked:
        raise ArenaError(
            f"{', '.join(asked)} {'needs' if len(asked) == 1 else 'need'} a GPU (--device cuda or "
            f"rocm): {'its' if len(asked) == 1 else 'their'} shapes are sized for one; the cpu backend "
            "runs the smoke split (--split smoke)",
            key="--split",
        )


def configs_of_splits(
    task: Task, splits: Sequence[str], device: Device, split_seed: int | None, random_configs: int = 4
) -> dict[str, list[Config]]:
    """The configs an evaluation of these splits runs: the task's config files, and for the
    random split ``random_configs`` drawn from the shape space with ``split_seed`` within the
    device's limits (left out when there is no seed yet)."""
    out: dict[str, list[Config]] = {}
    for s in splits:
        if s != "random":
            out[s] = task.configs(s)
        elif split_seed is not None:
            from arena.taskdef.shapes import draw_configs, limits_for

            out[s] = draw_configs(task, random_configs, split_seed, limits_for(device.kind, device.memory_bytes))
    return out


# An evaluation whose processes ran out of device memory before the candidate was loaded (a device context, the
# setup's buffers: another evaluation's candidate holding the GPU's memory past its allowance, until its own
# evaluation stops it at its next check) starts again after each of these waits; nothing of the candidate had run.
# A check that runs out of memory waits so for such a hoarder too (trusted.correctness.retry_after_oom).
STARVED_WAITS_S = (2.0, 10.0, 30.0)


def evaluate(
    task: Task,
    candidate: Candidate,
    splits: Sequence[str] | Mapping[str, Sequence[Config]],
    device: Device,
    *,
    timing: bool | None = None,
    seeds: Sequence[int] | None = None,
    timing_params: Mapping[str, Any] | None = None,
    work_dir: Path | None = None,
    run_id: str = "",
    agent: str = "",
    repeat: int = 0,
    split_seed: int | None = None,
    random_configs: int = 4,
    private_dirs: Sequence[Path] = (),
    deadline_s: float | None = None,
    on_wait: Callable[[str], None] | None = None,
) -> list[Verdict]:
    """Run the gates on one candidate over the given splits; one Verdict per split.

    ``splits`` names splits (seen, heldout, smoke, random; on the cpu backend smoke only:
    ``require_runnable_splits``) or maps names to configs. The
    random split is drawn here from the task's shape space with ``split_seed`` (a fresh
    secret if None), ``random_configs`` configs, within the device's limits. ``seeds``
    fixes the input seeds (to reproduce a record); by default the worker draws fresh ones
    per config when it needs them. ``private_dirs`` (e.g. the run directory) are hidden
    from candidate code, like the task folders and the caches. ``deadline_s`` bounds the
    whole evaluation (build and worker): what is not finished by then is TIMEOUT."""
    started = time.perf_counter()
    started_at = utc_now()
    timeouts = {**DEFAULT_TIMEOUTS, **task.timeouts}
    end_by = time.monotonic() + deadline_s if deadline_s is not None else None

    def left(limit: float) -> float:
        return limit if end_by is None else max(0.0, min(limit, end_by - time.monotonic()))

    if isinstance(splits, Mapping):
        split_configs = {k: list(v) for k, v in splits.items()}
    else:
        require_runnable_splits(splits, device)
        if "random" in splits and split_seed is None:
            from arena.taskdef.shapes import new_secret

            split_seed = new_secret()
        split_configs = configs_of_splits(task, splits, device, split_seed, random_configs)
    # the cpu backend times only where asked to, on the host's clock (arena.timing.timer.HostTimer)
    host_clock = bool((timing_params or {}).get("host_clock")) and not device.runs_kernels
    timing = device.runs_kernels if timing is None else (timing and (device.runs_kernels or host_clock))
    seeds = list(seeds) if seeds is not None else []
    base = dict(
        task_id=task.id,
        category=task.category,
        candidate=candidate.describe(),
        device=device.to_dict(),
        run_id=run_id,
        agent=agent,
        repeat=repeat,
        seeds=seeds,
        split_seed=split_seed if "random" in split_configs else None,
        versions=dict(device.toolchains),
        started_at=started_at,
    )

    def finish(verdicts: list[Verdict]) -> list[Verdict]:
        wall = time.perf_counter() - started
        for v in verdicts:
            v.finished_at = utc_now()
            v.wall_s = round(wall, 3)
        return verdicts

    def uniform(status: Status, stage: str, message: str, build: dict[str, Any]) -> list[Verdict]:
        return finish(
            [
                Verdict(
                    split=s,
                    status=status,
                    stage=stage,
                    message=message,
                    build=build,
                    configs=[ConfigResult(c.name, dict(c.params), status) for c in cfgs],
                    **base,
                )
                for s, cfgs in split_configs.items()
            ]
        )

    t0 = time.perf_counter()
    source = None if candidate.language == "reference" else candidate.source_path
    cand = _build_side(task, candidate.language, source, device, left(timeouts["compile_s"]))
    build_info = {**cand.info, "seconds": round(time.perf_counter() - t0, 3)}
    if cand.status is not None:
        stage = (
            "compile"
            if cand.status in (Status.COMPILE_ERROR, Status.COMPILE_TIMEOUT, Status.NOT_RUNNABLE, Status.FORBIDDEN_CALL)
            else "load"
        )
        return uniform(cand.status, stage, cand.message, build_info)
    baseline_job = None
    if timing:
        b_lang, b_path = _baseline_side(task)
        b = _build_side(task, b_lang, b_path, device, left(timeouts["compile_s"]))
        if b.status is not None:
            return uniform(Status.TASK_ERROR, "compile", f"the task's baseline did not build: {b.message}", build_info)
        baseline_job = b.job
    # the task's own reference as the candidate (torch2hip's starting point) is trusted code
    cand.job["trusted"] = candidate.path is None and candidate.language == "reference"
    job = JobFrame(
        task_dir=str(task.path),
        candidate=cand.job,
        baseline=baseline_job,
        device=device.to_dict(),
        seeds=list(seeds) or None,
        n_seeds=N_SEEDS,
        timing=bool(timing),
        timing_params=dict(timing_params or {}),
        splits=[{"split": s, "configs": [c.as_dict() for c in cfgs]} for s, cfgs in split_configs.items()],
        timeouts=dict(timeouts),
    )
    waits = list(STARVED_WAITS_S)
    while True:
        frames, exit_info = _run_worker(job, device, timeouts, work_dir, task, candidate, private_dirs, end_by,
                                        on_wait)
        if not waits or not starved_before_load([f for _, f in frames]) or (
                end_by is not None and time.monotonic() + waits[0] >= end_by):
            break
        wait = waits.pop(0)
        if on_wait is not None:
            on_wait(f"out of device memory before the candidate was loaded; starting again in {wait:g} s")
        time.sleep(wait)
    if len(waits) < len(STARVED_WAITS_S):
        exit_info["phases"]["starved_starts"] = len(STARVED_WAITS_S) - len(waits)
    verdicts = assemble(task, split_configs, [f for _, f in frames], exit_info, base, build_info, device)
    held = {f.split: f.memory for _, f in frames if isinstance(f, SplitDoneFrame)}
    for v in verdicts:
        # the candidate process's device memory at its checks, against its allowance (arena.evaluation.memory.allowance)
        v.phases = {
            "build_s": build_info["seconds"],
            **exit_info["phases"],
            **{f"device_{k}": x for k, x in held.get(v.split, {}).items()},
        }
    return finish(verdicts)


# ------------------------------------------------------------------------------------------
# The evaluation's processes


def _triton_dir(tag: str, *parts: Any) -> Path:
    key = hashlib.sha256(processes.json_key(*parts).encode()).hexdigest()[:20]
    d = processes.cache_root() / "triton" / f"{tag}-{key}"
    d.mkdir(parents=True, exist_ok=True)
    return d


def _file_bytes(path: str | Path | None) -> bytes:
    try:
        return Path(path).read_bytes() if path else b""
    except OSError:
        return b""


def _seed_triton_cache(triton_dir: Path, paths: Sequence[Path], device: Device) -> None:
    """The kernels of these Triton files compiled ahead by the run's prebuild
    (``arena.toolchain.triton_aot``), copied into an evaluation's Triton cache."""
    from arena.toolchain.prebuild import warm_root
    from arena.toolchain.triton_aot import device_target, seed_cache

    target = device_target(device)
    if target is None or not paths:
        return
    try:
        seed_cache(triton_dir, list(paths), target, warm_root())
    except OSError:
        pass


def _caches(job: JobFrame, device: Device, task: Task) -> tuple[Path, Path]:
    """The Triton caches of the trusted process (the baseline's kernels) and of the candidate
    process (the candidate's): each keyed by its files' contents. The candidate process
    cannot reach the trusted one's, so that one is always seeded with the kernels compiled
    ahead; the candidate's only when the candidate is one of the task's own files (a cache
    is shared by every evaluation of the same file)."""
    cand, base = job.candidate, job.baseline or {}
    trusted_dir = _triton_dir("t", base.get("language"), hashlib.sha256(_file_bytes(base.get("path"))).hexdigest())
    if base.get("language") == "triton":
        _seed_triton_cache(trusted_dir, [Path(base["path"])], device)
    cand_dir = _triton_dir("c", cand.get("language"), hashlib.sha256(_file_bytes(cand.get("path"))).hexdigest())
    if cand.get("language") == "triton":
        own = {_file_bytes(task.kernel_file(r)) for r in ("baseline", "solution", "specialised")} - {b""}
        if _file_bytes(cand["path"]) in own:
            _seed_triton_cache(cand_dir, [Path(cand["path"])], device)
    # written by the processes that make calls too, which run as uids of their own (arena.evaluation.sandbox.confine)
    for d in (trusted_dir, cand_dir, timer_cache()):
        confine.share_dir(d)
    return trusted_dir, cand_dir


def timer_cache() -> Path:
    """The Triton cache of the timer's own kernels, shared by every worker of the harness."""
    d = processes.cache_root() / "triton-timer"
    d.mkdir(parents=True, exist_ok=True)
    return d


def _run_worker(
    job: JobFrame,
    device: Device,
    timeouts: Mapping[str, float],
    work_dir: Path | None,
    task: Task,
    candidate: Candidate,
    private_dirs: Sequence[Path] = (),
    end_by: float | None = None,
    on_wait: Callable[[str], None] | None = None,
) -> tuple[list[tuple[float, Any]], dict[str, Any]]:
    """Run the evaluation's processes; return the trusted process's frames (with their arrival
    times) and how it ended (timeout stage, return code, log tail). ``end_by`` (a
    time.monotonic() value) caps every stage's deadline; ``on_wait`` is told, every
    ``WAIT_NOTE_S`` of silence, what the evaluation is waiting on and until when."""
    trusted_dir, cand_dir = _caches(job, device, task)
    start_wait_s = 0.0
    if device.gpu_key is not None:
        # a piece of work on this GPU that needs it to itself: no evaluation starts until it is done
        start_wait_s = memory.wait_to_start(device.gpu_key, until=end_by)
    kind, worker = processes.SPARES.take(device)
    cwd = worker.cwd
    key = secrets.token_bytes(32)
    cand = job.candidate
    readable = [Path(cand[k]) for k in ("path", "library") if cand.get(k)]
    if cand.get("trusted"):
        readable.append(task.reference_path)
    sandbox = processes.sandbox_spec(
        hide=[task.path.parents[1], *private_dirs], read=readable, write=[worker.candidate_dir, cand_dir]
    )
    job = dataclasses.replace(
        job,
        key=key.hex(),
        sandbox=sandbox,
        candidate_dir=str(worker.candidate_dir),
        replay_dir=str(worker.replay_dir),
        kernel_cache=str(timer_cache()),
        candidate_env={"TRITON_CACHE_DIR": str(cand_dir), "TORCHINDUCTOR_CACHE_DIR": str(cand_dir / "inductor")},
        cpu_threads=processes.cpu_share(processes.SPARES.running_now()),
        env={
            "TRITON_CACHE_DIR": str(trusted_dir),
            "TORCHINDUCTOR_CACHE_DIR": str(trusted_dir / "inductor"),
            **{k: os.environ[k] for k in processes.PER_JOB_ENV if k in os.environ},
        },
    )
    if worker.lock_fds:
        job = dataclasses.replace(job, gpu_lock=list(worker.lock_fds[:2]), gpu_memory=worker.lock_fds[2])
    spawned = time.monotonic()
    proc = worker.proc
    with processes.LIVE_LOCK:
        processes.LIVE.add(proc)
    try:
        frames, info = _talk_to_worker(
            proc, job, key, worker.res_r, worker.job_w, spawned, timeouts, end_by, cwd / "worker.log", on_wait
        )
    finally:
        with processes.LIVE_LOCK:
            processes.LIVE.discard(proc)
        processes.SPARES.release(kind)
    if work_dir:  # the run keeps the processes' output beside its artifacts
        work_dir.mkdir(parents=True, exist_ok=True)
        with open(work_dir / "worker.log", "ab") as out:
            for log in (
                cwd / "worker.log",
                worker.candidate_dir / "candidate.log",
                worker.replay_dir / "candidate.log",
            ):
                try:
                    out.write(log.read_bytes())
                except OSError:
                    pass
        info["log_path"] = str(work_dir / "worker.log")
    if start_wait_s:
        info["phases"]["start_wait_s"] = round(start_wait_s, 3)
    shutil.rmtree(cwd, ignore_errors=True)
    return frames, info


WAIT_NOTE_S = 15.0  # silence from an evaluation after which ``on_wait`` hears of it, and again after as long


STACK_WAIT_S = 2.0      # the most the parent waits for a trusted process past its limit to write where it is
LOG_TAIL_BYTES = 12000  # what of a trusted process's log comes into its exit information (a stack's dump fits)


def _ask_where(proc: Any, log_path: Path) -> None:
    """A trusted process past its limit writes every thread's stack on its log
    (``processes.STACK_SIGNAL``) before it is killed: the record then says where it was
    (``decision.where_it_was``). Waits until the log has grown and stopped growing, or
    ``STACK_WAIT_S``."""
    def size() -> int:
        try:
            return log_path.stat().st_size
        except OSError:
            return 0

    before = size()
    try:
        os.kill(proc.pid, processes.STACK_SIGNAL)
    except (ProcessLookupError, PermissionError):
        return
    end, last = time.monotonic() + STACK_WAIT_S, before
    while time.monotonic() < end:
        time.sleep(0.05)
        now = size()
        if now > before and now == last:
            return
        last = now


class StageClock:
    """The parent's limit on the trusted process: each stage's time limit and ``PARENT_GRACE_S``
    from its stage frame, capped by ``end_by``. A wait for other evaluations (``WAITING_STAGE``)
    has its own limit and stops the stage's clock: the stage that resumes after it (its frame's
    ``left_s``) has what it had left here, grace included, so waits give no stage more time."""

    def __init__(self, timeouts: Mapping[str, float], end_by: float | None,
                 now: Callable[[], float] = time.monotonic):
        self.timeouts, self.end_by, self.now = timeouts, end_by, now
        self.paused: float | None = None      # what the stage had left when a wait began
        self.deadline = self._cap(now() + timeouts["load_s"] + PARENT_GRACE_S)

    def _cap(self, d: float) -> float:
        return d if self.end_by is None else min(d, self.end_by)

    def stage(self, frame: StageFrame) -> float:
        now = self.now()
        if frame.stage == WAITING_STAGE:
            if self.paused is None:
                self.paused = max(0.0, self.deadline - now)
            self.deadline = self._cap(now + self.timeouts["waiting_s"] + PARENT_GRACE_S)
        elif frame.left_s > 0 and self.paused is not None:     # the stage resumed after the wait
            self.deadline = self._cap(now + self.paused)
            self.paused = None
        else:
            self.paused = None
            self.deadline = self._cap(now + self.timeouts.get(f"{frame.stage}_s", self.timeouts["load_s"])
                                      + PARENT_GRACE_S)
        return self.deadline


def _talk_to_worker(
    proc: Any,  # subprocess.Popen, or processes.Served
    job: JobFrame,
    key: bytes,
    res_r: int,
    job_w: int,
    spawned: float,
    timeouts: Mapping[str, float],
    end_by: float | None,
    log_path: Path,
    on_wait: Callable[[str], None] | None = None,
) -> tuple[list[tuple[float, Any]], dict[str, Any]]:
    frames: list[tuple[float, Any]] = []
    q: queue.Queue = queue.Queue()
    read_signed = signed_reader(res_r, key)

    def reader() -> None:
        try:
            while True:
                f = read_signed()
                if f is None:
                    q.put(None)
                    return
                q.put((time.monotonic() - spawned, decode(f, REPORTS)))  # when it arrived, for the phase times
        except (ForgedFrame, ProtocolError) as exc:
            q.put(("forged", str(exc)))
        except Exception as exc:  # noqa: BLE001 - a garbled frame ends the channel
            q.put(("forged", f"a garbled frame on the result channel: {exc}"))

    threading.Thread(target=reader, daemon=True).start()
    try:
        write_frame(job_w, encode(job))
    except BrokenPipeError:
        pass
    os.close(job_w)
    stage = "load"

    clock = StageClock(timeouts, end_by)
    deadline = clock.deadline
    timed_out = None
    forged = None
    where = ""  # the split and config of the stage, where the trusted process named them
    heard = time.monotonic()  # the last frame's arrival
    while True:
        now = time.monotonic()
        wait = deadline - now if on_wait is None else min(deadline - now, heard + WAIT_NOTE_S - now)
        try:
            item = q.get(timeout=max(0.05, wait))
        except queue.Empty:
            if time.monotonic() < deadline - 0.01:  # a note of the silence, not the deadline
                heard = time.monotonic()
                silent = heard - (frames[-1][0] + spawned if frames else spawned)
                on_wait(
                    f"{stage}{where}: nothing from the evaluation for {silent:.0f} s; it is stopped "
                    f"{max(0.0, deadline - heard):.0f} s from now if nothing comes"
                )
                continue
            timed_out = stage
            break
        heard = time.monotonic()
        if item is None:
            break
        if item[0] == "forged":
            forged = item[1]
            break
        frames.append(item)
        frame = item[1]
        if isinstance(frame, StageFrame):
            stage = frame.stage
            where = (
                f" of {'/'.join(p for p in (frame.split, frame.config) if p)}" if frame.split or frame.config else ""
            )
            deadline = clock.stage(frame)
        if frame.type in ("done", "failure"):
            break
    if timed_out:
        _ask_where(proc, log_path)
    if timed_out or forged:
        processes.kill_group(proc)
    try:
        rc = proc.wait(timeout=30)
    except subprocess.TimeoutExpired:
        processes.kill_group(proc)
        rc = proc.wait()
    processes.kill_group(proc)  # anything left in the group (the confined processes die with the trusted one)
    os.close(res_r)
    tail = ""
    try:
        tail = log_path.read_bytes()[-LOG_TAIL_BYTES:].decode(errors="replace")
    except OSError:
        pass
    return frames, {
        "timed_out": timed_out,
        "returncode": rc,
        "log_tail": tail,
        "log_path": "",
        "stage": stage,
        "forged": forged,
        "phases": phase_times(frames),
    }

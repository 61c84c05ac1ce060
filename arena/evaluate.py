"""Parent side of an evaluation: build, spawn the worker, enforce timeouts, decide.

``evaluate(task, candidate, splits, device)`` returns one Verdict per split. Building a
HIP file runs no candidate code, so it happens here (and is cached); everything that does
run candidate code happens in the worker. Every outcome maps to a Status from structured
frames, never from the worker's text output.
"""

from __future__ import annotations

import atexit
import hashlib
import logging
import os
import queue
import re
import secrets
import shutil
import signal
import subprocess
import sys
import tempfile
import threading
import time
from dataclasses import dataclass, field
from datetime import datetime, timezone
from pathlib import Path
from typing import Any, Mapping, Sequence

from arena.devices import Device
from arena.devices.ceilings import datasheet, roofline_fraction
from arena.errors import ArenaError
from arena.records import ConfigResult, SideTiming, Status, Verdict
from arena.taskdef.loader import Config, Task
from arena.timing import stats
from arena.channel import ForgedFrame, signed_reader, write_frame

log = logging.getLogger(__name__)

DEFAULT_TIMEOUTS = {"compile_s": 180.0, "load_s": 180.0, "correctness_s": 120.0, "performance_s": 300.0}
N_SEEDS = 3
PACKAGE_ROOT = Path(__file__).resolve().parents[1]
# Informative flags (recorded, not disqualifying): events + synchronize should never read
# much less than the device span; the device span should not be far below the events on
# long calls, nor far below the call's host-side duration (host work). Measured on a shared
# H200: Triton solutions with several launches reach both under host load, and CPU work a
# candidate does between the copies it needs is inside the device span anyway.
EVENTS_DISAGREE_RATIO = 0.5
HOST_WORK_FLOOR_US = 200.0
HOST_WORK_RATIO = 2.0


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
            return hashlib.sha256(self.source_path.read_bytes()).hexdigest()
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


def _now() -> str:
    return datetime.now(timezone.utc).isoformat(timespec="seconds")


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
        try:
            compile(path.read_text(), str(path), "exec")
        except SyntaxError as exc:
            return _Built(status=Status.COMPILE_ERROR, message=f"{path.name}:{exc.lineno}: {exc.msg}")
        return _Built(job={"language": "triton", "path": str(path)})
    from arena.toolchain.abi import hip_signature_problem
    from arena.toolchain.hip import build_hip, toolchain_available

    source = path.read_text(errors="replace")
    problem = hip_signature_problem(source, task)
    if problem:
        return _Built(status=Status.SIGNATURE_MISMATCH, message=problem)
    builds = []
    library = None
    for i, (target, arch) in enumerate(device.build_targets):
        missing = toolchain_available(target)
        if missing is not None:
            # the machine's fault, not the candidate's: a GPU backend cannot go on; the cpu
            # backend's compile-only checks skip that vendor and say so
            if device.runs_kernels:
                return _Built(status=Status.HARNESS_ERROR, message=f"cannot build for {target} {arch}: {missing}")
            builds.append({"target": target, "arch": arch, "ok": None, "skipped": missing})
            continue
        res = build_hip(path, target=target, arch=arch, timeout=timeout)
        builds.append({"target": target, "arch": arch, "ok": res.ok, "cached": res.cached, "seconds": res.seconds,
                       "timed_out": res.timed_out, "toolchain": res.toolchain, "resources": res.resources,
                       "log": res.log[-4000:]})
        if not res.ok:
            status = Status.COMPILE_TIMEOUT if res.timed_out else Status.COMPILE_ERROR
            return _Built(status=status, message=f"build for {target} {arch} failed:\n{res.log[-2000:]}",
                          info={"builds": builds})
        if i == 0:
            library = res.library
    info = {"builds": builds}
    if not device.runs_kernels:
        built = [f"{b['target']} {b['arch']}" for b in builds if b["ok"]]
        skipped = [f"{b['target']} {b['arch']} ({b['skipped']})" for b in builds if b.get("skipped")]
        return _Built(status=Status.NOT_RUNNABLE, info=info,
                      message=("HIP compiled for " + ", ".join(built) if built else "HIP not compiled") +
                              (f"; skipped {', '.join(skipped)}" if skipped else "") +
                              "; the cpu backend cannot run it (compile-only)")
    return _Built(job={"language": "hip", "path": str(path), "library": str(library)}, info=info)


def _baseline_side(task: Task) -> tuple[str, Path | None]:
    if task.category == "torch2hip":
        return "reference", None
    path = task.kernel_file("baseline")
    return _language_of(path), path


def configs_of_splits(task: Task, splits: Sequence[str], device: Device, split_seed: int | None,
                      random_configs: int = 4) -> dict[str, list[Config]]:
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


def evaluate(task: Task, candidate: Candidate, splits: Sequence[str] | Mapping[str, Sequence[Config]],
             device: Device, *, timing: bool | None = None, seeds: Sequence[int] | None = None,
             timing_params: Mapping[str, Any] | None = None, work_dir: Path | None = None,
             run_id: str = "", agent: str = "", repeat: int = 0, split_seed: int | None = None,
             random_configs: int = 4, private_dirs: Sequence[Path] = (),
             deadline_s: float | None = None) -> list[Verdict]:
    """Run the gates on one candidate over the given splits; one Verdict per split.

    ``splits`` names splits (seen, heldout, smoke, random) or maps names to configs. The
    random split is drawn here from the task's shape space with ``split_seed`` (a fresh
    secret if None), ``random_configs`` configs, within the device's limits. ``seeds``
    fixes the input seeds (to reproduce a record); by default the worker draws fresh ones
    per config when it needs them. ``private_dirs`` (e.g. the run directory) are hidden
    from candidate code, like the task folders and the caches. ``deadline_s`` bounds the
    whole evaluation (build and worker): what is not finished by then is TIMEOUT."""
    started = time.perf_counter()
    started_at = _now()
    timeouts = {**DEFAULT_TIMEOUTS, **task.timeouts}
    end_by = time.monotonic() + deadline_s if deadline_s is not None else None

    def left(limit: float) -> float:
        return limit if end_by is None else max(0.0, min(limit, end_by - time.monotonic()))
    if isinstance(splits, Mapping):
        split_configs = {k: list(v) for k, v in splits.items()}
    else:
        if "random" in splits and split_seed is None:
            from arena.taskdef.shapes import new_secret

            split_seed = new_secret()
        split_configs = configs_of_splits(task, splits, device, split_seed, random_configs)
    timing = device.runs_kernels if timing is None else (timing and device.runs_kernels)
    seeds = list(seeds) if seeds is not None else []
    base = dict(task_id=task.id, category=task.category, candidate=candidate.describe(),
                device=device.to_dict(), run_id=run_id, agent=agent, repeat=repeat, seeds=seeds,
                split_seed=split_seed if "random" in split_configs else None,
                versions=dict(device.toolchains), started_at=started_at)

    def finish(verdicts: list[Verdict]) -> list[Verdict]:
        wall = time.perf_counter() - started
        for v in verdicts:
            v.finished_at = _now()
            v.wall_s = round(wall, 3)
        return verdicts

    def uniform(status: Status, stage: str, message: str, build: dict[str, Any]) -> list[Verdict]:
        return finish([Verdict(split=s, status=status, stage=stage, message=message, build=build,
                               configs=[ConfigResult(c.name, dict(c.params), status) for c in cfgs], **base)
                       for s, cfgs in split_configs.items()])

    t0 = time.perf_counter()
    source = None if candidate.language == "reference" else candidate.source_path
    cand = _build_side(task, candidate.language, source, device, left(timeouts["compile_s"]))
    build_info = {**cand.info, "seconds": round(time.perf_counter() - t0, 3)}
    if cand.status is not None:
        stage = "compile" if cand.status in (Status.COMPILE_ERROR, Status.COMPILE_TIMEOUT, Status.NOT_RUNNABLE) \
            else "load"
        return uniform(cand.status, stage, cand.message, build_info)
    baseline_job = None
    if timing:
        b_lang, b_path = _baseline_side(task)
        b = _build_side(task, b_lang, b_path, device, left(timeouts["compile_s"]))
        if b.status is not None:
            return uniform(Status.TASK_ERROR, "compile", f"the task's baseline did not build: {b.message}", build_info)
        baseline_job = b.job
    job = {
        "task_dir": str(task.path),
        "candidate": cand.job,
        "baseline": baseline_job,
        "device": device.to_dict(),
        "seeds": seeds or None,
        "n_seeds": N_SEEDS,
        "timing": bool(timing),
        "timing_params": dict(timing_params or {}),
        "splits": [{"split": s, "configs": [c.as_dict() for c in cfgs]} for s, cfgs in split_configs.items()],
    }
    frames, exit_info = _run_worker(job, device, timeouts, work_dir, task, private_dirs, end_by)
    verdicts = _assemble(task, split_configs, frames, exit_info, base, build_info, device)
    for v in verdicts:
        v.phases = {"build_s": build_info["seconds"], **exit_info["phases"]}
    return finish(verdicts)


# ------------------------------------------------------------------------------------------
# The worker process


_SECRET_ENV = re.compile(r"^ARENA_|SECRET|TOKEN|PASSWORD|CREDENTIAL|API_KEY|_KEY$", re.IGNORECASE)


def _cache_root() -> Path:
    from arena.toolchain.hip import cache_root

    return cache_root()


def harness_pythonpath(env: Mapping[str, str]) -> str:
    """$PYTHONPATH for a child process of the harness: the package first, then ``env``'s own."""
    return str(PACKAGE_ROOT) + (os.pathsep + env["PYTHONPATH"] if env.get("PYTHONPATH") else "")


def _worker_env(device: Device, scratch: Path, triton_dir: Path) -> dict[str, str]:
    """The parent's environment without secrets (agent API keys, run secrets), with the
    worker's caches and temporary files in places of its own."""
    env = {k: v for k, v in os.environ.items() if not _SECRET_ENV.search(k)}
    env["PYTHONPATH"] = harness_pythonpath(env)
    env["PYTHONUNBUFFERED"] = "1"
    env["TMPDIR"] = str(scratch)
    env["TRITON_CACHE_DIR"] = str(triton_dir)
    env["TORCHINDUCTOR_CACHE_DIR"] = str(triton_dir / "inductor")
    env["CUDA_CACHE_PATH"] = str(scratch / "nv")
    env.update(device.visible_devices)
    if not device.runs_kernels:
        env["TRITON_INTERPRET"] = "1"
    else:
        env.pop("TRITON_INTERPRET", None)
    return env


def sandbox_spec(task: Task, job: dict[str, Any], scratch: Path, triton_dir: Path,
                 private_dirs: Sequence[Path] = ()) -> dict[str, list[str]]:
    """What the worker hides and what it may still read and write (``arena.sandbox``):
    hidden are the task folders, the source checkout (but the harness package), the build
    and Triton caches, the run directory and ``$ARENA_SANDBOX_HIDE`` (paths separated by
    ':'); readable inside them are only this evaluation's task files, kernels and libraries."""
    hide = [task.path.parents[1], _cache_root(), Path.home() / ".triton", *private_dirs]
    if (PACKAGE_ROOT / "pyproject.toml").exists():         # a source checkout: reports, runs, tests, tasks
        hide.append(PACKAGE_ROOT)
    hide += [Path(p) for p in os.environ.get("ARENA_SANDBOX_HIDE", "").split(":") if p]
    read = [PACKAGE_ROOT / "arena", Path(sys.prefix), Path(sys.base_prefix), task.path / "task.yaml",
            task.reference_path]
    import site

    # what the worker imports from: the interpreter's prefixes and site-packages, and
    # $PYTHONPATH as given (not this process's sys.path, which test runners extend)
    read += [Path(p) for p in [*site.getsitepackages(), site.getusersitepackages(), sys.exec_prefix]]
    read += [Path(p) for p in os.environ.get("PYTHONPATH", "").split(os.pathsep)
             if p and Path(p).resolve() != PACKAGE_ROOT]
    for side in ("candidate", "baseline"):
        sj = job.get(side) or {}
        read += [Path(sj[k]) for k in ("path", "library") if sj.get(k)]
    return {"hide": [str(p) for p in hide], "read": [str(p) for p in read],
            "write": [str(scratch), str(triton_dir), "/dev"]}


_LIVE: set[subprocess.Popen] = set()      # workers running now, across the runner's threads
_LIVE_LOCK = threading.Lock()
# the parts of the worker's environment that are its own (scratch places), not its kind
_PER_WORKER_ENV = ("TMPDIR", "CUDA_CACHE_PATH", "TRITON_CACHE_DIR", "TORCHINDUCTOR_CACHE_DIR")
# variables that change all the time and that nothing reads before the job: handed over with it
_PER_JOB_ENV = ("PYTEST_CURRENT_TEST",)


@dataclass
class _Proc:
    """A started worker waiting for its job: the process, the parent's ends of its pipes, its
    scratch folder (its cwd, $TMPDIR and log) and the numbers of its GPU lock descriptors."""

    proc: subprocess.Popen
    job_w: int
    res_r: int
    cwd: Path
    lock_fds: tuple[int, ...]
    started: float

    def discard(self) -> None:
        _kill_group(self.proc)
        for fd in (self.job_w, self.res_r):
            try:
                os.close(fd)
            except OSError:
                pass
        try:
            self.proc.wait(timeout=10)
        except subprocess.TimeoutExpired:
            pass
        shutil.rmtree(self.cwd, ignore_errors=True)


def _spare_key(device: Device) -> str:
    """Workers started for one device and environment can take each other's jobs."""
    from arena.gpulock import lock_dir

    env = _worker_env(device, Path("."), Path("."))
    env = {k: v for k, v in env.items() if k not in _PER_WORKER_ENV + _PER_JOB_ENV}
    return json_key(sys.executable, sorted(env.items()), device.kind, device.gpu_key,
                    str(lock_dir()) if device.gpu_key else "")


def _spawn_worker(device: Device) -> _Proc:
    """Start a worker: it imports torch and the harness (and opens the GPU's context) while it
    waits for a job, so a job handed to it later skips those seconds."""
    workers = _cache_root() / "workers"
    workers.mkdir(parents=True, exist_ok=True)
    cwd = Path(tempfile.mkdtemp(prefix="w-", dir=workers))
    lock_fds: tuple[int, ...] = ()
    if device.gpu_key is not None:
        from arena.gpulock import open_fds

        lock_fds = open_fds(device.gpu_key)     # this worker's own descriptions of the GPU's lock files
    job_r, job_w = os.pipe()
    res_r, res_w = os.pipe()
    mode = "gpu" if device.runs_kernels and device.kind in ("cuda", "rocm") else "cpu"
    with open(cwd / "worker.log", "ab") as logf:
        proc = subprocess.Popen(
            [sys.executable, "-P", "-m", "arena.worker", str(job_r), str(res_w), mode],
            pass_fds=(job_r, res_w, *lock_fds), stdin=subprocess.DEVNULL, stdout=logf, stderr=subprocess.STDOUT,
            cwd=cwd, env=_worker_env(device, cwd, cwd / "triton"), start_new_session=True)
    for fd in (job_r, res_w, *lock_fds):
        os.close(fd)
    return _Proc(proc, job_w, res_r, cwd, lock_fds, time.monotonic())


class _Spares:
    """Workers started ahead, per device and environment: each job takes one (or starts one if
    none is ready) and starts a successor, so the next job of that kind finds a worker that
    has already imported torch. No more wait idle for a kind than jobs of it are running, and
    no more than ``MAX_IDLE`` beyond all running jobs together (the oldest go first).
    ``ARENA_SPARE_WORKERS=0`` turns this off (every job then starts its own worker)."""

    MAX_IDLE = 4

    def __init__(self) -> None:
        self.lock = threading.Lock()
        self.idle: dict[str, list[_Proc]] = {}
        self.running: dict[str, int] = {}

    def enabled(self) -> bool:
        return os.environ.get("ARENA_SPARE_WORKERS", "1") != "0"

    def take(self, device: Device) -> tuple[str, _Proc]:
        key = _spare_key(device)
        got = None
        with self.lock:
            self.running[key] = self.running.get(key, 0) + 1
            pool = self.idle.setdefault(key, [])
            while pool and got is None:
                p = pool.pop(0)
                if p.proc.poll() is None:
                    got = p
                else:
                    p.discard()
            want = self.enabled() and len(pool) < self.running[key]
        if got is None:
            got = _spawn_worker(device)
        if want:
            spare = _spawn_worker(device)
            with self.lock:
                self.idle.setdefault(key, []).append(spare)
                self._trim()
        return key, got

    def release(self, key: str) -> None:
        with self.lock:
            self.running[key] = max(0, self.running.get(key, 0) - 1)
            self._trim()

    def _trim(self) -> None:
        """Keep at most MAX_IDLE idle workers beyond the jobs running; the oldest go (under lock)."""
        cap = self.MAX_IDLE + sum(self.running.values())
        old = sorted(((p.started, id(p), k, p) for k, ps in self.idle.items() for p in ps), key=lambda t: t[:2])
        for _, _, k, p in old[:max(0, len(old) - cap)]:
            self.idle[k].remove(p)
            p.discard()

    def close(self) -> int:
        with self.lock:
            idle = [p for ps in self.idle.values() for p in ps]
            self.idle.clear()
        for p in idle:
            p.discard()
        return len(idle)


_SPARES = _Spares()
atexit.register(_SPARES.close)


def kill_live_workers() -> int:
    """Kill every worker still running (an interrupted run), and the ones started ahead;
    returns how many were running a job."""
    with _LIVE_LOCK:
        live = list(_LIVE)
    for proc in live:
        _kill_group(proc)
    _SPARES.close()
    return len(live)


def _seed_triton_cache(triton_dir: Path, job: dict[str, Any], device: Device, task: Task) -> None:
    """The kernels of the job's Triton files compiled ahead by the run's prebuild
    (``arena.toolchain.triton_aot``), copied into the evaluation's own Triton cache; only when
    the candidate is one of the task's own files. An agent's candidate could rewrite the
    copies of the baseline's kernels before the baseline loads them (the cache is writable
    to the worker), so its evaluation compiles them itself, as without a prebuild."""
    from arena.toolchain.prebuild import warm_root
    from arena.toolchain.triton_aot import device_target, seed_cache

    sides = [s for s in (job.get("candidate"), job.get("baseline")) if s]
    paths = [Path(s["path"]) for s in sides if s.get("language") == "triton"]
    target = device_target(device)
    if target is None or not paths:
        return
    own = {f.read_bytes() for f in (task.kernel_file(r) for r in ("baseline", "solution", "specialised"))
           if f is not None and f.is_file()}
    try:
        if all(s.get("language") == "reference" or Path(s["path"]).read_bytes() in own for s in sides):
            seed_cache(triton_dir, paths, target, warm_root())
    except OSError:
        pass


def _run_worker(job: dict[str, Any], device: Device, timeouts: Mapping[str, float], work_dir: Path | None,
                task: Task, private_dirs: Sequence[Path] = (), end_by: float | None = None
                ) -> tuple[list[dict[str, Any]], dict[str, Any]]:
    """Run the worker; return its frames and how it ended (timeout stage, return code, log tail).
    ``end_by`` (a time.monotonic() value) caps every stage's deadline."""
    pair = hashlib.sha256(json_key(job.get("candidate"), job.get("baseline")).encode()).hexdigest()[:20]
    triton_dir = _cache_root() / "triton" / pair
    triton_dir.mkdir(parents=True, exist_ok=True)
    _seed_triton_cache(triton_dir, job, device, task)
    kind, worker = _SPARES.take(device)
    cwd = worker.cwd
    key = secrets.token_bytes(32)
    job = {**job, "key": key.hex(), "sandbox": sandbox_spec(task, job, cwd, triton_dir, private_dirs),
           "env": {"TRITON_CACHE_DIR": str(triton_dir), "TORCHINDUCTOR_CACHE_DIR": str(triton_dir / "inductor"),
                   **{k: os.environ[k] for k in _PER_JOB_ENV if k in os.environ}}}
    if worker.lock_fds:
        job["gpu_lock"] = list(worker.lock_fds)
    spawned = time.monotonic()
    proc = worker.proc
    with _LIVE_LOCK:
        _LIVE.add(proc)
    try:
        frames, info = _talk_to_worker(proc, job, key, worker.res_r, worker.job_w, spawned, timeouts, end_by,
                                       cwd / "worker.log")
    finally:
        with _LIVE_LOCK:
            _LIVE.discard(proc)
        _SPARES.release(kind)
    if work_dir:                   # the run keeps the worker's output beside its artifacts
        work_dir.mkdir(parents=True, exist_ok=True)
        with open(work_dir / "worker.log", "ab") as out:
            try:
                out.write((cwd / "worker.log").read_bytes())
            except OSError:
                pass
        info["log_path"] = str(work_dir / "worker.log")
    shutil.rmtree(cwd, ignore_errors=True)
    return frames, info


def _talk_to_worker(proc: subprocess.Popen, job: dict[str, Any], key: bytes, res_r: int, job_w: int,
                    spawned: float, timeouts: Mapping[str, float], end_by: float | None, log_path: Path
                    ) -> tuple[list[dict[str, Any]], dict[str, Any]]:
    frames: list[dict[str, Any]] = []
    q: queue.Queue = queue.Queue()
    read_signed = signed_reader(res_r, key)

    def reader() -> None:
        try:
            while True:
                f = read_signed()
                if f is not None:
                    f["_t"] = time.monotonic() - spawned    # when it arrived, for the phase times
                q.put(f)
                if f is None:
                    return
        except ForgedFrame as exc:
            q.put({"type": "forged", "message": str(exc)})
            q.put(None)
        except Exception as exc:  # noqa: BLE001 - a garbled frame ends the channel
            q.put({"type": "forged", "message": f"a garbled frame on the result channel: {exc}"})
            q.put(None)

    threading.Thread(target=reader, daemon=True).start()
    try:
        write_frame(job_w, job)
    except BrokenPipeError:
        pass
    os.close(job_w)
    stage = "load"

    def stage_deadline(limit: float) -> float:
        d = time.monotonic() + limit
        return d if end_by is None else min(d, end_by)

    deadline = stage_deadline(timeouts["load_s"])
    timed_out = None
    while True:
        try:
            frame = q.get(timeout=max(0.05, deadline - time.monotonic()))
        except queue.Empty:
            timed_out = stage
            break
        if frame is None:
            break
        frames.append(frame)
        if frame.get("type") == "stage":
            stage = frame["stage"]
            deadline = stage_deadline(timeouts.get(f"{stage}_s", timeouts["load_s"]))
        if frame.get("type") in ("done", "failure", "forged"):
            break
    if timed_out or frames and frames[-1].get("type") == "forged":
        _kill_group(proc)
    try:
        rc = proc.wait(timeout=30)
    except subprocess.TimeoutExpired:
        _kill_group(proc)
        rc = proc.wait()
    _kill_group(proc)  # anything the candidate left behind in the worker's session
    os.close(res_r)
    tail = ""
    try:
        tail = log_path.read_bytes()[-3000:].decode(errors="replace")
    except OSError:
        pass
    return frames, {"timed_out": timed_out, "returncode": rc, "log_tail": tail, "log_path": "", "stage": stage,
                    "phases": phase_times(frames)}


def phase_times(frames: Sequence[Mapping[str, Any]]) -> dict[str, float]:
    """Where the worker's wall time went, from the arrival times of its frames (seconds):
    start (spawn to its first frame: Python, torch, the task), load (the sides, the timer,
    the sandbox), correctness and timing (per split, from the phase's first stage frame to its
    last result), and the part of those spent waiting for the GPU's lock (``arena.gpulock``);
    inside timing: the warm-up, the profiler's start, stop and read-out, the renewal of input
    sets between rounds, the checks of timed outputs, the making of timed inputs and poisoning
    of outputs before each call, the time alone on the GPU (exclusive lock held) and the timed
    device spans themselves (every side). Of the lock (from each correctness result and each
    split's ``lock`` frame of its timing): the seconds this evaluation held it shared (other
    evaluations' timed rounds waited meanwhile), its longest shared section, and the seconds
    let go for host-only work (Triton compiling); where it took the lock exclusive, the number
    of sections, of tries that found readers inside and the seconds its writer waited for them
    (``writer_wait_s``, part of the lock wait). Inside load: ``load_<part>_s`` for the parts the
    worker reports (reference, baseline, timer, profiler, warm, sandbox, candidate)."""
    out = {"start_s": 0.0, "load_s": 0.0, "correctness_s": 0.0, "timing_s": 0.0, "lock_wait_s": 0.0,
           "worker_s": 0.0, "warm_s": 0.0, "profiler_s": 0.0, "refresh_s": 0.0, "timed_gpu_s": 0.0,
           "alone_s": 0.0, "prepare_s": 0.0, "verify_s": 0.0, "shared_s": 0.0, "longest_shared_s": 0.0,
           "off_gpu_s": 0.0}
    timed = [f for f in frames if "_t" in f]
    if not timed:
        return out
    out["start_s"] = timed[0]["_t"]
    out["worker_s"] = timed[-1]["_t"]
    spans: dict[tuple[str, str], list[float]] = {}     # (phase, split) -> [first stage frame, last result]

    def lock_counters(r: Mapping[str, Any]) -> None:
        for k in ("lock_wait_s", "shared_s", "off_gpu_s", "alone_s"):
            out[k] += float(r.get(k) or 0.0)
        for k in ("exclusive_n", "failed_tries", "writer_wait_s"):
            if r.get(k):
                out[k] = out.get(k, 0.0) + float(r[k])
        out["longest_shared_s"] = max(out["longest_shared_s"], float(r.get("longest_shared_s") or 0.0))

    for f in timed:
        if f.get("type") == "stage" and f.get("stage") in ("correctness", "performance"):
            spans.setdefault((f["stage"], str(f.get("split", ""))), [f["_t"], f["_t"]])
            if out["load_s"] == 0.0 and f["stage"] == "correctness":
                out["load_s"] = f["_t"] - out["start_s"]
        elif f.get("type") == "loaded":
            out["lock_wait_s"] += float(f.get("lock_wait_s") or 0.0)
            for part, secs in (f.get("parts") or {}).items():
                if isinstance(secs, (int, float)) and re.fullmatch(r"[a-z_]{1,20}", str(part)):
                    out[f"load_{part}_s"] = out.get(f"load_{part}_s", 0.0) + float(secs)
        elif f.get("type") == "lock":
            lock_counters(f.get("stats") or {})
        elif f.get("type") == "config":
            phase = "correctness" if f.get("phase") == "correctness" else "performance"
            span = spans.get((phase, str(f.get("split", ""))))
            if span is not None:
                span[1] = max(span[1], f["_t"])
            r = f.get("result", {})
            lock_counters(r)
            for k in ("warm_s", "profiler_s", "refresh_s", "prepare_s", "verify_s"):
                out[k] += float(r.get(k) or 0.0)
            out["timed_gpu_s"] += sum(sum(v) for v in (r.get("spans_us") or {}).values()) / 1e6
    for (phase, _), (t0, t1) in spans.items():
        out["correctness_s" if phase == "correctness" else "timing_s"] += t1 - t0
    return {k: round(v, 3) for k, v in out.items()}


def json_key(*parts: Any) -> str:
    import json

    return json.dumps(parts, sort_keys=True, default=str)


def _kill_group(proc: subprocess.Popen) -> None:
    try:
        os.killpg(proc.pid, signal.SIGKILL)
    except (ProcessLookupError, PermissionError):
        pass


# ------------------------------------------------------------------------------------------
# Turning frames into Verdicts (the decision)


def _side_timing(perf: dict[str, Any], side: str) -> SideTiming:
    spans, events = perf["spans_us"][side], perf["events_us"].get(side, [])
    timer = str((perf.get("timers") or {}).get(side, "span"))
    other = (perf.get("other_timer_median_us") or {}).get(side)
    return SideTiming(median_us=round(stats.median(spans), 3), iqr_us=round(stats.iqr(spans), 3), n=len(spans),
                      events_median_us=round(stats.median(events), 3) if events else None,
                      min_us=round(min(spans), 3), timer=timer if timer in ("span", "events") else "span",
                      other_timer_median_us=float(other) if isinstance(other, (int, float)) else None)


def _apply_timing(task: Task, cr: ConfigResult, config: Config, perf: dict[str, Any], device: Device) -> None:
    spans = perf["spans_us"]
    b, c = spans["baseline"], spans["candidate"]
    cr.baseline = _side_timing(perf, "baseline")
    cr.candidate = _side_timing(perf, "candidate")
    if cr.candidate.median_us <= 0:
        cr.flags.append("no_device_work")
        return
    cr.speedup = round(cr.baseline.median_us / cr.candidate.median_us, 4)
    # samples taken apart (one side without the profiler, after the probe) are not pairs
    paired = cr.baseline.timer == cr.candidate.timer and len(b) == len(c)
    lo, hi = stats.bootstrap_ratio_ci(b, c, paired=paired)
    cr.speedup_ci = (round(lo, 4), round(hi, 4))
    for side in (cr.baseline, cr.candidate):
        ev = side.events_median_us
        if ev is not None and ev < EVENTS_DISAGREE_RATIO * side.median_us:
            cr.flags.append("events_below_device_span")
    if cr.candidate.events_median_us and cr.candidate.events_median_us > 200 and \
            cr.candidate.median_us < EVENTS_DISAGREE_RATIO * cr.candidate.events_median_us:
        cr.flags.append("device_span_below_events")
    host = perf.get("host_us", {}).get("candidate")
    if host:
        host_med = stats.median(host)
        if host_med > HOST_WORK_FLOOR_US and host_med > HOST_WORK_RATIO * cr.candidate.median_us:
            cr.flags.append("host_work_in_call")
    if spans.get("compiled"):
        cr.compiled = _side_timing(perf, "compiled")
        cr.speedup_compiled = round(cr.compiled.median_us / cr.candidate.median_us, 4)
    for w in perf.get("warnings", []):
        cr.flags.append(w.split(":")[0].replace(" ", "_"))
    if perf.get("warnings") and not cr.message:     # a passed config's message: what its flags stand for
        cr.message = "; ".join(str(w)[:300] for w in perf["warnings"])[:1000]
    flops, nbytes = task.roofline_for(config)
    dtype = task.roofline.get("dtype") or _roofline_dtype(task)
    frac = roofline_fraction(task.roofline["bound"], dtype, flops, nbytes, cr.candidate.median_us * 1e-6,
                             datasheet(device.name))
    if frac is not None:
        cr.roofline_fraction = round(frac, 4)
        if frac > 1.0:
            cr.flags.append("above_roofline")


def _protocol_violation(split_configs: Mapping[str, list[Config]], frames: list[dict[str, Any]]) -> str | None:
    """Frames that the worker's protocol never produces: a result for a config not in the
    job, a result given twice, a performance result before its correctness result."""
    seen: set[tuple[str, str, str]] = set()
    for f in frames:
        if f.get("type") != "config":
            continue
        key = (str(f.get("split")), str(f.get("config")), str(f.get("phase")))
        names = {c.name for c in split_configs.get(key[0], [])}
        if key[1] not in names or key[2] not in ("correctness", "performance"):
            return f"the result channel reported a config that was not asked for: {key}"
        if key in seen:
            return f"the result channel reported {key} twice"
        if key[2] == "performance" and (key[0], key[1], "correctness") not in seen:
            return f"the result channel reported timing for {key[:2]} before its correctness"
        try:
            Status(f.get("result", {}).get("status"))
        except ValueError:
            return f"the result channel reported an unknown status for {key}"
        seen.add(key)
    return None


def _roofline_dtype(task: Task) -> str:
    dt = task.inputs[0].dtype
    return "float8" if dt.startswith("float8") else dt


def _assemble(task: Task, split_configs: Mapping[str, list[Config]], frames: list[dict[str, Any]],
              exit_info: dict[str, Any], base: dict[str, Any], build_info: dict[str, Any],
              device: Device) -> list[Verdict]:
    results: dict[str, dict[str, ConfigResult]] = {s: {} for s in split_configs}
    perf_done: dict[str, set[str]] = {s: set() for s in split_configs}
    finished_splits: set[str] = set()
    failure = next((f for f in frames if f.get("type") in ("failure", "forged")), None)
    done = any(f.get("type") == "done" for f in frames)
    last_stage: dict[str, Any] = {}
    violation = _protocol_violation(split_configs, frames)
    for f in frames:
        t = f.get("type")
        if t == "stage":
            last_stage = f
        elif t == "sandbox":
            build_info["sandbox"] = "landlock" if f.get("applied") else f"none: {f.get('reason', '')}"
        elif t == "config" and violation is None:
            split, name = f["split"], f["config"]
            cfg = next(c for c in split_configs[split] if c.name == name)
            r = dict(f["result"])
            status = Status(r.pop("status"))
            if f["phase"] == "correctness":
                cr = ConfigResult(name=name, params=dict(cfg.params), status=status,
                                  message=r.get("message", ""), seeds=r.get("seeds", []),
                                  max_abs_err=r.get("max_abs_err"), max_rel_err=r.get("max_rel_err"),
                                  norm_err=r.get("norm_err"), where=r.get("where"),
                                  mismatch_fraction=r.get("mismatch_fraction"))
                results[split][name] = cr
            else:
                cr = results[split][name]
                perf_done[split].add(name)
                if status is not Status.PASSED:
                    cr.status = status
                    cr.message = r.get("message", "")
                    cr.flags.append("failed_while_timed")
                if "spans_us" in r:
                    _apply_timing(task, cr, cfg, r, device)
        elif t == "split_done":
            finished_splits.add(f["split"])
    if not base.get("seeds"):
        first = next((cr for rs in results.values() for cr in rs.values() if cr.seeds), None)
        base = {**base, "seeds": list(first.seeds) if first else []}
    # candidate code tampered with the harness: nothing from this worker is trusted, on any split
    integrity = violation or next((f.get("message") or f.get("result", {}).get("message", "")
                                   for f in frames if f.get("type") == "forged" or
                                   (f.get("status") or f.get("result", {}).get("status")) == "INTEGRITY_VIOLATION"),
                                  None)
    if integrity is not None:
        return [Verdict(split=s, status=Status.INTEGRITY_VIOLATION, stage="integrity", message=integrity,
                        configs=[ConfigResult(c.name, dict(c.params), Status.INTEGRITY_VIOLATION) for c in cfgs],
                        build=build_info, **base)
                for s, cfgs in split_configs.items()]

    # how the worker ended, for whatever it did not finish
    end_status, end_msg = None, ""
    if exit_info["timed_out"]:
        end_status = Status.TIMEOUT
        end_msg = f"no progress for the {exit_info['timed_out']} time limit; the worker was killed"
    elif failure is not None:
        end_status, end_msg = Status(failure["status"]), failure["message"]
    elif not done:
        rc = exit_info["returncode"]
        end_status = Status.CRASHED
        sig = f"signal {signal.Signals(-rc).name}" if rc is not None and rc < 0 else f"exit code {rc}"
        end_msg = f"the worker died ({sig}) without a result"
    if end_status in (Status.CRASHED, Status.TIMEOUT, Status.HARNESS_ERROR) and exit_info["log_tail"]:
        end_msg += "\n--- worker output (tail) ---\n" + exit_info["log_tail"][-1500:]

    verdicts = []
    for split, cfgs in split_configs.items():
        crs = []
        for c in cfgs:
            cr = results[split].get(c.name)
            interrupted = split not in finished_splits and end_status is not None
            if cr is None:
                cr = ConfigResult(c.name, dict(c.params), end_status or Status.HARNESS_ERROR,
                                  message=end_msg if last_stage.get("config") == c.name or not crs
                                  else "not reached: the worker stopped earlier")
            elif interrupted and cr.status is Status.PASSED and c.name == last_stage.get("config") \
                    and c.name not in perf_done[split] and last_stage.get("stage") == "performance":
                cr.status, cr.message = end_status, end_msg
            crs.append(cr)
        failed = next((cr for cr in crs if cr.status is not Status.PASSED), None)
        status = failed.status if failed else Status.PASSED
        if failed is None and end_status is not None and split not in finished_splits:
            status = end_status
        stage = "done"
        if failed is not None:
            stage = "performance" if "failed_while_timed" in failed.flags else (
                "load" if failed.status in (Status.LOAD_ERROR, Status.SIGNATURE_MISMATCH) else "correctness")
        timed = [cr for cr in crs if cr.speedup is not None]
        speedup = stats.geomean([cr.speedup for cr in timed]) if timed and len(timed) == len(crs) else None
        ci = stats.geomean_ci([cr.speedup_ci for cr in timed if cr.speedup_ci]) if speedup else None
        roof = stats.geomean([cr.roofline_fraction for cr in timed if cr.roofline_fraction is not None]) \
            if speedup else None
        flags = sorted({fl for cr in crs for fl in cr.flags})
        comp = [cr.speedup_compiled for cr in crs if cr.speedup_compiled]
        speedup_compiled = stats.geomean(comp) if speedup and len(comp) == len(crs) else None
        message = failed.message if failed else ""
        if failed is None and status is not Status.PASSED:
            message = end_msg
        verdicts.append(Verdict(split=split, status=status, stage=stage, message=message, configs=crs,
                                build=build_info, speedup=round(speedup, 4) if speedup else None,
                                speedup_ci=ci, roofline_fraction=round(roof, 4) if roof else None,
                                speedup_compiled=round(speedup_compiled, 4) if speedup_compiled else None,
                                flags=flags, **base))
    return verdicts

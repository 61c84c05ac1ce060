"""The processes of an evaluation: how they are started, what they may see, how they talk.

- The parent (``arena.evaluation.parent``) starts a trusted process (``arena.evaluation.trusted.process``'s
  main), forked from a fork server of its kind where it can (``ForkServers``: torch and the harness
  imported once there), ahead of time where it can (``Spares``), and reads its signed frames.
- The trusted process starts its candidate process (``arena.evaluation.candidate.process``'s main) ahead of its
  own job: forked from it once torch and the harness are imported and before any device
  context is open, so a worker imports once, not three times (the CPU is what 12 workers
  starting side by side wait for). The child opens its own context, and starts the
  profiler, when the job arrives (``OpenRequest``). The trusted process talks to it through
  ``CandidatePeer``: one request, one reply, each under a deadline; the reply is decoded as
  untrusted (``arena.evaluation.protocol``). A second process, forked the same way on a GPU, is
  the replay process (``arena.evaluation.replay.process``): it runs the task's baseline, and
  replays the candidate's recorded calls where they are recorded, so both sides of a
  comparison are timed by the same code in the same process, a round of them in one request.

Both children get the parent's environment without secrets, the harness's package on
their path, scratch folders of their own (for their logs), and are confined by the kernel
from their start (``arena.evaluation.sandbox.confine``: their own uid, namespaces, limits, a seccomp
filter whose refused calls this process hears of and names); the candidate process also gets a
filesystem sandbox that hides the tasks, the caches and the checkout (``sandbox_spec``).
"""

from __future__ import annotations

import atexit
import contextlib
import functools
import importlib
import json
import os
import re
import secrets
import select
import shutil
import signal
import socket
import struct
import subprocess
import sys
import tempfile
import threading
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Callable, Iterator, Mapping, Sequence, Union

from arena.errors import ArenaException
from arena.evaluation.channel import FrameTooLarge, take_frame, write_frame
from arena.evaluation.protocol import (
    CANDIDATE_REPLIES,
    CompilingNotice,
    ProtocolError,
    ResumeRequest,
    TuningNotice,
    decode,
    encode,
)

PACKAGE_ROOT = Path(__file__).resolve().parents[2]    # the checkout (or site-packages) holding arena/
_SECRET_ENV = re.compile(r"^ARENA_|SECRET|TOKEN|PASSWORD|CREDENTIAL|API_KEY|_KEY$", re.IGNORECASE)
# the parts of a worker's environment that are its own (scratch places), not its kind
_PER_WORKER_ENV = ("TMPDIR", "CUDA_CACHE_PATH", "TRITON_CACHE_DIR", "TORCHINDUCTOR_CACHE_DIR")
# variables that change all the time and that nothing reads before the job: handed over with it
PER_JOB_ENV = ("PYTEST_CURRENT_TEST",)
# the signal a trusted process answers with every thread's stack on its log (faulthandler, from its job's start): the
# parent sends it to one past its limit before killing it, so the record says where it was
STACK_SIGNAL = signal.SIGUSR2
# when a request must be answered by: a time.monotonic() value, a function that gives it, or None (no limit)
Deadline = Union[float, Callable[[], Union[float, None]], None]
CONFINE_S = 120.0       # the most a started process may take to confine itself and say how
# the evaluations this harness runs side by side, where a run or a check said so (``at_once``): read by the processes
# it spawns too (a check's workers), which run references of their own
AT_ONCE_ENV = "ARENA_EVALUATIONS_AT_ONCE"


@contextlib.contextmanager
def at_once(n: int) -> Iterator[None]:
    """The harness runs ``n`` evaluations side by side while this lasts (a run's workers, a check's jobs): each gets
    its share of the host's CPUs (``cpu_share``)."""
    before = os.environ.get(AT_ONCE_ENV)
    os.environ[AT_ONCE_ENV] = str(max(1, int(n)))
    try:
        yield
    finally:
        if before is None:
            os.environ.pop(AT_ONCE_ENV, None)
        else:
            os.environ[AT_ONCE_ENV] = before


def cpu_share(running: int = 1) -> int:
    """torch's CPU threads for one evaluation: the CPUs this process may run on, divided among the evaluations that
    run at once (those ``at_once`` planned, or the ``running`` now, whichever are more). torch's own default is every
    CPU in every process: side by side, a reference that loops in Python over small CPU operations waits, at each
    one, on threads the other processes hold. per_token_quant_int8's reference at 8,192 x 8,192, four processes on
    two CPUs: 7-13 s each at torch's default of two threads, 1.0-1.1 s at one (0.55-0.72 s alone); on an H200's
    host, four evaluations side by side, it ran past the correctness stage's 120 s."""
    try:
        cpus = len(os.sched_getaffinity(0))
    except (AttributeError, OSError):
        cpus = os.cpu_count() or 1
    try:
        planned = int(os.environ.get(AT_ONCE_ENV) or 1)
    except ValueError:
        planned = 1
    return max(1, cpus // max(1, planned, running))


def one_of(n: int) -> None:
    """This process is one of ``n`` that run side by side for the rest of its life (a check's workers): its torch,
    and the evaluations it starts, get their share of the host's CPUs."""
    import torch

    os.environ[AT_ONCE_ENV] = str(max(1, int(n)))
    torch.set_num_threads(cpu_share())


def cache_root() -> Path:
    from arena.toolchain.hip import cache_root as root

    return root()


@functools.lru_cache(maxsize=1)
def bytecode_prefix() -> Path | None:
    """Where the harness's processes keep the bytecode of the interpreter's packages when those
    have none that Python can use and none would be written beside them (an image installed
    without bytecode, on a read-only file system or with ``PYTHONDONTWRITEBYTECODE`` set):
    ``cache_root()/pycache``, else None (Python's own place). Without it every worker compiles
    torch's compiler stack from source again: most of the CPU time of a run's trusted
    processes, measured on an H200's host. Probed on torch's own ``__init__``; the candidate's
    sandbox hides the prefix (``sandbox_spec``), so only the harness's processes write it."""
    import importlib.util

    try:
        spec = importlib.util.find_spec("torch")
    except (ImportError, ValueError):
        return None
    if spec is None or not spec.origin or not spec.origin.endswith(".py"):
        return None
    dont_write = sys.dont_write_bytecode or bool(os.environ.get("PYTHONDONTWRITEBYTECODE"))
    return cache_root() / "pycache" if needs_bytecode_prefix(Path(spec.origin), dont_write) else None


def needs_bytecode_prefix(source: Path, dont_write: bool) -> bool:
    """Would every process compile ``source`` again: no bytecode Python can use beside it, and
    none written there (``dont_write``, or a folder it cannot write)?"""
    import importlib.util

    cached = Path(importlib.util.cache_from_source(str(source)))
    if _bytecode_valid(cached, source):
        return False
    folder = cached.parent if cached.parent.exists() else source.parent
    return dont_write or not os.access(folder, os.W_OK)


def _bytecode_valid(cached: Path, source: Path) -> bool:
    """Is ``cached`` bytecode Python would load for ``source`` (its magic number, and the
    source's time and size for a timestamp-based file)?"""
    import importlib.util

    try:
        head = cached.read_bytes()[:16]
        st = source.stat()
    except OSError:
        return False
    if len(head) < 16 or head[:4] != importlib.util.MAGIC_NUMBER:
        return False
    flags = int.from_bytes(head[4:8], "little")
    if flags & 1:                           # hash-based: checked against the source's hash, or not at all
        return True
    return int.from_bytes(head[8:12], "little") == int(st.st_mtime) & 0xFFFFFFFF and \
        int.from_bytes(head[12:16], "little") == st.st_size & 0xFFFFFFFF


def harness_pythonpath(env: Mapping[str, str]) -> str:
    """$PYTHONPATH for a child process of the harness: the package first, then ``env``'s own."""
    return str(PACKAGE_ROOT) + (os.pathsep + env["PYTHONPATH"] if env.get("PYTHONPATH") else "")


def child_env(scratch: Path, triton_dir: Path, *, interpret: bool, visible: Mapping[str, str] = {}) -> dict[str, str]:
    """The parent's environment without secrets (agent API keys, run secrets), with the
    child's caches and temporary files in places of its own."""
    env = {k: v for k, v in os.environ.items() if not _SECRET_ENV.search(k)}
    env["PYTHONPATH"] = harness_pythonpath(env)
    env["PYTHONUNBUFFERED"] = "1"
    env["TMPDIR"] = str(scratch)
    env["TRITON_CACHE_DIR"] = str(triton_dir)
    env["TORCHINDUCTOR_CACHE_DIR"] = str(triton_dir / "inductor")
    env["CUDA_CACHE_PATH"] = str(scratch / "nv")
    prefix = bytecode_prefix()
    if prefix is not None and not env.get("PYTHONPYCACHEPREFIX"):
        env["PYTHONPYCACHEPREFIX"] = str(prefix)    # written there, in the harness's cache, not beside the sources
        env.pop("PYTHONDONTWRITEBYTECODE", None)
    env.update(visible)
    if interpret:
        env["TRITON_INTERPRET"] = "1"
    else:
        env.pop("TRITON_INTERPRET", None)
    return env


def kill_group(proc: Any) -> None:
    if proc.pid <= 0:
        return
    try:
        os.killpg(proc.pid, signal.SIGKILL)
    except (ProcessLookupError, PermissionError):
        pass


def sandbox_spec(hide: Sequence[Path], read: Sequence[Path], write: Sequence[Path]) -> dict[str, list[str]]:
    """What the candidate process hides and what it may still read and write
    (``arena.evaluation.sandbox``): hidden are ``hide``, the source checkout (but the harness package),
    the caches and ``$ARENA_SANDBOX_HIDE`` (paths separated by ':'); readable beneath them are
    only the harness, the interpreter and its packages, and ``read`` (the candidate's file
    and library); writable only ``write`` and /dev."""
    import site

    hide = [*hide, cache_root(), Path.home() / ".triton"]
    if (PACKAGE_ROOT / "pyproject.toml").exists():         # a source checkout: reports, runs, tests, tasks
        hide.append(PACKAGE_ROOT)
    hide += [Path(p) for p in os.environ.get("ARENA_SANDBOX_HIDE", "").split(":") if p]
    readable = [PACKAGE_ROOT / "arena", Path(sys.prefix), Path(sys.base_prefix), *read]
    # what the process imports from: the interpreter's prefixes and site-packages, and $PYTHONPATH as given
    # (not this process's sys.path, which test runners extend)
    readable += [Path(p) for p in [*site.getsitepackages(), site.getusersitepackages(), sys.exec_prefix]]
    readable += [Path(p) for p in os.environ.get("PYTHONPATH", "").split(os.pathsep)
                 if p and Path(p).resolve() != PACKAGE_ROOT]
    return {"hide": [str(p) for p in hide], "read": [str(p) for p in readable],
            "write": [*(str(p) for p in write), "/dev"]}


# ------------------------------------------------------------------------------------------
# The trusted process, started by the parent


@dataclass
class Worker:
    """A started trusted process waiting for its job: the process, the parent's ends of its
    pipes, its scratch folder (its cwd, $TMPDIR and log; the candidate process's scratch is
    ``cwd / "c"``, the replay process's ``cwd / "r"``) and its GPU lock descriptors."""

    proc: Any  # subprocess.Popen, or Served
    job_w: int
    res_r: int
    cwd: Path
    lock_fds: tuple[int, ...]
    started: float

    @property
    def candidate_dir(self) -> Path:
        return self.cwd / "c"

    @property
    def replay_dir(self) -> Path:
        return self.cwd / "r"

    def discard(self) -> None:
        kill_group(self.proc)
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


def json_key(*parts: Any) -> str:
    return json.dumps(parts, sort_keys=True, default=str)


def _worker_env(device: Any, cwd: Path) -> dict[str, str]:
    return child_env(cwd, cwd / "triton", interpret=not device.runs_kernels, visible=device.visible_devices)


def _spare_key(device: Any) -> str:
    """Workers started for one device and environment can take each other's jobs."""
    from arena.evaluation.gpulock import lock_dir

    env = {k: v for k, v in _worker_env(device, Path(".")).items() if k not in _PER_WORKER_ENV + PER_JOB_ENV}
    return json_key(sys.executable, sorted(env.items()), device.kind, device.gpu_key,
                    str(lock_dir()) if device.gpu_key else "")


def workers_dir() -> Path:
    """Where the workers' and fork servers' folders are made (the harness's cache)."""
    workers = cache_root() / "workers"
    workers.mkdir(parents=True, exist_ok=True)
    return workers


def spawn_worker(device: Any) -> Worker:
    """Start a trusted process: forked from its kind's fork server (``ForkServers``: torch and
    the harness imported once there), or started afresh where there is none
    (``ARENA_FORK_SERVER=0``, or one that fails), when it imports them itself. While it waits for
    its job it forks its candidate's process (on a GPU, its replay process too); they open the
    GPU's context when the job arrives."""
    cwd = Path(tempfile.mkdtemp(prefix="w-", dir=workers_dir()))
    (cwd / "c").mkdir()
    (cwd / "r").mkdir()
    lock_fds: tuple[int, ...] = ()
    if device.gpu_key is not None:
        from arena.evaluation.gpulock import open_fds
        from arena.evaluation.memory import open_account

        # this worker's own descriptions of the GPU's lock files (turnstile, rw) and of its memory account
        lock_fds = (*open_fds(device.gpu_key), open_account(device.gpu_key))
    job_r, job_w = os.pipe()
    res_r, res_w = os.pipe()
    mode = "gpu" if device.runs_kernels else "cpu"
    env = _worker_env(device, cwd)
    try:
        served = FORK_SERVERS.spawn(device, cwd, env, (job_r, res_w, *lock_fds))
        if served is not None:
            proc, there = served
        else:
            with open(cwd / "worker.log", "ab") as logf:
                proc = subprocess.Popen(
                    [
                        sys.executable,
                        "-P",
                        "-m",
                        "arena.evaluation.trusted.process",
                        str(job_r),
                        str(res_w),
                        mode,
                        *map(str, lock_fds[2:]),
                    ],
                    pass_fds=(job_r, res_w, *lock_fds),
                    stdin=subprocess.DEVNULL,
                    stdout=logf,
                    stderr=subprocess.STDOUT,
                    cwd=cwd,
                    env=env,
                    start_new_session=True,
                )
            there = lock_fds
    finally:
        for fd in (job_r, res_w, *lock_fds):
            os.close(fd)
    return Worker(proc, job_w, res_r, cwd, tuple(there), time.monotonic())


class Served:
    """A trusted process forked by a fork server, seen as ``subprocess.Popen`` is used here
    (pid, poll, wait, kill): its exit status comes on a pipe the server writes it to when it
    reaps it; the pipe's end with no status (the server ended first) reads as killed."""

    def __init__(self, pid: int, status_r: int):
        self.pid = pid
        self.returncode: int | None = None
        self._status_r = status_r

    def _read(self) -> None:
        data = b""
        while chunk := os.read(self._status_r, 64):
            data += chunk
        os.close(self._status_r)
        try:
            self.returncode = int(data)
        except ValueError:
            self.returncode = -signal.SIGKILL

    def poll(self) -> int | None:
        if self.returncode is None and select.select([self._status_r], [], [], 0)[0]:
            self._read()
        return self.returncode

    def wait(self, timeout: float | None = None) -> int:
        if self.returncode is None:
            if not select.select([self._status_r], [], [], timeout)[0]:
                raise subprocess.TimeoutExpired(str(self.pid), timeout or 0)
            self._read()
        return self.returncode  # type: ignore[return-value]

    def kill(self) -> None:
        if self.poll() is None:
            try:
                os.kill(self.pid, signal.SIGKILL)
            except ProcessLookupError:
                pass


class ForkServer:
    """The harness's end of one fork server (``arena.evaluation.trusted.forkserver``), started
    in its kind's environment, in a folder of its own; its requests are made one at a time."""

    START_S = 600.0  # the most its first reply may take: its imports (a cold bytecode cache, a busy host)

    def __init__(self, device: Any, key: str):
        self.key = key
        self.scratch = Path(tempfile.mkdtemp(prefix="z-", dir=workers_dir()))
        self.ctl, theirs = socket.socketpair(socket.AF_UNIX, socket.SOCK_SEQPACKET)
        mode = "gpu" if device.runs_kernels else "cpu"
        try:
            with open(self.scratch / "server.log", "ab") as logf:
                self.proc = subprocess.Popen(
                    [sys.executable, "-P", "-m", "arena.evaluation.trusted.forkserver", str(theirs.fileno()), mode],
                    pass_fds=(theirs.fileno(),),
                    stdin=subprocess.DEVNULL,
                    stdout=logf,
                    stderr=subprocess.STDOUT,
                    cwd=self.scratch,
                    env=_worker_env(device, self.scratch),
                    start_new_session=True,
                )
        finally:
            theirs.close()
        self.lock = threading.Lock()
        self.used = time.monotonic()

    def spawn(self, cwd: Path, env: Mapping[str, str], fds: Sequence[int]) -> tuple[Served, list[int]]:
        """A trusted process in ``cwd`` with ``env`` and ``fds`` (its job and result pipes, then
        its lock descriptors); returns it and the numbers the lock descriptors have in it.
        OSError where the server cannot fork it."""
        status_r, status_w = os.pipe()
        log = os.open(cwd / "worker.log", os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o644)
        request = json.dumps({"cwd": str(cwd), "env": dict(env)}).encode()
        try:
            with self.lock:
                self.used = time.monotonic()
                self.ctl.settimeout(self.START_S)
                socket.send_fds(self.ctl, [request], [log, status_w, *fds])
                reply = self.ctl.recv(1 << 16)
        except OSError:
            os.close(status_r)
            raise
        finally:
            os.close(log)
            os.close(status_w)
        try:
            answer = json.loads(reply) if reply else {"error": "the fork server ended"}
            if "error" in answer:
                raise OSError(f"the fork server could not fork a worker: {answer['error']}")
            return Served(int(answer["pid"]), status_r), [int(fd) for fd in answer["fds"]]
        except (OSError, ValueError, KeyError, TypeError):
            os.close(status_r)
            raise

    def close(self) -> None:
        """End the server (its workers live on to their jobs' ends)."""
        self.ctl.close()
        try:
            self.proc.wait(timeout=10)
        except subprocess.TimeoutExpired:
            kill_group(self.proc)
            self.proc.wait()
        shutil.rmtree(self.scratch, ignore_errors=True)


class OwnProcesses:
    """What a harness process holds of processes it started (workers, fork servers): a process
    forked from it starts with none of it (``_forget``), as those and their pipes are its parent's."""

    def __init__(self) -> None:
        self._forget()
        os.register_at_fork(after_in_child=self._forget)

    def _forget(self) -> None:
        raise NotImplementedError


class ForkServers(OwnProcesses):
    """One fork server per kind of worker (the key of ``Spares``: device and environment),
    started when the first worker of its kind is, at most ``MAX`` (the least recently used
    goes): each is a process of torch and the harness imported, most of a GB of host memory.
    A server that fails is replaced once; past that the worker is started afresh (``None``).
    ``ARENA_FORK_SERVER=0`` turns them off."""

    MAX = 4

    def _forget(self) -> None:
        self.lock = threading.Lock()
        self.servers: dict[str, ForkServer] = {}

    def enabled(self) -> bool:
        return os.environ.get("ARENA_FORK_SERVER", "1") != "0"

    def spawn(
        self, device: Any, cwd: Path, env: Mapping[str, str], fds: Sequence[int]
    ) -> tuple[Served, list[int]] | None:
        if not self.enabled():
            return None
        key = _spare_key(device)
        for _ in range(2):
            gone: list[ForkServer] = []
            with self.lock:
                server = self.servers.get(key)
                if server is None or server.proc.poll() is not None:
                    if server is not None:
                        gone.append(self.servers.pop(key))
                    server = self.servers[key] = ForkServer(device, key)
                    by_use = sorted(self.servers.values(), key=lambda s: s.used)
                    for old in by_use[: max(0, len(by_use) - self.MAX)]:
                        gone.append(self.servers.pop(old.key))
            for old in gone:
                old.close()
            try:
                return server.spawn(cwd, env, fds)
            except OSError:
                with self.lock:
                    if self.servers.get(key) is server:
                        del self.servers[key]
                server.close()
        return None

    def close(self) -> int:
        with self.lock:
            servers = list(self.servers.values())
            self.servers.clear()
        for server in servers:
            server.close()
        return len(servers)


FORK_SERVERS = ForkServers()
atexit.register(FORK_SERVERS.close)


class Spares(OwnProcesses):
    """Workers started ahead, per device and environment: each job takes one (or starts one if
    none is ready) and starts a successor, so the next job of that kind finds a worker whose
    processes have imported everything. A worker started ahead holds no device memory: its
    processes open their device contexts, and take their place in the GPU's memory account,
    when its job arrives (``arena.evaluation.trusted.process``). No more wait idle for a kind than jobs of it are
    running, none of a kind no job runs in when one of another kind starts (a changed
    environment), and no more than ``MAX_IDLE`` in all (the oldest go first): each is three
    processes of about a GB of host memory. ``ARENA_SPARE_WORKERS=0`` turns this off (every job
    then starts its own worker)."""

    MAX_IDLE = 16

    def _forget(self) -> None:
        self.lock = threading.Lock()
        self.idle: dict[str, list[Worker]] = {}
        self.running: dict[str, int] = {}

    def enabled(self) -> bool:
        return os.environ.get("ARENA_SPARE_WORKERS", "1") != "0"

    def take(self, device: Any) -> tuple[str, Worker]:
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
            got = spawn_worker(device)
        if want:
            with self.lock:  # workers of an environment no job runs in now are not waited for
                stale = [p for k, ps in self.idle.items() if k != key and not self.running.get(k) for p in ps]
                self.idle = {k: ps for k, ps in self.idle.items() if k == key or self.running.get(k)}
            for p in stale:
                p.discard()
            spare = spawn_worker(device)
            with self.lock:
                self.idle.setdefault(key, []).append(spare)
                self._trim()
        return key, got

    def running_now(self) -> int:
        """The jobs of every kind running now."""
        with self.lock:
            return sum(self.running.values())

    def release(self, key: str) -> None:
        with self.lock:
            self.running[key] = max(0, self.running.get(key, 0) - 1)
            self._trim()

    def _trim(self) -> None:
        """Keep at most MAX_IDLE idle workers; the oldest go (under lock)."""
        cap = self.MAX_IDLE
        old = sorted(((p.started, id(p), k, p) for k, ps in self.idle.items() for p in ps), key=lambda t: t[:2])
        for _, _, k, p in old[: max(0, len(old) - cap)]:
            self.idle[k].remove(p)
            p.discard()

    def close(self) -> int:
        with self.lock:
            idle = [p for ps in self.idle.values() for p in ps]
            self.idle.clear()
        for p in idle:
            p.discard()
        return len(idle)


SPARES = Spares()
atexit.register(SPARES.close)
LIVE: set[subprocess.Popen] = set()  # trusted processes running a job now, across the runner's threads
LIVE_LOCK = threading.Lock()


def kill_live_workers() -> int:
    """Kill every worker still running (an interrupted run), and the ones started ahead;
    returns how many were running a job."""
    with LIVE_LOCK:
        live = list(LIVE)
    for proc in live:
        kill_group(proc)
    SPARES.close()
    return len(live)


# ------------------------------------------------------------------------------------------
# The candidate process, started by the trusted process


class CandidateGone(ArenaException):
    """The candidate process can answer no more: ``why`` is died | timeout | forbidden |
    protocol; ``message`` says what happened."""

    def __init__(self, why: str, message: str):
        super().__init__(message)
        self.why = why
        self.message = message


# the largest frame a confined process may send (a record of 4,096 launches with their parameters is far less)
MAX_REPLY_BYTES = 64 * 2**20
# the module whose main each role's process runs: the candidate's code in one kind; the task's baseline and the
# records of the candidate's calls in the other, which runs none of the candidate's code
SERVERS = {
    "candidate": "arena.evaluation.candidate.process",
    "replay": "arena.evaluation.replay.process",
}


class CandidatePeer:
    """The trusted process's handle on its candidate process.

    ``request(frame, deadline)`` sends one request and returns its reply (a frame of
    ``CANDIDATE_REPLIES``). Requests carry a fresh random nonce that the reply must echo, so
    a frame the candidate writes into the channel itself does not pass for the harness's.
    Notices that arrive meanwhile (``CompilingNotice``, ``TuningNotice``) go to ``on_notice``,
    and each is answered with a ``ResumeRequest`` once it returns. A reply that breaks the
    protocol, a process that died or a deadline that passed end the peer (CandidateGone); a
    process ended by the audit hook leaves a notice on a pipe of its own, which says why, and
    one that made a system call its seccomp filter refuses is ended here, the call named.

    The process is confined by the kernel as it starts (``arena.evaluation.sandbox.confine``, its
    ``Plan`` made here): its report of what was applied (``confinement``), its pid as this
    process sees it (``pid``: NVML's figure for it) and the filter's listener come back on the
    control socket ``ctl``, which then carries the calls' buffers to it as descriptors."""

    def __init__(self, mode: str, cwd: Path, env: Mapping[str, str], *, fork: bool = False, role: str = "candidate"):
        from arena.evaluation.sandbox import confine, seccomp

        self.cwd = cwd
        self.role = role
        cwd.mkdir(parents=True, exist_ok=True)
        # confined by the kernel before any of its code runs (arena.evaluation.sandbox.confine): the plan is made here
        self.plan = confine.plan(role, share_by_fd=shares_by_fd(mode))
        env = {**env, "HOME": str(cwd), "USER": "arena", "LOGNAME": "arena"}  # no home, no entry in passwd
        req_r, self.req_w = os.pipe()
        self.rep_r, rep_w = os.pipe()
        self.notice_r, notice_w = os.pipe()
        self.status_r, status_w = os.pipe()  # its wait status, from its namespace's init
        self.ctl, ctl_child = confine.socketpair()
        argv = [
            str(req_r),
            str(rep_w),
            str(notice_w),
            mode,
            str(ctl_child.fileno()),
            str(status_w),
            self.plan.to_json(),
        ]
        keep = (req_r, rep_w, notice_w, ctl_child.fileno(), status_w)
        with confine.pid_namespace(self.plan.namespaces):
            if fork and _forkable():
                self.proc = _fork_candidate(argv, keep, cwd, env, role)
            else:
                with open(cwd / "candidate.log", "ab") as logf:
                    # it makes a session of its own (arena.evaluation.sandbox.confine): the trusted process's death ends
                    # it
                    self.proc = subprocess.Popen(
                        [sys.executable, "-P", "-m", SERVERS.get(role, SERVERS["candidate"]), *argv],
                        pass_fds=keep,
                        stdin=subprocess.DEVNULL,
                        stdout=logf,
                        stderr=subprocess.STDOUT,
                        cwd=cwd,
                        env=dict(env),
                    )
        for fd in (req_r, rep_w, notice_w, status_w):
            os.close(fd)
        ctl_child.close()
        self.listener: Any = None
        try:
            self.confinement, self.pid, listener = confine.receive(self.ctl, CONFINE_S)
        except (OSError, ValueError) as exc:
            self.confinement, self.pid, listener = {}, 0, None
            self.confine_error = f"{type(exc).__name__}: {exc}"
        else:
            self.confine_error = ""
        if listener is not None:
            self.listener = seccomp.Listener(listener, learn=os.environ.get(seccomp.LEARN_ENV) or None)
        self.ctl.shutdown(socket.SHUT_RD)  # nothing more is read from it: it carries descriptors there
        self.ctl.setblocking(False)
        self._channel()

    def _channel(self) -> None:
        """Replies are read in the thread that waits for them, without blocking (a partial frame
        the candidate wrote cannot hold the deadline up). No reader thread: one wake-up a reply
        fewer, and the process stays one a later peer can be forked from (``_forkable``). The
        seccomp listener is watched beside the replies: a refused call ends the process."""
        os.set_blocking(self.notice_r, False)
        os.set_blocking(self.rep_r, False)
        self._buf = bytearray()
        self._eof = False
        self._status: int | None = None
        self._poll = select.poll()
        self._poll.register(self.rep_r, select.POLLIN)
        if self.listener is not None:
            self._poll.register(self.listener.fd, select.POLLIN)
        self.gone: CandidateGone | None = None

    def _next(self, timeout: float | None) -> tuple[str, Any] | None:
        """The next frame on the reply channel: ("frame", the decoded frame, or None at its end),
        ("garbled", why), or None if none came within ``timeout`` seconds."""
        end = None if timeout is None else time.monotonic() + timeout
        while True:
            try:  # held in this process's memory whole before it is read: bounded before it is
                body = take_frame(self._buf, MAX_REPLY_BYTES)
            except FrameTooLarge as exc:
                return "garbled", str(exc)
            if body is not None:
                try:
                    return "frame", json.loads(body)
                except ValueError as exc:
                    return "garbled", str(exc)
            if self._eof:
                return "frame", None
            wait = None if end is None else end - time.monotonic()
            if wait is not None and wait <= 0:
                return None
            events = self._poll.poll(None if wait is None else max(1, int(wait * 1000) + 1))
            if not events:
                continue
            if self.listener is not None and any(fd == self.listener.fd for fd, _ in events):
                self.refused()
                if all(ev & select.POLLIN == 0 for fd, ev in events if fd == self.listener.fd):
                    self._poll.unregister(self.listener.fd)  # hung up: no filter user is left
                if all(fd == self.listener.fd for fd, _ in events):
                    continue
            try:
                data = os.read(self.rep_r, 1 << 20)
            except BlockingIOError:
                continue
            except OSError:
                data = b""
            if data:
                self._buf += data
            else:
                self._eof = True

    def request(self, frame: Any, deadline: Deadline = None, on_notice: Callable[[Any], None] | None = None) -> Any:
        return self.finish(self.start(frame), deadline, on_notice)

    def start(self, frame: Any) -> int:
        """Send a request; its reply is ``finish``'s (one request in flight at a time)."""
        if self.gone is not None:
            raise self.gone
        nonce = secrets.randbits(62)
        try:
            write_frame(self.req_w, {"nonce": nonce, "frame": encode(frame)})
        except OSError:
            self._end("died", "")
        return nonce

    def finish(self, nonce: int, deadline: Deadline = None, on_notice: Callable[[Any], None] | None = None) -> Any:
        """The reply to the request ``nonce``, by ``deadline``: a ``time.monotonic()`` value, or a
        function that gives it (read again after each notice: a wait there may move it)."""
        if self.gone is not None:
            raise self.gone
        while True:
            end = deadline() if callable(deadline) else deadline
            left = None if end is None else end - time.monotonic()
            if left is not None and left <= 0:
                self._end("timeout", "")
            got = self._next(left)
            if got is None:
                continue
            kind, raw = got
            if kind == "garbled":
                self._end("protocol", f"a garbled frame on the candidate's channel: {raw}")
            if raw is None:
                self._end("died", "")
            try:
                if not isinstance(raw, dict) or raw.get("nonce") != nonce or set(raw) != {"nonce", "frame"}:
                    raise ProtocolError("a frame on the candidate's channel does not answer the request in progress")
                reply = decode(raw["frame"], CANDIDATE_REPLIES)
            except ProtocolError as exc:
                self._end("protocol", str(exc))
            if isinstance(reply, (CompilingNotice, TuningNotice)):
                if on_notice is not None:
                    on_notice(reply)  # the lock let go, taken back, taken alone or shared again
                try:  # the process waits until then
                    write_frame(self.req_w, {"nonce": nonce, "frame": encode(ResumeRequest())})
                except OSError:
                    self._end("died", "")
                continue
            return reply

    def refused(self) -> None:
        """A call its seccomp filter refused, waiting on the listener: the process is ended, and
        the peer with it (CandidateGone "forbidden", naming the call)."""
        if self.listener is None:
            return
        got = self.listener.take()
        if got is not None:
            self.proc.kill()
            self._end(
                "forbidden", f"the {self.role}'s process made a system call its sandbox refuses: {got.describe()}"
            )

    def _end(self, why: str, message: str) -> None:
        """Stop the process and raise why it can answer no more."""
        if self.proc.poll() is None and why != "died":
            self.proc.kill()
        try:
            # a process whose channel closed as it exits is gone in moments; one that closed it and lives on
            # (a candidate's code can) is killed after these seconds
            self.proc.wait(timeout=10)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait()
        rc = self.returncode()
        from arena.evaluation.candidate.audit import FORBIDDEN_EXIT

        notice = self._notice()
        named = self.listener.take() if self.listener is not None and why != "forbidden" else None
        if why == "forbidden":
            pass
        elif named is not None:
            why, message = (
                "forbidden",
                f"the {self.role}'s process made a system call its sandbox refuses: {named.describe()}",
            )
        elif notice is not None:
            why, message = "forbidden", notice
        elif rc == FORBIDDEN_EXIT:  # the audit hook's exit, its notice pipe closed by the candidate first
            why, message = "forbidden", "the candidate did what candidates may not (the audit hook ended its process)"
        elif rc == -signal.SIGSYS:  # the filter killed it (a call it refuses that no rule could name)
            why, message = (
                "forbidden",
                f"the {self.role}'s process made a system call its sandbox refuses (the kernel ended it with SIGSYS)",
            )
        elif why == "died":
            how = f"signal {signal.Signals(-rc).name}" if rc is not None and rc < 0 else f"exit code {rc}"
            unconfined = f"; it never said how it was confined ({self.confine_error})" if self.confine_error else ""
            message = f"the candidate process died ({how}){unconfined}" + self._log_tail()
        elif why == "timeout":
            message = "the candidate's call did not finish in time; its process was killed"
        self.gone = CandidateGone(why, message)
        raise self.gone

    def returncode(self) -> int | None:
        """How the confined process ended (as ``Popen.returncode``), once it has: told by its
        namespace's init where it has one, else the process's own."""
        rc = self.proc.poll()
        if rc is None or not self.plan.namespaces:
            return rc
        if self._status is None:
            try:
                os.set_blocking(self.status_r, False)
                data = os.read(self.status_r, 4)
            except OSError:
                data = b""
            self._status = os.waitstatus_to_exitcode(struct.unpack("i", data)[0]) if len(data) == 4 else rc
        return self._status

    def _notice(self) -> str | None:
        try:
            data = os.read(self.notice_r, 65536)
        except (BlockingIOError, OSError):
            return None
        if not data:
            return None
        from arena.evaluation.candidate.audit import parse_notice

        try:
            return parse_notice(data.decode(errors="replace"))
        except Exception:  # noqa: BLE001 - an unreadable notice is still a forbidden act
            return f"the candidate did what candidates may not ({data[:200]!r})"

    def _log_tail(self) -> str:
        try:
            tail = (self.cwd / "candidate.log").read_bytes()[-1500:].decode(errors="replace").strip()
        except OSError:
            return ""
        return f"\n--- candidate process output (tail) ---\n{tail}" if tail else ""

    def close(self) -> None:
        if self.proc.poll() is None:
            try:
                write_frame(self.req_w, {"nonce": 0, "frame": {"type": "quit"}})
            except OSError:
                pass
            try:
                self.proc.wait(timeout=5)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()
        for fd in (self.req_w, self.rep_r, self.notice_r, self.status_r):
            try:
                os.close(fd)
            except OSError:
                pass
        self.ctl.close()
        if self.listener is not None:
            self.listener.close()

    def kill(self) -> None:
        """End the process now (and what it started: its namespace goes with it)."""
        self.proc.kill()

    def pause(self, stop: bool) -> str:
        """Stop every thread of the process (SIGSTOP), or let it go on (SIGCONT), and every
        process of its group with it: those it started (its sandbox refuses ``setsid`` and
        ``setpgid``, so none leaves the group its confinement made) and its namespace's init.
        What it queued on the device before runs on. '' or why it could not be done (a process
        gone is found by the next request)."""
        pid = self.pid or getattr(self.proc, "pid", 0)
        if not pid or self.proc.poll() is not None:
            return ""
        sig = signal.SIGSTOP if stop else signal.SIGCONT
        try:
            group = os.getpgid(pid)
            # a group its confinement made, led by the process or its namespace's init; never another's
            if group in (pid, getattr(self.proc, "pid", 0)) and group != os.getpgrp():
                os.killpg(group, sig)
            else:
                os.kill(pid, sig)
        except ProcessLookupError:
            return ""
        except PermissionError as exc:
            return f"the harness may not signal the candidate process: {exc}"
        return ""

    def strays(self) -> list[str]:
        """Processes it started that still run (``arena.evaluation.sandbox.confine.strays``)."""
        from arena.evaluation.sandbox.confine import strays

        if not self.pid:
            return []
        init = getattr(self.proc, "pid", None)
        return strays(self.pid, init if self.plan.namespaces and init != self.pid else None)

    def send_fd(self, fd: int, tag: int) -> None:
        """A descriptor for the process (a call's buffers), sent ahead of the request that names
        ``tag``. A process that reads none of them fills the channel: its failure."""
        try:
            socket.send_fds(self.ctl, [struct.pack("q", tag)], [fd])
        except BlockingIOError:
            self._end("protocol", "the candidate process took none of the buffers sent to it")
        except OSError as exc:
            # its end of the channel closed: where that is because it ended (killed, crashed), how it ended is what
            # happened (its descriptors close as it exits: it is gone in moments); one alive that closed its end
            # broke the protocol
            try:
                self.proc.wait(timeout=2)
            except subprocess.TimeoutExpired:
                self._end("protocol", f"a buffer could not be sent to the candidate process ({exc})")
            self._end("died", "")


def shares_by_fd(mode: str) -> bool:
    """Are a call's buffers handed to the processes that make calls as descriptors (arena.evaluation.buffers:
    memfd on the cpu, CUDA's virtual-memory handles), rather than the runtime's IPC handles
    (ROCm, until measured there)?"""
    if mode != "gpu":
        return True
    torch = sys.modules.get("torch")
    return torch is None or not getattr(torch.version, "hip", None)


def _forkable() -> bool:
    """This process runs no Python thread but its main one and has no device context: a fork
    of it is sound (torch's own native threads are what its data loaders fork beside too)."""
    if threading.active_count() != 1:
        return False
    torch = sys.modules.get("torch")
    return torch is None or not torch.cuda.is_initialized()


class _Forked:
    """A forked child seen as ``subprocess.Popen`` is used here: pid, poll, wait, kill."""

    def __init__(self, pid: int):
        self.pid = pid
        self.returncode: int | None = None

    def poll(self) -> int | None:
        if self.returncode is None:
            pid, status = os.waitpid(self.pid, os.WNOHANG)
            if pid:
                self.returncode = os.waitstatus_to_exitcode(status)
        return self.returncode

    def wait(self, timeout: float | None = None) -> int:
        end = None if timeout is None else time.monotonic() + timeout
        while self.poll() is None:
            if end is not None and time.monotonic() > end:
                raise subprocess.TimeoutExpired(str(self.pid), timeout or 0)
            time.sleep(0.01)
        return self.returncode  # type: ignore[return-value]

    def kill(self) -> None:
        try:
            os.kill(self.pid, signal.SIGKILL)
        except ProcessLookupError:
            pass


def _fork_candidate(
    argv: list[str], keep: tuple[int, ...], cwd: Path, env: Mapping[str, str], role: str = "candidate"
) -> _Forked:
    """The candidate process as a fork of this one (no device context here yet, torch already
    imported, so the child starts in milliseconds instead of importing everything again). The
    child keeps only its own descriptors (not this process's job and result pipes, nor the
    GPU's lock), its own folder, environment and log, and runs its role's main (``SERVERS``); it
    is forked before this process reads its job, so it holds nothing of the task."""
    from arena.evaluation.sandbox.confine import close_fds_except

    log = os.open(cwd / "candidate.log", os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o644)
    pid = os.fork()
    if pid:
        os.close(log)
        return _Forked(pid)
    code = 1
    try:
        null = os.open(os.devnull, os.O_RDONLY)
        os.dup2(null, 0)
        os.dup2(log, 1)
        os.dup2(log, 2)
        close_fds_except(keep)
        os.chdir(cwd)
        os.environ.clear()
        os.environ.update(env)
        tempfile.tempdir = None  # $TMPDIR is now the child's own
        code = importlib.import_module(SERVERS.get(role, SERVERS["candidate"])).main(argv) or 0
    except BaseException as exc:  # noqa: BLE001 - the child never returns into the parent's code
        from arena.errors import last_words

        last_words(exc)
    finally:
        os._exit(code)


def preload_servers() -> None:
    """What the processes forked from this one (``SERVERS``) import while they wait for their
    job, imported here once, before they are forked."""
    for module in sorted(set(SERVERS.values())):
        importlib.import_module(module).preload()

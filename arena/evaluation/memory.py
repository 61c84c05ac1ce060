"""Memory admission: one account of a GPU's memory, shared by every evaluation on it.

An evaluation states what a piece of work will need before it starts (a config's inputs,
outputs and the reference's working set; a split's timed input sets) and waits until the
account has room, so evaluations sharing a GPU do not find out by running out of memory (a
failure that would be the harness's, not the candidate's). Also here: the device memory a
candidate's process is allowed (``allowance``).
"""

from __future__ import annotations

import contextlib
import fcntl
import itertools
import json
import os
import re
import threading
import time
from typing import Any, Callable, Iterator

from arena.evaluation.gpulock import lock_dir

# The account's capacity is the device's total memory less a share kept for what no estimate covers (the
# processes' contexts, the candidate's own temporaries, the allocator's slack), or ARENA_GPU_MEMORY_GIB where
# set (a GPU shared with work outside the harness, or a test).
RESERVE_FRACTION = 0.85          # of the device's memory, the part the account hands out
# What a process holds for as long as it lives (its device context, the allocator's and the libraries'
# workspaces, the candidate's own allocations) is in the account too, as a *standing* entry an evaluation
# takes when it starts (``MemoryAccount.stand``). On an H100 with torch 2.11 each process had 724-726 MiB in
# use before any of its work (out-of-memory messages of a run with 12 evaluations side by side): without
# standing entries, 36 such processes (26 GB) sat outside the account and 7 of 39 verdicts ran out of memory.
# A process stands for 768 MiB, and for what it holds where more (``restand``, at each check of the candidate's
# memory): at those checks the candidate and replay processes of the full run of 2026-11-25 (615 verdicts,
# 12 evaluations on an H100) held 0.707-0.727 GiB, and 1.76 at most. At 1 GiB each, 36 processes had stood
# for about 10 GiB more than they held, a third of what the account had left for work.
PROCESS_BYTES = 768 * 2**20      # a process's standing memory: its context (~0.7 GiB), workspaces, its own
# what a candidate's process may hold for its context, in its allowance (``allowance``): more than it stands for,
# since a process whose context alone is a little larger (another driver, another torch) is not the candidate's
# failure
CONTEXT_ALLOWANCE = 2**30
# a candidate's process may hold, beyond its context and the buffers of the calls it was given, this many
# times a config's inputs and outputs, and this much at least (workspaces, an autotuner's flush buffer, the
# caching allocator's blocks): past it at a check, it is the candidate's failure (arena.evaluation.trusted.process)
ALLOWANCE_IO = 4
ALLOWANCE_FLOOR = 2 * 2**30
# and this many times the working memory of the task's own reference, measured where it runs in the trusted
# process (its upcast run: the inputs' clones, its temporaries, its library workspaces, its outputs). A chain of
# operators keeps temporaries far larger than its inputs and outputs: on an H100, KernelBench level 2's
# convolutions followed by a pooling or a reduction, run eagerly in fp32 as their own starting points, held
# 3.6-14.4 GiB after their timed calls against allowances of 3.5-5.6 GiB from the inputs and outputs alone (33 of
# 87 imports stopped). The upcast run keeps twice the bytes of the task's own precision for the same steps; twice
# that again is room for another algorithm's workspace (cuDNN's in fp32 is not fp64's) and the allocator's cache.
ALLOWANCE_REFERENCE = 2
# Not counted: the local memory a process's kernels take (register spills, a stack). A process that launched a kernel
# of L bytes a thread holds about L times every thread the GPU can hold (its SMs times the threads an SM holds), outside
# its allocator, for as long as it lives. Measured on an H200 (scripts/gpu_local_memory.py): 3,400, 8,192 and 16,528
# bytes a thread held 0.60, 1.81 and 3.90 GiB past the process's first kernel's (L times the threads: 0.86, 2.06 and
# 4.16 GiB), and a kernel of none run after them left it held; AKA's triton_fla_chunk_fwd_o held 4.00 GiB against 3.73
# for its autotuner's variants (its chosen one 72 bytes a thread). The candidate's process gives it back after its
# code ran (arena.evaluation.candidate.process.stack_limit). Counted here, read off the replay process's compile of the
# kernels its records launch, it would let a kernel that declares local memory it never touches buy that much memory
# to hold; the figure is named where a process is past its allowance (``local_reserved``)
ENV_CAPACITY = "ARENA_GPU_MEMORY_GIB"
_ids = itertools.count()


def open_account(gpu_key: str) -> int:
    """A fresh, inheritable descriptor of the account file of one GPU."""
    d = lock_dir()
    d.mkdir(parents=True, exist_ok=True)
    name = re.sub(r"[^A-Za-z0-9_.-]", "_", gpu_key)[:120]
    fd = os.open(d / f"{name}.memory", os.O_RDWR | os.O_CREAT, 0o666)
    os.set_inheritable(fd, True)
    return fd


def capacity_of(total_bytes: int) -> int:
    """What the account hands out on a device of ``total_bytes``."""
    gib = os.environ.get(ENV_CAPACITY)
    if gib:
        try:
            return max(0, int(float(gib) * 2**30))
        except ValueError:
            raise ValueError(f"{ENV_CAPACITY} must be a number of GiB, not {gib!r}") from None
    return int(RESERVE_FRACTION * total_bytes)


def _alive(pid: int) -> bool:
    """Whether a holder still runs: a process that is gone, or a zombie not yet reaped by its
    parent (killed, its memory freed), holds nothing."""
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    try:
        with open(f"/proc/{pid}/stat") as f:
            return f.read().rsplit(")", 1)[1].split()[0] != "Z"
    except (OSError, IndexError):
        return True


class MemoryAccount:
    """One evaluation's side of a GPU's account. ``reserve(n)`` waits until ``n`` bytes fit
    beside what the others hold, and holds them for the ``with`` block. Without a descriptor
    (the cpu backend, no lock files) it admits everything at once. Counts the seconds waited
    and the most held, for the record.

    The account is a small JSON file per physical GPU beside its lock files (``open_account``),
    changed under ``flock``; each entry names its process, so what a killed process held is
    given back by the next one that looks (``_alive``). A process that holds memory already gets
    more at once: no process waits while it holds, so no two wait on each other. Standing
    entries count against the capacity, but they neither let their process past the queue nor
    keep work out when no work is held (every evaluation on the GPU stands; were that enough to
    keep work out, none would run).

    Reservations are taken outside the GPU lock's sections (``arena.evaluation.gpulock``): work
    that waits for memory holds no lock, so a timed round never waits for a reader that waits
    for memory."""

    def __init__(self, fd: int | None, capacity: int, *, poll_s: float = 0.05):
        self.fd = fd
        self.capacity = int(capacity)
        self.poll_s = poll_s
        self.waited_s = 0.0
        self.waits = 0
        self.peak = 0
        self.exclusives = 0
        self._mine: dict[str, int] = {}
        self._exclusive: str | None = None
        # ``flock`` taken through one file description does not exclude the threads of the process that holds
        # it: the threads of one process that share an account take turns here first. Without this lock (and
        # with a shared file offset) one thread's read could land between another's truncation and its write,
        # see an empty account and write that back: every other evaluation's entries were lost.
        self._thread_lock = threading.Lock()

    @contextlib.contextmanager
    def _locked(self) -> Iterator[None]:
        """The account's file to this thread alone: against the other processes (``flock``) and the
        other threads of this one."""
        with self._thread_lock:
            fcntl.flock(self.fd, fcntl.LOCK_EX)
            try:
                yield
            finally:
                fcntl.flock(self.fd, fcntl.LOCK_UN)

    @property
    def active(self) -> bool:
        return self.fd is not None

    def _read(self) -> dict[str, Any]:
        raw = b""
        while chunk := os.pread(self.fd, 1 << 16, len(raw)):
            raw += chunk
        try:
            held = json.loads(raw or b"{}")
        except ValueError:          # torn by a killed writer: what it said is lost, the holders are not
            held = {}
        return {k: v for k, v in held.items() if isinstance(v, dict) and _alive(int(v.get("pid", 0)))}

    def _write(self, held: dict[str, Any]) -> None:
        data = json.dumps(held).encode()
        os.ftruncate(self.fd, 0)
        os.pwrite(self.fd, data, 0)

    def held(self) -> int:
        """Bytes held by every evaluation on this GPU now (standing entries included)."""
        if not self.active:
            return sum(self._mine.values())
        with self._locked():
            return sum(int(v["bytes"]) for v in self._read().values() if not v.get("pending"))

    def _try(self, key: str, nbytes: int, what: str, standing: bool = False, exclusive: bool = False) -> bool:
        with self._locked():
            held = self._read()
            me = os.getpid()
            now = time.time()
            entry = {"pid": me, "bytes": int(nbytes), "what": what[:80], "since": now, "capacity": self.capacity}
            if standing:                # taken at once: the process exists, its memory is in use
                held[key] = {**entry, "standing": True}
                self._write(held)
                return True
            counted = {k: v for k, v in held.items() if not v.get("pending")}
            total = sum(int(v["bytes"]) for v in counted.values())
            since = float(held.get(key, {}).get("since", now))
            if exclusive:
                # in when no other process holds work, but for processes whose own exclusive wait began after
                # this one's (they wait behind it, holding what they held: were they counted, two such waiters
                # would each wait for the other)
                after = {v["pid"] for k, v in held.items() if v.get("pending") and v.get("exclusive")
                         and v["pid"] != me and (float(v["since"]), k) > (since, key)}
                if not any(v["pid"] != me and not v.get("standing") and v["pid"] not in after
                           for v in counted.values()):
                    held[key] = {**entry, "exclusive": True, "alone": True}
                    self._write(held)
                    return True
                held[key] = {**entry, "since": since, "pending": True, "exclusive": True, "large": True}
                self._write(held)
                return False
            # a process that holds memory for work already is never made to wait for more (two holders waiting
            # on each other would never wake); otherwise in when it fits, and no other process waits to run
            # beside no other work (``exclusive``: else work that keeps coming would keep it waiting)
            mine = any(v["pid"] == me and not v.get("standing") for v in counted.values())
            queued = any(v.get("exclusive") and v.get("pending") and v["pid"] != me for v in held.values())
            if mine or (total + nbytes <= self.capacity and not queued):
                held[key] = entry
                self._write(held)
                return True
            # or alone on the GPU: nothing of another process held but the processes of evaluations that began
            # to wait after this one (they hold no work, and wait behind it: were they counted, two such
            # waiters would each wait for the other's processes to end)
            later = {v["pid"] for k, v in held.items() if v.get("pending") and v["pid"] != me
                     and (float(v["since"]), k) > (since, key)}
            if not any(v["pid"] != me and not (v.get("standing") and v["pid"] in later) for v in counted.values()):
                held[key] = {**entry, "alone": True}
                self._write(held)
                return True
            # it waits, and says so: a piece that cannot fit beside the processes that stand now (only their
            # ending makes room) closes the GPU to new evaluations until it is done (``blocking``)
            standing_bytes = sum(int(v["bytes"]) for v in counted.values() if v.get("standing"))
            held[key] = {**entry, "since": since, "pending": True,
                         "large": standing_bytes + nbytes > self.capacity}
            self._write(held)
            return False

    def blocking(self, new_bytes: int = 0) -> str | None:
        """Why no new evaluation (standing for ``new_bytes``) may start on this GPU now, or
        None: a piece of work there needs the GPU to itself (it waits until the processes that
        stand now have ended, or runs so alone), or the new processes would not fit beside what
        is held. Until then the evaluations there go on, and no new one begins, so they end and
        their processes with them. With 12 evaluations side by side on an H100 the first rule was
        missing: a 4.2 GB ``log_softmax`` config, larger than the room its account left, was let
        in when no other work was held, beside 33 GB of other evaluations' processes, and ran out
        of memory."""
        if not self.active:
            return None
        with self._locked():
            held = self._read()
        for v in held.values():
            if v.get("alone") or (v.get("pending") and v.get("large")):
                return f"{v.get('what') or 'a piece of work'} ({int(v['bytes']) / 2**30:.1f} GiB) " + \
                    ("runs alone" if v.get("alone") else "waits for the GPU to itself")
        cap = max((int(v.get("capacity") or 0) for v in held.values()), default=0)
        total = sum(int(v["bytes"]) for v in held.values() if not v.get("pending"))
        if new_bytes and cap and total + new_bytes > cap:
            return f"the GPU's memory account is full ({total / 2**30:.1f} of {cap / 2**30:.1f} GiB held)"
        return None

    def standing(self) -> int:
        """Bytes the processes of every evaluation on this GPU hold while they live."""
        if not self.active:
            return self._mine.get("standing", 0)
        with self._locked():
            return sum(int(v["bytes"]) for v in self._read().values() if v.get("standing"))

    def stand(self, n_processes: int, what: str = "") -> None:
        """This evaluation's standing memory, ``PROCESS_BYTES`` for each of its processes, held
        until this process ends (its entry goes with it: ``_alive``) or ``sit()``. A worker
        started ahead (``arena.evaluation.processes``) stands from its start."""
        nbytes = max(0, int(n_processes)) * PROCESS_BYTES
        self._mine["standing"] = nbytes
        if self.active and nbytes:
            self._try(f"{os.getpid()}:standing", nbytes, what or f"{n_processes} processes", standing=True)

    def restand(self, nbytes: int, members: dict[int, int] | None = None) -> None:
        """This evaluation's standing entry, set to what its processes really hold now (never
        below what it stood for: ``stand``), and the allowances of its candidate processes
        (``members``: pid -> bytes), which every evaluation on the GPU reads when it runs out of
        memory (``over_allowance``)."""
        declared = self._mine.get("standing", 0)
        if not self.active or not declared:
            return
        key = f"{os.getpid()}:standing"
        with self._locked():
            held = self._read()
            entry = held.get(key)
            if entry is None:
                return
            entry["bytes"] = max(declared, int(nbytes))
            if members is not None:
                entry["members"] = {str(pid): int(b) for pid, b in members.items()}
            self._write(held)

    def over_allowance(self, used: dict[int, int]) -> list[tuple[int, int, int, str]]:
        """The candidate processes on this GPU that hold more than their allowance, by ``used``
        (pid -> bytes held, as the driver counts it): (pid, held, allowance, what)."""
        if not self.active:
            return []
        with self._locked():
            held = self._read()
        out = []
        for v in held.values():
            for pid, allowance in (v.get("members") or {}).items():
                if str(pid).isdigit() and used.get(int(pid), 0) > int(allowance):
                    out.append((int(pid), used[int(pid)], int(allowance), str(v.get("what", ""))))
        return out

    def sit(self) -> None:
        """Give the standing memory back (the evaluation's processes are gone)."""
        if self._mine.pop("standing", None) and self.active:
            self._release(f"{os.getpid()}:standing")

    def _release(self, key: str) -> None:
        with self._locked():
            held = self._read()
            held.pop(key, None)
            self._write(held)

    def exclusive(self, what: str = "", wait: Callable[[], contextlib.AbstractContextManager] | None = None) -> None:
        """Wait until no other process holds work in the account, then hold the GPU's whole
        capacity until this process's reservations end: nothing of another process fits beside
        it, and no evaluation starts (``blocking``). The other evaluations' processes stay (their
        contexts, in their standing entries); their work drains. For a piece of work that ran
        out of device memory though the account had room for it (the allocator's slack, memory
        no estimate covers): its retry runs beside no other work. With 12 evaluations on an
        H100, once processes stood for what they hold, nine evaluations of 615 verdicts ran out
        so, each once, and passed on this retry; with a pause before the retry instead, one of
        them had failed."""
        if not self.active or self._exclusive is not None:
            return
        key = f"{os.getpid()}:exclusive"
        what = what or "a retry beside no other work"
        t0 = time.monotonic()
        try:
            if not self._try(key, self.capacity, what, exclusive=True):
                with wait() if wait is not None else contextlib.nullcontext():
                    while not self._try(key, self.capacity, what, exclusive=True):
                        time.sleep(self.poll_s)
        except BaseException:
            self._release(key)
            raise
        self.waited_s += time.monotonic() - t0
        self.exclusives += 1
        self._exclusive = key
        if not any(k != "standing" for k in self._mine):     # held outside any reservation: until the next ends
            self._mine[key] = 0

    @contextlib.contextmanager
    def reserve(self, nbytes: int, what: str = "",
                wait: Callable[[], contextlib.AbstractContextManager] | None = None) -> Iterator[None]:
        """Hold ``nbytes`` for the block, waiting for room first; ``wait()``, if given, is the
        context the waiting runs in (the evaluation's: no stage's time limit runs meanwhile)."""
        nbytes = max(0, int(nbytes))
        key = f"{os.getpid()}:{next(_ids)}"
        if self.active and nbytes and not self._try(key, nbytes, what):
            t0 = time.monotonic()
            try:
                with wait() if wait is not None else contextlib.nullcontext():
                    while not self._try(key, nbytes, what):
                        time.sleep(self.poll_s)
            except BaseException:
                self._release(key)          # its waiting entry: nothing waits behind a wait given up
                raise
            self.waits += 1
            self.waited_s += time.monotonic() - t0
        self._mine[key] = nbytes
        self.peak = max(self.peak, sum(self._mine.values()))
        try:
            yield
        finally:
            self._mine.pop(key, None)
            if self.active and nbytes:
                self._release(key)
            if self._exclusive is not None and not any(k not in ("standing", self._exclusive) for k in self._mine):
                self._mine.pop(self._exclusive, None)
                self._release(self._exclusive)
                self._exclusive = None


def allowance(io_bytes: int, mapped_bytes: int, reference_bytes: int = 0) -> int:
    """Device memory a candidate's process may hold: its context, the buffers mapped to it
    (``mapped_bytes``) and its own working memory, from the config's inputs and outputs
    (``io_bytes``) and the reference's measured working memory (``reference_bytes``)."""
    return CONTEXT_ALLOWANCE + int(mapped_bytes) + working_allowance(io_bytes, reference_bytes)


def local_reserved(local_bytes: int) -> int:
    """What a process that launched a kernel of ``local_bytes`` of local memory a thread holds for it: that much for
    every thread the current CUDA device can hold; 0 for none."""
    if local_bytes <= 0:
        return 0
    import torch

    props = torch.cuda.get_device_properties(torch.cuda.current_device())
    return int(local_bytes) * int(props.multi_processor_count) * int(props.max_threads_per_multi_processor)


def working_allowance(io_bytes: int, reference_bytes: int = 0) -> int:
    """The working memory a candidate may hold beside its context and its buffers: a multiple
    of the config's inputs and outputs (``io_bytes``) or of the reference's own working memory
    (``reference_bytes``), whichever is more, and a floor. A replayed candidate's records may ask
    its replay for no more (``arena.evaluation.trusted.calls.ReplayedCandidate``)."""
    return max(ALLOWANCE_FLOOR, ALLOWANCE_IO * int(io_bytes), ALLOWANCE_REFERENCE * int(reference_bytes))


def wait_to_start(gpu_key: str, *, poll_s: float = 0.25, n_processes: int = 3, until: float | None = None) -> float:
    """Before an evaluation's processes open their contexts on a GPU: wait while a piece of work
    there needs the GPU to itself, or while its ``n_processes`` would not fit in the account
    (``MemoryAccount.blocking``), but not past ``until`` (a time.monotonic() value: the
    evaluation's deadline, whose stages then end at once). Returns the seconds waited."""
    fd = open_account(gpu_key)
    try:
        acct = MemoryAccount(fd, 0)
        new = n_processes * PROCESS_BYTES
        if acct.blocking(new) is None:
            return 0.0
        t0 = time.monotonic()
        while acct.blocking(new) is not None and (until is None or time.monotonic() < until):
            time.sleep(poll_s)
        return time.monotonic() - t0
    finally:
        os.close(fd)

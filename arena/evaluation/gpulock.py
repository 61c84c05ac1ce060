"""Sharing one GPU between several evaluations: timed work alone, the rest side by side.

Evaluations spend most of their wall time off the GPU's clock (starting Python and torch,
building, JIT-compiling, making inputs, running the reference). Several of them may share a
GPU as long as no other evaluation's kernels run while one is being timed: a fair
reader-writer lock over two lock files per physical GPU (``flock``; ``GpuLock``). Each piece of
GPU work of the correctness gate (a call and its check, a warm-up) takes it shared, each timed
round takes it exclusive.
"""

from __future__ import annotations

import contextlib
import fcntl
import os
import random
import re
import tempfile
import time
from pathlib import Path
from typing import Callable, Iterator


def lock_dir() -> Path:
    """Where the lock files live: one place per machine, whatever cache a run uses."""
    return Path(os.environ.get("ARENA_GPU_LOCK_DIR") or Path(tempfile.gettempdir()) / "arena-gpu-locks")


def open_fds(gpu_key: str) -> tuple[int, int]:
    """Fresh descriptors (turnstile, rw) of the lock files of one GPU, inheritable."""
    d = lock_dir()
    d.mkdir(parents=True, exist_ok=True)
    try:
        d.chmod(0o1777)        # users of one machine share its GPUs
    except OSError:
        pass
    name = re.sub(r"[^A-Za-z0-9_.-]", "_", gpu_key)[:120]
    fds = []
    for part in ("turnstile", "rw"):
        fd = os.open(d / f"{name}.{part}", os.O_RDWR | os.O_CREAT, 0o666)
        os.set_inheritable(fd, True)
        fds.append(fd)
    return fds[0], fds[1]


LONG_S = 0.1   # a shared section longer than this outlasts a writer's window (GpuLock.window_s's default)


class GpuLock:
    """The worker's side: shared and exclusive sections over the two descriptors. Counts the
    seconds spent waiting, holding it shared and alone, for the record.

    A writer first takes the turnstile, so readers arriving later queue behind it while the
    readers inside drain (``_try_exclusive``); if they have not drained within a short window
    (one of them is running a long first call, say), it lets the turnstile go for a while
    (longer after each failed try) and tries again, so one long reader does not hold every
    other evaluation up behind a waiting writer. After ``patience_s`` of that it keeps the
    turnstile and waits for the readers inside, so a stream of overlapping readers cannot
    starve it (``_take_exclusive``). Work known to be host-only inside a shared section
    (Triton's JIT compiler and torch.compile's backend, wrapped by the worker) runs with the
    lock let go (``off_gpu``), so compiling holds up no timed round. A shared section inside an
    exclusive one is part of it; an exclusive section is never taken inside a shared one
    (``flock`` would convert the lock, not nest it).

    The parent opens the files for each evaluation (``open_fds``: every worker gets its own open
    file description, since ``flock`` locks held through one description do not exclude each
    other) and hands the descriptors to the worker, whose sandbox could not open them. Separate
    ``arena run`` processes on one machine use the same files, so they coordinate too.

    ``wait``, if set, is the context a wait runs in: entered only where the lock cannot be had
    at once (the evaluation's: no stage's time limit runs meanwhile,
    ``arena.evaluation.trusted.process.Evaluation.waiting``). ``counted()`` leaves it out for the
    waits of a block: those that run while a process the harness cannot stop goes on."""

    def __init__(self, turnstile_fd: int | None, rw_fd: int | None, *, window_s: float = 0.1,
                 backoff_max_s: float = 0.4, patience_s: float = 2.0):
        self.turnstile = turnstile_fd
        self.rw = rw_fd
        self.window_s = window_s     # how long a writer keeps new readers out while it waits
        self.backoff_max_s = backoff_max_s   # the longest pause of a writer between tries
        self.patience_s = patience_s  # after this long, a writer keeps the turnstile until the readers drain
        self.mode: str | None = None  # "shared" or "exclusive" while inside a section
        self.waited_s = 0.0
        self.writer_waited_s = 0.0   # the part of waited_s spent as a writer (readers draining)
        self.alone_s = 0.0       # seconds inside exclusive sections (the GPU kept from everyone else)
        self.shared_s = 0.0      # seconds inside shared sections (writers kept waiting)
        self.longest_shared_s = 0.0
        self.off_gpu_s = 0.0     # seconds let go inside shared sections for host-only work
        self.shared_n = 0        # shared sections entered (a take-back after host-only work too)
        self.held_by: dict[str, float] = {}    # seconds held shared, by what the section was for (its label)
        self.over_by: dict[str, float] = {}    # ... of which past LONG_S into a section: what keeps writers out
        self._label = "other"
        self.exclusive_n = 0     # exclusive sections taken, and the tries a drain did not finish in time
        self.failed_tries = 0
        self._since = 0.0
        self._off_since = 0.0
        self._alone_since = 0.0
        self._raised = False     # a shared section taken exclusive (``alone_inside``)
        self.wait: Callable[[], contextlib.AbstractContextManager] | None = None
        self._counted = False

    @property
    def active(self) -> bool:
        return self.turnstile is not None and self.rw is not None

    @contextlib.contextmanager
    def counted(self) -> Iterator[None]:
        """The waits of the block run in no ``wait`` context: their time is the stage's."""
        was, self._counted = self._counted, True
        try:
            yield
        finally:
            self._counted = was

    def _blocked(self) -> contextlib.AbstractContextManager:
        """The context of a wait that could not be avoided."""
        return self.wait() if self.wait is not None and not self._counted else contextlib.nullcontext()

    @staticmethod
    def _now(fd: int, op: int) -> bool:
        """``flock`` if it can be had at once."""
        try:
            fcntl.flock(fd, op | fcntl.LOCK_NB)
            return True
        except BlockingIOError:
            return False

    def _enter_shared(self, queue: bool = True) -> None:
        t0 = time.monotonic()
        # behind any waiting writer (the turnstile), never beside one that holds it (rw); at once where nothing is in
        # the way, else in the wait's context
        if queue and not self._now(self.turnstile, fcntl.LOCK_EX):
            with self._blocked():
                fcntl.flock(self.turnstile, fcntl.LOCK_EX)
                fcntl.flock(self.turnstile, fcntl.LOCK_UN)
                fcntl.flock(self.rw, fcntl.LOCK_SH)
        else:
            if queue:
                fcntl.flock(self.turnstile, fcntl.LOCK_UN)
            if not self._now(self.rw, fcntl.LOCK_SH):
                with self._blocked():
                    fcntl.flock(self.rw, fcntl.LOCK_SH)
        self._since = time.monotonic()
        self.waited_s += self._since - t0
        self.shared_n += 1

    def _leave_shared(self) -> None:
        fcntl.flock(self.rw, fcntl.LOCK_UN)
        held = time.monotonic() - self._since
        self.shared_s += held
        self.longest_shared_s = max(self.longest_shared_s, held)
        self.held_by[self._label] = self.held_by.get(self._label, 0.0) + held
        if held > LONG_S:
            self.over_by[self._label] = self.over_by.get(self._label, 0.0) + held - LONG_S

    @contextlib.contextmanager
    def shared(self, label: str = "other", *, queue: bool = True) -> Iterator[None]:
        """A shared section; ``label`` says what it is for, in the counters (``held_by``,
        ``over_by``). ``queue=False``: a short section, taken once in a while, that goes ahead
        of a writer still waiting for the readers inside to drain (it delays that writer by its
        own length, and still waits for one that holds the lock)."""
        if not self.active or self.mode is not None:    # no lock, or already inside a section
            yield
            return
        self._label = label
        self._enter_shared(queue)
        self.mode = "shared"
        try:
            yield
        finally:
            was, self.mode = self.mode, None
            if self._raised:         # taken alone inside (a tuning the candidate process never ended)
                self._raised = False
                self._give_exclusive()
            elif was == "off":       # let go inside (a compile the candidate process never ended)
                self.off_gpu_s += time.monotonic() - self._off_since
            else:
                self._leave_shared()

    @contextlib.contextmanager
    def off_gpu(self) -> Iterator[None]:
        """Host-only work (a compiler) inside a shared section: the lock is let go meanwhile
        and taken again, behind any waiting writer, afterwards. Elsewhere: nothing."""
        let_go = self.let_go()
        try:
            yield
        finally:
            if let_go:
                self.take_back()

    def let_go(self) -> bool:
        """Inside a shared section: let the lock go for host-only work (``take_back`` ends
        that); returns whether it did (not outside a shared section, nor inside an exclusive one)."""
        if not self.active or self.mode != "shared":
            return False
        self._leave_shared()
        self.mode = "off"
        self._off_since = time.monotonic()
        return True

    def take_back(self) -> None:
        """The shared lock again, after ``let_go`` (nothing if it was not let go)."""
        if self.mode != "off":
            return
        self.off_gpu_s += time.monotonic() - self._off_since
        self._enter_shared()
        self.mode = "shared"

    def alone_inside(self) -> bool:
        """Inside a shared section: the GPU alone from here until ``share_again`` (an autotuner
        timing its variants in a call, ``@triton.autotune`` on its first call of a key, in the
        candidate's process or the replay process (the baseline's): another evaluation's kernels beside it would pick
        its variant; a starting kernel tuned beside them read 1,783 us in one evaluation and
        3,597 us in another); returns whether it took it (not outside a shared section, nor
        inside an exclusive one)."""
        if not self.active or self.mode != "shared":
            return False
        self._leave_shared()
        self._take_exclusive()
        self.mode = "exclusive"
        self._raised = True
        return True

    def share_again(self) -> None:
        """Back to the shared section after ``alone_inside`` (nothing if it was not taken)."""
        if not self._raised:
            return
        self._raised = False
        self._give_exclusive()
        self._enter_shared()
        self.mode = "shared"

    @contextlib.contextmanager
    def exclusive(self) -> Iterator[None]:
        if self.mode == "exclusive" or not self.active:
            yield
            return
        if self.mode is not None:
            raise RuntimeError("an exclusive section cannot be taken inside a shared one")
        self._take_exclusive()
        self.mode = "exclusive"
        try:
            yield
        finally:
            self.mode = None
            self._give_exclusive()

    def _take_exclusive(self) -> None:
        t0 = time.monotonic()
        tries = 0
        if not self._try_exclusive(at_once=True):    # another writer in the way, or readers that stayed in
            with self._blocked():
                tries = self._wait_exclusive(t0)
        self._took_exclusive(t0, tries)

    def _wait_exclusive(self, t0: float) -> int:
        """After a try that failed: the lock exclusive, however long that takes; returns the tries that failed."""
        tries = 1
        while True:
            if time.monotonic() - t0 > self.patience_s:
                # readers kept overlapping (or one is long): no new one gets in from now on, so this
                # writer cannot starve; it waits for the ones inside
                fcntl.flock(self.turnstile, fcntl.LOCK_EX)
                fcntl.flock(self.rw, fcntl.LOCK_EX)
                return tries
            # a long reader inside: the others go on meanwhile, for longer after each failed try
            pause = min(self.backoff_max_s, 0.02 * 2 ** tries)
            time.sleep(random.uniform(0.5, 1.0) * pause)
            if self._try_exclusive():
                return tries
            tries += 1

    def _took_exclusive(self, t0: float, tries: int) -> None:
        self._alone_since = time.monotonic()
        self.waited_s += self._alone_since - t0
        self.writer_waited_s += self._alone_since - t0
        self.exclusive_n += 1
        self.failed_tries += tries

    def _give_exclusive(self) -> None:
        fcntl.flock(self.rw, fcntl.LOCK_UN)
        fcntl.flock(self.turnstile, fcntl.LOCK_UN)
        self.alone_s += time.monotonic() - self._alone_since

    def _try_exclusive(self, at_once: bool = False) -> bool:
        """Take the turnstile (new readers wait from now on) and wait up to the window for the
        readers inside to drain; on success both are held, else neither. ``at_once``: fail
        where another writer holds the turnstile instead of waiting for it."""
        if not at_once:
            fcntl.flock(self.turnstile, fcntl.LOCK_EX)
        elif not self._now(self.turnstile, fcntl.LOCK_EX):
            return False
        end = time.monotonic() + self.window_s
        while True:
            try:
                fcntl.flock(self.rw, fcntl.LOCK_EX | fcntl.LOCK_NB)
                return True
            except BlockingIOError:
                if time.monotonic() >= end:
                    fcntl.flock(self.turnstile, fcntl.LOCK_UN)
                    return False
                time.sleep(0.0005)

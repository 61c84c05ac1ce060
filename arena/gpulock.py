"""Sharing one GPU between several evaluations: timed work alone, the rest side by side.

Evaluations spend most of their wall time off the GPU's clock (starting Python and torch,
building, JIT-compiling, making inputs, running the reference). Several of them may share a
GPU as long as no other evaluation's kernels run while one is being timed. This is a fair
reader-writer lock over two lock files per physical GPU (``flock``): each piece of GPU work
of the correctness gate (a call, a check) takes it shared, each timed round takes it
exclusive. A writer first takes the turnstile, so readers arriving later queue behind it
while the readers inside drain; but if they have not drained within a short window (one of
them is JIT-compiling, say), it lets the turnstile go for a moment and tries again, so one
long reader does not hold every other evaluation up behind a waiting writer.

The parent opens the files for each evaluation (every worker gets its own open file
description: ``flock`` locks held through one description do not exclude each other) and
hands the descriptors to the worker, whose sandbox could not open them. Separate
``arena run`` processes on one machine use the same files, so they coordinate too.
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
from typing import Iterator


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


class GpuLock:
    """The worker's side: shared and exclusive sections over the two descriptors (never one
    inside the other). Counts the seconds spent waiting and alone, for the record."""

    def __init__(self, turnstile_fd: int | None, rw_fd: int | None, *, window_s: float = 0.1):
        self.turnstile = turnstile_fd
        self.rw = rw_fd
        self.window_s = window_s     # how long a writer keeps new readers out while it waits
        self.waited_s = 0.0
        self.alone_s = 0.0       # seconds inside exclusive sections (the GPU kept from everyone else)

    @property
    def active(self) -> bool:
        return self.turnstile is not None and self.rw is not None

    @contextlib.contextmanager
    def shared(self) -> Iterator[None]:
        if not self.active:
            yield
            return
        t0 = time.monotonic()
        fcntl.flock(self.turnstile, fcntl.LOCK_EX)   # behind any waiting writer
        fcntl.flock(self.turnstile, fcntl.LOCK_UN)
        fcntl.flock(self.rw, fcntl.LOCK_SH)
        self.waited_s += time.monotonic() - t0
        try:
            yield
        finally:
            fcntl.flock(self.rw, fcntl.LOCK_UN)

    @contextlib.contextmanager
    def exclusive(self) -> Iterator[None]:
        if not self.active:
            yield
            return
        t0 = time.monotonic()
        while not self._try_exclusive():
            time.sleep(random.uniform(0.01, 0.05))   # a long reader inside: the others go on meanwhile
        t1 = time.monotonic()
        self.waited_s += t1 - t0
        try:
            yield
        finally:
            fcntl.flock(self.rw, fcntl.LOCK_UN)
            fcntl.flock(self.turnstile, fcntl.LOCK_UN)
            self.alone_s += time.monotonic() - t1

    def _try_exclusive(self) -> bool:
        """Take the turnstile (new readers wait from now on) and wait up to the window for the
        readers inside to drain; on success both are held, else neither."""
        fcntl.flock(self.turnstile, fcntl.LOCK_EX)
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

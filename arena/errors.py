"""The root of every exception kernel-arena defines (``ArenaException``), and the errors a user
can cause (``ArenaError``: bad YAML, a missing file, a bad key).

An ``ArenaError``'s message names the file and the key; the CLI prints it without a traceback.
``ArenaErrors`` is the same error carrying every problem found at once (a task folder's), one
line each. The other kinds are defined where they are raised, each under ``ArenaException`` and
named for what happened (``GateFailure``: a candidate failed a gate; ``ProtocolError``: a frame
did not decode; ...). The one other root is ``Interruption``: control flow that must pass through
the ``except Exception`` of the code it interrupts.
"""

from __future__ import annotations

import contextlib
import os
import resource
import signal
import sys
from pathlib import Path
from typing import Any, Callable, Iterator


class ArenaException(Exception):
    """Every exception kernel-arena defines is one of these, or an ``Interruption``."""


class Interruption(BaseException):
    """Not an error: kernel-arena stopping code it does not own (a time limit running out in
    torch.compile's compiler, an importer stopping a test script at its kernel call). A
    BaseException, because that code's ``except Exception`` would otherwise swallow it."""


REPEAT_SECONDS = 1.0


@contextlib.contextmanager
def interrupted_after(seconds: float, interruption: Callable[[], Interruption], cpu: bool = False) -> Iterator[None]:
    """Raise ``interruption()`` in the block once ``seconds`` have passed: of the wall clock (SIGALRM), or with
    ``cpu`` of this process's CPU time (SIGPROF). From the main thread only (a signal's handler runs there); the
    signal's handler and timer are put back as found after the block. The signal comes again every
    ``REPEAT_SECONDS`` after the first until the block ends: an exception raised where Python only prints it (a
    weakref's finalizer, a ``__del__``) or code that catches it would otherwise leave the block to run on unbounded."""
    sig, timer = (signal.SIGPROF, signal.ITIMER_PROF) if cpu else (signal.SIGALRM, signal.ITIMER_REAL)

    raised: list[BaseException] = []
    hook = sys.unraisablehook

    def expire(signum: int, frame: Any) -> None:
        raised.append(interruption())
        raise raised[-1]

    def unraisable(what: Any) -> None:   # one that landed in a finalizer: not printed (the next one ends the block)
        if not any(what.exc_value is r for r in raised):
            hook(what)

    before = signal.signal(sig, expire)
    sys.unraisablehook = unraisable
    signal.setitimer(timer, seconds, REPEAT_SECONDS)
    try:
        yield
    finally:
        signal.setitimer(timer, 0)
        signal.signal(sig, before)
        sys.unraisablehook = hook


def _proc_bytes(path: str, key: str) -> int | None:
    """The value of ``key`` in a file of /proc that gives sizes a line each in kB (``VmData:  1234 kB``), in bytes;
    None where it cannot be read."""
    try:
        for line in Path(path).read_text().splitlines():
            if line.startswith(key + ":"):
                return int(line.split()[1]) * 1024
    except (OSError, ValueError, IndexError):
        pass
    return None


def process_data_bytes() -> int:
    """This process's data segment (``VmData``: its heap and private writable mappings, where its host tensors
    are), in bytes; 0 where it cannot be read."""
    return _proc_bytes("/proc/self/status", "VmData") or 0


def machine_memory_bytes(default: int) -> int:
    """This machine's memory in bytes; ``default`` where it cannot be read."""
    try:
        return os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES")
    except (ValueError, OSError):
        return default


def available_memory_bytes(default: int) -> int:
    """The host memory this machine has free for a new allocation now (``MemAvailable``: free pages and the caches it
    can drop), in bytes; its whole memory where that cannot be read, ``default`` where neither can. What other
    processes hold is counted out: the test suite runs an importer per core, and each one's bound read off the
    whole machine together overran it (a worker killed by the kernel's OOM killer)."""
    available = _proc_bytes("/proc/meminfo", "MemAvailable")
    return machine_memory_bytes(default) if available is None else available


def exception_chain(exc: BaseException) -> list[BaseException]:
    """``exc`` and the exceptions it was raised from or during, outermost first, each once."""
    out: list[BaseException] = []
    e: BaseException | None = exc
    while e is not None and not any(e is o for o in out):
        out.append(e)
        e = e.__cause__ or e.__context__
    return out


def without_frames(exc: BaseException) -> BaseException:
    """``exc`` with the tracebacks of its chain dropped, to be kept after it was caught: a traceback holds every
    frame it passed through and their locals alive (a refused probe's config held the test's tensors of gigabytes
    with it, kept as long as its result was)."""
    for e in exception_chain(exc):
        e.__traceback__ = None
    return exc


def _out_of_memory(exc: BaseException) -> bool:
    """An allocation refused: Python's or NumPy's ``MemoryError``, or torch's CPU allocator's error."""
    return isinstance(exc, MemoryError) or (isinstance(exc, RuntimeError) and "can't allocate memory" in str(exc))


@contextlib.contextmanager
def data_limited(extra_bytes: int, interruption: Callable[[], BaseException],
                 at_most: int | None = None) -> Iterator[None]:
    """The block's host allocations held to ``extra_bytes`` beyond what this process holds as it starts, and the
    process's to ``at_most`` in all (``RLIMIT_DATA``'s soft limit, put back as found after it; a tighter limit
    already set stays): an allocation
    past it is refused, and a refusal that leaves the block (torch's, Python's) is raised as ``interruption()``.
    Counted for the whole process: its other threads' allocations in the meantime are held by it too."""
    soft, hard = resource.getrlimit(resource.RLIMIT_DATA)
    held = process_data_bytes()
    value = held + max(0, int(extra_bytes))
    if at_most is not None:
        value = min(value, max(held, int(at_most)))
    if not held:                                    # not read: no limit, rather than one counted from nothing
        value = resource.RLIM_INFINITY
    for bound in (soft, hard):
        if bound != resource.RLIM_INFINITY:
            value = bound if value == resource.RLIM_INFINITY else min(value, bound)
    refused: list[BaseException] = []
    resource.setrlimit(resource.RLIMIT_DATA, (value, hard))
    try:
        yield
    except (MemoryError, RuntimeError) as exc:
        if not _out_of_memory(exc):
            raise
        refused.append(exc)
    finally:
        resource.setrlimit(resource.RLIMIT_DATA, (soft, hard))
    if refused:
        raise interruption() from refused[0]


class ArenaError(ArenaException):
    """A user-caused error: names the file and, where there is one, the key."""

    def __init__(self, message: str, *, path: Path | str | None = None, key: str | None = None):
        self.path = str(path) if path is not None else None
        self.key = key
        self.detail = message
        where = ""
        if self.path:
            where = self.path
            if key:
                where += f": {key}"
            where += ": "
        elif key:
            where = f"{key}: "
        super().__init__(where + message)


class ArenaErrors(ArenaError):
    """Several user-caused errors found together (every problem of one task folder). It reads
    as the first of them (``path``, ``key``, ``str``); ``problems`` holds them all, and the CLI
    prints one line for each."""

    def __init__(self, problems: list[ArenaError]):
        if not problems:
            raise ValueError("ArenaErrors needs at least one problem")
        first = problems[0]
        super().__init__(first.detail, path=first.path, key=first.key)
        self.problems = list(problems)


def last_words(exc: BaseException) -> None:
    """What ended a forked child, on its standard error before it exits: the exception's type and
    message first, in one system call (the traceback after it may not print: printing one deep
    in a RecursionError, or out of memory, can fail in turn, and the child would end with exit
    code 1 and nothing said), then the traceback where it can be printed."""
    import os

    try:
        os.write(2, f"\n{type(exc).__name__}: {exc}\n"[:4000].encode(errors="replace"))
    except BaseException:  # noqa: BLE001 - nothing more can be said
        pass
    try:
        import traceback

        traceback.print_exception(exc)
    except BaseException:  # noqa: BLE001 - the line above said what it could
        pass

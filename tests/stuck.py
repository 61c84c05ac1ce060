"""What the tests that stop a run with a signal share: wait for the run's process to end, and
when it does not, fail with every thread's stack (the CLI prints them on SIGUSR1) rather than a
bare timeout."""

from __future__ import annotations

import signal
import subprocess
import time


def wait_or_dump(proc: subprocess.Popen, seconds: float) -> int:
    """``proc``'s exit code once it ends within ``seconds``; else the test fails with its stacks
    (``proc`` must have its stderr on a pipe) and the process is killed."""
    try:
        return proc.wait(seconds)
    except subprocess.TimeoutExpired:
        pass
    proc.send_signal(signal.SIGUSR1)
    time.sleep(2)
    proc.kill()
    proc.wait()
    err = proc.stderr.read() if proc.stderr is not None else ""
    err = err.decode(errors="replace") if isinstance(err, bytes) else err
    raise AssertionError(f"the run did not end within {seconds:.0f} s; its threads:\n{err[-12000:]}")

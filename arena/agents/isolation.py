"""Running an agent's command: its own session, a wall budget, nothing left behind, and,
where bubblewrap is installed, a view of the filesystem in which only its workspace (and
its private HOME) is writable and the repository, the tasks, the run directories and the
caches are not there at all.

Without bubblewrap the agent runs as a plain process of this user and could read the
repository: ``bubblewrap_missing()`` says so and the run logs a warning.
"""

from __future__ import annotations

import os
import shutil
import signal
import subprocess
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Callable, Sequence

MARKER = "ARENA_AGENT_RUN"      # in the agent's environment: how leftovers are found
KILL_GRACE_S = 5.0


def bwrap() -> str | None:
    return shutil.which("bwrap")


def bubblewrap_missing() -> str | None:
    if bwrap() is None:
        return ("bubblewrap (bwrap) is not installed: the agent runs unsandboxed and could read the repository, "
                "the tasks and the run directory (Debian: apt install bubblewrap)")
    return None


def _inside(path: Path, parent: Path) -> bool:
    try:
        path.resolve().relative_to(parent.resolve())
        return True
    except ValueError:
        return False


def bwrap_argv(argv: Sequence[str], workspace: Path, home: Path, hide: Sequence[Path],
               keep: Sequence[Path] = ()) -> list[str]:
    """argv wrapped in bubblewrap: the root read-only, a fresh /tmp, the workspace and the
    private HOME writable, every ``hide`` path replaced by an empty folder but the ``keep``
    paths inside them (read-only: where the agent's executables live); its own PID, IPC and
    UTS namespaces (the network stays: agent CLIs talk to their model's API)."""
    out = [bwrap() or "bwrap", "--ro-bind", "/", "/", "--dev", "/dev", "--proc", "/proc", "--tmpfs", "/tmp"]
    for h in hide:
        h = Path(h)
        if not h.exists() or _inside(workspace, h) or _inside(home, h) or str(h.resolve()) == "/":
            continue
        out += ["--tmpfs", str(h.resolve())]
    for k in keep:
        if Path(k).exists():
            out += ["--ro-bind", str(Path(k).resolve()), str(Path(k).resolve())]
    out += ["--bind", str(workspace), str(workspace), "--bind", str(home), str(home),
            "--unshare-pid", "--unshare-ipc", "--unshare-uts", "--die-with-parent", "--new-session",
            "--chdir", str(workspace), "--"]
    return out + list(argv)


@dataclass
class Outcome:
    returncode: int | None
    exit_reason: str        # finished | budget | crashed
    wall_s: float
    leftovers_killed: int


def _marked_pids(token: str) -> list[int]:
    """Processes whose environment carries this run's marker (they may have left the session)."""
    needle = f"{MARKER}={token}".encode()
    found = []
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit() or int(entry.name) == os.getpid():
            continue
        try:
            env = (entry / "environ").read_bytes()
        except OSError:
            continue
        if needle in env.split(b"\0"):
            found.append(int(entry.name))
    return found


def _kill(pid_or_group: int, group: bool, sig: int) -> None:
    try:
        (os.killpg if group else os.kill)(pid_or_group, sig)
    except (ProcessLookupError, PermissionError):
        pass


def _wait(proc: subprocess.Popen, start: float, budget_s: float, stop_when: Callable[[float], bool] | None) -> int:
    """The process's exit status; ``TimeoutExpired`` at the budget, or (its output "stopped")
    when ``stop_when`` says so."""
    if stop_when is None:
        return proc.wait(timeout=budget_s)
    while True:
        left = budget_s - (time.monotonic() - start)
        try:
            return proc.wait(timeout=max(0.0, min(1.0, left)))
        except subprocess.TimeoutExpired:
            if left <= 1.0:
                raise
            if stop_when(time.monotonic() - start):
                raise subprocess.TimeoutExpired(proc.args, budget_s, output="stopped") from None


def run_budgeted(argv: Sequence[str], *, cwd: Path, env: dict[str, str], budget_s: float, stdout: Path,
                 stderr: Path, stdin_text: str | None = None, token: str,
                 stop_when: Callable[[float], bool] | None = None) -> Outcome:
    """Run argv in a new session until it exits or ``budget_s`` passes, or, where given,
    ``stop_when(seconds so far)`` says yes (asked about once a second: exit_reason "stopped");
    then kill its group and every process that still carries ``token`` in its environment."""
    env = {**env, MARKER: token}
    start = time.monotonic()
    with open(stdout, "wb") as out, open(stderr, "wb") as err:
        proc = subprocess.Popen(list(argv), cwd=cwd, env=env, stdout=out, stderr=err,
                                stdin=subprocess.PIPE if stdin_text is not None else subprocess.DEVNULL,
                                start_new_session=True)
        if stdin_text is not None:
            try:
                assert proc.stdin is not None
                proc.stdin.write(stdin_text.encode())
                proc.stdin.close()
            except BrokenPipeError:
                pass
        reason = "finished"
        try:
            rc = _wait(proc, start, budget_s, stop_when)
        except subprocess.TimeoutExpired as exc:
            reason = "stopped" if exc.output == "stopped" else "budget"
            _kill(proc.pid, True, signal.SIGTERM)
            try:
                rc = proc.wait(timeout=KILL_GRACE_S)
            except subprocess.TimeoutExpired:
                _kill(proc.pid, True, signal.SIGKILL)
                rc = proc.wait()
    wall = time.monotonic() - start
    killed = 0
    _kill(proc.pid, True, signal.SIGKILL)          # whatever it left in its process group
    for _ in range(3):                             # and whatever escaped the group
        pids = _marked_pids(token)
        if not pids:
            break
        for pid in pids:
            _kill(pid, False, signal.SIGKILL)
        killed += len(pids)
        time.sleep(0.1)
    if reason == "finished" and rc != 0:
        reason = "crashed"
    return Outcome(returncode=rc, exit_reason=reason, wall_s=round(wall, 3), leftovers_killed=killed)

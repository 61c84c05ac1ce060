"""Agents: what proposes a candidate kernel for a task.

The built-in agents replay files a task ships: ``baseline`` (the starting point: the
baseline kernel, or the eager reference for torch2hip), ``solution`` and ``specialised``.
They are how the harness checks itself: baseline must score ~1.0x with no drop, solution
> 1x with no drop, specialised a drop on held-out shapes.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Protocol

from arena.errors import ArenaError
from arena.spec.loader import Task


class Agent(Protocol):
    name: str

    def applies_to(self, task: Task) -> bool:
        """Whether the agent has something to propose for this task."""

    def propose(self, task: Task, workspace: Path) -> Path | None:
        """The candidate file (None: the task's own starting point)."""


@dataclass(frozen=True)
class ReplayAgent:
    """Proposes a file the task ships (``role``), or the starting point for ``baseline``."""

    name: str
    role: str

    def applies_to(self, task: Task) -> bool:
        return self.role == "baseline" or task.kernel_file(self.role) is not None

    def propose(self, task: Task, workspace: Path) -> Path | None:
        if self.role == "baseline":
            return None
        path = task.kernel_file(self.role)
        if path is None:
            raise ArenaError(f"the task ships no {self.role} file", path=task.path)
        return path


BUILTIN = {name: ReplayAgent(name, name) for name in ("baseline", "solution", "specialised")}


def get_agent(name: str) -> Agent:
    if name in BUILTIN:
        return BUILTIN[name]
    raise ArenaError(f"unknown agent {name!r}; built-in agents: {', '.join(BUILTIN)}", key="--agent")

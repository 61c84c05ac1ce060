"""What every agent shares: the context of its run, its proposal and the protocol it keeps.
Agents' modules (``cli_agent``, ``tuner``) take these from here, not from the package, whose
``get_agent`` imports them."""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Protocol, Sequence

from arena.devices import Device
from arena.taskdef.loader import Task


@dataclass(frozen=True)
class AgentContext:
    """What an agent's run may use besides the task: the device feedback runs on, the run
    directory (never visible to the agent), and the folders to hide from it."""

    device: Device
    run_dir: Path
    private_dirs: Sequence[Path] = ()
    timing_params: dict[str, Any] = field(default_factory=dict)


@dataclass
class Proposal:
    """A candidate file (None: the task's starting point) and how the agent's run went:
    wall_s, exit_reason (finished | budget | crashed | auth | no_file; auth comes with the
    program's message), feedback_calls, the program's version, turns, input/output tokens
    and cost_usd where the agent's CLI reports them."""

    path: Path | None
    info: dict[str, Any] = field(default_factory=dict)


class Agent(Protocol):
    name: str

    def applies_to(self, task: Task) -> bool:
        """Whether the agent has something to propose for this task."""

    def propose(self, task: Task, workspace: Path, ctx: AgentContext) -> Path | None | Proposal:
        """The candidate file (None: the task's own starting point)."""

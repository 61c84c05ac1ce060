"""What every agent shares: the context of its run, its proposal and the protocol it keeps.
Agents' modules (``cli_agent``, ``tuner``) take these from here, not from the package, whose
``get_agent`` imports them."""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Protocol, Sequence

from arena.devices import Device
from arena.records import Status
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
    wall_s, exit_reason (finished | no_edit | budget | crashed | not_started | auth |
    unreachable | no_file; with ``message``, the program's own words, where it failed),
    ``edited`` (the kernel file changed), feedback_calls, the program's version, turns,
    input/output tokens and cost_usd where the agent's CLI reports them."""

    path: Path | None
    info: dict[str, Any] = field(default_factory=dict)


class Agent(Protocol):
    name: str

    def applies_to(self, task: Task) -> bool:
        """Whether the agent has something to propose for this task."""

    def propose(self, task: Task, workspace: Path, ctx: AgentContext) -> Path | None | Proposal:
        """The candidate file (None: the task's own starting point)."""


# How an agent's run ended decides what is judged (``arena.units``): a program that crashed or never
# started is the agent's failure on every split, whatever file it left (AGENT_FAILED); one its model service
# refused or that could not reach it did nothing the agent is to answer for (AGENT_UNAVAILABLE: not scored,
# asked again by --resume); any other is judged on the kernel its workspace holds.
OUTCOME_STATUS = {"crashed": Status.AGENT_FAILED, "not_started": Status.AGENT_FAILED,
                  "auth": Status.AGENT_UNAVAILABLE, "unreachable": Status.AGENT_UNAVAILABLE}
OUTCOME_WORDS = {"finished": "finished", "no_edit": "finished without changing the kernel",
                 "budget": "was stopped at its budget", "crashed": "crashed", "not_started": "never started",
                 "auth": "was refused by its model service", "unreachable": "could not reach its model service",
                 "no_file": "deleted the kernel file"}


def outcome_text(info: dict[str, Any]) -> str:
    """How an agent's run ended, in a line (empty for a run that finished with an edit, or a
    built-in agent's)."""
    reason = str(info.get("exit_reason") or "")
    if reason in ("", "finished"):
        return ""
    words = f"the agent {OUTCOME_WORDS.get(reason, reason)}"
    message = str(info.get("message") or "")
    return f"{words}: {message}" if message else words

"""Agents: what proposes a candidate kernel for a task.

Built in: ``baseline`` (the starting point: the baseline kernel, or the eager reference for
torch2hip), ``solution`` and ``specialised`` replay files the task ships: they are how the
harness checks itself. ``tuner`` sweeps the launch parameters of the starting kernel through
the feedback tool. Every other agent is one YAML file in configs/agents/ (a coding agent's
command line: ``arena.agents.cli_agent``); ``arena agents list`` shows them.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any, Sequence

from arena.agents.base import Agent, AgentContext, Proposal
from arena.errors import ArenaError
from arena.taskdef.loader import REPO_ROOT, Task

__all__ = ["AGENTS_DIR", "BUILTIN", "Agent", "AgentContext", "Proposal", "ReplayAgent", "get_agent", "list_agents",
           "require_programs"]

AGENTS_DIR = REPO_ROOT / "configs" / "agents"


@dataclass(frozen=True)
class ReplayAgent:
    """Proposes a file the task ships (``role``), or the starting point for ``baseline``."""

    name: str
    role: str

    def applies_to(self, task: Task) -> bool:
        return self.role == "baseline" or task.kernel_file(self.role) is not None

    def propose(self, task: Task, workspace: Path, ctx: AgentContext | None = None) -> Path | None:
        if self.role == "baseline":
            return None
        path = task.kernel_file(self.role)
        if path is None:
            raise ArenaError(f"the task ships no {self.role} file", path=task.path)
        return path


BUILTIN = {name: ReplayAgent(name, name) for name in ("baseline", "solution", "specialised")}


def _agent_files(agents_dir: Path | None = None) -> dict[str, Path]:
    folder = Path(agents_dir) if agents_dir is not None else AGENTS_DIR
    return {p.stem: p for p in sorted(folder.glob("*.yaml"))} if folder.is_dir() else {}


def get_agent(name: str, options: dict[str, str] | None = None, *, budget_s: float | None = None,
              auth_files: Sequence[str] = (), agents_dir: Path | None = None) -> Agent:
    """A built-in agent, ``tuner``, the agent of configs/agents/<name>.yaml, or a YAML file path."""
    if name in BUILTIN:
        return BUILTIN[name]
    if name == "tuner":
        from arena.agents.tuner import TunerAgent

        return TunerAgent(budget_s=budget_s)
    files = _agent_files(agents_dir)
    path = Path(name) if name.endswith((".yaml", ".yml")) else files.get(name)
    if path is None or not path.is_file():
        known = [*BUILTIN, "tuner", *files]
        raise ArenaError(f"unknown agent {name!r}; known agents: {', '.join(known)}", key="--agent")
    from arena.agents.cli_agent import CommandAgent, load_agent_spec

    return CommandAgent(load_agent_spec(path), options=options or {}, budget_s=budget_s, auth_files=auth_files)


def require_programs(names: Sequence[str], agents_dir: Path | None = None) -> None:
    """Raise, in one line, for the first YAML agent among ``names`` whose program is not on
    PATH: which program, and how to install it."""
    from arena.agents.cli_agent import CommandAgent, missing_program

    for name in names:
        if name in BUILTIN or name == "tuner":
            continue
        agent = get_agent(name, agents_dir=agents_dir)
        if isinstance(agent, CommandAgent):
            missing = missing_program(agent.spec)
            if missing:
                raise ArenaError(missing, key="--agent")


def list_agents(agents_dir: Path | None = None, versions: bool = True) -> list[dict[str, Any]]:
    """Every agent with what it is, whether it can run here (its executable on PATH), the
    version of that program, and why an adapter is experimental."""
    import shutil
    from concurrent.futures import ThreadPoolExecutor

    rows: list[dict[str, Any]] = [{"name": n, "kind": "built-in", "description": d, "available": True}
                                  for n, d in (("baseline", "the task's starting point"),
                                               ("solution", "the task's solution file"),
                                               ("specialised", "the task's specialised file"),
                                               ("tuner", "sweeps the starting kernel's launch parameters"))]
    from arena.agents.cli_agent import load_agent_spec, program_version

    specs = []
    for name, path in _agent_files(agents_dir).items():
        try:
            spec = load_agent_spec(path)
        except ArenaError as exc:
            rows.append({"name": name, "kind": "yaml", "description": f"invalid: {exc}", "available": False})
            continue
        exe = spec.executable
        row = {"name": spec.name, "kind": "yaml", "description": spec.description, "executable": exe,
               "available": shutil.which(exe) is not None, "version": None, "experimental": spec.experimental,
               "install": spec.install, "path": str(path)}
        rows.append(row)
        specs.append((row, spec))
    if versions:       # the programs answer --version slowly (seconds each): ask them all at once
        with ThreadPoolExecutor(max_workers=8) as pool:
            for row, version in zip([r for r, _ in specs], pool.map(lambda rs: program_version(rs[1])
                                                                    if rs[0]["available"] else None, specs)):
                row["version"] = version
    return rows

"""The environment as MCP tools over stdio (``arena serve --mcp``).

Tools: list_tasks(split), get_task(task_id) (starts an episode), run_kernel(task_id, code),
finish(task_id). One KernelEnv per task id; episodes are recorded in the run directory
(records.jsonl + artifacts/<agent>/<task>/<episode>/) so ``arena report`` works on them.
Needs the ``mcp`` package (``pip install kernel-arena[env]``): 1.x (FastMCP) or 2.x
(MCPServer).
"""

from __future__ import annotations

import functools
from pathlib import Path
from typing import Any

from arena.devices import Device, detect
from arena.env import DEFAULT_TIME_LIMIT_S, KernelEnv
from arena.env.splits import SPLITS, task_ids
from arena.errors import ArenaError
from arena.taskdef.loader import load_task, select_tasks

INSTRUCTIONS = (
    "kernel-arena: optimise GPU kernels. list_tasks(split) lists task ids; get_task(task_id) starts an "
    "episode and returns the task (description, signature, reference, starting kernel, the configs feedback "
    "runs on); run_kernel(task_id, code) compiles, checks and times your whole kernel file as often as you "
    "like (reward: median speedup - 1 when correct, negative otherwise); finish(task_id) scores your "
    "submission on shapes you have not seen and ends the episode.")


def _server_class():
    try:
        from mcp.server.mcpserver import MCPServer

        return MCPServer
    except ImportError:
        pass
    try:
        from mcp.server.fastmcp import FastMCP

        return FastMCP
    except ImportError as exc:
        raise ArenaError("the MCP server needs the mcp package: pip install 'kernel-arena[env]'",
                         key="--mcp") from exc


class Episodes:
    """The server's state: one environment per task id, created on first use."""

    def __init__(self, *, device: Device, run_dir: Path, tasks_dir: Path | None, select: str,
                 time_limit_s: float, agent: str) -> None:
        self.device, self.run_dir, self.tasks_dir = device, run_dir, tasks_dir
        self.select, self.time_limit_s, self.agent = select, time_limit_s, agent
        self.envs: dict[str, KernelEnv] = {}

    def env(self, task_id: str) -> KernelEnv:
        if task_id not in self.envs:
            self.envs[task_id] = KernelEnv(task_id, device=self.device, tasks_dir=self.tasks_dir,
                                           run_dir=self.run_dir, select=self.select,
                                           time_limit_s=self.time_limit_s, agent=self.agent)
        return self.envs[task_id]

    def list_tasks(self, split: str = "all") -> list[dict[str, Any]]:
        ids = set(task_ids(split, self.tasks_dir))
        out = []
        for folder in select_tasks("all", self.tasks_dir):
            tid = f"{folder.parent.name}/{folder.name}"
            if tid in ids:
                t = load_task(folder, validate=False)
                out.append({"task_id": tid, "category": t.category, "difficulty": t.difficulty, "title": t.title})
        return out


def build_server(episodes: Episodes):
    server = _server_class()("kernel-arena", instructions=INSTRUCTIONS)

    def _errors(fn):
        """A user error (unknown task, bad split) is an answer the agent can read, not a crash."""
        @functools.wraps(fn)
        def wrapped(*a, **k):
            try:
                return fn(*a, **k)
            except ArenaError as exc:
                return {"error": str(exc)}
        return wrapped

    @server.tool()
    @_errors
    def list_tasks(split: str = "all") -> dict:
        """Task ids of a split: all, dev, hip2hip, triton2triton, torch2hip, level1, level2, level3, verified."""
        return {"split": split, "splits": list(SPLITS), "tasks": episodes.list_tasks(split)}

    @server.tool()
    @_errors
    def get_task(task_id: str) -> dict:
        """Start an episode of a task: its description, signature, reference, starting kernel and the
        configs run_kernel checks on."""
        return episodes.env(task_id).reset()

    @server.tool()
    @_errors
    def run_kernel(task_id: str, code: str) -> dict:
        """Compile, check and time a complete kernel file for the task's current episode: status,
        compiler output or first mismatch, per-config timings, median speedup and reward."""
        return episodes.env(task_id).run_kernel(code)

    @server.tool()
    @_errors
    def finish(task_id: str) -> dict:
        """End the episode: the chosen submission is scored on held-out and random shapes."""
        return episodes.env(task_id).finish()

    return server


def serve(*, device: str | None = None, run_dir: Path, tasks_dir: Path | None = None, select: str = "last",
          time_limit_s: float = DEFAULT_TIME_LIMIT_S, agent: str = "mcp") -> None:
    episodes = Episodes(device=detect(device), run_dir=Path(run_dir), tasks_dir=tasks_dir, select=select,
                        time_limit_s=time_limit_s, agent=agent)
    build_server(episodes).run("stdio")

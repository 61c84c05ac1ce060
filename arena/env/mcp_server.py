"""The environment as MCP tools over stdio (``arena serve --mcp``).

Tools: list_tasks(split), get_task(task_id) (starts an episode), run_kernel(task_id, code),
finish(task_id). One KernelEnv per task id; episodes are recorded in the run directory
(records.jsonl + artifacts/<agent>/<task>/<episode>/) so ``arena report`` works on them.
Needs the ``mcp`` package (``pip install kernel-arena[env]``): 1.x (FastMCP) or 2.x
(MCPServer). A user error (unknown task or split, a broken task file) is an MCP tool error
(``isError: true``) whose text names the file and the key. The instructions and the tools'
descriptions say what this device does: on the cpu backend nothing is timed and ``finish``
scores the smoke configs, not held-out or random shapes.
"""

from __future__ import annotations

import functools
from pathlib import Path
from typing import Any

from arena.devices import Device, detect
from arena.env import DEFAULT_TIME_LIMIT_S, KernelEnv
from arena.env.splits import SPLITS, task_ids
from arena.errors import ArenaError
from arena.feedback import feedback_split, final_splits
from arena.taskdef.loader import load_task, select_tasks


def instructions(device: Device) -> str:
    """What the server tells a client, true of this device."""
    if device.runs_kernels:
        checks = "compiles, checks and times your whole kernel file as often as you like"
        scored = ("finish(task_id) scores your submission on the seen configs and on held-out and random shapes "
                  "you have not seen, and ends the episode.")
    else:
        checks = (f"compiles and checks your whole kernel file on the tiny {feedback_split(device)} configs as often "
                  "as you like (the cpu backend times nothing and runs no HIP: a HIP file is compiled only)")
        scored = (f"finish(task_id) records your submission's result on those same {feedback_split(device)} configs "
                  "and ends the episode (held-out and random shapes are scored on a GPU only).")
    return ("kernel-arena: optimise GPU kernels. list_tasks(split) lists task ids; get_task(task_id) starts an "
            "episode and returns the task (description, signature, reference, starting kernel, the configs feedback "
            f"runs on); run_kernel(task_id, code) {checks} (reward: median speedup - 1 when correct, negative "
            f"otherwise); {scored}")


def finish_description(device: Device, select: str) -> str:
    """The finish tool's description: what it really scores on this device."""
    which = "your last submission" if select == "last" else "your best submission (highest run_kernel reward)"
    splits = final_splits(device)
    if device.runs_kernels:
        return (f"End the episode: {which} is scored on the {', '.join(splits[:-1])} and {splits[-1]} splits "
                "(held-out and random: shapes you have not seen) and recorded.")
    return (f"End the episode: {which} is scored on the {' and '.join(splits)} configs only, those run_kernel "
            "checks (the cpu backend has no held-out or random scoring; they need a GPU), and recorded.")


def _tool_error_class() -> type[Exception]:
    """The exception a tool raises to answer with an MCP tool error (isError: true)."""
    try:
        from mcp.server.mcpserver.exceptions import ToolError

        return ToolError
    except ImportError:
        pass
    try:
        from mcp.server.fastmcp.exceptions import ToolError

        return ToolError
    except ImportError:  # pragma: no cover - _server_class has already said the package is missing
        return RuntimeError


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
                try:
                    t = load_task(folder, validate=False)
                except ArenaError:
                    continue   # a broken task is not offered; `arena tasks validate` names its problems
                out.append({"task_id": tid, "category": t.category, "difficulty": t.difficulty, "title": t.title})
        return out


def build_server(episodes: Episodes):
    device = episodes.device
    server = _server_class()("kernel-arena", instructions=instructions(device))
    tool_error = _tool_error_class()

    def _errors(fn):
        """A user error (unknown task, bad split, a broken task file) is an MCP tool error the
        agent can read (isError: true, the message naming the file and the key), not a crash."""
        @functools.wraps(fn)
        def wrapped(*a, **k):
            try:
                return fn(*a, **k)
            except ArenaError as exc:
                raise tool_error("\n".join(str(e) for e in getattr(exc, "problems", None) or [exc])) from None
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

    run_kernel_doc = ("Compile, check and time a complete kernel file for the task's current episode on its "
                      f"{feedback_split(device)} configs: status, compiler output or first mismatch, per-config "
                      "timings, median speedup and reward." if device.runs_kernels else
                      "Compile and check a complete kernel file for the task's current episode on its "
                      f"{feedback_split(device)} configs (cpu backend: nothing is timed; a HIP file is compiled "
                      "only, NOT_RUNNABLE): status, compiler output or first mismatch, reward.")

    @server.tool(description=run_kernel_doc)
    @_errors
    def run_kernel(task_id: str, code: str) -> dict:
        return episodes.env(task_id).run_kernel(code)

    @server.tool(description=finish_description(device, episodes.select))
    @_errors
    def finish(task_id: str) -> dict:
        return episodes.env(task_id).finish()

    return server


def serve(*, device: str | None = None, run_dir: Path, tasks_dir: Path | None = None, select: str = "last",
          time_limit_s: float = DEFAULT_TIME_LIMIT_S, agent: str = "mcp") -> None:
    episodes = Episodes(device=detect(device), run_dir=Path(run_dir), tasks_dir=tasks_dir, select=select,
                        time_limit_s=time_limit_s, agent=agent)
    build_server(episodes).run("stdio")

"""The ``tuner`` agent: no model, only the agent loop. It sweeps the launch parameters the
starting kernel exposes through the workspace's own feedback tool (``./arena-check --json``),
keeps the fastest version that passes, and stops within its budget.

Parameters it tunes: in a Triton file, integer powers of two bound to UPPER_CASE names at
module level or in the host-side (non-@triton.jit) functions (``BLOCK = 1024``) or passed as
upper-case keyword arguments of a launch, and ``num_warps`` / ``num_stages`` of a launch; in a HIP file, the
integer of a line the task marks ``// tunable`` (``constexpr int BLOCK = 256;  // tunable``
or ``#define BLOCK 256  // tunable``). Coordinate descent: one parameter at a time, its
neighbours first.
"""

from __future__ import annotations

import ast
import json
import re
import shutil
import subprocess
import sys
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from arena.agents.base import AgentContext, Proposal
from arena.agents.feedback_server import TOOL_NAME, FeedbackServer
from arena.taskdef.loader import Task
from arena.workspace import editable_name, make_workspace, scratch_root

DEFAULT_BUDGET_S = 900.0
MAX_BLOCK = 16384


@dataclass(frozen=True)
class Param:
    """One integer literal in the source: where it is and what it may become."""

    name: str
    line: int          # 1-based
    col: int           # 0-based start of the literal
    end_col: int
    value: int
    choices: tuple[int, ...]


def _pow2(v: int) -> bool:
    return v > 0 and v & (v - 1) == 0


def _neighbours(name: str, v: int) -> tuple[int, ...]:
    if name == "num_warps":
        pool = [1, 2, 4, 8, 16]
    elif name == "num_stages":
        pool = [1, 2, 3, 4, 5]
    else:
        pool = [v // 4, v // 2, v * 2, v * 4]
        pool = [p for p in pool if 1 <= p <= MAX_BLOCK]
    return tuple(sorted((p for p in pool if p != v), key=lambda p: (abs(p - v), p)))


def _is_jit(fn: ast.FunctionDef) -> bool:
    return any("jit" in ast.unparse(d) for d in fn.decorator_list)


def triton_params(source: str) -> list[Param]:
    tree = ast.parse(source)
    out: list[Param] = []
    seen: set[tuple[int, int]] = set()

    def add(name: str, node: ast.AST) -> None:
        if not (isinstance(node, ast.Constant) and type(node.value) is int):
            return
        v = node.value
        if name not in ("num_warps", "num_stages") and not (_pow2(v) and v >= 2):
            return
        key = (node.lineno, node.col_offset)
        if key in seen or node.lineno != node.end_lineno:
            return
        seen.add(key)
        out.append(Param(name, node.lineno, node.col_offset, node.end_col_offset, v, _neighbours(name, v)))

    for node in tree.body:                       # module-level constants the host code launches with
        if isinstance(node, ast.Assign) and len(node.targets) == 1 and isinstance(node.targets[0], ast.Name) \
                and node.targets[0].id.isupper():
            add(node.targets[0].id, node.value)
    for fn in [n for n in ast.walk(tree) if isinstance(n, ast.FunctionDef) and not _is_jit(n)]:
        for node in ast.walk(fn):
            if isinstance(node, ast.Assign) and len(node.targets) == 1 and isinstance(node.targets[0], ast.Name) \
                    and node.targets[0].id.isupper():
                add(node.targets[0].id, node.value)
            elif isinstance(node, ast.Call) and isinstance(node.func, ast.Subscript):     # kernel[grid](...)
                for kw in node.keywords:
                    if kw.arg and (kw.arg in ("num_warps", "num_stages") or kw.arg.isupper()):
                        add(kw.arg, kw.value)
    return sorted(out, key=lambda p: (p.line, p.col))


_HIP_TUNABLE = re.compile(r"^(?P<pre>\s*(?:(?:static\s+)?constexpr\s+(?:int|unsigned)\s+(?P<n1>\w+)\s*=\s*|"
                          r"#define\s+(?P<n2>\w+)\s+))(?P<v>\d+)\b.*//\s*tunable\b")


def hip_params(source: str) -> list[Param]:
    out = []
    for i, line in enumerate(source.splitlines(), 1):
        m = _HIP_TUNABLE.match(line)
        if m and _pow2(int(m.group("v"))):
            name = m.group("n1") or m.group("n2")
            v = int(m.group("v"))
            out.append(Param(name, i, m.start("v"), m.end("v"), v, _neighbours(name, v)))
    return out


def params_of(source: str, language: str) -> list[Param]:
    try:
        return triton_params(source) if language == "triton" else hip_params(source)
    except SyntaxError:
        return []


def apply(source: str, values: dict[Param, int]) -> str:
    lines = source.splitlines(keepends=True)
    for p, v in sorted(values.items(), key=lambda kv: (kv[0].line, -kv[0].col)):
        ln = lines[p.line - 1]
        lines[p.line - 1] = ln[:p.col] + str(v) + ln[p.end_col:]
    return "".join(lines)


class TunerAgent:
    name = "tuner"

    def __init__(self, budget_s: float | None = None) -> None:
        self.budget_s = float(budget_s) if budget_s is not None else DEFAULT_BUDGET_S

    def applies_to(self, task: Task) -> bool:
        base = task.kernel_file("baseline")
        if base is None:
            return False
        lang = "triton" if base.suffix == ".py" else "hip"
        return bool(params_of(base.read_text(), lang))

    def propose(self, task: Task, art: Path, ctx: AgentContext) -> Proposal:
        with scratch_root() as root:
            return self._propose(task, Path(art), ctx, root)

    def _check(self, ws: Path) -> dict[str, Any]:
        proc = subprocess.run([sys.executable, str(ws / TOOL_NAME), "--json"], cwd=ws, capture_output=True,
                              text=True)
        try:
            return json.loads(proc.stdout)
        except json.JSONDecodeError:
            return {"passed": False, "status": "TOOL_ERROR", "message": proc.stdout[-500:] + proc.stderr[-500:]}

    def _propose(self, task: Task, art: Path, ctx: AgentContext, root: Path) -> Proposal:
        start = time.monotonic()
        ws = make_workspace(task, root / "ws")
        kernel = ws / editable_name(task)
        source = kernel.read_text()
        lang = "triton" if kernel.suffix == ".py" else "hip"
        params = params_of(source, lang)
        server = FeedbackServer(task, ws, art, ctx, agent=self.name,
                                repeat=int(art.name) if art.name.isdigit() else 0).start()
        events = open(art / "transcript.raw", "w")

        def score(summary: dict[str, Any]) -> float:
            if not summary.get("passed"):
                return float("-inf")
            return summary.get("speedup_median") or 0.0

        def trial(values: dict[Param, int]) -> float:
            kernel.write_text(apply(source, values))
            summary = self._check(ws)
            s = score(summary)
            events.write(json.dumps({"type": "trial", "params": {p.name: v for p, v in values.items()},
                                     "status": summary.get("status"), "speedup_median": summary.get("speedup_median"),
                                     "score": None if s == float("-inf") else s}) + "\n")
            events.flush()
            return s

        reason = "finished"
        try:
            best = {p: p.value for p in params}
            best_score = trial(best)
            improved = True
            while improved and reason == "finished":
                improved = False
                for p in params:
                    for v in p.choices:
                        if time.monotonic() - start > self.budget_s:
                            reason = "budget"
                            break
                        cand = {**best, p: v}
                        s = trial(cand)
                        if s > best_score * 1.02 if best_score > 0 else s > best_score:
                            best, best_score, improved = cand, s, True
                    if reason != "finished":
                        break
            kernel.write_text(apply(source, best))
        finally:
            server.stop()
            events.close()
        kept = art / kernel.name
        shutil.copyfile(kernel, kept)
        info = {"wall_s": round(time.monotonic() - start, 3), "exit_reason": reason, "budget_s": self.budget_s,
                "feedback_calls": len(server.calls), "turns": len(server.calls),
                "tuned": {p.name: best[p] for p in params},
                "best_speedup_median": None if best_score == float("-inf") else best_score}
        return Proposal(kept, info)

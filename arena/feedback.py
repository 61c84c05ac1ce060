"""What an agent is told about a submission: the gates on the configs it may see.

One function evaluates a kernel for feedback (``assess``) and one turns its Verdict into
the summary every channel hands out (``summarize``): the workspace's check tool, the
Python environment's ``run_kernel`` and the MCP server. The summary carries the status,
the compiler output or the first mismatch, where in its file a failure of
its code was raised (``arena.evaluation.tracebacks``), per-config timings, the median speedup and the
reward; never held-out configs, seeds or the reference's values beyond the worst element.
"""

from __future__ import annotations

import statistics
from pathlib import Path
from typing import Any, Sequence

from arena.devices import Device
from arena.evaluation.parent import Candidate, evaluate
from arena.evaluation.tracebacks import as_dicts, bounded
from arena.evaluation.tracebacks import render as render_traceback
from arena.records import Status, Verdict
from arena.taskdef.loader import Task

MESSAGE_CHARS = 3000


def feedback_split(device: Device) -> str:
    """The split an agent gets feedback on: seen on a GPU; the tiny smoke configs on the cpu
    backend (the Triton interpreter cannot run production shapes in reasonable time)."""
    return "seen" if device.runs_kernels else "smoke"


def final_splits(device: Device) -> list[str]:
    """The splits a finished submission is scored on."""
    return ["seen", "heldout", "random"] if device.runs_kernels else ["smoke"]


def assess(task: Task, kernel: Path, device: Device, *, work_dir: Path | None = None,
           deadline_s: float | None = None, run_id: str = "", agent: str = "", repeat: int = 0,
           private_dirs: Sequence[Path] = (), timing_params: dict[str, Any] | None = None) -> Verdict:
    """The gates on the feedback split for one kernel file."""
    [v] = evaluate(task, Candidate(task, Path(kernel), origin=agent or "user"), [feedback_split(device)], device,
                   work_dir=work_dir, run_id=run_id, agent=agent, repeat=repeat, private_dirs=private_dirs,
                   deadline_s=deadline_s, timing_params=timing_params)
    return v


def _trim(text: str, n: int = MESSAGE_CHARS) -> str:
    text = text or ""
    return text if len(text) <= n else "…" + text[-n:]


def summarize(v: Verdict) -> dict[str, Any]:
    """The agent-facing summary of one Verdict (JSON-serialisable)."""
    configs = []
    for c in v.configs:
        row: dict[str, Any] = {"name": c.name, "params": dict(c.params), "status": c.status.value}
        if c.message and c.status is not Status.PASSED:
            row["message"] = _trim(c.message, 1200)
        if c.max_abs_err is not None:
            row["max_abs_err"] = c.max_abs_err
        if c.norm_err is not None:
            row["norm_err"] = c.norm_err
        if c.where and c.status is not Status.PASSED:
            row["first_mismatch"] = c.where
        if c.mismatch_fraction is not None and c.status is not Status.PASSED:
            row["mismatch_fraction"] = c.mismatch_fraction
        if c.traceback and c.status is not Status.PASSED:
            row["traceback"] = as_dicts(bounded(c.traceback))
        if c.baseline is not None:
            row["baseline_us"] = round(c.baseline.median_us, 3)
        if c.candidate is not None:
            row["candidate_us"] = round(c.candidate.median_us, 3)
        if c.speedup is not None:
            row["speedup"] = round(c.speedup, 4)
        if c.sol is not None:
            row["sol"] = c.sol
        if c.flags:
            row["flags"] = list(c.flags)
        configs.append(row)
    speeds = [c.speedup for c in v.configs if c.speedup is not None]
    out: dict[str, Any] = {
        "task_id": v.task_id, "split": v.split, "status": v.status.value, "stage": v.stage,
        "passed": v.counts_as_pass,
        "configs_passed": sum(c.status is Status.PASSED for c in v.configs), "configs": configs,
        "speedup_median": round(statistics.median(speeds), 4) if speeds else None,
        "speedup_geomean": v.speedup, "sol": v.sol, "flags": list(v.flags),
        "scored": v.status.scored, "reward": round(v.reward, 4) if v.reward is not None else None,
    }
    if v.build.get("portability"):
        out["portability"] = list(v.build["portability"])[:20]
    if v.message:
        out["message"] = _trim(v.message)
    if v.status is Status.PASSED and v.suspicious:
        out["message"] = ("passed, but its time cannot be trusted (" + ", ".join(v.flags) +
                          "): it counts as a failure")
    return out


def render(summary: dict[str, Any]) -> str:
    """The summary as text for a terminal."""
    lines = [f"{summary['task_id']} on {summary['split']}: {summary['status']}"
             f" ({summary['configs_passed']}/{len(summary['configs'])} configs passed)"]
    if summary.get("speedup_median") is not None:
        lines[0] += (f"; speedup median {summary['speedup_median']:.3f}x"
                     + (f", geomean {summary['speedup_geomean']:.3f}x" if summary.get("speedup_geomean") else ""))
    lines[0] += (f"; reward {summary['reward']:+.3f}" if summary.get("reward") is not None else
                 "; no reward: not the candidate's failure (the harness's, the task's or this machine's)")
    shown: list = []           # tracebacks printed already (every config often fails the same way)
    if summary.get("message"):
        lines += ["", summary["message"].rstrip()]
        first = next((c["traceback"] for c in summary["configs"]
                      if c.get("traceback") and c.get("message") == summary["message"]), None)
        if first:
            lines += render_traceback(first)
            shown.append(first)
    if summary.get("portability"):
        lines += ["", "portability (literal warp widths):"] + ["  " + w for w in summary["portability"]]
    lines.append("")
    for c in summary["configs"]:
        params = ", ".join(f"{k}={v}" for k, v in c["params"].items())
        row = f"  {c['name']:<16} {c['status']:<20} {params}"
        if "candidate_us" in c:
            row += f"  {c['baseline_us']:.1f} us -> {c['candidate_us']:.1f} us ({c.get('speedup', 0):.3f}x)"
        lines.append(row)
        if c.get("first_mismatch"):
            lines.append(f"      first mismatch: {c['first_mismatch']}")
        if c.get("message") and c["message"] != summary.get("message"):
            lines += ["      " + ln for ln in c["message"].splitlines()[:20]]
        if c.get("traceback") and c["traceback"] not in shown:
            lines += render_traceback(c["traceback"], indent="      ")
            shown.append(c["traceback"])
    return "\n".join(lines) + "\n"

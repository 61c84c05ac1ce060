"""Paired A/B comparison of two runs over the tasks both attempted.

For each split: the mean difference of log-speedup (B - A) over tasks correct and timed in
both, the mean difference of correctness over all common tasks, the mean difference of the
speed-of-light score over tasks scored in both, each with a paired bootstrap
95% interval (tasks resampled together), and the tasks whose status changed. Verdicts that
are not scored (infrastructure failures, NOT_RUNNABLE: ``Status.scored``) are left out, so a
task is common only where both runs have a scored verdict of it.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from pathlib import Path
from typing import Sequence

import numpy as np

from arena.report import load_runs, metrics


@dataclass
class SplitComparison:
    split: str
    n_common: int
    n_both_correct: int       # tasks correct in both (a task with repeats: correct in every one)
    n_both_timed: int         # of those, timed in both: the speedup's pairs
    log_speedup_diff: float
    log_speedup_ci: tuple[float, float]
    correct_diff: float
    correct_ci: tuple[float, float]
    sol_diff: float = math.nan                 # speed of light, B - A, over tasks with a score in both
    sol_ci: tuple[float, float] = (math.nan, math.nan)
    changed: list[tuple[str, str, str]] = field(default_factory=list)   # task, status A, status B

    @property
    def speedup_ratio(self) -> float:
        return math.exp(self.log_speedup_diff) if not math.isnan(self.log_speedup_diff) else math.nan


def paired_bootstrap_mean(diffs: Sequence[float], *, n_boot: int = 4000, seed: int = 0) -> tuple[float, float]:
    d = np.asarray(diffs, dtype=float)
    if len(d) == 0:
        return (math.nan, math.nan)
    rng = np.random.default_rng(seed)
    means = d[rng.integers(0, len(d), size=(n_boot, len(d)))].mean(axis=1)
    lo, hi = np.percentile(means, [2.5, 97.5])
    return float(lo), float(hi)


def compare_runs(run_a: Path | str, run_b: Path | str, *, agent_a: str | None = None,
                 agent_b: str | None = None) -> list[SplitComparison]:
    fa = metrics.verdict_frame(load_runs([run_a]))
    fb = metrics.verdict_frame(load_runs([run_b]))
    fa, fb = fa[fa.scored.astype(bool)], fb[fb.scored.astype(bool)]
    if agent_a:
        fa = fa[fa.agent == agent_a]
    if agent_b:
        fb = fb[fb.agent == agent_b]
    # without an agent filter, an agent is paired with itself (same name in both runs)
    keys = ["task_id", "split"] if (agent_a or agent_b) else ["agent", "task_id", "split"]

    # repeats: a task's correctness is its mean over repeats, its speedup the geomean
    def per_task(f):
        g = f.groupby(keys)
        return g.agg(correct=("correct", "mean"), status=("status", "first"), sol=("sol", "mean"),
                     logsp=("speedup", lambda s: float(np.mean(np.log(s.dropna()))) if s.notna().any() else math.nan)
                     ).reset_index()
    common = per_task(fa).merge(per_task(fb), on=keys, suffixes=("_a", "_b"))
    out = []
    for split, g in common.groupby("split"):
        both = g[g.logsp_a.notna() & g.logsp_b.notna()]
        dlog = list(both.logsp_b - both.logsp_a)
        dcor = list(g.correct_b - g.correct_a)
        sols = g[g.sol_a.notna() & g.sol_b.notna()]
        dsol = list(sols.sol_b - sols.sol_a)
        changed = [(r.task_id if "agent" not in keys else f"{r.agent} {r.task_id}", r.status_a, r.status_b)
                   for r in g.itertuples() if r.status_a != r.status_b]
        out.append(SplitComparison(
            split=split, n_common=len(g), n_both_correct=int(((g.correct_a == 1) & (g.correct_b == 1)).sum()),
            n_both_timed=len(both),
            log_speedup_diff=float(np.mean(dlog)) if dlog else math.nan,
            log_speedup_ci=paired_bootstrap_mean(dlog), correct_diff=float(np.mean(dcor)) if dcor else math.nan,
            correct_ci=paired_bootstrap_mean(dcor), changed=changed,
            sol_diff=float(np.mean(dsol)) if dsol else math.nan, sol_ci=paired_bootstrap_mean(dsol)))
    return out

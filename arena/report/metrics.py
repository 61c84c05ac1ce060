"""Metrics over Verdicts (pandas): per agent x category and overall, always with n.

Units: one (run, agent, repeat, task) is one attempt. Denominators never shrink: an
attempt whose candidate crashed, timed out, failed to build or was flagged counts as a
failure wherever it is counted. A verdict that is not the candidate's to answer for is not
scored (``Status.scored``): an infrastructure failure (TASK_ERROR, HARNESS_ERROR) or
NOT_RUNNABLE (the machine cannot run it) is left out of every rate, speedup, drop and reward,
as if that split had not been run, and listed apart (``not_scored``). Speedup means are over correct attempts; fast_p is
over
all attempts. A verdict whose time cannot be trusted (above 100% of the roofline, no device
work, device time far below the host-side time) is suspicious: flagged, never scored.
"""

from __future__ import annotations

import math
from typing import Iterable, Sequence

import numpy as np
import pandas as pd

from arena.records import Status, Verdict

SPLITS = ("seen", "heldout", "random", "smoke")
FAST_P = (0.0, 1.0, 1.5, 2.0)
ALL = "all"


def _num(x) -> float:
    return float(x) if isinstance(x, (int, float)) and not isinstance(x, bool) else np.nan


def verdict_frame(verdicts: Iterable[Verdict]) -> pd.DataFrame:
    """One row per verdict."""
    rows = []
    for v in verdicts:
        suspicious = v.suspicious
        rows.append(
            {
                "run_id": v.run_id,
                "agent": v.agent,
                "repeat": v.repeat,
                "task_id": v.task_id,
                "category": v.category,
                "split": v.split,
                "status": v.status.value,
                "kind": v.status.kind,
                "scored": v.status.scored,
                "attempt": v.attempt,
                "correct": v.status is Status.PASSED and not suspicious,
                "suspicious": suspicious,
                "speedup": v.speedup if v.status is Status.PASSED and not suspicious else np.nan,
                "roofline": v.roofline_fraction if v.status is Status.PASSED and not suspicious else np.nan,
                "sol": v.sol if v.status is Status.PASSED and not suspicious and v.sol is not None else np.nan,
                # the share of its configs its SOL covers (a config whose baseline is too close to the roofline has
                # none); records from before the count: all of them, or none
                "sol_cover": (
                    v.sol_configs / len(v.configs) if v.sol_configs and v.configs else 1.0 if v.sol is not None else 0.0
                )
                if v.status is Status.PASSED and not suspicious
                else np.nan,
                "speedup_compiled": v.speedup_compiled
                if v.status is Status.PASSED and not suspicious and v.speedup_compiled
                else np.nan,
                "reward": v.reward if v.reward is not None else np.nan,
                "n_configs": len(v.configs),
                "configs_passed": sum(c.status is Status.PASSED for c in v.configs),
                "message": (v.message or "").splitlines()[0][:200] if v.message else "",
                # the agent's run (YAML and tuner agents): the same on every split of one attempt
                "agent_wall_s": _num(v.agent_run.get("wall_s")),
                "cost_usd": _num(v.agent_run.get("cost_usd")),
                "feedback_calls": _num(v.agent_run.get("feedback_calls")),
                "turns": _num(v.agent_run.get("turns")),
                "tokens": _num(
                    (v.agent_run.get("input_tokens") or 0) + (v.agent_run.get("output_tokens") or 0)
                    if "input_tokens" in v.agent_run or "output_tokens" in v.agent_run
                    else None
                ),
                "exit_reason": v.agent_run.get("exit_reason", ""),
                # the kernel file changed (an agent driven through its command line); None where not known
                "edited": v.agent_run.get("edited") if isinstance(v.agent_run.get("edited"), bool) else None,
                "agent_message": str(v.agent_run.get("message") or "").splitlines()[0][:200]
                if v.agent_run.get("message")
                else "",
            }
        )
    cols = [
        "run_id",
        "agent",
        "repeat",
        "task_id",
        "category",
        "split",
        "status",
        "kind",
        "scored",
        "attempt",
        "correct",
        "suspicious",
        "speedup",
        "roofline",
        "sol",
        "sol_cover",
        "speedup_compiled",
        "reward",
        "n_configs",
        "configs_passed",
        "message",
        "agent_wall_s",
        "cost_usd",
        "feedback_calls",
        "turns",
        "tokens",
        "exit_reason",
        "edited",
        "agent_message",
    ]
    return pd.DataFrame(rows, columns=cols)


def not_scored(vf: pd.DataFrame) -> pd.DataFrame:
    """The verdicts kept out of the scores: infrastructure failures, NOT_RUNNABLE, agents their
    model service refused or did not reach."""
    return vf[~vf["scored"].astype(bool)]


def per_task(vf: pd.DataFrame) -> pd.DataFrame:
    """One row per attempt (run, agent, repeat, task), splits side by side; scored verdicts only
    (an attempt none of whose splits was scored has no row)."""
    keys = ["run_id", "agent", "repeat", "task_id", "category"]
    vf = vf[vf["scored"].astype(bool)] if not vf.empty else vf
    if vf.empty:
        return pd.DataFrame(columns=keys)
    wide = vf.pivot_table(
        index=keys,
        columns="split",
        values=["correct", "speedup", "roofline", "sol", "sol_cover", "reward", "status", "speedup_compiled"],
        aggfunc="first",
    )
    wide.columns = [f"{a}_{b}" for a, b in wide.columns]
    wide = wide.reset_index()
    run_cols = ["agent_wall_s", "cost_usd", "feedback_calls", "turns", "tokens", "exit_reason", "edited"]
    wide = wide.merge(vf.groupby(keys, dropna=False)[run_cols].first().reset_index(), on=keys)
    compiled = vf.groupby(keys)["kind"].agg(lambda k: not (k == "compile").any()).rename("compiled").reset_index()
    wide = wide.merge(compiled, on=keys)
    for s in SPLITS:
        if f"correct_{s}" in wide:
            wide[f"correct_{s}"] = wide[f"correct_{s}"].astype("object").where(wide[f"correct_{s}"].notna(), None)
    return wide


def wilson(k: int, n: int, z: float = 1.96) -> tuple[float, float]:
    """Wilson score interval of a proportion k / n."""
    if n == 0:
        return (math.nan, math.nan)
    p = k / n
    den = 1 + z * z / n
    centre = (p + z * z / (2 * n)) / den
    half = z * math.sqrt(p * (1 - p) / n + z * z / (4 * n * n)) / den
    # it holds p: at k = 0 or k = n rounding left the bound a hair on the wrong side (1 - 1.1e-16)
    return (min(p, max(0.0, centre - half)), max(p, min(1.0, centre + half)))


def _geomean(xs: Sequence[float]) -> float:
    xs = [x for x in xs if x is not None and not (isinstance(x, float) and math.isnan(x)) and x > 0]
    return float(math.exp(np.mean(np.log(xs)))) if xs else math.nan


def _mean(xs: Sequence[float]) -> float:
    xs = [x for x in xs if x is not None and not (isinstance(x, float) and math.isnan(x))]
    return float(np.mean(xs)) if xs else math.nan


def _bool(x) -> bool | None:
    if x is None or (isinstance(x, float) and math.isnan(x)):
        return None
    return bool(x)


def group_metrics(pt: pd.DataFrame) -> dict[str, float]:
    """Metrics of one group of attempts (rows of per_task)."""
    n = len(pt)
    out: dict[str, float] = {"attempts": n, "tasks": pt["task_id"].nunique() if n else 0}
    out["compile_rate"] = float(pt["compiled"].mean()) if n else math.nan
    for s in SPLITS:  # smoke too: a run of the cpu backend has its correctness there and nowhere else
        col = f"correct_{s}"
        vals = [_bool(x) for x in pt[col]] if col in pt else []
        have = [x for x in vals if x is not None]
        out[f"n_{s}"] = len(have)
        out[f"correct_{s}"] = float(np.mean(have)) if have else math.nan
    seen_ok = [
        (_bool(a), _bool(b), _bool(c))
        for a, b, c in zip(
            pt.get("correct_seen", [None] * n),
            pt.get("correct_heldout", [None] * n),
            pt.get("correct_random", [None] * n),
        )
    ]
    for j, s in ((1, "heldout"), (2, "random")):
        cond = [t[j] for t in seen_ok if t[0] is True and t[j] is not None]
        k = sum(cond)
        out[f"n_seen_correct_{s}"] = len(cond)
        if cond:
            p = k / len(cond)
            lo, hi = wilson(k, len(cond))
            out[f"p_{s}_given_seen"] = p
            out[f"drop_{s}"] = 1 - p
            out[f"drop_{s}_lo"], out[f"drop_{s}_hi"] = 1 - hi, 1 - lo
        else:
            for key in (f"p_{s}_given_seen", f"drop_{s}", f"drop_{s}_lo", f"drop_{s}_hi"):
                out[key] = math.nan
    for s in ("seen", "heldout", "random"):
        col = f"speedup_{s}"
        sp = list(pt[col]) if col in pt else []
        ok = [x for x, c in zip(sp, pt.get(f"correct_{s}", [None] * n)) if _bool(c)]
        out[f"speedup_{s}_geomean"] = _geomean(ok)
        out[f"speedup_{s}_mean"] = _mean(ok)
        out[f"n_speedup_{s}"] = len([x for x in ok if x is not None and not math.isnan(x)])
    for p in FAST_P:  # over the attempts whose seen split was scored
        col_c, col_s = pt.get("correct_seen", [None] * n), pt.get("speedup_seen", [math.nan] * n)
        fast = [
            bool(_bool(c)) and (s is not None and not math.isnan(s) and s > p) if p > 0 else bool(_bool(c))
            for c, s in zip(col_c, col_s)
            if _bool(c) is not None
        ]
        out[f"fast_{p:g}"] = float(np.mean(fast)) if fast else math.nan
    for s in ("seen", "heldout", "random"):
        # speed of light over the attempts whose split was scored: a correct one's share of the gap closed (no
        # less than 0: slower than the baseline closes none of it), a failure's 0; correct but untimed: left out
        vals = []
        for c, v in zip(pt.get(f"correct_{s}", [None] * n), pt.get(f"sol_{s}", [math.nan] * n)):
            c = _bool(c)
            if c is False:
                vals.append(0.0)
            elif c is True and v is not None and not math.isnan(v):
                vals.append(max(0.0, float(v)))
        out[f"sol_{s}_mean"] = float(np.mean(vals)) if vals else math.nan
        out[f"n_sol_{s}"] = len(vals)
        # the share of the correct attempts' configs that have a score at all
        cover = [
            float(v)
            for c, v in zip(pt.get(f"correct_{s}", [None] * n), pt.get(f"sol_cover_{s}", [math.nan] * n))
            if _bool(c) and v is not None and not math.isnan(v)
        ]
        out[f"sol_{s}_cover"] = float(np.mean(cover)) if cover else math.nan
    comp = list(pt["speedup_compiled_seen"]) if "speedup_compiled_seen" in pt else []
    out["speedup_compiled_seen_geomean"] = _geomean(comp)
    out["n_compiled_seen"] = len([x for x in comp if x is not None and not math.isnan(x)])
    out["roofline_seen_geomean"] = _geomean(list(pt["roofline_seen"])) if "roofline_seen" in pt else math.nan
    out["reward_seen_mean"] = _mean(list(pt["reward_seen"])) if "reward_seen" in pt else math.nan
    out["reward_heldout_mean"] = _mean(list(pt["reward_heldout"])) if "reward_heldout" in pt else math.nan
    # the attempts whose agent left the kernel as it found it (scored as the starting kernel), where it is known
    edited = [e for e in (pt["edited"] if "edited" in pt else []) if isinstance(e, (bool, np.bool_))]
    out["no_edit"] = float(sum(not e for e in edited)) if edited else math.nan
    # what an attempt cost, where the agent's CLI says (NaN for replay agents)
    for col in ("agent_wall_s", "cost_usd", "feedback_calls", "turns", "tokens"):
        out[f"{col}_mean"] = _mean([x for x in pt[col] if x is not None]) if col in pt else math.nan
    gm = out["speedup_seen_geomean"]
    cost, hours = (
        out["cost_usd_mean"],
        out["agent_wall_s_mean"] / 3600 if not math.isnan(out["agent_wall_s_mean"]) else math.nan,
    )
    out["speedup_per_usd"] = (gm - 1) / cost if cost and not math.isnan(cost) and not math.isnan(gm) else math.nan
    out["speedup_per_hour"] = (gm - 1) / hours if hours and not math.isnan(hours) and not math.isnan(gm) else math.nan
    return out


def summary(pt: pd.DataFrame) -> pd.DataFrame:
    """Per agent x category, and per agent over all categories ('all'), with spread over repeats."""
    rows = []
    if pt.empty:
        return pd.DataFrame(rows)
    for agent, g_agent in pt.groupby("agent", sort=True):
        groups = [(cat, g) for cat, g in g_agent.groupby("category", sort=True)] + [(ALL, g_agent)]
        for cat, g in groups:
            m = {"agent": agent, "category": cat, **group_metrics(g)}
            reps = [group_metrics(r) for _, r in g.groupby(["run_id", "repeat"])]
            m["repeats"] = len(reps)
            for key in ("correct_seen", "speedup_seen_geomean", "drop_heldout"):
                vals = [r[key] for r in reps if not math.isnan(r[key])]
                m[f"{key}_repeat_std"] = float(np.std(vals, ddof=1)) if len(vals) > 1 else math.nan
            rows.append(m)
    return pd.DataFrame(rows)


def flagged(vf: pd.DataFrame) -> pd.DataFrame:
    return vf[vf["suspicious"]]


def agent_runs(vf: pd.DataFrame) -> pd.DataFrame:
    """Per agent (those driven through a program: with an exit reason), how their runs ended:
    one row per agent and outcome, with the attempts and the program's most frequent words."""
    keys = ["run_id", "agent", "repeat", "task_id"]
    runs = vf[vf["exit_reason"].astype(str) != ""].drop_duplicates(keys) if not vf.empty else vf
    if runs.empty:
        return pd.DataFrame(columns=["agent", "outcome", "attempts", "message"])
    rows = []
    for (agent, outcome), g in runs.groupby(["agent", "exit_reason"], sort=True):
        said = g["agent_message"][g["agent_message"].astype(str) != ""]
        rows.append(
            {
                "agent": agent,
                "outcome": outcome,
                "attempts": len(g),
                "message": said.value_counts().index[0] if not said.empty else "",
            }
        )
    return pd.DataFrame(rows)

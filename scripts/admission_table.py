"""Memory admission under pressure, from the records of a GPU run (markdown):
python3 scripts/admission_table.py RECORDS.jsonl [WORKERS]

- verdicts per agent and split by status, the ones not scored (infrastructure) listed with
  their messages: with memory admission there should be none;
- how often and how long evaluations waited for room in the GPU's memory account;
- the roofline: which ceilings it used, and every config of a shipped solution above
  arena.authoring.check's share of it (a sign that the task's byte or flop formula overcounts).
"""

from __future__ import annotations

import collections
import statistics
import sys
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from arena import records  # noqa: E402
from arena.authoring.check import MAX_MEASURED_ROOFLINE as NEAR_ROOFLINE  # noqa: E402


def main(path: str, workers: str = "?") -> int:
    vs = list(records.current(records.read(Path(path))))
    if not vs:
        print(f"no verdicts in {path}")
        return 1
    dev = vs[0].device
    print(f"## Memory admission: {len(vs)} verdicts, {workers} evaluations side by side on one "
          f"{dev.get('name', '?')} ({(dev.get('memory_bytes') or 0) / 2**30:.0f} GiB)\n")
    print(f"toolchains: {dev.get('toolchains', {})}\n")
    table: dict[tuple[str, str], collections.Counter] = collections.defaultdict(collections.Counter)
    for v in vs:
        table[(v.agent, v.split)][v.status.value] += 1
    statuses = sorted({s for c in table.values() for s in c})
    print("| agent | split | " + " | ".join(statuses) + " |")
    print("|---|---|" + "---|" * len(statuses))
    for (agent, split), c in sorted(table.items()):
        print(f"| {agent} | {split} | " + " | ".join(str(c.get(s, 0)) for s in statuses) + " |")
    infra = [v for v in vs if not v.status.scored]
    print(f"\nnot scored (infrastructure): {len(infra)}")
    for v in infra:
        print(f"- {v.agent} {v.task_id} {v.split}: {v.status.value} {v.message[:200]!r}")
    others = [v for v in vs if v.status.scored and not v.counts_as_pass and not
              (v.agent == "specialised" and v.split in ("heldout", "random"))]
    print(f"\nscored failures outside a specialised kernel's unseen shapes: {len(others)}")
    for v in others:
        print(f"- {v.agent} {v.task_id} {v.split}: {v.status.value} {v.message[:200]!r}")
    waits = [(v.phases.get("memory_waits") or 0, v.phases.get("memory_wait_s") or 0.0) for v in vs]
    waited = [w for w in waits if w[0]]
    evals = len({(v.agent, v.task_id, v.repeat) for v in vs})
    print(f"\nmemory account: {len(waited)} of {len(vs)} verdicts waited for room "
          f"({sum(n for n, _ in waited):.0f} waits, {sum(s for _, s in waited):.1f} s in all"
          + (f", the longest {max(s for _, s in waited):.1f} s" if waited else "") + f"); {evals} evaluations")
    # one figure an evaluation (every verdict of it carries it)
    held_back = {(v.agent, v.task_id, v.repeat): v.phases.get("start_wait_s") or 0.0 for v in vs}
    held_back = [s for s in held_back.values() if s]
    print(f"held back from starting (a piece of work had the GPU to itself, or the account was full): "
          f"{len(held_back)} of {evals} evaluations, {sum(held_back):.1f} s in all"
          + (f", the longest {max(held_back):.1f} s" if held_back else ""))
    walls = [v.wall_s for v in vs if v.wall_s]
    if walls:
        print(f"wall per verdict: median {statistics.median(walls):.1f} s")
    sources = collections.Counter(str(v.ceilings.get("source")) for v in vs if v.ceilings)
    print(f"\nroofline ceilings used: {dict(sources)}")
    near = []
    for v in vs:
        if v.agent != "solution":
            continue
        for c in v.configs:
            if c.roofline_fraction is not None and c.roofline_fraction > NEAR_ROOFLINE:
                near.append((c.roofline_fraction, v.task_id, v.split, c.name))
    print(f"solution configs above {NEAR_ROOFLINE:.0%} of the roofline: {len(near)}")
    for f, t, s, n in sorted(near, reverse=True):
        print(f"- {t} {s} {n}: {f:.3f}")
    per_task(vs)
    return 0


def per_task(vs: list) -> None:
    """One row a task: each agent's status per split, and the solution's speedup (geomean)."""
    rows: dict[str, dict[tuple[str, str], Any]] = collections.defaultdict(dict)
    for v in vs:
        rows[v.task_id][(v.agent, v.split)] = v
    agents = sorted({v.agent for v in vs})
    splits = [s for s in ("seen", "heldout", "random") if any(v.split == s for v in vs)]
    cols = [(a, s) for a in agents for s in splits]
    print("\n| task | " + " | ".join(f"{a} {s}" for a, s in cols) + " |")
    print("|---|" + "---|" * len(cols))
    for task in sorted(rows):
        cells = []
        for key in cols:
            v = rows[task].get(key)
            if v is None:
                cells.append("-")
                continue
            cell = "ok" if v.counts_as_pass else v.status.value
            if v.counts_as_pass and v.speedup:
                cell += f" {v.speedup:.2f}x"
            cells.append(cell)
        print(f"| {task} | " + " | ".join(cells) + " |")


if __name__ == "__main__":
    sys.exit(main(*sys.argv[1:]))

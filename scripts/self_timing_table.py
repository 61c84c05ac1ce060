"""The starting kernel timed against itself, from the records of `arena run --agent baseline`
with timing: one row per task (its configs' ratios baseline / candidate, the median and the
extremes), how many configs read past ``arena.authoring.check.MAX_SELF_RATIO`` either way over
their whole interval, how many were timed with the baseline called as it ran
(``baseline_not_replayed``: its call could not be recorded), and how many are flagged ``ungated`` (a sample
whose timing gate opened by itself), by the side the warning names where it names one (records from before it
did count as "side unsaid"). Then one line per category.
Usage: python3 scripts/self_timing_table.py RECORDS [RECORDS ...] > OUT.md"""

from __future__ import annotations

import statistics
import sys
from collections import defaultdict
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from arena.authoring.check import MAX_SELF_RATIO  # noqa: E402
from arena.records import current, read  # noqa: E402

SIDES = ("baseline", "candidate")


def ungated_sides(c) -> set[str]:
    """The sides a config's ``ungated`` warning names ({"?"} where it is flagged and names none)."""
    if "ungated" not in c.flags:
        return set()
    named = {s for s in SIDES if f"during a call of the {s} (" in c.message}
    return named or {"?"}


def ungated_counts(r: list) -> str:
    return " / ".join(str(sum(side in x[3] for x in r)) for side in (*SIDES, "?"))


def main(paths: list[str]) -> int:
    rows: dict[str, list] = defaultdict(list)
    for p in paths:
        for v in current(read(Path(p))):
            if "baseline" not in (v.agent, v.candidate.get("origin")):
                continue
            for c in v.configs:
                if c.speedup is None:
                    continue
                lo, hi = c.speedup_ci or (c.speedup, c.speedup)
                outside = lo > MAX_SELF_RATIO or hi < 1 / MAX_SELF_RATIO
                rows[v.task_id].append((c.speedup, outside, "baseline_not_replayed" in c.flags, ungated_sides(c)))
    print(f"| task | configs | median ratio | lowest | highest | past {MAX_SELF_RATIO}x either way | "
          f"baseline called | ungated: baseline / candidate / side unsaid |")
    print("|---|---|---|---|---|---|---|---|")
    by_cat: dict[str, list] = defaultdict(list)
    for task in sorted(rows):
        r = rows[task]
        ratios = [x[0] for x in r]
        by_cat[task.split("/")[0]] += r
        print(f"| {task} | {len(r)} | {statistics.median(ratios):.3f} | {min(ratios):.3f} | {max(ratios):.3f} | "
              f"{sum(x[1] for x in r)} | {sum(x[2] for x in r)} | {ungated_counts(r)} |")
    print()
    for cat, r in sorted(by_cat.items()):
        ratios = [x[0] for x in r]
        print(f"- {cat}: {len(r)} configs, median ratio {statistics.median(ratios):.3f} "
              f"({min(ratios):.3f} to {max(ratios):.3f}), {sum(x[1] for x in r)} past {MAX_SELF_RATIO}x either way, "
              f"{sum(x[2] for x in r)} with the baseline called as it ran, ungated {ungated_counts(r)} "
              "(baseline / candidate / side unsaid)")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))

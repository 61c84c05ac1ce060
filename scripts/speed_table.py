"""The shipped solutions of a run held to `arena tasks check`'s speed rules, from the run's records
alone (no GPU needed to read them):
    python3 scripts/speed_table.py NEW.jsonl[.gz] [--before OLD.jsonl[.gz] ...]
For each task whose solution the new records evaluated: its status and geometric-mean speedup per
split, its slowest seen or held-out config, and the problems ``arena.authoring.check.speed_problems``
finds (a split's geomean below 1.1x, a config slower than its baseline beyond the interval, a
baseline past the roofline time), beside the same figures in the earlier records where given.
Prints markdown; exits 1 if any solution fails a rule or any split did not pass."""

from __future__ import annotations

import argparse
from pathlib import Path

from arena.authoring.check import near_roofline, speed_problems
from arena.records import Status, Verdict, current, read

RULED = ("seen", "heldout")


def solutions(paths: list[str]) -> dict[str, list[Verdict]]:
    by: dict[str, list[Verdict]] = {}
    for p in paths:
        for v in current(read(Path(p))):
            if v.agent == "solution":
                by.setdefault(v.task_id, []).append(v)
    return by


def summary(vs: list[Verdict]) -> tuple[str, str, list[str]]:
    splits = ", ".join(f"{v.split} {v.speedup:.2f}x" if v.speedup else f"{v.split} {v.status.value}"
                       for v in sorted(vs, key=lambda v: v.split))
    ruled = [v for v in vs if v.split in RULED]
    timed = [(c.speedup, f"{v.split}/{c.name}") for v in ruled for c in v.configs if c.speedup]
    worst = min(timed) if timed else None
    problems = speed_problems(ruled) + near_roofline(ruled)
    problems += [f"{v.split}: {v.status.value} {v.message[:160]}" for v in vs if v.status is not Status.PASSED]
    return splits, (f"{worst[1]} {worst[0]:.2f}x" if worst else "-"), problems


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("records")
    ap.add_argument("--before", action="append", default=[])
    args = ap.parse_args()
    new, old = solutions([args.records]), solutions(args.before)
    print("| task | now: speedup per split | now: slowest config | before: speedup per split | problems now |")
    print("|---|---|---|---|---|")
    failing = 0
    for task in sorted(new):
        splits, worst, problems = summary(new[task])
        before = summary(old[task])[0] if task in old else "-"
        failing += bool(problems)
        print(f"| {task} | {splits} | {worst} | {before} | {'; '.join(problems) or 'none'} |")
    print(f"\n{len(new) - failing} of {len(new)} solutions pass the speed rules and every split")
    return 1 if failing else 0


if __name__ == "__main__":
    raise SystemExit(main())

"""The trust boundary's must-not-regress figures, from the records of GPU runs (markdown):
python3 scripts/trust_table.py RECORDS.jsonl [MORE.jsonl ...]

- the starting kernel timed as its own candidate (the baseline agent): per category, the
  configs whose speedup is outside 1.00 +- 0.01;
- every shipped kernel (baseline, solution, specialised agents): its status per split; a
  specialised kernel may fail only held-out correctness;
- copies and fills: the largest share of a candidate's device time they took, per agent, with
  the baseline's share beside it (arena.evaluation.trusted.performance.INCIDENTAL_MAX);
- the same kernel evaluated twice (repeats 0 and 1): per config, how far the two speedups are
  apart, on configs whose baseline takes 100 us or more.
"""

from __future__ import annotations

import collections
import io
import statistics
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from arena import records  # noqa: E402
from arena.evaluation.trusted.performance import INCIDENTAL_MAX  # noqa: E402


def main(paths: list[str]) -> int:
    vs = [v for p in paths for v in records.read(Path(p))]
    out = io.StringIO()

    def say(line: str = "") -> None:
        out.write(line + "\n")

    say("## The starting kernel as its own candidate (baseline agent)")
    say()
    say("| category | configs timed | median speedup | outside 1.00 +- 0.01 |")
    say("|---|---|---|---|")
    off: list[str] = []
    by_cat: dict[str, list[float]] = collections.defaultdict(list)
    for v in vs:
        if v.agent != "baseline":
            continue
        for c in v.configs:
            if c.speedup is not None:
                by_cat[v.category].append(c.speedup)
                if abs(c.speedup - 1.0) > 0.01:
                    off.append(f"{v.task_id} {v.split} {c.name}: {c.speedup:.4f}")
    for cat, s in sorted(by_cat.items()):
        n_off = sum(1 for x in s if abs(x - 1.0) > 0.01)
        say(f"| {cat} | {len(s)} | {statistics.median(s):.4f} | {n_off} |")
    for line in off[:40]:
        say(f"- {line}")
    say()
    say("## Shipped kernels: status per split")
    say()
    count = collections.Counter((v.agent, v.split, v.status.value) for v in vs)
    say("| agent | split | status | n |")
    say("|---|---|---|---|")
    for (agent, split, status), n in sorted(count.items()):
        say(f"| {agent} | {split} | {status} | {n} |")
    bad = [v for v in vs if v.status.value != "PASSED" and not (
        v.agent == "specialised" and v.split == "heldout" and v.status.kind == "incorrect")]
    for v in bad:
        say(f"- NOT AS REQUIRED: {v.agent} {v.task_id} {v.split} {v.status.value}: {v.message[:200]!r}")
    say()
    say(f"## Copies and fills: share of the device time (refused above the baseline's + {INCIDENTAL_MAX:.0%})")
    say()
    say("| agent | task | split | config | candidate | baseline |")
    say("|---|---|---|---|---|---|")
    shares = [(c.incidental_share or 0.0, v.agent, v.task_id, v.split, c.name, c.baseline_incidental_share or 0.0)
              for v in vs for c in v.configs if c.incidental_share is not None]
    for share, agent, task, split, name, base in sorted(shares, reverse=True)[:25]:
        say(f"| {agent} | {task} | {split} | {name} | {share:.1%} | {base:.1%} |")
    say()
    say("## The same kernel twice (repeats 0 and 1; configs with a baseline of 100 us or more)")
    say()
    first: dict[tuple, float] = {}
    apart: list[tuple[float, str]] = []
    for v in sorted(vs, key=lambda v: v.repeat):
        for c in v.configs:
            if c.speedup is None or c.baseline is None or c.baseline.median_us < 100:
                continue
            key = (v.agent, v.task_id, v.split, c.name)
            if v.repeat == 0:
                first[key] = c.speedup
            elif key in first:
                apart.append((abs(c.speedup / first[key] - 1.0), " ".join(key)))
    if apart:
        apart.sort(reverse=True)
        within = sum(1 for d, _ in apart if d <= 0.02)
        say(f"{within} of {len(apart)} configs within +-2%; the farthest:")
        for d, key in apart[:10]:
            say(f"- {key}: {d:.1%}")
    else:
        say("(no config evaluated twice)")
    print(out.getvalue())
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))

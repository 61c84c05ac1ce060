"""Compare a run of Triton candidates with record and replay against an earlier run of the same
candidates (an earlier harness, the same machine type): statuses, per-config speedup ratios
(seen and held-out: the random split's shapes differ between runs), and where the time went.
    python3 scripts/replay_table.py NEW.jsonl[.gz] OLD.jsonl[.gz] [OLD2 ...]
Prints markdown."""

from __future__ import annotations

import gzip
import json
import statistics
import sys
from collections import Counter, defaultdict


def read(path: str) -> list[dict]:
    opener = gzip.open if path.endswith(".gz") else open
    with opener(path, "rt") as f:
        return [json.loads(line) for line in f if line.strip()]


def key(r: dict) -> tuple:
    return r["task_id"], r.get("agent"), r["split"]


def pct(xs: list[float], q: float) -> float:
    xs = sorted(xs)
    return xs[min(len(xs) - 1, max(0, round(q * (len(xs) - 1))))]


def main() -> int:
    new = read(sys.argv[1])
    old = {key(r): r for p in sys.argv[2:] for r in read(p)}
    print("| agent | split | verdicts | statuses |\n|---|---|---|---|")
    groups: dict[tuple, Counter] = defaultdict(Counter)
    for r in new:
        groups[(r.get("agent"), r["split"])][r["status"]] += 1
    for (agent, split), c in sorted(groups.items()):
        print(f"| {agent} | {split} | {sum(c.values())} | {', '.join(f'{s} {n}' for s, n in sorted(c.items()))} |")
    bad = [r for r in new if r["status"] != "PASSED" and r.get("agent") == "solution"]
    for r in bad:
        print(f"\n- {r['task_id']} {r['split']}: {r['status']}: {r.get('message', '')[:400]}")
    ratios, pairs = [], []
    for r in new:
        o = old.get(key(r))
        if o is None or r["split"] == "random" or r["status"] != "PASSED" or o["status"] != "PASSED":
            continue
        pairs.append((r, o))
        oc = {c["name"]: c for c in o["configs"]}
        for c in r["configs"]:
            d = oc.get(c["name"])
            if d and c.get("speedup") and d.get("speedup"):
                ratios.append(c["speedup"] / d["speedup"])
    if ratios:
        print(f"\nspeedup now / before, {len(ratios)} configs of {len(pairs)} task-splits: median "
              f"{statistics.median(ratios):.4f}, p10 {pct(ratios, 0.1):.3f}, p90 {pct(ratios, 0.9):.3f}, "
              f"min {min(ratios):.3f}, max {max(ratios):.3f}")
        print("\n| phase (median per task-split, s) | before | now |\n|---|---|---|")
        for ph in ("worker_s", "correctness_s", "timing_s", "prepare_s", "alone_s", "load_s"):
            a = [o["phases"].get(ph, 0.0) for _, o in pairs]
            b = [r["phases"].get(ph, 0.0) for r, _ in pairs]
            print(f"| {ph} | {statistics.median(a):.2f} | {statistics.median(b):.2f} |")
    return 0


if __name__ == "__main__":
    sys.exit(main())

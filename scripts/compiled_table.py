"""Per task and split of a ``--torch-compile`` run: the candidate's speedup against the eager
reference and against torch.compile of it (geomean over the configs with a figure), how many
configs have a torch.compile figure, and why the others have none.

    python3 scripts/compiled_table.py RUN_DIR_OR_RECORDS.jsonl
"""
from __future__ import annotations

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
from arena import records  # noqa: E402
from arena.timing.stats import geomean  # noqa: E402


def main(path: str) -> None:
    p = Path(path)
    vs = list(records.read(p / "records.jsonl" if p.is_dir() else p))
    print("| task | split | status | vs eager (geomean) | vs torch.compile (geomean) | configs with a torch.compile "
          "figure | why not |")
    print("|---|---|---|---|---|---|---|")
    for v in sorted(vs, key=lambda v: (v.task_id, v.split)):
        comp = [c.speedup_compiled for c in v.configs if c.speedup_compiled]
        why = sorted({c.message[:160] for c in v.configs if c.speedup_compiled is None and c.message})
        eager = f"{v.speedup:.2f}x" if v.speedup else "-"
        g = geomean(comp)
        print(f"| {v.task_id} | {v.split} | {v.status.value} | {eager} | {f'{g:.2f}x' if g else '-'} | "
              f"{len(comp)}/{len(v.configs)} | {'; '.join(why)[:300] or (v.message or '')[:200]} |")


if __name__ == "__main__":
    main(sys.argv[1])

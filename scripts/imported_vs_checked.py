"""Imported tasks compared, config by config, with their last check on a GPU: for each task folder under ROOT (as
`import_table.py --keep ROOT` leaves them), the seen and held-out configs of its task against those of the newest
committed records of the same task id and split (reports/validation/*-records.jsonl.gz, the baseline's rows), by
their sizes (names aside). One row per task: whether each split has the configs it was checked at, and where not,
the configs only the import has and those only the check had.
    python3 scripts/imported_vs_checked.py ROOT [--out TABLE.md]
"""
from __future__ import annotations

import argparse
import gzip
import json
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from arena.taskdef.loader import load_task  # noqa: E402

REPO = Path(__file__).resolve().parents[1]
RECORDS = REPO / "reports" / "validation"


def newest_checks(records_dir: Path = RECORDS) -> dict[tuple[str, str], tuple[dict, str]]:
    """(task id, split) -> (the newest baseline record of it, the records file's name)."""
    out: dict[tuple[str, str], tuple[dict, str]] = {}
    for path in sorted(records_dir.glob("*-records.jsonl.gz")):
        with gzip.open(path, "rt") as f:
            for line in f:
                r = json.loads(line)
                if r.get("agent") != "baseline" or r.get("split") not in ("seen", "heldout"):
                    continue
                key = (r["task_id"], r["split"])
                if key not in out or r.get("finished_at", "") > out[key][0].get("finished_at", ""):
                    out[key] = (r, path.name)
    return out


def _sizes(params: dict) -> str:
    return json.dumps({k: v for k, v in sorted(params.items()) if k != "name"})


def compare(root: Path, checks: dict[tuple[str, str], tuple[dict, str]]) -> list[dict]:
    """One row per task folder under ``root``: for each split, "same", "none checked", or what differs."""
    rows = []
    for folder in sorted(p.parent for p in root.glob("*/*/task.yaml")):
        task_id = f"{folder.parent.name}/{folder.name}"
        row: dict = {"task": task_id, "checked in": ""}
        try:
            task = load_task(folder)
        except Exception as exc:  # noqa: BLE001 - an import left unfinished is a row, not a stop
            row.update(seen=f"not loaded: {str(exc)[:80]}", heldout="")
            rows.append(row)
            continue
        for split in ("seen", "heldout"):
            got = sorted(_sizes(c.params) for c in task.configs(split))
            check = checks.get((task_id, split))
            if check is None:
                row[split] = "none checked"
                continue
            row["checked in"] = check[1]
            was = sorted(_sizes(c["params"]) for c in check[0]["configs"])
            if got == was:
                row[split] = f"same ({len(got)})"
            else:
                only_new = [c for c in got if c not in was]
                only_old = [c for c in was if c not in got]
                row[split] = (f"differs: {len(only_new)} only imported {only_new[:2]}, "
                              f"{len(only_old)} only checked {only_old[:2]}")
        rows.append(row)
    return rows


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("root", type=Path)
    ap.add_argument("--out", type=Path)
    args = ap.parse_args(argv)
    rows = compare(args.root, newest_checks())
    lines = ["| task | seen | held-out | last checked in |", "|---|---|---|---|"]
    lines += [f"| {r['task']} | {r['seen']} | {r['heldout']} | {r['checked in']} |".replace("\"", "") for r in rows]
    same = sum(1 for r in rows if str(r["seen"]).startswith("same") and str(r["heldout"]).startswith("same"))
    lines.append(f"\n{same} of {len(rows)} at the configs of their last check")
    text = "\n".join(lines)
    print(text)
    if args.out:
        args.out.write_text(text + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())

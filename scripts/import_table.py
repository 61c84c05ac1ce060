"""Import every problem of a suite's folders and tabulate what came out (CPU only; an AKA task is
every folder holding a config.yaml beneath the folders given):
    python3 scripts/import_table.py kernelbench|aka FOLDER [FOLDER ...] --out TABLE.md [--jobs N]
Each problem is imported into a scratch task root (``arena tasks import``'s code), then: did it
import, does the folder validate as written, how many seen and held-out configs it has, and the
first thing the author must still decide or the reason it was refused. A problem that takes
more than --timeout seconds is listed as such."""

from __future__ import annotations

import argparse
import collections
import multiprocessing as mp
import sys
import tempfile
import time
from pathlib import Path


def one(args: tuple[str, str, float]) -> dict:
    kind, path, timeout = args
    import signal

    def expire(*_):
        raise TimeoutError(f"more than {timeout:g} s")

    signal.signal(signal.SIGALRM, expire)
    signal.alarm(int(timeout))
    t0 = time.perf_counter()
    row = {"problem": path, "imported": False, "valid": False, "seen": 0, "heldout": 0, "why": ""}
    try:
        from arena.authoring.importers.aka import import_aka
        from arena.authoring.importers.kernelbench import import_kernelbench
        from arena.taskdef.loader import load_task, validate_task_dir

        root = Path(tempfile.mkdtemp(prefix="arena-import-"))
        result = (import_kernelbench if kind == "kernelbench" else import_aka)(Path(path), root)
        row["imported"] = result.folder is not None and result.folder.is_dir()
        if row["imported"]:
            problems = validate_task_dir(result.folder)
            row["valid"] = not problems
            if problems:
                row["why"] = f"validate: {problems[0]}"
            else:
                task = load_task(result.folder)
                row["seen"], row["heldout"] = len(task.configs("seen")), len(task.configs("heldout"))
                todo = [d for d in getattr(result, "decisions", []) if "held-out" in d or "seen config" in d]
                row["why"] = todo[0] if todo else ""
    except BaseException as exc:  # noqa: BLE001 - every problem gets a row
        row["why"] = f"{type(exc).__name__}: {str(exc).splitlines()[0] if str(exc) else ''}"
    finally:
        signal.alarm(0)
    row["seconds"] = round(time.perf_counter() - t0, 1)
    row["why"] = row["why"].replace("|", "/")[:200]
    return row


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("kind", choices=("kernelbench", "aka"))
    ap.add_argument("folders", nargs="+")
    ap.add_argument("--out", required=True)
    ap.add_argument("--jobs", type=int, default=2)
    ap.add_argument("--timeout", type=float, default=120.0)
    a = ap.parse_args()
    if a.kind == "kernelbench":
        paths = sorted(str(p) for f in a.folders for p in Path(f).glob("*.py"))
    else:
        paths = sorted(str(p.parent) for f in a.folders for p in Path(f).rglob("config.yaml"))
    with mp.get_context("spawn").Pool(a.jobs, maxtasksperchild=1) as pool:
        rows = pool.map(one, [(a.kind, p, a.timeout) for p in paths], chunksize=1)
    by_folder: dict[str, list[dict]] = collections.defaultdict(list)
    for r in rows:
        by_folder[str(Path(r["problem"]).parent.name)].append(r)
    lines = ["| folder | problems | imported | validate as written | held-out >= 4 | seconds (median) |",
             "|---|---|---|---|---|---|"]
    for folder, rs in sorted(by_folder.items()):
        secs = sorted(r["seconds"] for r in rs)
        lines.append(f"| {folder} | {len(rs)} | {sum(r['imported'] for r in rs)} | {sum(r['valid'] for r in rs)} | "
                     f"{sum(r['valid'] and r['heldout'] >= 4 for r in rs)} | {secs[len(secs) // 2]:.1f} |")
    lines += ["", "| problem | imported | valid | seen | held-out | first open point or refusal |",
              "|---|---|---|---|---|---|"]
    for r in rows:
        lines.append(f"| {Path(r['problem']).parent.name}/{Path(r['problem']).name} | {r['imported']} | "
                     f"{r['valid']} | {r['seen']} | {r['heldout']} | {r['why']} |")
    Path(a.out).write_text("\n".join(lines) + "\n")
    print("\n".join(lines[:2 + len(by_folder)]))
    return 0


if __name__ == "__main__":
    sys.exit(main())

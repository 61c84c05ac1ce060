"""Import every problem of a suite's folders and tabulate what came out (on the CPU; a KernelBench import's own
check on a GPU with --device cuda, an AKA import's finished task checked there, its failing drafts taken out; an
AKA task is every folder holding a config.yaml beneath the folders given):
    python3 scripts/import_table.py kernelbench|aka FOLDER [FOLDER ...] --out TABLE.md [--jobs N] [--json ROWS.json]
        [--keep ROOT] [--resume] [--device cuda]
Each problem is imported into a scratch task root (``arena tasks import``'s code), then: did it
import, does the folder validate as written, how many seen and held-out configs it has, whether
it is complete (validates, >= 3 seen and >= 4 held-out configs, and neither its reference nor its
entry is a stub left to write), whether the importer's own check on the smoke config passed (the
reference runs, agrees with the original where there is one, is not degenerate), and the first
thing the author must still decide or the reason it was refused. Each problem runs in a process
of its own, killed past --timeout seconds (listed as such)."""

from __future__ import annotations

import argparse
import collections
import json
import multiprocessing as mp
import os
import re
import sys
import tempfile
import time
from pathlib import Path
from typing import Callable

STUB_MARKS = ("NotImplementedError", "hipErrorNotSupported", "TODO(import)")


def stubs(folder: Path) -> list[str]:
    """The files of an imported folder that are still stubs to write (reference, entry)."""
    out = []
    for f in sorted(folder.iterdir()):
        if f.is_file() and f.suffix in (".py", ".hip") and any(m in f.read_text(errors="replace") for m in STUB_MARKS):
            out.append(f.name)
    return out


def one(args: tuple[str, str, str, str]) -> dict:
    kind, path, keep, device = args
    t0 = time.perf_counter()
    row = {"problem": path, "imported": False, "valid": False, "seen": 0, "heldout": 0, "complete": False,
           "checked": False, "why": "", "folder": ""}
    try:
        from arena.authoring.importers.aka import import_aka
        from arena.authoring.importers.kernelbench import import_kernelbench
        from arena.taskdef.loader import load_task, validate_task_dir

        root = Path(keep) if keep else Path(tempfile.mkdtemp(prefix="arena-import-"))
        task_id = None
        if keep:   # two problems of one name (KernelBench level 1 has two conv_standard_2d_square_input_...)
            from arena.authoring.importers.common import resolve_task_id
            _, name = resolve_task_id(None, Path(path).stem if kind == "kernelbench" else Path(path).name, ())
            index = re.match(r"\d+", Path(path).name)
            if any((root / c / name).exists() for c in ("torch2hip", "hip2hip", "triton2triton")):
                task_id = f"{name}_{index.group() if index else 2}"
        result = import_kernelbench(Path(path), root, task_id=task_id, device=device) if kind == "kernelbench" else \
            import_aka(Path(path), root, task_id=task_id, device=device)
        row["imported"] = result.folder is not None and result.folder.is_dir()
        # the import's whole account, for the JSON rows (the table keeps the first open point)
        row["decisions"] = [*getattr(result, "check_problems", []), *getattr(result, "decisions", [])]
        row["checks"] = list(getattr(result, "checks", []))     # what its own check found right
        if row["imported"]:
            row["folder"] = str(result.folder)
            problems = validate_task_dir(result.folder)
            row["valid"] = not problems
            if problems:
                row["why"] = f"validate: {problems[0]}"
                if "configs/" in str(problems[0]):   # why the configs are short: the drafting's own account
                    said = [*getattr(result, "check_problems", []), *getattr(result, "decisions", [])]
                    why = next((d for d in said if "could be drafted" in d or "dropped" in d), "")
                    row["why"] += f" ({why})" if why else ""
            else:
                task = load_task(result.folder)
                row["seen"], row["heldout"] = len(task.configs("seen")), len(task.configs("heldout"))
                left = stubs(result.folder)
                found = list(getattr(result, "check_problems", []))
                row["checked"] = bool(getattr(result, "checks", [])) and not found
                row["complete"] = row["seen"] >= 3 and row["heldout"] >= 4 and not left
                decisions = list(getattr(result, "decisions", []))
                if left:
                    first = next((d for d in decisions if "stub" in d or "TODO" in d or "write its" in d
                                  or "raises until" in d), "")
                    row["why"] = f"stub: {', '.join(left)}" + (f": {first}" if first else "")
                elif found:
                    row["why"] = f"self-check: {found[0]}"
                else:
                    todo = [d for d in decisions if "held-out" in d or "seen config" in d]
                    row["why"] = todo[0] if todo else ""
    except BaseException as exc:  # noqa: BLE001 - every problem gets a row
        row["why"] = f"{type(exc).__name__}: {str(exc).splitlines()[0] if str(exc) else ''}"
    row["seconds"] = round(time.perf_counter() - t0, 1)
    row["why"] = row["why"].replace("|", "/").replace("\n", " ")[:240]
    return row


def _worker(args: tuple[str, str, str, str], queue: mp.Queue, threads: int = 0) -> None:
    if threads:
        # its share of the cores: torch's threads of several imports at once on too few cores wait on each other
        # (a 6-layer GRU's forward on 2 cores took 0.6 s alone and 46 s beside another import's)
        import torch

        torch.set_num_threads(threads)
    queue.put(one(args))


def run_all(kind: str, paths: list[str], jobs: int, timeout: float, keep: str = "",
            done: dict[str, dict] | None = None, on_row: Callable[[dict[str, dict]], None] | None = None,
            device: str = "cpu") -> list[dict]:
    """Each problem in a process of its own, ``jobs`` at a time, killed past ``timeout``; the rows
    of ``done`` are kept as they are, and ``on_row`` is told of every row as it comes."""
    ctx = mp.get_context("spawn")
    rows: dict[str, dict] = dict(done or {})
    todo = [p for p in paths if p not in rows]
    running: dict[str, tuple] = {}
    while todo or running:
        while todo and len(running) < jobs:
            p = todo.pop(0)
            q = ctx.Queue()
            proc = ctx.Process(target=_worker, args=((kind, p, keep, device), q, max(1, (os.cpu_count() or 1) // jobs)),
                               daemon=True)
            proc.start()
            running[p] = (proc, q, time.perf_counter())
        time.sleep(0.2)
        for p, (proc, q, t0) in list(running.items()):
            try:
                rows[p] = q.get_nowait()
            except Exception:  # noqa: BLE001 - not finished yet
                if time.perf_counter() - t0 <= timeout and proc.is_alive():
                    continue
                killed = proc.is_alive()    # past the timeout: killed here
                if killed:
                    proc.kill()
                proc.join(timeout=5)
                rows[p] = {"problem": p, "imported": False, "valid": False, "seen": 0, "heldout": 0,
                           "complete": False, "checked": False, "folder": "",
                           "seconds": round(time.perf_counter() - t0, 1),
                           "why": f"TimeoutError: more than {timeout:g} s" if killed
                           # a SIGKILL it was not sent here: the kernel's, for memory, most likely
                           else "the import process was killed (SIGKILL) within the timeout: out of memory, most "
                                "likely" if proc.exitcode == -9
                           else f"the import process died (exit code {proc.exitcode})"}
            proc.join(timeout=5)
            del running[p]
            print(f"[{sum(q in rows for q in paths)}/{len(paths)}] {p}: complete={rows[p]['complete']} "
                  f"checked={rows[p]['checked']} {rows[p]['seconds']} s", file=sys.stderr, flush=True)
            if on_row is not None:
                on_row(rows)
    return [rows[p] for p in paths]


def table(rows: list[dict]) -> tuple[list[str], int]:
    """The markdown tables of ``rows``: one line per folder, then one per problem; and the count of folders."""
    by_folder: dict[str, list[dict]] = collections.defaultdict(list)
    for r in rows:
        by_folder[str(Path(r["problem"]).parent.name)].append(r)
    lines = ["| folder | problems | imported | validate as written | held-out >= 4 | complete | complete and "
             "self-checked | seconds (median) |", "|---|---|---|---|---|---|---|---|"]
    for folder, rs in sorted(by_folder.items()):
        secs = sorted(r["seconds"] for r in rs)
        lines.append(f"| {folder} | {len(rs)} | {sum(r['imported'] for r in rs)} | {sum(r['valid'] for r in rs)} | "
                     f"{sum(r['valid'] and r['heldout'] >= 4 for r in rs)} | {sum(r['complete'] for r in rs)} | "
                     f"{sum(r['complete'] and r['checked'] for r in rs)} | "
                     f"{secs[len(secs) // 2]:.1f} |")
    lines += ["", "| problem | imported | valid | seen | held-out | complete | first open point or refusal |",
              "|---|---|---|---|---|---|---|"]
    for r in rows:
        lines.append(f"| {Path(r['problem']).parent.name}/{Path(r['problem']).name} | {r['imported']} | "
                     f"{r['valid']} | {r['seen']} | {r['heldout']} | {r['complete']} | {r['why']} |")
    return lines, len(by_folder)


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("kind", choices=("kernelbench", "aka"))
    ap.add_argument("folders", nargs="+")
    ap.add_argument("--out", required=True)
    ap.add_argument("--json", help="also write the rows as JSON here, after every problem (an interrupted run "
                    "keeps the rows it finished)")
    ap.add_argument("--resume", action="store_true", help="keep the rows --json already holds; import the rest")
    ap.add_argument("--jobs", type=int, default=2)
    ap.add_argument("--timeout", type=float, default=120.0)
    ap.add_argument("--keep", default="", help="import into this task root and keep the folders (for `arena tasks "
                    "check --tasks-root` on a GPU); each problem goes to a scratch root otherwise")
    ap.add_argument("--device", default="cpu", choices=("cpu", "cuda"), help="kernelbench: where each import's own "
                    "check of its reference against the original runs (`arena tasks import kernelbench --device`); "
                    "aka: the GPU each finished task is checked on, its failing drafts taken out (`arena tasks "
                    "import aka --device`)")
    ap.add_argument("--from-json", action="store_true", help="write the tables of the rows --json holds (an "
                    "interrupted run's), importing nothing")
    a = ap.parse_args()
    if a.from_json:
        rows = json.loads(Path(a.json).read_text())
        lines, _ = table(rows)
        Path(a.out).write_text("\n".join(lines) + "\n")
        return 0
    if a.kind == "kernelbench":
        paths = sorted(str(p) for f in a.folders for p in Path(f).glob("*.py"))
    else:
        paths = sorted(str(p.parent) for f in a.folders for p in Path(f).rglob("config.yaml"))
    done: dict[str, dict] = {}
    if a.resume and a.json and Path(a.json).is_file():
        done = {r["problem"]: r for r in json.loads(Path(a.json).read_text()) if r["problem"] in paths}

    def keep_rows(rows: dict[str, dict]) -> None:
        if a.json:
            tmp = Path(a.json + ".tmp")
            tmp.write_text(json.dumps([rows[p] for p in paths if p in rows], indent=1))
            tmp.replace(a.json)

    rows = run_all(a.kind, paths, a.jobs, a.timeout, a.keep, done, keep_rows, a.device)
    lines, folders = table(rows)
    Path(a.out).write_text("\n".join(lines) + "\n")
    keep_rows({r["problem"]: r for r in rows})
    print("\n".join(lines[:2 + folders]))
    return 0


if __name__ == "__main__":
    sys.exit(main())

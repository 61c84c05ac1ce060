"""Named task splits of the environment: which task ids an episode may draw from.

all, dev (configs/suites/dev.yaml: a few quick tasks), a category (hip2hip,
triton2triton, torch2hip), level1 / level2 / level3 (difficulty), and verified: tasks
whose shipped solution, unchanged since (same sha256), passed every split on a GPU in the
committed validation records (reports/validation/*records.jsonl[.gz]) with the baseline
passing too.
"""

from __future__ import annotations

import gzip
import json
from pathlib import Path
from typing import Iterator

from arena.errors import ArenaError
from arena.records import file_sha256
from arena.taskdef.loader import CATEGORIES, DEFAULT_TASKS_DIR, load_suite, load_task, select_tasks

LEVELS = {"level1": 1, "level2": 2, "level3": 3}
SPLITS = ("all", "dev", *CATEGORIES, *LEVELS, "verified")


def _repo_of(tasks_dir: Path) -> Path:
    return tasks_dir.resolve().parent


def _validation_records(folder: Path) -> Iterator[dict]:
    for path in sorted(folder.glob("*records.jsonl*")):
        opener = gzip.open if path.suffix == ".gz" else open
        with opener(path, "rt") as f:
            for line in f:
                line = line.strip()
                if line:
                    try:
                        yield json.loads(line)
                    except json.JSONDecodeError:
                        continue


def _latest_gpu_checks(folder: Path) -> dict[tuple[str, str, str, str], dict]:
    """(task id, agent, split, the candidate's sha256) -> the newest record of it a GPU (cuda or rocm) wrote, among
    the validation records in ``folder``."""
    latest: dict[tuple[str, str, str, str], dict] = {}
    for r in _validation_records(folder):
        if (r.get("device") or {}).get("kind") not in ("cuda", "rocm"):
            continue
        key = (r["task_id"], r.get("agent", ""), r["split"], (r.get("candidate") or {}).get("sha256", ""))
        if key not in latest or r.get("finished_at", "") >= latest[key].get("finished_at", ""):
            latest[key] = r
    return latest


def verified_ids(tasks_dir: Path | str | None = None, validation_dir: Path | str | None = None) -> list[str]:
    tasks_dir = Path(tasks_dir) if tasks_dir is not None else DEFAULT_TASKS_DIR
    folder = Path(validation_dir) if validation_dir is not None else _repo_of(tasks_dir) / "reports" / "validation"
    latest = _latest_gpu_checks(folder)
    out = []
    for folder_ in select_tasks("all", tasks_dir):
        task = load_task(folder_, validate=False)
        solution = task.kernel_file("solution")
        if solution is None:
            continue
        sol_sha = file_sha256(solution)
        sol = {k[2]: r["status"] for k, r in latest.items() if k[0] == task.id and k[1] == "solution"
               and k[3] == sol_sha}
        base = {k[2]: r["status"] for k, r in latest.items() if k[0] == task.id and k[1] == "baseline"}
        if {"seen", "heldout"} <= set(sol) and all(s == "PASSED" for s in sol.values()) \
                and {"seen", "heldout"} <= set(base) and all(s == "PASSED" for s in base.values()):
            out.append(task.id)
    return out


def unvalidated_kernels(tasks_dir: Path | str | None = None,
                        validation_dir: Path | str | None = None) -> list[tuple[str, str, str]]:
    """(task id, role, why) of every shipped kernel file (and torch2hip reference, the baseline there) that does not
    stand checked on a GPU as it is: no GPU record in the validation folder evaluated its exact content, or the newest
    that did, on the seen or the held-out split, was at other configs than the task has now, or did not pass (a
    specialised kernel: passed its held-out configs, which it is meant to fail)."""
    from arena.evaluation.parent import Candidate

    tasks_dir = Path(tasks_dir) if tasks_dir is not None else DEFAULT_TASKS_DIR
    folder = Path(validation_dir) if validation_dir is not None else _repo_of(tasks_dir) / "reports" / "validation"
    latest = _latest_gpu_checks(folder)

    def sizes(params: dict) -> str:
        return json.dumps({k: v for k, v in params.items() if k != "name"}, sort_keys=True)

    stale = []
    for f in select_tasks("all", tasks_dir):
        task = load_task(f, validate=False)
        for role in ("baseline", "solution", "specialised"):
            path = task.kernel_file(role)
            if role != "baseline" and path is None:
                continue
            sha = Candidate(task, path, role).sha256()
            checks = {s: latest.get((task.id, role, s, sha)) for s in ("seen", "heldout")}
            if not any(checks.values()):
                stale.append((task.id, role, "no GPU record evaluated it as it is"))
                continue
            for split, r in checks.items():
                must_pass = not (role == "specialised" and split == "heldout")
                if r is None:
                    why = f"not checked on its {split} configs as it is"
                elif sorted(sizes(dict(c.params)) for c in task.configs(split)) != \
                        sorted(sizes(c.get("params") or {}) for c in r.get("configs") or []):
                    why = f"its {split} configs changed since its last check"
                elif (r.get("status") == "PASSED") != must_pass:
                    why = f"{r.get('status')} on its {split} configs at its last check"
                else:
                    continue
                stale.append((task.id, role, why))
    return stale


def task_ids(split: str = "all", tasks_dir: Path | str | None = None) -> list[str]:
    """The task ids of a named split."""
    root = Path(tasks_dir) if tasks_dir is not None else DEFAULT_TASKS_DIR
    if split not in SPLITS:
        raise ArenaError(f"unknown split {split!r}; choose one of {', '.join(SPLITS)}", key="split")
    if split == "verified":
        return verified_ids(root)
    if split == "dev":
        suite = _repo_of(root) / "configs" / "suites" / "dev.yaml"
        if not suite.is_file():
            raise ArenaError("the dev split needs configs/suites/dev.yaml", path=suite)
        folders = select_tasks(load_suite(suite)["tasks"], root)
    else:
        folders = select_tasks("all" if split in ("all", *LEVELS) else split, root)
    ids = [f"{f.parent.name}/{f.name}" for f in folders]
    if split in LEVELS:
        ids = [i for i, f in zip(ids, folders) if load_task(f, validate=False).difficulty == LEVELS[split]]
    return ids

"""arena tasks check (the author's validator) on the cpu backend."""

from __future__ import annotations

import shutil
from pathlib import Path

from arena.authoring.check import Evaluations, check_task, check_tasks
from arena.devices import detect
from arena.runner import run
from arena.units import RunPlan

FIX = Path(__file__).parent / "fixtures" / "tasks" / "triton2triton" / "axpy"


def _copy(tmp_path) -> Path:
    dest = tmp_path / "tasks" / "triton2triton" / "axpy"
    shutil.copytree(FIX, dest)
    return dest


def test_fixture_passes(tmp_path):
    row = check_task(_copy(tmp_path), detect("cpu"))
    assert row.ok, row.problems
    assert row.baseline == "smoke 2/2"


def test_degenerate_and_insensitive_references_fail(tmp_path):
    folder = _copy(tmp_path)
    (folder / "reference.py").write_text("def reference(x, y, n, alpha):\n    return 1e-4 * y\n")
    row = check_task(folder, detect("cpu"))
    assert not row.ok
    text = "\n".join(row.problems)
    assert "std" in text and "do not depend on input x" in text


def test_a_broken_starting_kernel_fails_the_check(tmp_path):
    folder = _copy(tmp_path)
    src = (folder / "baseline.py").read_text().replace("alpha * x + y", "alpha * x - y")
    (folder / "baseline.py").write_text(src)
    row = check_task(folder, detect("cpu"))
    assert not row.ok and any("INCORRECT_NUMERICAL" in p for p in row.problems)


def test_recorded_verdicts_of_the_same_files_are_reused(tmp_path):
    cpu = detect("cpu")
    folder = _copy(tmp_path)
    out = tmp_path / "run"
    run(RunPlan(agents=("baseline",), tasks=(folder,), splits=("smoke",)), cpu, out)
    from arena import records

    recorded = list(records.read(out / "records.jsonl"))
    rows = check_tasks([folder], cpu, recorded=recorded)
    assert rows[0].ok
    ev = Evaluations(cpu, recorded)
    from arena.taskdef.loader import load_task

    task = load_task(folder)
    assert ev.get(task, "baseline", ["smoke"], timing=False) == recorded and ev.reused == 1
    # a changed file is evaluated again, not taken from the records
    (folder / "baseline.py").write_text((folder / "baseline.py").read_text() + "\n# changed\n")
    ev2 = Evaluations(cpu, recorded)
    fresh = ev2.get(load_task(folder), "baseline", ["smoke"], timing=False)
    assert ev2.reused == 0 and fresh[0].candidate["sha256"] != recorded[0].candidate["sha256"]


def test_recorded_verdicts_of_other_configs_are_not_reused(tmp_path):
    cpu = detect("cpu")
    folder = _copy(tmp_path)
    out = tmp_path / "run"
    run(RunPlan(agents=("baseline",), tasks=(folder,), splits=("smoke",)), cpu, out)
    from arena import records
    from arena.taskdef.loader import load_task

    recorded = list(records.read(out / "records.jsonl"))
    smoke = folder / "configs" / "smoke.yaml"
    smoke.write_text(smoke.read_text() + "- {name: added-later, n: 77}\n")
    ev = Evaluations(cpu, recorded)
    fresh = ev.get(load_task(folder), "baseline", ["smoke"], timing=False)
    assert ev.reused == 0 and "added-later" in [c.name for c in fresh[0].configs]

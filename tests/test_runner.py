"""arena run: the run directory, records, resume without loss or duplication, bad tasks
recorded as failures while the run goes on."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from arena import records
from arena.devices import detect
from arena.errors import ArenaError
from arena.records import Status
from arena.runner import run
from arena.units import RunPlan

FIX = Path(__file__).parent / "fixtures" / "tasks"


@pytest.fixture()
def tasks_dir(tmp_path):
    root = tmp_path / "tasks"
    shutil.copytree(FIX / "triton2triton" / "axpy", root / "triton2triton" / "axpy")
    broken = root / "triton2triton" / "broken"
    shutil.copytree(FIX / "triton2triton" / "axpy", broken)
    (broken / "task.yaml").write_text((broken / "task.yaml").read_text().replace("id: triton2triton/axpy\n",
                                                                                 "id: triton2triton/broken\n")
                                      .replace("dtype: float32, shape: [n]}", "dtype: float33, shape: [n]}", 1))
    return root


def test_run_records_failures_and_goes_on(tasks_dir, tmp_path):
    cpu = detect("cpu")
    plan = RunPlan(agents=("baseline",), tasks=tuple(sorted(tasks_dir.glob("*/*"))), splits=("smoke",))
    out = tmp_path / "runs" / "r1"
    written = run(plan, cpu, out)
    recs = list(records.read(out / "records.jsonl"))
    assert [r.to_dict() for r in recs] == [w.to_dict() for w in written]
    by_task = {r.task_id: r for r in recs}
    assert by_task["triton2triton/axpy"].status is Status.PASSED
    broken = by_task["triton2triton/broken"]
    assert broken.status is Status.TASK_ERROR
    assert "task.yaml" in broken.message and "signature.inputs.0.dtype" in broken.message
    art = out / "artifacts" / "baseline" / "triton2triton" / "axpy" / "0"
    assert (art / "baseline.py").is_file() and (art / "worker.log").is_file()
    assert (out / "run.json").is_file()


def test_resume_finishes_without_duplicates(tasks_dir, tmp_path):
    cpu = detect("cpu")
    axpy = tasks_dir / "triton2triton" / "axpy"
    out = tmp_path / "runs" / "r2"
    run(RunPlan(agents=("baseline",), tasks=(axpy,), splits=("smoke",)), cpu, out)
    # simulate a run killed while writing: a torn last line
    with open(out / "records.jsonl", "ab") as f:
        f.write(b'{"task_id": "triton2triton/axpy", "trunc')
    with pytest.raises(ArenaError):
        run(RunPlan(agents=("baseline",), tasks=(axpy,), splits=("smoke", "heldout")), cpu, out)
    plan = RunPlan(agents=("baseline", "solution"), tasks=(axpy,), splits=("smoke",), repeats=2)
    written = run(plan, cpu, out, resume=True, timing=False)
    # repeat 0 of baseline was done; repeat 1 is new; the fixture has no solution (not attempted)
    assert [(w.agent, w.repeat) for w in written] == [("baseline", 1)]
    recs = list(records.read(out / "records.jsonl"))
    keys = [(r.agent, r.task_id, r.repeat, r.split) for r in recs]
    assert len(keys) == len(set(keys)) == 2
    assert run(plan, cpu, out, resume=True) == []


def test_a_harness_failure_is_recorded_and_the_run_goes_on(tasks_dir, tmp_path, monkeypatch):
    import arena.units as runner

    calls = []
    real = runner.evaluate

    def flaky(task, *args, **kwargs):
        calls.append(task.id)
        if len(calls) == 1:
            raise RuntimeError("the harness broke")
        return real(task, *args, **kwargs)

    monkeypatch.setattr(runner, "evaluate", flaky)
    axpy = tasks_dir / "triton2triton" / "axpy"
    out = tmp_path / "runs" / "r3"
    written = run(RunPlan(agents=("baseline",), tasks=(axpy,), splits=("smoke",), repeats=2), detect("cpu"), out)
    assert [w.status for w in written] == [Status.HARNESS_ERROR, Status.PASSED]
    assert "the harness broke" in written[0].message and written[0].status.kind == "infra"

"""arena run: the run directory, records, resume without loss or duplication, bad tasks
recorded as failures while the run goes on."""

from __future__ import annotations

import os
import shutil
from pathlib import Path

import pytest
from stuck import wait_or_dump  # tests/ is on the path

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
    with pytest.raises(ArenaError, match="--resume"):
        run(RunPlan(agents=("baseline",), tasks=(axpy,), splits=("smoke",), repeats=2), cpu, out)
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


def _count_proposals(monkeypatch) -> list[str]:
    """Wrap the agents the units get so that each proposal is counted."""
    import arena.units as units

    asked: list[str] = []
    real_get = units.get_agent

    class Counting:
        def __init__(self, agent):
            self._agent = agent

        def __getattr__(self, name):
            return getattr(self._agent, name)

        def propose(self, task, art, ctx):
            asked.append(task.id)
            return self._agent.propose(task, art, ctx)

    def get_agent(*args, **kwargs):
        return Counting(real_get(*args, **kwargs))

    monkeypatch.setattr(units, "get_agent", get_agent)
    return asked


def _failing_evaluate(monkeypatch, times: int) -> None:
    import arena.units as units

    real = units.evaluate
    calls = []

    def flaky(task, *args, **kwargs):
        calls.append(task.id)
        if len(calls) <= times:
            raise RuntimeError("the harness broke")
        return real(task, *args, **kwargs)

    monkeypatch.setattr(units, "evaluate", flaky)


def test_resume_redoes_a_harness_failure_with_the_same_candidate(tasks_dir, tmp_path, monkeypatch):
    asked = _count_proposals(monkeypatch)
    _failing_evaluate(monkeypatch, times=1)
    axpy = tasks_dir / "triton2triton" / "axpy"
    out = tmp_path / "runs" / "redo"
    plan = RunPlan(agents=("baseline",), tasks=(axpy,), splits=("smoke",))
    first = run(plan, detect("cpu"), out)
    assert [(v.status, v.attempt) for v in first] == [(Status.HARNESS_ERROR, 1)]
    again = run(plan, detect("cpu"), out, resume=True)
    assert [(v.status, v.attempt) for v in again] == [(Status.PASSED, 2)]
    assert asked == ["triton2triton/axpy"]          # the agent was asked once; its file was evaluated again
    every = list(records.read(out / "records.jsonl"))
    assert [v.status for v in every] == [Status.HARNESS_ERROR, Status.PASSED]   # nothing recorded is lost
    assert [v.status for v in records.current(every)] == [Status.PASSED]
    assert run(plan, detect("cpu"), out, resume=True) == []                   # a pass is not redone


def test_resume_stops_redoing_at_the_run_s_limit(tasks_dir, tmp_path, monkeypatch):
    import json

    _failing_evaluate(monkeypatch, times=10)
    axpy = tasks_dir / "triton2triton" / "axpy"
    out = tmp_path / "runs" / "limit"
    plan = RunPlan(agents=("baseline",), tasks=(axpy,), splits=("smoke",))
    run(plan, detect("cpu"), out, infra_retries=1)
    assert json.loads((out / "run.json").read_text())["infra_retries"] == 1
    assert [v.attempt for v in run(plan, detect("cpu"), out, resume=True)] == [2]   # the run's own limit
    assert run(plan, detect("cpu"), out, resume=True) == []
    # asking for more on the command line raises the limit, and the run says so
    assert [v.attempt for v in run(plan, detect("cpu"), out, resume=True, infra_retries=2)] == [3]
    assert json.loads((out / "run.json").read_text())["infra_retries"] == 2
    with pytest.raises(ArenaError, match="infra-retries"):
        run(plan, detect("cpu"), out, resume=True, infra_retries=-1)


def test_a_candidate_failure_is_not_redone(tasks_dir, tmp_path):
    axpy = tasks_dir / "triton2triton" / "axpy"
    out = tmp_path / "runs" / "cand"
    plan = RunPlan(agents=("baseline",), tasks=(axpy,), splits=("smoke",))
    run(plan, detect("cpu"), out)
    # the recorded verdict is the candidate's own failure: resume owes nothing
    recs = list(records.read(out / "records.jsonl"))
    recs[0].status = Status.COMPILE_ERROR
    (out / "records.jsonl").unlink()
    records.append(out / "records.jsonl", recs[0])
    assert run(plan, detect("cpu"), out, resume=True) == []


def test_the_gpu_splits_are_refused_on_the_cpu_before_anything_runs(tmp_path):
    """seen, heldout and random are sized for a GPU: on the cpu backend a run and an evaluation
    refuse them in one line naming the split that runs there, instead of recording a TIMEOUT
    (or failing to draw a random config) that blames the kernel for the machine."""
    from arena.evaluation.parent import Candidate, evaluate
    from arena.taskdef.loader import load_task

    cpu = detect("cpu")
    rms_norm = Path(__file__).resolve().parents[1] / "tasks" / "triton2triton" / "rms_norm"
    out = tmp_path / "runs" / "r"
    for splits in (("seen",), ("smoke", "heldout"), ("random",)):
        with pytest.raises(ArenaError, match=r"needs? a GPU .*--split smoke"):
            run(RunPlan(agents=("baseline",), tasks=(rms_norm,), splits=splits), cpu, out)
        assert not out.exists()
    task = load_task(rms_norm)
    with pytest.raises(ArenaError, match="seen, heldout, random need a GPU"):
        evaluate(task, Candidate(task, None), ["seen", "heldout", "random"], cpu)


def _harness_processes(cache: Path) -> list[int]:
    """The processes working in ``cache``'s folders (the run's trusted and candidate processes)."""
    found = []
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            try:
                if str(cache) in os.readlink(entry / "cwd"):
                    found.append(int(entry.name))
            except OSError:
                continue
    return found


def test_sigterm_stops_a_run_and_leaves_no_process_behind(tasks_dir, tmp_path):
    import signal
    import subprocess
    import sys
    import time

    cache = tmp_path / "cache"
    env = {**os.environ, "ARENA_CACHE_DIR": str(cache)}
    out = tmp_path / "runs" / "term"
    proc = subprocess.Popen([sys.executable, "-m", "arena", "--tasks-dir", str(tasks_dir), "run", "--agent", "baseline",
                             "--tasks", "triton2triton/axpy", "--split", "smoke", "--repeats", "50", "--device", "cpu",
                             "--out", str(out), "--quiet", "--no-prebuild"], env=env, stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True,
                            # started with SIGTERM held (a mask is inherited): the run lets it through itself
                            preexec_fn=lambda: signal.pthread_sigmask(signal.SIG_BLOCK, {signal.SIGTERM}))
    try:
        deadline = time.monotonic() + 120
        while not (out / "records.jsonl").is_file() or not _harness_processes(cache):   # evaluations under way
            assert proc.poll() is None and time.monotonic() < deadline, proc.stderr.read()
            time.sleep(0.2)
        proc.send_signal(signal.SIGTERM)
        assert wait_or_dump(proc, 60) == 143
    finally:
        proc.kill()
    assert "terminated" in proc.stderr.read()
    deadline = time.monotonic() + 10
    while _harness_processes(cache) and time.monotonic() < deadline:    # killed ones may take a moment to go
        time.sleep(0.2)
    assert _harness_processes(cache) == []
    kept = list(records.read(out / "records.jsonl"))
    assert 1 <= len(kept) < 50 and all(v.status is Status.PASSED for v in kept)   # what was recorded stays

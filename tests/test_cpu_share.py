"""Evaluations side by side share the host's CPUs: each one's processes run torch on their share
(``processes.cpu_share``), not on every CPU each. At torch's default, a reference that loops in
Python over small CPU operations, four evaluations side by side, ran past the correctness stage's
limit on an H200's host."""

from __future__ import annotations

import os
import shutil
from pathlib import Path

import pytest
import torch

from arena.evaluation import processes
from arena.evaluation.parent import Candidate, evaluate
from arena.records import Status
from arena.taskdef.loader import load_task

AXPY = Path(__file__).parent / "fixtures" / "tasks" / "triton2triton" / "axpy"


def _threads_task(root: Path, reference_adds: str, candidate_adds: str) -> Path:
    """axpy, its reference adding ``reference_adds`` to every element and its baseline ``candidate_adds``
    (expressions read in the process each runs in)."""
    folder = root / "triton2triton" / "axpy"
    shutil.copytree(AXPY, folder)
    (folder / "reference.py").write_text(
        f"import torch\n\n\ndef reference(x, y, n, alpha):\n    return alpha * x + y + ({reference_adds})\n"
    )
    base = (folder / "baseline.py").read_text()
    base = base.replace("tl.store(out_ptr + offs, alpha * x + y, mask=mask)",
                        "tl.store(out_ptr + offs, alpha * x + y + extra, mask=mask)")
    base = base.replace("def _axpy_kernel(x_ptr, y_ptr, out_ptr, n, alpha, BLOCK: tl.constexpr):",
                        "def _axpy_kernel(x_ptr, y_ptr, out_ptr, n, alpha, extra, BLOCK: tl.constexpr):")
    base = base.replace("(x, y, out, n, alpha, BLOCK=BLOCK)",
                        f"(x, y, out, n, alpha, float({candidate_adds}), BLOCK=BLOCK)")
    assert "extra" in base and candidate_adds in base
    (folder / "baseline.py").write_text("import torch\n" + base)
    return folder


@pytest.fixture
def twelve_cpus(monkeypatch):
    """This process (the harness's parent, which shares the CPUs out) may run on 12 CPUs."""
    monkeypatch.setattr(os, "sched_getaffinity", lambda pid: set(range(12)))
    monkeypatch.delenv(processes.AT_ONCE_ENV, raising=False)


def test_a_share_is_the_cpus_over_the_evaluations_planned_or_running(twelve_cpus):
    assert processes.cpu_share() == 12
    assert processes.cpu_share(running=5) == 2
    with processes.at_once(3):
        assert processes.cpu_share() == 4
        assert processes.cpu_share(running=6) == 2, "more running than planned: the running count"
        with processes.at_once(50):
            assert processes.cpu_share() == 1, "never fewer than one"
        assert processes.cpu_share() == 4, "the outer plan again once the inner ends"
    assert processes.AT_ONCE_ENV not in os.environ


def test_a_process_that_is_one_of_several_takes_its_share_and_hands_it_on(twelve_cpus):
    before = torch.get_num_threads()
    try:
        processes.one_of(6)
        assert torch.get_num_threads() == 2
        assert os.environ[processes.AT_ONCE_ENV] == "6", "the evaluations it starts share the same way"
    finally:
        torch.set_num_threads(before)
        os.environ.pop(processes.AT_ONCE_ENV, None)


@pytest.mark.parametrize("side, reference_adds, candidate_adds", [
    ("trusted process (the reference)", "torch.get_num_threads()", "4"),
    ("candidate's process", "4", "torch.get_num_threads()"),
])
def test_each_process_of_an_evaluation_runs_torch_on_its_share(twelve_cpus, cpu, tmp_path, side, reference_adds,
                                                               candidate_adds):
    """Three evaluations planned on 12 CPUs: 4 threads in each process of each (the other side adds a
    literal 4: the verdict passes only where the side under test had 4)."""
    task = load_task(_threads_task(tmp_path, reference_adds, candidate_adds))
    with processes.at_once(3):
        (v,) = evaluate(task, Candidate(task, None, "baseline"), ["smoke"], cpu)
    assert v.status is Status.PASSED, f"{side}: {v.message}"
    assert torch.get_num_threads() != 4 or os.cpu_count() == 4, "the parent's own threads are not the share's"


def test_a_run_of_several_workers_gives_each_evaluation_its_share(twelve_cpus, tmp_path, capsys):
    from arena.cli import main

    _threads_task(tmp_path / "tasks", "torch.get_num_threads()", "4")
    assert main(["--tasks-dir", str(tmp_path / "tasks"), "run", "--agent", "baseline", "--tasks",
                 "triton2triton/axpy", "--device", "cpu", "--no-prebuild", "--workers-per-gpu", "3",
                 "--split", "smoke", "--out", str(tmp_path / "run")]) == 0
    out = capsys.readouterr().out
    row = next(line for line in out.splitlines() if line.startswith("  baseline "))
    assert "PASSED" in row, out

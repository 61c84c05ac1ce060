"""A task's starting kernel timed against itself must read 1x: its calls replayed as a candidate's are, against the
same file as the task's baseline (replayed too where its call can be recorded, called where not). Where they
disagree (a baseline called, whose call leaves the device idle between its launches: 140.9 us called, 5.3 us
replayed, for an import on an H200), every candidate would be credited with the difference; ``tasks check``
refuses the task there, and ``--drop-failing-drafts`` may take such a draft out."""

from __future__ import annotations

from arena.authoring.check import CheckRow, failing_configs, self_timing_problems
from arena.devices import Device, detect
from arena.records import ConfigResult, SideTiming, Status, Verdict

GPU = Device(kind="cuda", name="H200", vendor="nvidia", arch="sm_90")


def _config(name: str, base_us: float, cand_us: float, ci: tuple[float, float] | None) -> ConfigResult:
    c = ConfigResult(name, {"n": 1}, Status.PASSED)
    c.baseline, c.candidate = SideTiming(base_us, 1.0, 10), SideTiming(cand_us, 1.0, 10)
    c.speedup, c.speedup_ci = base_us / cand_us, ci
    return c


def _row(task: str, agent: str = "baseline") -> CheckRow:
    seen = Verdict(task, task.split("/")[0], "seen", Status.PASSED, {"origin": agent}, {}, agent=agent, configs=[
        _config("case0", 140.9, 5.3, (24.0, 29.0)),        # the host's gaps: far past the ratio
        _config("draft-x2", 206.0, 205.9, (0.99, 1.01)),   # a device-bound call: both timings agree
        _config("draft-2", 30.0, 25.0, (1.10, 1.30)),      # past the ratio, but not the whole interval
    ])
    held = Verdict(task, task.split("/")[0], "heldout", Status.PASSED, {"origin": agent}, {}, agent=agent, configs=[
        _config("draft-odd", 50.0, 80.0, (0.55, 0.70)),    # slower replayed: disagreement either way
    ])
    return CheckRow(task, verdicts=[seen, held])


def test_a_starting_kernel_whose_two_timings_disagree_fails_at_those_configs():
    row = _row("triton2triton/reshape")
    got = self_timing_problems(row.verdicts, "triton2triton")
    assert sorted(got) == [("heldout", "draft-odd"), ("seen", "case0")]
    assert got[("seen", "case0")].startswith("the starting kernel timed against itself reads 26.58x (140.9 us as the "
                                             "baseline, 5.3 us as a candidate)")
    # on a GPU they are the configs the check names failing (the drafts among them may be taken out)
    assert {k: v for k, v in failing_configs(row, GPU).items()} == got
    assert failing_configs(row, detect("cpu")) == {}, "no timing on the CPU: nothing to compare"


def test_the_ratio_is_not_asked_of_another_agent_or_of_torch2hip():
    assert self_timing_problems(_row("triton2triton/reshape", agent="someone").verdicts, "triton2triton") == {}
    # torch2hip's baseline is the eager reference, its launches from Python one operation at a time
    assert self_timing_problems(_row("torch2hip/lstm").verdicts, "torch2hip") == {}
    assert failing_configs(_row("torch2hip/lstm"), GPU) == {}


def test_the_check_of_a_task_without_a_solution_fails_where_its_starting_kernel_disagrees_with_itself(tmp_path,
                                                                                                       monkeypatch):
    """The row of ``tasks check`` (here its timed verdicts given, as a run's recorded ones are, and its reference's
    checks, which need the GPU, passed over) names each config."""
    import shutil
    from pathlib import Path

    import arena.authoring.check as check
    from arena.authoring.check import check_task

    monkeypatch.setattr(check, "reference_problems", lambda *args: [])

    folder = tmp_path / "triton2triton" / "axpy"
    shutil.copytree(Path(__file__).parent / "fixtures" / "tasks" / "triton2triton" / "axpy", folder)
    (folder / "solution.py").unlink(missing_ok=True)
    verdicts = _row("triton2triton/axpy").verdicts

    class Given:
        def get(self, task, role, splits, *, timing=None, as_given=False):
            assert role == "baseline" and timing is None, "with no solution the baseline's verdicts are timed"
            return [v for v in verdicts if v.split in splits]

    row = check_task(folder, GPU, Given())
    assert not row.ok
    assert any(p.startswith("seen/case0: the starting kernel timed against itself reads 26.58x") for p in row.problems)
    assert any(p.startswith("heldout/draft-odd: the starting kernel timed against itself reads 0.62x")
               for p in row.problems), row.problems
    assert not any(p.startswith(("seen/draft-x2:", "seen/draft-2:")) for p in row.problems)

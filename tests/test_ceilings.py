"""The roofline and the speed-of-light score on known times; measured ceilings kept per device
and used before the datasheet; the task check's rule on solutions near the measured roofline."""

from __future__ import annotations

import json
import math

import pytest

from arena.authoring.check import near_roofline
from arena.devices import Device
from arena.devices.ceilings import ceilings_for, roofline_fraction, roofline_seconds, sol_score
from arena.records import ConfigResult, Status, Verdict
from arena.report import metrics

H100 = Device(kind="cuda", name="NVIDIA H100 80GB HBM3", vendor="nvidia", arch="sm_90")
CEIL = {"bytes_per_s": 3.0e12, "float16": 800e12, "float32": 50e12}


def test_the_roofline_is_the_larger_of_compute_and_memory_time():
    # 3 GB at 3 TB/s: 1 ms of memory time; 8e11 FLOP of fp16 at 800 TFLOP/s: 1 ms as well
    assert roofline_seconds("float16", 0, 3e9, CEIL) == pytest.approx(1e-3)
    assert roofline_seconds("float16", 8e11, 0, CEIL) == pytest.approx(1e-3)
    assert roofline_seconds("float16", 1.6e12, 3e9, CEIL) == pytest.approx(2e-3)     # compute-bound here
    assert roofline_seconds("float16", 8e11, 6e9, CEIL) == pytest.approx(2e-3)       # memory-bound here
    assert roofline_seconds("int8", 5e10, 0, CEIL) == pytest.approx(1e-3)            # no int8 peak: float32's
    assert roofline_seconds("float16", 0, 0, CEIL) is None and roofline_seconds("float16", 1, 1, None) is None
    assert roofline_fraction("float16", 0, 3e9, 2e-3, CEIL) == pytest.approx(0.5)


def test_speed_of_light_is_the_share_of_the_gap_closed():
    # baseline 10 ms, roofline 2 ms: a 6 ms kernel closes half the gap, a 2 ms kernel all of it
    assert sol_score(10e-3, 6e-3, 2e-3) == pytest.approx(0.5)
    assert sol_score(10e-3, 2e-3, 2e-3) == pytest.approx(1.0)
    assert sol_score(10e-3, 10e-3, 2e-3) == pytest.approx(0.0)
    assert sol_score(10e-3, 14e-3, 2e-3) == pytest.approx(-0.5)          # slower than the baseline
    assert sol_score(2e-3, 1e-3, 2e-3) is None                           # no gap to close
    assert sol_score(10e-3, 6e-3, None) is None


def test_speed_of_light_is_absent_with_a_reason_where_the_baseline_is_near_or_past_the_roofline():
    from arena.devices.ceilings import SOL_MARGIN, sol_absent

    # a baseline faster than the roofline time: the formula overcounts; a faster kernel never reads as negative
    assert sol_score(1.5e-3, 0.7e-3, 2e-3) is None
    assert "overcounts" in sol_absent(1.5e-3, 2e-3) and "1500.0 us" in sol_absent(1.5e-3, 2e-3)
    # just above it: a gap smaller than the estimate's error is not scored against (it would read 4.0 here)
    assert sol_score(2.1e-3, 1.7e-3, 2e-3) is None and "within" in sol_absent(2.1e-3, 2e-3)
    assert sol_score(SOL_MARGIN * 2e-3, 2e-3, 2e-3) == pytest.approx(1.0) and sol_absent(SOL_MARGIN * 2e-3, 2e-3) == ""
    assert "no roofline" in sol_absent(1e-3, None)


def test_measured_ceilings_come_before_the_datasheet_and_say_so(tmp_path):
    store = tmp_path / "ceilings.json"
    ceilings, source = ceilings_for(H100, store)
    assert source == "datasheet" and ceilings["bytes_per_s"] == 3.35e12
    store.write_text(json.dumps({"cuda:NVIDIA H100 80GB HBM3": {"ceilings": {"bytes_per_s": 3.0e12,
                                                                             "float16": 7.5e14}}}))
    ceilings, source = ceilings_for(H100, store)
    assert source == "measured" and ceilings["bytes_per_s"] == 3.0e12 and ceilings["float16"] == 7.5e14
    assert ceilings["int8"] == 1979e12                                   # not measured: the datasheet's
    other = Device(kind="cuda", name="Some Future GPU", vendor="nvidia", arch="sm_100")
    assert ceilings_for(other, store) == (None, "none")
    assert ceilings_for(Device(kind="cpu", name="x86", vendor="cpu", arch="x86_64"), store) == (None, "none")
    store.write_text("{not json")
    assert ceilings_for(H100, store)[1] == "datasheet"                   # a torn file is not a crash


def _solution(fraction: float, source: str) -> Verdict:
    return Verdict(task_id="hip2hip/t", category="hip2hip", split="heldout", status=Status.PASSED, candidate={},
                   device={}, configs=[ConfigResult("big", {}, Status.PASSED, roofline_fraction=fraction)],
                   ceilings={"source": source})


def test_a_solution_past_the_measured_roofline_fails_the_task_check():
    """Honest solutions ran at 0.90-1.09 of a copy's rate on an H100: past 110% of the best
    measured rate, or past the physical bound, the formula is taken to overcount."""
    assert near_roofline([_solution(0.95, "measured")]) == [] == near_roofline([_solution(1.05, "measured")])
    problems = near_roofline([_solution(1.2, "measured")])
    assert len(problems) == 1 and "heldout/big at 120% of the measured roofline" in problems[0]
    assert near_roofline([_solution(1.2, "datasheet")]) == []
    flagged = _solution(1.2, "datasheet")
    flagged.configs[0].flags.append("above_roofline")
    assert "faster than the device can be" in near_roofline([flagged])[0]


def _timed(split: str, configs: list[tuple[str, float, float, float]]) -> Verdict:
    """A solution's verdict from hand-made times: (name, baseline us, candidate us, roofline us)."""
    from arena.records import SideTiming
    from arena.timing.stats import geomean

    crs = [ConfigResult(n, {}, Status.PASSED, baseline=SideTiming(median_us=b, iqr_us=0.0, n=10),
                        candidate=SideTiming(median_us=c, iqr_us=0.0, n=10), speedup=b / c,
                        roofline_fraction=r / c) for n, b, c, r in configs]
    return Verdict(task_id="torch2hip/t", category="torch2hip", split=split, status=Status.PASSED, candidate={},
                   device={}, configs=crs, speedup=geomean([c.speedup for c in crs]), ceilings={"source": "measured"})


def test_the_task_check_refuses_a_slow_solution_and_a_formula_that_overcounts():
    from arena.authoring.check import speed_problems

    good = [_timed("seen", [("a", 300.0, 100.0, 50.0), ("b", 600.0, 250.0, 90.0)]),
            _timed("heldout", [("c", 200.0, 150.0, 40.0)])]
    assert speed_problems(good) == []
    # 2.5x geomean overall, but one config slower than its baseline (0.20x): refused
    one_slow = [_timed("seen", [("a", 300.0, 30.0, 20.0), ("b", 100.0, 500.0, 20.0), ("c", 900.0, 30.0, 20.0)])]
    assert [p for p in speed_problems(one_slow)] == ["solution seen/b: 0.20x, slower than the baseline"]
    # 0.99x whose interval reaches 1: noise, not slower
    noisy = _timed("seen", [("a", 300.0, 30.0, 20.0), ("b", 99.0, 100.0, 20.0)])
    noisy.configs[1].speedup_ci = (0.97, 1.01)
    assert speed_problems([noisy]) == []
    # a split whose geomean is 1.05x
    assert speed_problems([_timed("heldout", [("a", 105.0, 100.0, 20.0)])]) == [
        "solution heldout: geomean speedup 1.05x < 1.1x"]
    # the baseline already faster than the roofline time: the formula overcounts
    over = speed_problems([_timed("seen", [("a", 40.0, 20.0, 50.0)])])
    assert len(over) == 1 and "the baseline (40.0 us) runs at or past the roofline time (50.0 us)" in over[0]


def test_only_a_time_past_the_physical_bound_is_flagged_impossible(tmp_path, monkeypatch):
    """The measured ceilings are torch's kernels at their best, which a good kernel passes: the
    roofline fraction and the speed of light use them, the above_roofline flag (a time not
    trusted) the larger of measured and datasheet."""
    from arena.devices.ceilings import upper_bounds

    monkeypatch.setenv("ARENA_CACHE_DIR", str(tmp_path))
    store = tmp_path / "ceilings.json"
    store.write_text(json.dumps({"cuda:NVIDIA H100 80GB HBM3": {"ceilings": {"bytes_per_s": 3.0e12,
                                                                             "float16": 1.2e15}}}))
    bounds = upper_bounds(H100, store)
    assert bounds["bytes_per_s"] == 3.35e12 and bounds["float16"] == 1.2e15 and bounds["int8"] == 1979e12
    assert upper_bounds(Device(kind="cuda", name="Some Future GPU", vendor="nvidia", arch="sm_100"), store) is None


def _attempt(task, status, sol=None):
    return Verdict(task_id=task, category="hip2hip", split="seen", status=Status(status), candidate={}, device={},
                   configs=[ConfigResult("c", {}, Status(status))], speedup=2.0 if status == "PASSED" else None,
                   sol=sol, agent="a", run_id="r")


def test_the_report_s_speed_of_light_counts_failures_as_zero_and_regressions_as_no_gain():
    vs = [_attempt("hip2hip/a", "PASSED", 0.6), _attempt("hip2hip/b", "PASSED", -0.4),
          _attempt("hip2hip/c", "INCORRECT_NUMERICAL"), _attempt("hip2hip/d", "PASSED", None),
          _attempt("hip2hip/e", "HARNESS_ERROR")]
    s = metrics.summary(metrics.per_task(metrics.verdict_frame(vs)))
    row = s[(s.agent == "a") & (s.category == "all")].iloc[0]
    # a 0.6, b 0 (slower than the baseline), c 0 (incorrect); d untimed and e the harness's: left out
    assert row["sol_seen_mean"] == pytest.approx(0.2) and row["n_sol_seen"] == 3
    assert math.isnan(row["sol_heldout_mean"])

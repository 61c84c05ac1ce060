"""Report metrics on hand-made record sets with known answers."""

from __future__ import annotations

import math

import pytest

from arena.records import ConfigResult, Status, Verdict
from arena.report import metrics


def V(agent, task, split, status, speedup=None, *, category=None, repeat=0, flags=(), roofline=None, run="r"):
    cat = category or task.split("/")[0]
    return Verdict(task_id=task, category=cat, split=split, status=Status(status), candidate={}, device={},
                   configs=[ConfigResult("c", {}, Status(status))], speedup=speedup, flags=list(flags),
                   roofline_fraction=roofline, agent=agent, repeat=repeat, run_id=run)


def summary_of(verdicts):
    pt = metrics.per_task(metrics.verdict_frame(verdicts))
    s = metrics.summary(pt)
    return {(r.agent, r.category): r for r in s.itertuples(index=False)}, s


def test_known_answers_with_crashes_in_the_denominator():
    vs = [
        # a: four hip2hip tasks
        V("a", "hip2hip/t1", "seen", "PASSED", 2.0), V("a", "hip2hip/t1", "heldout", "PASSED", 4.0),
        V("a", "hip2hip/t2", "seen", "PASSED", 8.0), V("a", "hip2hip/t2", "heldout", "INCORRECT_NUMERICAL"),
        V("a", "hip2hip/t3", "seen", "CRASHED"), V("a", "hip2hip/t3", "heldout", "CRASHED"),
        V("a", "hip2hip/t4", "seen", "COMPILE_ERROR"), V("a", "hip2hip/t4", "heldout", "COMPILE_ERROR"),
    ]
    by, _ = summary_of(vs)
    r = by[("a", "hip2hip")]
    assert r.attempts == 4
    assert r.compile_rate == pytest.approx(0.75)
    assert r.correct_seen == pytest.approx(0.5)          # crashed and uncompiled tasks stay in the denominator
    assert r.correct_heldout == pytest.approx(0.25)
    assert r.n_seen_correct_heldout == 2
    assert r.drop_heldout == pytest.approx(0.5)          # 1 - P(held-out ok | seen ok) = 1 - 1/2
    assert r.speedup_seen_geomean == pytest.approx(4.0)  # geomean(2, 8), correct tasks only
    assert r.speedup_seen_mean == pytest.approx(5.0)
    assert r.speedup_heldout_geomean == pytest.approx(4.0)
    assert r.fast_0 == pytest.approx(0.5)
    assert r.fast_1 == pytest.approx(0.5)
    assert r.fast_2 == pytest.approx(0.25)               # 2.0 is not > 2
    # rewards on seen: 1, 7, -3, -5
    assert r.reward_seen_mean == pytest.approx((1 + 7 - 3 - 5) / 4)
    assert 0 <= r.drop_heldout_lo <= r.drop_heldout <= r.drop_heldout_hi <= 1


def test_zero_correct_tasks():
    vs = [V("z", "torch2hip/a", "seen", "TIMEOUT"), V("z", "torch2hip/a", "heldout", "TIMEOUT"),
          V("z", "torch2hip/b", "seen", "HARNESS_ERROR"), V("z", "torch2hip/b", "heldout", "HARNESS_ERROR")]
    by, _ = summary_of(vs)
    r = by[("z", "torch2hip")]
    assert r.attempts == 1 and r.correct_seen == 0 and r.fast_1 == 0     # the harness's failures are not scored
    assert math.isnan(r.drop_heldout) and r.n_seen_correct_heldout == 0
    assert math.isnan(r.speedup_seen_geomean)


def test_single_task_and_the_all_row():
    vs = [V("s", "triton2triton/x", "seen", "PASSED", 1.5), V("s", "triton2triton/x", "heldout", "PASSED", 1.2),
          V("s", "hip2hip/y", "seen", "PASSED", 3.0), V("s", "hip2hip/y", "heldout", "OUTPUT_UNWRITTEN")]
    by, _ = summary_of(vs)
    assert by[("s", "triton2triton")].drop_heldout == 0
    assert by[("s", "hip2hip")].drop_heldout == 1
    allr = by[("s", metrics.ALL)]
    assert allr.attempts == 2 and allr.drop_heldout == pytest.approx(0.5)
    assert allr.speedup_seen_geomean == pytest.approx(math.sqrt(4.5))


def test_random_split_drop_and_unconditional_rates():
    vs = [V("r", "hip2hip/a", "seen", "PASSED", 2), V("r", "hip2hip/a", "random", "INCORRECT_NUMERICAL"),
          V("r", "hip2hip/b", "seen", "INCORRECT_NUMERICAL"), V("r", "hip2hip/b", "random", "PASSED", 2)]
    by, _ = summary_of(vs)
    r = by[("r", "hip2hip")]
    assert r.correct_random == 0.5 and r.correct_seen == 0.5
    assert r.drop_random == 1.0        # conditional: the seen-failing task does not count for the drop
    assert math.isnan(r.correct_heldout)


def test_above_roofline_is_flagged_and_not_scored():
    vs = [V("f", "hip2hip/a", "seen", "PASSED", 50.0, flags=["above_roofline"], roofline=1.7),
          V("f", "hip2hip/a", "heldout", "PASSED", 40.0)]
    vf = metrics.verdict_frame(vs)
    assert list(metrics.flagged(vf).task_id) == ["hip2hip/a"]
    by, _ = summary_of(vs)
    r = by[("f", "hip2hip")]
    assert r.correct_seen == 0 and math.isnan(r.speedup_seen_geomean) and r.fast_1 == 0


@pytest.mark.parametrize("flag", ["no_device_work", "above_roofline"])
def test_untrusted_times_count_as_failures(flag):
    vs = [V("f", "hip2hip/a", "seen", "PASSED", 30.0, flags=[flag])]
    vf = metrics.verdict_frame(vs)
    assert not vf.correct.iloc[0] and vf.reward.iloc[0] == -6.0
    by, _ = summary_of(vs)
    assert by[("f", "hip2hip")].correct_seen == 0


def test_repeats_are_aggregated_with_their_spread():
    vs = []
    for rep, (ok, sp) in enumerate([(True, 2.0), (True, 4.0), (False, None)]):
        vs += [V("p", "hip2hip/a", "seen", "PASSED" if ok else "INCORRECT_NUMERICAL", sp, repeat=rep),
               V("p", "hip2hip/b", "seen", "PASSED", 1.0, repeat=rep)]
    by, _ = summary_of(vs)
    r = by[("p", "hip2hip")]
    assert r.attempts == 6 and r.repeats == 3
    assert r.correct_seen == pytest.approx(5 / 6)
    assert r.correct_seen_repeat_std == pytest.approx(0.288675, rel=1e-4)   # per-repeat 1, 1, 0.5


def test_wilson_interval():
    lo, hi = metrics.wilson(0, 10)
    assert lo == 0 and 0.2 < hi < 0.35
    lo, hi = metrics.wilson(10, 10)
    assert hi == 1 and 0.65 < lo < 0.8
    assert all(math.isnan(x) for x in metrics.wilson(0, 0))
    # every interval holds its point, and so does the drop's (1 - the rate): a drop of 0 over 41 held-out
    # verdicts came out [1.1e-16, ...] and stopped the report's plot (negative error bar)
    for n in range(1, 300):
        for k in range(n + 1):
            lo, hi = metrics.wilson(k, n)
            assert lo <= k / n <= hi and 1 - hi <= 1 - k / n <= 1 - lo, (k, n)


def test_torch_compile_denominator_where_measured():
    a = V("c", "torch2hip/a", "seen", "PASSED", 4.0)
    a.speedup_compiled = 2.0
    b = V("c", "torch2hip/b", "seen", "PASSED", 3.0)       # torch.compile not measured for this one
    c = V("c", "torch2hip/c", "seen", "PASSED", 9.0)
    c.speedup_compiled = 8.0
    by, _ = summary_of([a, b, c])
    r = by[("c", "torch2hip")]
    assert r.speedup_compiled_seen_geomean == pytest.approx(4.0) and r.n_compiled_seen == 2
    assert r.speedup_seen_geomean == pytest.approx(108 ** (1 / 3))


CLEAN = [
    V("a", "hip2hip/t1", "seen", "PASSED", 2.0), V("a", "hip2hip/t1", "heldout", "PASSED", 4.0),
    V("a", "hip2hip/t2", "seen", "PASSED", 8.0), V("a", "hip2hip/t2", "heldout", "INCORRECT_NUMERICAL"),
    V("a", "hip2hip/t3", "seen", "CRASHED"), V("a", "hip2hip/t3", "heldout", "CRASHED"),
    V("a", "triton2triton/u1", "seen", "PASSED", 1.5), V("a", "triton2triton/u1", "heldout", "PASSED", 1.5),
    V("a", "triton2triton/u2", "seen", "TIMEOUT"), V("a", "triton2triton/u2", "heldout", "TIMEOUT"),
]

# infrastructure failures and NOT_RUNNABLE mixed in: whole attempts, and single splits of attempts
# that have scored splits too
UNSCORED = [
    V("a", "hip2hip/t4", "seen", "HARNESS_ERROR"), V("a", "hip2hip/t4", "heldout", "TASK_ERROR"),
    V("a", "hip2hip/t5", "seen", "NOT_RUNNABLE"), V("a", "hip2hip/t5", "heldout", "NOT_RUNNABLE"),
    V("a", "triton2triton/u3", "seen", "PASSED", 3.0), V("a", "triton2triton/u3", "heldout", "HARNESS_ERROR"),
    V("a", "triton2triton/u4", "seen", "TASK_ERROR"), V("a", "triton2triton/u4", "heldout", "INCORRECT_SHAPE"),
]


def _same(x, y):
    if isinstance(x, float) and math.isnan(x):
        return isinstance(y, float) and math.isnan(y)
    return x == pytest.approx(y)


def test_infrastructure_failures_and_not_runnable_leave_every_score_as_without_them():
    # u3 and u4 each add one scored split: compare with them given as if the other split was never run
    partial = [v for v in UNSCORED if v.status.scored]
    _, clean = summary_of(CLEAN + partial)
    _, mixed = summary_of(CLEAN + UNSCORED)
    assert list(clean.columns) == list(mixed.columns) and len(clean) == len(mixed)
    for (_, a), (_, b) in zip(clean.iterrows(), mixed.iterrows()):
        for col in clean.columns:
            assert _same(a[col], b[col]), (a["agent"], a["category"], col, a[col], b[col])
    by, _ = summary_of(CLEAN + UNSCORED)
    r = by[("a", "all")]
    assert r.attempts == 7                              # t4 and t5 had no scored split: not attempts
    assert r.correct_seen == pytest.approx(4 / 6)       # u4's seen was the task's failure: not in the rate
    assert r.n_seen_correct_heldout == 3                # u3 (seen ok) has no scored held-out: not in the drop
    assert r.drop_heldout == pytest.approx(1 / 3)
    assert r.fast_0 == pytest.approx(4 / 6)


def test_unscored_verdicts_have_no_reward_and_are_listed_apart():
    vf = metrics.verdict_frame(CLEAN + UNSCORED)
    ns = metrics.not_scored(vf)
    assert sorted(ns["status"]) == sorted(["HARNESS_ERROR", "TASK_ERROR", "NOT_RUNNABLE", "NOT_RUNNABLE",
                                           "HARNESS_ERROR", "TASK_ERROR"])
    assert ns["reward"].isna().all() and not ns["correct"].any()
    assert all(v.reward is None for v in UNSCORED if not v.status.scored)
    assert all(v.reward is not None for v in CLEAN)
    pt = metrics.per_task(vf)
    assert "hip2hip/t4" not in set(pt.task_id) and "hip2hip/t5" not in set(pt.task_id)
    u3 = pt[pt.task_id == "triton2triton/u3"].iloc[0]
    assert u3["correct_seen"] is True and u3["correct_heldout"] is None


def test_the_latest_verdict_of_a_split_stands():
    from arena.records import current

    first = V("a", "hip2hip/t1", "seen", "HARNESS_ERROR")
    other = V("a", "hip2hip/t1", "heldout", "PASSED", 2.0)
    redone = V("a", "hip2hip/t1", "seen", "PASSED", 3.0)
    redone.attempt = 2
    assert current([first, other, redone]) == [redone, other]    # in the place first written
    assert current([first, other]) == [first, other]

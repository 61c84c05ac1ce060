"""A split's timing (arena/performance.py over arena/timing/timer.py ``time_many``), with a real
candidate process and the device stood in for (the trusted process here, in the test, with a
timer whose spans are drawn from set distributions): the configs of a split share their
exclusive sections, the outputs of timed calls are checked after a section and never while
it holds the GPU, the memory kept for those checks ends a section early, and a config that
ran out of memory is timed again with a quarter of its input sets."""

from __future__ import annotations

import random
from pathlib import Path

import pytest
from test_timer_trace import _FakeTimer as FakeTimer  # tests/ is on the path of its own modules

from arena.evaluation.gpulock import GpuLock, open_fds
from arena.taskdef.loader import Config, load_task

AXPY = Path(__file__).parent / "fixtures" / "tasks" / "triton2triton" / "axpy"

GOOD = "def axpy(x, y, out, n, alpha):\n    out.copy_(alpha * x + y)\n"


@pytest.fixture(autouse=True)
def _no_device(tmp_path, monkeypatch):
    import torch

    monkeypatch.setenv("ARENA_GPU_LOCK_DIR", str(tmp_path / "locks"))
    monkeypatch.setattr(torch.cuda, "synchronize", lambda *a: None)
    monkeypatch.setattr(torch.cuda, "empty_cache", lambda: None)
    monkeypatch.setattr(torch.cuda, "ipc_collect", lambda: None)
    monkeypatch.setattr(torch.cuda, "mem_get_info", lambda *a: (64 * 2**30, 80 * 2**30))


@pytest.fixture
def make(tmp_path):
    """Evaluations whose trusted side runs here and whose candidate runs in a process of its
    own (closed after the test)."""
    peers = []

    def evaluation(candidate: str | None, timer: FakeTimer, **timing_params):
        from arena.evaluation.processes import CandidatePeer, child_env
        from arena.evaluation.protocol import JobFrame
        from arena.evaluation.trusted.process import Evaluation

        k = len(peers) // 2
        scratch = tmp_path / f"c{k}"
        if candidate is None:          # the task's reference as the candidate (torch2hip's starting point)
            cand = {"language": "reference", "path": str(AXPY / "reference.py"), "trusted": True}
        else:
            path = tmp_path / f"candidate{k}.py"
            path.write_text(candidate)
            cand = {"language": "triton", "path": str(path), "trusted": False}
        job = JobFrame(task_dir=str(AXPY), device={"kind": "cpu"}, candidate=cand,
                       baseline={"language": "reference"}, timing=True, timing_params=timing_params, splits=[],
                       timeouts={"load_s": 120.0, "correctness_s": 120.0, "performance_s": 120.0},
                       candidate_dir=str(scratch), replay_dir=str(tmp_path / f"r{k}"))
        peer = CandidatePeer("cpu", scratch, child_env(scratch, scratch / "triton", interpret=True))
        base = tmp_path / f"b{k}"
        base_peer = CandidatePeer("cpu", base, child_env(base, base / "triton", interpret=True))
        peers.extend([peer, base_peer])
        frames: list[dict] = []
        ev = Evaluation(job, frames.append, peer, base_peer)
        ev.gpu_lock = GpuLock(*open_fds("cuda-GPU-split-test"))
        ev.load()
        ev.gpu = True                  # memory retries and budgets as on a GPU
        ev.rng = random.Random(11)
        ev.timer = timer
        # the reference as the checks call it (the baseline side holds the function itself): note
        # whether the GPU was held alone each time it ran
        modes: list = []
        real = ev.reference.reference

        def reference(*args):
            modes.append(ev.gpu_lock.mode)
            return real(*args)

        ev.reference.reference = reference
        return ev, frames, modes

    yield evaluation
    for peer in peers:
        peer.close()


def _time(ev, configs):
    from arena.evaluation.trusted.performance import time_split

    time_split(ev, "seen", configs)


def _configs(*ns):
    return [
        Config(split="seen", index=i, name=f"n{n}" if ns.count(n) == 1 else f"n{n}-{i}", params={"n": n})
        for i, n in enumerate(ns)
    ]


def _performance(frames):
    return {f["config"]: f["result"] for f in frames if f["type"] == "performance"}


def test_the_configs_of_a_split_share_one_exclusive_section(make):
    timer = FakeTimer()
    ev, frames, modes = make(GOOD, timer)
    _time(ev, _configs(1000, 3001, 77))
    res = _performance(frames)
    assert [r["status"] for r in res.values()] == ["PASSED"] * 3
    # quiet sides: one round of 16 sets each (10 pairs wanted), all three in one section
    assert timer.sessions == 1 and ev.gpu_lock.exclusive_n == 1
    assert all(r["rounds"] == 1 and len(r["spans_us"]["candidate"]) == 16 for r in res.values())
    # the warm-up's output and 4 of each round's 16, checked, never while the GPU was held alone
    assert all(r["timed_checks"] == 5 and r["timed_bad"] == 0 for r in res.values())
    assert modes and "exclusive" not in modes
    (lock,) = [f for f in frames if f["type"] == "lock"]
    assert lock["split"] == "seen" and lock["stats"]["exclusive_n"] == 1


def test_noisy_configs_take_later_sections_together(make):
    timer = FakeTimer(noise=0.5)
    ev, frames, _ = make(GOOD, timer, max_pairs=64, target_rse=1e-6)
    _time(ev, _configs(1000, 2000))
    res = _performance(frames)
    # batches of 1, 2 and 1 rounds (16 + 32 + 16 = max_pairs) for each config: three sections, not six
    assert timer.sessions == 3 and ev.gpu_lock.exclusive_n == 3
    assert all(len(r["spans_us"]["baseline"]) == 64 and r["rounds"] == 4 for r in res.values())
    # the warm-up's output, 4 of the first round's 16 sets and 1 of each later round's
    assert all(r["timed_checks"] == 1 + 4 + 3 * 1 for r in res.values())


def test_kept_sets_past_their_memory_are_checked_inside_the_section(make):
    timer = FakeTimer()
    # an axpy set of n=1000 takes 3 x 8000 + 4 x 4000 bytes by the budget's rule; a config's sets may take
    # 160000: rounds of 4 sets each (3 rounds for the 10 pairs wanted), the split's 480000; every set kept
    # (check_sets=0: 4 x 12000 bytes a round, 80000 by the rule). The kept sets may take half the budget: the
    # fifth round's would pass it, so the four rounds' kept before it are checked then, inside the section,
    # which goes on (ending it would cost a drain of the other evaluations' work); the ninth's likewise
    ev, frames, modes = make(GOOD, timer, max_set_bytes=4 * 40_000, check_sets=0)
    _time(ev, _configs(1000, 1000, 1000))
    res = _performance(frames)
    assert [r["status"] for r in res.values()] == ["PASSED"] * 3
    assert all(r["n_sets"] == 4 and r["rounds"] == 3 for r in res.values())
    assert ev.gpu_lock.exclusive_n == 1
    assert modes.count("exclusive") == 2 * 4 * 4  # the checks of rounds 1-4 and 5-8, 4 sets each
    assert timer.alone_parts["checks"] > 0  # and the record's phases count their time


def test_a_config_of_one_set_a_round_keeps_one_of_its_later_rounds_sets_in_sixteen(make):
    """One set a round (its sets may take one set's memory): ten rounds for the ten pairs. The
    warm-up's set and the first round's are checked; each later round's is kept with a chance
    of 1 in 16 (it was every one, ten sets past the memory for them)."""
    timer = FakeTimer()
    ev, frames, _ = make(GOOD, timer, max_set_bytes=40_000)
    _time(ev, _configs(1000))
    (r,) = _performance(frames).values()
    assert r["status"] == "PASSED" and r["n_sets"] == 1 and r["rounds"] == 10
    assert 2 <= r["timed_checks"] <= 2 + 5  # 2 + a binomial(9, 1/16): above 7 once in 200,000 runs


def test_a_candidate_wrong_only_while_timed_fails_its_config(make):
    wrong_later = (
        "calls = [0]\n"
        "def axpy(x, y, out, n, alpha):\n"
        "    calls[0] += 1\n"
        "    out.copy_(alpha * x + y + (1.0 if calls[0] > 3 else 0.0))\n"
    )  # right while warming up
    ev, frames, _ = make(wrong_later, FakeTimer())
    _time(ev, _configs(1000, 2000))
    res = _performance(frames)
    assert list(res) == ["n1000"]  # the first config fails; the split's results stop there
    assert res["n1000"]["status"] == "INCORRECT_NUMERICAL"
    assert "4 of 5 outputs of timed calls were wrong" in res["n1000"]["message"]


def test_a_candidate_writing_past_its_output_only_while_timed_fails_its_config(make):
    past_the_end = (
        "import torch\n"
        "calls = [0]\n"
        "def axpy(x, y, out, n, alpha):\n"
        "    calls[0] += 1\n"
        "    out.copy_(alpha * x + y)\n"
        "    if calls[0] > 3:\n"
        "        torch.as_strided(out, (n + 4,), (1,))[n:].fill_(0.0)\n"
    )  # right while checked
    ev, frames, _ = make(past_the_end, FakeTimer())
    _time(ev, _configs(1000, 2000))
    (failed,) = _performance(frames).values()  # the config whose warm-up made the fourth call
    assert failed["status"] == "RUNTIME_ERROR"
    assert "past the end of 'out'" in failed["message"]


def test_a_config_that_ran_out_of_memory_while_timed_is_timed_again_with_fewer_sets(make):
    oom_once = (
        "import torch\n"
        "calls = [0]\n"
        "def axpy(x, y, out, n, alpha):\n"
        "    calls[0] += 1\n"
        "    if calls[0] == 8:\n"
        "        raise torch.cuda.OutOfMemoryError('CUDA out of memory. Tried to allocate 2.00 GiB')\n"
        "    out.copy_(alpha * x + y)\n"
    )
    timer = FakeTimer()
    ev, frames, _ = make(oom_once, timer)
    _time(ev, _configs(1000, 2000))
    res = _performance(frames)
    assert [r["status"] for r in res.values()] == ["PASSED", "PASSED"]
    # the first section failed in config 1's round (the warm-ups took calls 1-6): config 1 again with 4 sets a
    # round; the section's samples dropped and taken again
    assert res["n1000"]["n_sets"] == 4 and res["n2000"]["n_sets"] == 16
    assert len(res["n1000"]["spans_us"]["candidate"]) >= 10
    assert len(res["n2000"]["spans_us"]["candidate"]) == 16
    assert timer.sessions == 3


def test_a_second_failure_for_want_of_memory_is_the_configs_result(make):
    oom_always = (
        "import torch\n"
        "calls = [0]\n"
        "def axpy(x, y, out, n, alpha):\n"
        "    calls[0] += 1\n"
        "    if calls[0] > 6:\n"
        "        raise torch.cuda.OutOfMemoryError('CUDA out of memory. Tried to allocate 2.00 GiB')\n"
        "    out.copy_(alpha * x + y)\n"
    )
    ev, frames, _ = make(oom_always, FakeTimer())
    _time(ev, _configs(1000, 2000))
    res = _performance(frames)
    assert list(res) == ["n1000"] and res["n1000"]["status"] == "RUNTIME_ERROR"
    assert "out of memory" in res["n1000"]["message"]


def test_running_out_of_memory_while_checking_is_tried_again(make):
    """The correctness gate's own allocations may find the memory held by the evaluations sharing
    the GPU: the config is tried again, not the whole evaluation lost to a harness error."""
    import torch

    from arena.evaluation.trusted.correctness import check_config

    ev, frames, _ = make(None, FakeTimer())
    real = ev.make_inputs
    calls = [0]

    def make_inputs(seed):
        calls[0] += 1
        if calls[0] == 1:
            raise torch.cuda.OutOfMemoryError("CUDA out of memory. Tried to allocate 256.00 MiB")
        return real(seed)

    ev.make_inputs = make_inputs
    ev.job.seeds = [1, 2, 3]
    result = check_config(ev, _configs(1000)[0])
    assert result.status.value == "PASSED" and calls[0] > 1


def test_evaluations_sharing_a_gpu_share_its_memory_for_input_sets(make):
    """--workers-per-gpu N (``gpu_share``): each evaluation's input sets get at most 0.4 / N of
    the device (here 0.4 x 80 GiB / 2000: 17 MB), so N evaluations' sets and kept sets fit beside
    each other; the configs of a split share it (all are held until its timed rounds end)."""
    n = 100_000  # 3 x 800 kB + 4 x 400 kB = 4.0 MB a set by the budget's rule
    ev, frames, _ = make(GOOD, FakeTimer(), gpu_share=2000)
    _time(ev, _configs(n))
    assert _performance(frames)[f"n{n}"]["n_sets"] == int(0.4 * 80 * 2**30 / 2000 // 4_000_000) == 4
    ev, frames, _ = make(GOOD, FakeTimer(), gpu_share=2000)
    _time(ev, _configs(n, n))
    assert [r["n_sets"] for r in _performance(frames).values()] == [2, 2]
    ev, frames, _ = make(GOOD, FakeTimer())
    _time(ev, _configs(n))
    assert _performance(frames)[f"n{n}"]["n_sets"] == 16


def test_a_host_bound_trusted_baseline_is_timed_again_without_the_profiler(make):
    """The profiler slows every launch: a trusted side whose host time is at least half its span
    (an eager reference) goes on without it after the first batch, in a section of its own,
    and keeps the lower median of the two timers; the candidate stays profiled."""
    timer = FakeTimer(bases={"baseline": 1.0, "candidate": 50_000.0}, plain={"baseline": 0.6})
    ev, frames, _ = make(GOOD, timer)
    _time(ev, _configs(1000))
    r = _performance(frames)["n1000"]
    assert r["status"] == "PASSED"
    assert r["timers"] == {"baseline": "events", "candidate": "span"}
    assert timer.plain_sides == {"baseline"} and timer.sessions == 1 and timer.plain_sessions == 1
    assert len(r["spans_us"]["baseline"]) == 16 and max(r["spans_us"]["baseline"]) < 0.61
    assert 0.99 < r["other_timer_median_us"]["baseline"] < 1.01  # its median under the profiler, kept
    assert len(r["spans_us"]["candidate"]) == 16
    assert r["timed_checks"] == 1 + 4  # the candidate's calls checked; the baseline's alone need none
    assert ev.gpu_lock.exclusive_n == 2


@pytest.mark.parametrize("busy, baseline_timer", [(1.0, "span"), (0.6, "events")])
def test_a_host_bound_trusted_side_whose_kernels_fill_its_span_stays_under_the_profiler(make, busy, baseline_timer):
    """The profiler's cost per launch opens gaps between a host-bound call's kernels; one kernel
    that fills the span (an elementwise starting kernel) is not stretched by it, and is timed by
    the same instrument as the candidate: moving it alone read the starting kernel as its own
    candidate at 0.93-0.95 on an H100. With gaps (kernels 60% of the span) it moves."""
    timer = FakeTimer(
        bases={"baseline": 1.0, "candidate": 50_000.0},
        plain={"baseline": 0.6},
        busy={"baseline": busy, "candidate": 1.0},
    )
    ev, frames, _ = make(GOOD, timer)
    _time(ev, _configs(1000))
    r = _performance(frames)["n1000"]
    assert r["timers"] == {"baseline": baseline_timer, "candidate": "span"}
    assert timer.plain_sessions == (baseline_timer == "events")


def test_a_trusted_side_keeps_the_profilers_figure_where_that_is_lower(make):
    timer = FakeTimer(bases={"baseline": 1.0, "candidate": 50_000.0}, plain={"baseline": 2.0})
    ev, frames, _ = make(GOOD, timer)
    _time(ev, _configs(1000))
    r = _performance(frames)["n1000"]
    assert r["timers"]["baseline"] == "span" and max(r["spans_us"]["baseline"]) < 1.01
    assert 1.99 < r["other_timer_median_us"]["baseline"] < 2.01
    assert timer.plain_sessions == 1  # slower unprofiled after its first batch: nothing more to learn


def test_the_candidate_is_always_timed_under_the_profiler(make):
    """However host-bound its calls: unprofiled, its other streams and its kernels would go unseen."""
    timer = FakeTimer(bases={"baseline": 100_000.0, "candidate": 1.0}, plain={"candidate": 0.1})
    ev, frames, _ = make(GOOD, timer)
    _time(ev, _configs(1000, 2000))
    res = _performance(frames)
    assert timer.plain_sessions == 0 and not timer.plain_sides
    assert all(r["timers"] == {"baseline": "span", "candidate": "span"} for r in res.values())


def test_the_reference_as_candidate_is_trusted_and_both_sides_go_on_unprofiled_in_pairs(make):
    timer = FakeTimer(noise=0.5, bases={"baseline": 1.0, "candidate": 1.0}, plain={"baseline": 0.5, "candidate": 0.5})
    ev, frames, _ = make(None, timer, target_rse=1e-6)
    assert ev.candidate_trusted
    _time(ev, _configs(1000))
    r = _performance(frames)["n1000"]
    assert r["timers"] == {"baseline": "events", "candidate": "events"}
    assert timer.plain_sides == {"baseline", "candidate"} and timer.sessions == 1
    # the unprofiled item has its own stopping rule: rounds of 16 sets in batches of 1, 2 and 4 rounds, up to
    # UNPROFILED_MAX_PAIRS (100) in whole rounds
    assert len(r["spans_us"]["baseline"]) == len(r["spans_us"]["candidate"]) == 112
    assert timer.plain_sessions == 3


def test_sides_timed_apart_get_an_unpaired_interval_and_say_which_timer():
    from arena.devices import Device
    from arena.evaluation.decision import apply_timing as _apply_timing
    from arena.evaluation.protocol import PerformanceResult
    from arena.records import ConfigResult, Status

    task = load_task(AXPY)
    cfg = _configs(1000)[0]
    cr = ConfigResult(cfg.name, dict(cfg.params), Status.PASSED)
    rng = random.Random(3)
    base = [200.0 + rng.uniform(-5, 5) for _ in range(40)]
    cand = [100.0 + rng.uniform(-5, 5) for _ in range(16)]
    perf = PerformanceResult(
        status=Status.PASSED,
        spans_us={"baseline": base, "candidate": cand},
        events_us={"baseline": base, "candidate": cand},
        timers={"baseline": "events", "candidate": "span"},
        other_timer_median_us={"baseline": 330.0},
        replayed=["candidate"],
    )
    _apply_timing(task, cr, cfg, perf, Device(kind="cuda", name="NVIDIA H200", vendor="nvidia", arch="sm_90"))
    assert cr.baseline.timer == "events" and cr.baseline.other_timer_median_us == 330.0 and cr.baseline.n == 40
    assert cr.candidate.timer == "span" and cr.candidate.other_timer_median_us is None
    assert cr.candidate.replayed and not cr.baseline.replayed   # which side's calls were replays of their records
    lo, hi = cr.speedup_ci
    assert lo < cr.speedup < hi and 1.8 < lo and hi < 2.2  # all 40 baseline samples used, not the first 16


def test_a_warning_each_side_gave_is_one_flag_and_its_message_names_both():
    from arena.devices import Device
    from arena.evaluation.decision import apply_timing as _apply_timing
    from arena.evaluation.protocol import PerformanceResult
    from arena.records import ConfigResult, Status
    from arena.timing.timer import UNGATED_WARNING

    task = load_task(AXPY)
    cfg = _configs(1000)[0]
    cr = ConfigResult(cfg.name, dict(cfg.params), Status.PASSED)
    spans = [100.0 + i % 3 for i in range(16)]
    perf = PerformanceResult(status=Status.PASSED, spans_us={"baseline": spans, "candidate": spans},
                             events_us={"baseline": spans, "candidate": spans},
                             warnings=[UNGATED_WARNING.replace("of this side", f"of the {s}") for s in
                                       ("baseline", "candidate")])
    _apply_timing(task, cr, cfg, perf, Device(kind="cuda", name="NVIDIA H200", vendor="nvidia", arch="sm_90"))
    assert cr.flags.count("ungated") == 1
    assert "a call of the baseline (" in cr.message and "a call of the candidate (" in cr.message


def test_a_timed_config_gets_its_roofline_and_speed_of_light_from_the_device_s_ceilings(tmp_path, monkeypatch):
    from arena.devices import Device
    from arena.devices.ceilings import ceilings_for, roofline_seconds
    from arena.evaluation.decision import apply_timing as _apply_timing
    from arena.evaluation.protocol import PerformanceResult
    from arena.records import ConfigResult, Status

    monkeypatch.setenv("ARENA_CACHE_DIR", str(tmp_path))  # no measured ceilings: the datasheet's
    task = load_task(AXPY)
    cfg = _configs(1 << 24)[0]
    cr = ConfigResult(cfg.name, dict(cfg.params), Status.PASSED)
    h200 = Device(kind="cuda", name="NVIDIA H200", vendor="nvidia", arch="sm_90")
    perf = PerformanceResult(
        status=Status.PASSED,
        spans_us={"baseline": [400.0] * 12, "candidate": [200.0] * 12},
        events_us={"baseline": [400.0] * 12, "candidate": [200.0] * 12},
    )
    _apply_timing(task, cr, cfg, perf, h200)
    flops, nbytes = task.roofline_for(cfg)
    t_roof = roofline_seconds("float32", flops, nbytes, ceilings_for(h200)[0])
    assert cr.roofline_fraction == pytest.approx(t_roof / 200e-6, abs=1e-4)
    assert cr.sol == pytest.approx((400e-6 - 200e-6) / (400e-6 - t_roof), abs=1e-4) and cr.sol_absent == ""
    # a baseline already faster than the roofline time: no score, and the record says why
    fast = ConfigResult(cfg.name, dict(cfg.params), Status.PASSED)
    quick = PerformanceResult(
        status=Status.PASSED,
        spans_us={"baseline": [1.0] * 12, "candidate": [0.9] * 12},
        events_us={"baseline": [1.0] * 12, "candidate": [0.9] * 12},
    )
    _apply_timing(task, fast, cfg, quick, h200)
    assert fast.sol is None and "overcounts" in fast.sol_absent


def test_a_verdict_s_speed_of_light_covers_the_configs_that_have_one_and_says_how_many():
    from arena.records import ConfigResult, Status, Verdict
    from arena.report import metrics

    crs = [ConfigResult("a", {}, Status.PASSED, sol=0.5), ConfigResult("b", {}, Status.PASSED, sol_absent="why")]
    v = Verdict(
        task_id="t/x",
        category="triton2triton",
        split="seen",
        status=Status.PASSED,
        candidate={},
        device={},
        configs=crs,
        speedup=2.0,
        sol=0.5,
        sol_configs=1,
        agent="a",
    )
    back = Verdict.from_dict(v.to_dict())
    assert back.sol_configs == 1 and back.configs[1].sol_absent == "why"
    vf = metrics.verdict_frame([back])
    assert vf["sol_cover"].iloc[0] == pytest.approx(0.5)
    row = metrics.summary(metrics.per_task(vf)).iloc[0]
    assert row["sol_seen_cover"] == pytest.approx(0.5) and row["sol_seen_mean"] == pytest.approx(0.5)


def test_checks_and_timing_wait_for_room_in_the_gpu_s_memory_account(make, tmp_path, monkeypatch):
    """Memory admission (arena.evaluation.memory) on the real paths: with another evaluation holding most of
    a small account, this one's check waits for room and then passes; its timing reserves its
    input sets: with the account, its budget is what the sets want, not a fixed share, but no more
    than leaves room for the split's check beside the processes that stand."""
    import threading

    from memory_holder import hold, release  # tests/ is on the path

    from arena.evaluation.memory import MemoryAccount, open_account
    from arena.evaluation.trusted.correctness import check_bytes, check_config

    monkeypatch.setenv("ARENA_GPU_LOCK_DIR", str(tmp_path / "locks"))
    key, capacity = "cuda-GPU-admission-test", 64 * 2**20
    ev, frames, _ = make(None, FakeTimer())
    ev.memory = MemoryAccount(open_account(key), capacity, poll_s=0.01)
    config = _configs(1000)[0]
    assert check_bytes(ev, config) > capacity // 2  # the slack alone: it cannot fit beside the other
    other = hold(key, capacity, capacity // 2)
    result, entered = {}, threading.Event()
    ev.job.seeds = [1]

    def check():
        result["r"] = check_config(ev, config)
        entered.set()

    t = threading.Thread(target=check)
    t.start()
    try:
        assert not entered.wait(1.0) and "r" not in result  # waiting, not failing
        release(other)
        assert entered.wait(120)
    finally:
        t.join(120)
    assert result["r"].status.value == "PASSED", result["r"].message
    assert ev.memory.waits == 1 and ev.memory.held() == 0
    _time(ev, _configs(1000))
    r = _performance(frames)["n1000"]
    # the account leaves no room beside the check's own estimate: one set a round, more rounds
    assert r["status"] == "PASSED" and r["n_sets"] == 1 and ev.memory.peak > 0 and ev.memory.held() == 0
    frames.clear()
    ev.memory = MemoryAccount(open_account(key), 2**30, poll_s=0.01)
    _time(ev, _configs(1000))
    r = _performance(frames)["n1000"]
    assert r["status"] == "PASSED" and r["n_sets"] == 16 and ev.memory.peak > 0 and ev.memory.held() == 0

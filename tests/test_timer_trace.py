"""Cutting a device timeline into timing samples (arena.timing.timer.cut_spans), on synthetic
timelines of (start_ns, end_ns, name). Each sample on the device is:
[poison fills] -> flush -> the call's kernels -> end marker -> [output checks]."""

from __future__ import annotations

import random
import time
import types

import pytest

from arena.timing.timer import FLUSH_KERNEL, MARKER_KERNEL, cut_spans

FLUSH = "_arena_flush_kernel"
MARKER = "_arena_end_marker_kernel"


def test_kernel_names_are_ours():
    assert FLUSH_KERNEL == FLUSH and MARKER_KERNEL == MARKER


def sample(t0: int, call: list[tuple[int, int, str]], *, flush_ns: int = 30_000, gap: int = 2_000,
           checks: bool = True) -> tuple[list[tuple[int, int, str]], int]:
    """One sample starting at t0: a poison fill, the flush, the call's kernels (times relative to
    the flush's end), the marker, then two check kernels. Returns the activities and the end time."""
    acts = [(t0, t0 + 5_000, "void at::native::vectorized_elementwise_kernel<fill>")]
    f0 = t0 + 6_000
    f1 = f0 + flush_ns
    acts.append((f0, f1, FLUSH))
    end = f1
    for s, e, name in call:
        acts.append((f1 + s, f1 + e, name))
        end = max(end, f1 + e)
    m0 = end + gap
    acts.append((m0, m0 + 1_500, MARKER))
    t = m0 + 2_000
    if checks:
        acts += [(t, t + 8_000, "at::native::reduce_kernel<isfinite>"), (t + 9_000, t + 12_000, "sum_kernel")]
    return acts, t + 13_000


def test_one_kernel_gives_its_duration():
    acts, _ = sample(1_000_000, [(500, 20_500, "softmax_kernel")])
    spans, warnings = cut_spans(acts, 1)
    assert spans == [20.0]                    # microseconds
    assert warnings == []


def test_two_kernels_give_first_start_to_last_end():
    acts, _ = sample(0, [(1_000, 11_000, "k1"), (14_000, 18_000, "k2")])
    spans, _ = cut_spans(acts, 1)
    assert spans == [17.0]


def test_several_samples_in_one_trace_unsorted():
    acts, t = sample(0, [(1_000, 4_000, "k")])
    acts2, t = sample(t, [(1_000, 11_000, "k"), (12_000, 13_000, "k2")])
    acts3, _ = sample(t, [(2_000, 2_500, "tiny")])
    timeline = acts + acts2 + acts3
    random.Random(0).shuffle(timeline)
    spans, warnings = cut_spans(timeline, 3)
    assert spans == [3.0, 12.0, 0.5]
    assert warnings == []


def test_side_stream_kernel_starting_during_the_flush_counts_from_its_own_start():
    # the call puts its work on another stream, which does not wait for the flush
    f0, f1 = 100_000, 130_000
    acts = [
        (f0, f1, FLUSH),
        (110_000, 200_000, "side_stream_matmul"),     # starts while the flush runs
        (131_000, 133_000, "tiny_main_stream_kernel"),
        (205_000, 206_000, MARKER),
    ]
    spans, _ = cut_spans(acts, 1)
    assert spans == [90.0]                         # 110 us -> 200 us, not 131 -> 133


def test_harness_kernels_before_the_flush_and_after_the_marker_are_not_counted():
    acts, _ = sample(0, [(1_000, 3_000, "k")], flush_ns=50_000)
    assert any("fill" in a[2] for a in acts) and any("isfinite" in a[2] for a in acts)
    spans, warnings = cut_spans(acts, 1)
    assert spans == [2.0] and warnings == []
    # the same without the harness kernels gives the same span
    bare = [a for a in acts if "fill" not in a[2] and "isfinite" not in a[2] and a[2] != "sum_kernel"]
    assert cut_spans(bare, 1) == ([2.0], [])


def test_decorated_kernel_names_are_recognised():
    acts = [(0, 10_000, FLUSH + "_0d1d2de"), (11_000, 15_000, "k"), (16_000, 17_000, MARKER + "_0d")]
    assert cut_spans(acts, 1) == ([4.0], [])


def test_work_overlapping_the_marker_is_warned_about():
    acts = [(0, 10_000, FLUSH), (11_000, 30_000, "k"), (20_000, 21_000, MARKER)]
    spans, warnings = cut_spans(acts, 1)
    assert spans == [19.0]
    assert warnings == ["device work overlapped the end marker"]


@pytest.mark.parametrize("n_flush, n_marker, n_steps", [(2, 1, 2), (1, 2, 2), (2, 2, 3), (3, 3, 2), (0, 0, 1)])
def test_count_mismatch_raises(n_flush, n_marker, n_steps):
    acts = [(i * 100_000, i * 100_000 + 10_000, FLUSH) for i in range(n_flush)]
    acts += [(i * 100_000 + 50_000, i * 100_000 + 51_000, MARKER) for i in range(n_marker)]
    acts += [(20_000, 30_000, "k")]
    with pytest.raises(RuntimeError, match="cannot be cut"):
        cut_spans(acts, n_steps)


def test_empty_window_gives_zero():
    acts, _ = sample(0, [])
    spans, warnings = cut_spans(acts, 1)
    assert spans == [0.0] and warnings == []
    assert cut_spans([], 0) == ([], [])


def test_an_empty_sample_between_full_ones():
    acts, t = sample(0, [(1_000, 6_000, "k")])
    acts2, t = sample(t, [])
    acts3, _ = sample(t, [(1_000, 6_000, "k")])
    assert cut_spans(acts + acts2 + acts3, 3)[0] == [5.0, 0.0, 5.0]


def test_side_stream_work_starting_before_a_delayed_flush_is_not_hidden():
    acts = [
        (0, 300_000, "fill_kernel (poison of a large output)"),   # main stream, queued by prepare()
        (300_000, 330_000, FLUSH),                                # main stream, waits behind the fill
        (40_000, 500_000, "side_stream_matmul"),                  # the call, on a stream of its own
        (331_000, 333_000, "tiny_main_stream_kernel"),            # the call, on the current stream
        (505_000, 506_000, MARKER),
    ]
    spans, warnings = cut_spans(acts, 1)
    # today: spans == [2.0] (the tiny kernel only) for 460 us of work, and no warning
    assert warnings or spans[0] >= 170.0                      # at least the part after the flush starts


def _timeline():
    """A device timeline of the test's: its activities, ``kernel(name, ns)`` that puts one after
    the last, and its clock (ns)."""
    clock = [0]
    acts: list[tuple[int, int, str]] = []

    def kernel(name: str, ns: int) -> None:
        acts.append((clock[0], clock[0] + ns, name))
        clock[0] += ns + 1_000

    return acts, kernel, clock


class _UntimedEvent:
    def record(self, *a):
        pass

    def elapsed_time(self, other):
        return 0.0


def _stood_in_timer(tm, kernel):
    """A DeviceTimer whose kernels are entries on a timeline of the test's (``kernel(name, ns)``),
    its gate's flag a plain tensor."""
    import torch

    timer = tm.DeviceTimer.__new__(tm.DeviceTimer)
    timer.profiler_s = 0.0
    timer.alone_parts = tm._alone_parts()
    timer.step_parts = tm._step_parts()
    timer.gate_flag, timer.ungated, timer.strikes = None, set(), {}
    timer.flush = lambda: kernel(FLUSH, 30_000)
    timer.marker = lambda: kernel(MARKER, 1_000)
    timer._pinned_flag = lambda: torch.zeros(2, dtype=torch.int32)
    timer._launch_gate = lambda: kernel(GATE, 4_000)
    return timer


def _profiled_stand_in(monkeypatch):
    """A stood-in timer whose profiler's trace is the test's timeline, events untimed: (the timeline's
    activities, its ``kernel(name, ns)``, the timer)."""
    import contextlib

    import torch

    import arena.timing.timer as tm

    acts, kernel, _ = _timeline()
    monkeypatch.setattr(torch.profiler, "profile", lambda **kw: contextlib.nullcontext())
    monkeypatch.setattr(torch.cuda, "synchronize", lambda: None)
    monkeypatch.setattr(torch.cuda, "Event", lambda **kw: _UntimedEvent())
    monkeypatch.setattr(tm, "_device_activities", lambda prof: sorted(acts))
    return acts, kernel, _stood_in_timer(tm, kernel)


class _FakeTimer:
    """Stands in for DeviceTimer: runs the steps of every round it is given (inside ``alone()``;
    a remote step by the remote, in a session of the remote's) and returns spans drawn from
    each side's distribution, one profiler session per call; a warm-up is ``min_calls``
    calls, each in its own ``around()`` section."""

    def __init__(self, noise: float = 0.001, plain: dict[str, float] | None = None,
                 bases: dict[str, float] | None = None, busy: dict[str, float] | None = None):
        self.noise = noise
        self.busy = busy or {}        # a side's kernels' share of its span under the profiler (else none recorded)
        # a side's span (us): long beside the host time of a call on the CPU, so no side looks host-bound
        self.bases = bases or {"baseline": 100_000.0, "candidate": 50_000.0}
        self.plain = plain or {}      # a side's time when timed without the profiler (else as with it)
        self.sessions = 0
        self.plain_sessions = 0
        self.plain_sides: set[str] = set()
        self.profiler_s = 0.0
        self.alone_parts = {"checks": 0.0}
        self.rng = random.Random(7)
        self.log: list[str] = []

    def synchronize(self):
        pass

    def warm_up(self, call, *, min_calls=3, min_s=0.0, around=None):
        for _ in range(min_calls):
            with around():
                call()

    def sample_rounds(self, rounds, alone, profiled=True, remotes=(), local=True):
        from arena.timing.timer import RemoteCall

        if profiled:
            self.sessions += 1
        else:
            self.plain_sessions += 1
        out = []
        for r in remotes:
            r.begin(profiled)
        try:
            with alone():
                for steps in rounds:
                    for side, prepare, call, after in steps:
                        prepare()
                        if isinstance(call, RemoteCall):     # another process makes the call
                            call.remote.sample([call])
                        else:
                            call()
                        after()
                        base = self.bases.get(side, 50_000.0)
                        if not profiled:
                            self.plain_sides.add(side)
                            base = self.plain.get(side, base)
                        span = base * (1 + self.noise * self.rng.uniform(-1, 1))
                        activity = {"kernel": span * self.busy[side]} if profiled and side in self.busy else {}
                        out.append((side, span, base, activity))
        finally:
            for r in remotes:
                r.end()
        return out, []


def _sides(log):
    return {name: {"prepare": lambda i: None, "call": lambda i, n=name: log.append(n), "after": lambda i, c=None: None}
            for name in ("baseline", "candidate")}


def test_quiet_sides_stop_after_the_first_batch():
    from arena.timing.timer import time_paired

    timer, calls, refreshes, alone = _FakeTimer(0.001), [], [], []

    class Alone:
        def __enter__(self):
            alone.append(1)

        def __exit__(self, *a):
            return False

    res = time_paired(timer, _sides(calls), 8, min_pairs=10, refresh=refreshes.append, alone=Alone)
    assert timer.sessions == 1 and len(alone) == 1       # one profiler session, one exclusive section a batch
    assert res.rounds == 2 and refreshes == [1]          # 16 pairs (10 needed, 8 per round), renewed once between
    assert len(res.spans_us["baseline"]) == len(res.spans_us["candidate"]) == 16


def test_noisy_sides_take_batches_that_grow_up_to_max_pairs():
    from arena.timing.timer import time_paired

    timer, calls, refreshes = _FakeTimer(0.5), [], []
    res = time_paired(timer, _sides(calls), 8, min_pairs=10, max_pairs=200, target_rse=1e-6, cap_s=60,
                      refresh=refreshes.append)
    # batches of 2, 4, 8, 11 rounds (the last one only what max_pairs needs): four sessions, not 25
    assert timer.sessions == 4 and res.rounds == 25
    assert len(res.spans_us["candidate"]) == 200 and refreshes == list(range(1, 25))
    assert calls.count("baseline") == calls.count("candidate") == 200


def test_the_time_cap_ends_a_batch_between_rounds(monkeypatch):
    """The cap is on the item's own seconds, here on a clock of the test's: each renewal of the
    inputs takes 0.05 s of it. Batches of 2 then 4 rounds; 0.05 s after round 1, 0.15 s after
    round 3: past the 0.12 s cap, so the second batch ends after its second round."""
    import arena.timing.timer as tm

    clock = [0.0]
    monkeypatch.setattr(tm, "time", types.SimpleNamespace(perf_counter=lambda: clock[0]))

    def refresh(r):
        clock[0] += 0.05

    res = tm.time_paired(_FakeTimer(0.5), _sides([]), 8, min_pairs=10, target_rse=1e-6, cap_s=0.12,
                         refresh=refresh)
    assert res.rounds == 4 and res.wall_s == pytest.approx(0.15)


def test_several_rounds_in_one_session_are_cut_into_one_sample_per_step(monkeypatch):
    """DeviceTimer.sample_rounds with the device stood in for: a flush and a marker kernel per
    step, the renewal between rounds adds kernels outside every window."""
    import contextlib

    import torch

    import arena.timing.timer as tm

    acts, kernel, clock = _timeline()

    class Event:
        def __init__(self, **kw):
            self.t = 0

        def record(self):
            self.t = clock[0]

        def elapsed_time(self, other):
            return (other.t - self.t) / 1e6

    monkeypatch.setattr(torch.profiler, "profile", lambda **kw: contextlib.nullcontext())
    monkeypatch.setattr(torch.cuda, "synchronize", lambda: None)
    monkeypatch.setattr(torch.cuda, "Event", Event)
    monkeypatch.setattr(tm, "_device_activities", lambda prof: sorted(acts))
    timer = _stood_in_timer(tm, kernel)

    def rounds():
        for r in range(3):
            if r:
                kernel("reference_check", 50_000)      # renewing inputs between rounds
            yield [(side, lambda: None, lambda side=side: kernel(side, 10_000 if side == "a" else 20_000),
                    lambda: None) for side in ("a", "b")]

    entered: list[int] = []

    @contextlib.contextmanager
    def alone():                          # the GPU's exclusive lock: taken once for the batch
        entered.append(clock[0])
        yield

    out, warnings = timer.sample_rounds(rounds(), alone=alone)
    assert len(entered) == 1
    assert [(side, round(span)) for side, span, _, _ in out] == [("a", 10), ("b", 20)] * 3
    assert warnings == [] and all(set(activity) == {side} for side, _, _, activity in out)
    assert all(activity[side] == (10.0 if side == "a" else 20.0) for side, _, _, activity in out)


def test_remote_steps_are_made_by_the_remote_and_merged_in_step_order(monkeypatch):
    """A step whose call is a RemoteCall goes to its process's session (a profiler sees only
    its own process's work), consecutive ones of one process in one request (no round trip
    between them); the sessions' samples come back in step order, and one that answers with
    too few samples for its steps is an error."""
    import contextlib

    import torch

    import arena.timing.timer as tm

    acts, kernel, _ = _timeline()

    class Remote:
        def __init__(self):
            self.log: list = []

        def begin(self, profiled):
            self.log.append(("begin", profiled))

        def sample(self, calls):
            self.log.append(("sample", [c.slot for c in calls]))

        def end(self):
            self.log.append(("end",))
            n = sum(len(e[1]) for e in self.log if e[0] == "sample")
            return [(100.0 + k, 101.0 + k, {"cand": 100.0 + k}) for k in range(n)], [(1, "overlap")], 0.25

    monkeypatch.setattr(torch.profiler, "profile", lambda **kw: contextlib.nullcontext())
    monkeypatch.setattr(torch.cuda, "synchronize", lambda: None)
    monkeypatch.setattr(torch.cuda, "Event", lambda **kw: _UntimedEvent())
    monkeypatch.setattr(tm, "_device_activities", lambda prof: sorted(acts))
    timer = _stood_in_timer(tm, kernel)
    remote = Remote()
    steps = [("base", lambda: None, lambda: kernel("base", 5_000), lambda: None),
             ("cand", lambda: None, tm.RemoteCall(remote, 7), lambda: None),
             ("cand", lambda: None, tm.RemoteCall(remote, 8), lambda: None),
             ("base", lambda: None, lambda: kernel("base", 6_000), lambda: None)]
    ticks = iter(range(1000))             # this process's profiler seconds on a clock of the test's
    monkeypatch.setattr(tm, "time", types.SimpleNamespace(perf_counter=lambda: next(ticks) * 0.01))
    out, warnings = timer.sample_rounds([steps], remotes=[remote])
    assert remote.log == [("begin", True), ("sample", [7, 8]), ("end",)]
    assert [(side, round(span)) for side, span, _, _ in out] == [("base", 5), ("cand", 100), ("cand", 101),
                                                                ("base", 6)]
    assert warnings == [(2, "overlap")]         # the remote's second sample is the round's third step
    # the remote's seconds, and this process's own: opening and closing its session, 0.01 s each
    assert timer.profiler_s == pytest.approx(0.25 + 0.02)

    class Short(Remote):
        def end(self):
            return [], [], 0.0

    acts.clear()
    short = Short()
    steps[1:3] = [("cand", lambda: None, tm.RemoteCall(short, 7), lambda: None),
                  ("cand", lambda: None, tm.RemoteCall(short, 8), lambda: None)]
    with pytest.raises(RuntimeError, match="samples for 2 steps"):
        timer.sample_rounds([steps], remotes=[short])


class _SetDependentTimer(_FakeTimer):
    """Spans that spread as the input sets do (each set's inputs cost ``spread`` more or less
    work, for every side alike), times the sides' own noise."""

    def __init__(self, spread: float, noise: float, seed: int = 3):
        super().__init__(noise)
        self.spread = spread
        self.set_rng = random.Random(seed)
        self.cost = 1.0

    def new_set(self):
        self.cost = 1.0 + self.spread * self.set_rng.uniform(-1, 1)

    def sample_rounds(self, rounds, alone, profiled=True, remotes=(), local=True):
        out = []
        with alone():
            for steps in rounds:
                for side, prepare, call, after in steps:
                    prepare()
                    call()
                    after()
                    base = self.bases.get(side, 50_000.0) * self.cost
                    out.append((side, base * (1 + self.noise * self.rng.uniform(-1, 1)), base, {}))
        self.sessions += 1
        return out, []


def test_a_configs_ungated_warning_says_whose_call_it_was():
    """A sample whose gate opened by itself is flagged with its side named in the config's warning: one
    side timed with its launch gaps and the other not skews the ratio, and the flag alone does not say
    which (its config's flag: test_split_timing.py)."""
    import arena.timing.timer as tm

    class Flagging(_FakeTimer):
        def __init__(self, flagged):
            super().__init__()
            self.flagged = flagged

        def sample_rounds(self, rounds, alone, profiled=True, remotes=(), local=True):
            out, _ = super().sample_rounds(rounds, alone, profiled, remotes, local)
            return out, [(j, tm.UNGATED_WARNING) for j, (side, *_) in enumerate(out) if side in self.flagged][:3]

    res = tm.time_paired(Flagging({"baseline"}), _sides([]), 8, min_pairs=10)
    assert res.warnings == [tm.UNGATED_WARNING.replace("of this side", "of the baseline")]
    assert res.warnings[0].startswith("ungated: the gate opened by itself during a call of the baseline (")

    res = tm.time_paired(Flagging({"baseline", "candidate"}), _sides([]), 8, min_pairs=10)
    assert sorted(res.warnings) == sorted(tm.UNGATED_WARNING.replace("of this side", f"of the {s}")
                                          for s in ("baseline", "candidate"))
    assert {w.split(":")[0] for w in res.warnings} == {"ungated"}


def _set_dependent(spread: float, noise: float, **rule):
    """Pairs of a baseline and a candidate on the same sets (a new set's cost drawn at the
    baseline's prepare, which comes first or second by round: the candidate's call on a set
    is made right before or after the baseline's on it)."""
    from arena.timing.timer import Timed, time_many

    timer = _SetDependentTimer(spread, noise)
    seen: set[tuple[int, int]] = set()
    rnd = [0]

    def prepare(i):
        if (rnd[0], i) not in seen:           # the set's first call this round: its inputs are made
            seen.add((rnd[0], i))
            timer.new_set()

    sides = {name: {"prepare": prepare, "call": lambda i: None, "after": lambda i, c=None: None}
             for name in ("baseline", "candidate")}
    item = Timed(sides, 8, fill=lambda r: rnd.__setitem__(0, r), **rule)
    time_many(timer, [item])
    return item.result


def test_sides_whose_time_follows_the_input_set_stop_when_their_ratio_is_known():
    """A 30% spread from set to set and 0.1% of noise: each side's median needs hundreds of
    pairs to reach 1%, the ratio of the two is known to it at once; with each side's median to
    be known to 3%, about a hundred."""
    from arena.timing import stats

    res = _set_dependent(0.3, 0.001, min_pairs=10, max_pairs=400, paired_with="candidate")
    n = len(res.spans_us["candidate"])
    assert 10 <= n < 200
    assert all(stats.rse_of_median(res.spans_us[s]) < 0.03 for s in ("baseline", "candidate"))
    assert all(stats.rse_of_median(res.spans_us[s]) >= 0.01 for s in ("baseline", "candidate"))
    # without the pairing, the same calls run to max_pairs
    unpaired = _set_dependent(0.3, 0.001, min_pairs=10, max_pairs=400, paired_with=None)
    assert len(unpaired.spans_us["candidate"]) == 400


def test_a_noisy_ratio_does_not_stop_the_pairs_early():
    """The same spread, and 20% of noise of each side's own: the ratio is not known to 1% either."""
    res = _set_dependent(0.3, 0.2, min_pairs=10, max_pairs=400, paired_with="candidate")
    assert len(res.spans_us["candidate"]) == 400


def test_a_warm_up_takes_its_shared_sections_in_slices_not_one_a_call(monkeypatch):
    """25 ms of 1 ms calls: one shared section, not 25 (each entry may queue behind a writer);
    calls of 60 ms: past the 50 ms slice after each one, so a section a call, and a timed round
    elsewhere never waits longer than a slice and a call. (On a clock of the test's: a loaded
    machine's sleeps overshoot.)"""
    import contextlib

    import arena.timing.timer as tm

    now = [0.0]
    monkeypatch.setattr(tm, "time", types.SimpleNamespace(perf_counter=lambda: now[0]))
    timer = tm.DeviceTimer.__new__(tm.DeviceTimer)
    timer.flush = timer.marker = timer.synchronize = lambda: None
    for call_s, calls_min, sections in ((0.001, 25, 1), (0.06, 3, 3)):
        entered, calls = [], []

        @contextlib.contextmanager
        def around(entered=entered):
            entered.append(1)
            yield

        def call(call_s=call_s, calls=calls):
            calls.append(1)
            now[0] += call_s

        timer.warm_up(call, around=around)
        assert len(calls) >= calls_min
        assert len(entered) == sections


# -- the gate: a kernel of ours between the flush and the call, holding the stream until the host has made the
# whole call (arena.timing.timer: a call of several launches no longer races the flush)

GATE = "_arena_gate_kernel"


def gated_sample(t0: int, call: list[tuple[int, int, str]], *, hold_ns: int = 80_000) -> tuple[list, int]:
    """A sample whose gate spins ``hold_ns`` after the flush (the host making the call), then the call's
    kernels back to back (times relative to the gate's end)."""
    f0, f1 = t0, t0 + 30_000
    g1 = f1 + hold_ns
    acts = [(f0, f1, FLUSH), (f1, g1, GATE)]
    end = g1
    for s, e, name in call:
        acts.append((g1 + s, g1 + e, name))
        end = max(end, g1 + e)
    acts.append((end + 2_000, end + 3_000, MARKER))
    return acts, end + 10_000


def test_the_gate_is_in_no_span_and_the_call_counts_from_its_first_kernel():
    acts, t = gated_sample(0, [(1_000, 4_000, "partial"), (5_000, 7_000, "combine")])
    acts2, _ = gated_sample(t, [(500, 2_500, "partial"), (3_000, 5_000, "combine")], hold_ns=900_000)
    spans, warnings = cut_spans(acts + acts2, 2, gates=[True, True])
    # the gate's own time (the host's time making the call) is in neither span, however long
    assert spans == [6.0, 4.5] and warnings == []


def test_a_step_without_a_gate_beside_gated_ones():
    a1, t = gated_sample(0, [(1_000, 3_000, "k")])
    a2, t = sample(t, [(1_000, 3_000, "k"), (40_000, 42_000, "k2")], checks=False)   # ungated: the gap counts
    spans, _ = cut_spans(a1 + a2, 2, gates=[True, False])
    assert spans == [2.0, 41.0]


@pytest.mark.parametrize("name", [GATE, GATE + "_fast", "my" + GATE + "_work"])
def test_a_call_kernel_named_like_the_gate_fails_the_cut_and_is_not_left_out(name):
    # a kernel of the call whose name holds our gate's would be left out of its span if names alone
    # decided; the cut counts our gates against the steps that put one, so the trace does not cut
    acts, _ = gated_sample(0, [(1_000, 900_000, name), (901_000, 902_000, "k")])
    with pytest.raises(RuntimeError, match="cannot be cut"):
        cut_spans(acts, 1, gates=[True])
    bare, _ = sample(0, [(1_000, 900_000, name)])
    with pytest.raises(RuntimeError, match="cannot be cut"):
        cut_spans(bare, 1)                       # no gate given, one named like it in the trace


def test_gates_in_the_wrong_windows_fail_the_cut():
    a1, t = gated_sample(0, [(1_000, 3_000, "k")])
    a2, _ = sample(t, [(1_000, 3_000, "k")], checks=False)
    with pytest.raises(RuntimeError, match="cannot be cut"):
        cut_spans(a1 + a2, 2, gates=[False, True])   # as many gates as put, in the other window
    with pytest.raises(RuntimeError, match="cannot be cut"):
        cut_spans(a1 + a2, 2, gates=[True])          # a flag for one step of two


def test_the_gate_kernel_compiles_for_both_vendors_with_a_clock_and_uncached_reads(monkeypatch):
    # the gate spins on pinned host memory the host writes: each read must reach memory (a cached read
    # would never see the host's write, and every call would wait for the time-out), and it must time out
    # on the device's own clock (a call that synchronizes inside waits for it)
    import triton
    from triton.backends.compiler import GPUTarget

    from arena.timing.timer import GATE_KERNEL, _arena_gate_kernel

    monkeypatch.delenv("TRITON_INTERPRET", raising=False)
    sig = {"flag": "*i32", "limit_ns": "i32", "HIP": "constexpr"}
    for target, hip, clock, read in ((GPUTarget("cuda", 90, 32), False, "%globaltimer", "ld.volatile.global"),
                                     (GPUTarget("hip", "gfx942", 64), True, "s_memrealtime", "sc0 sc1")):
        k = triton.compile(triton.compiler.ASTSource(fn=_arena_gate_kernel, signature=sig, constexprs={"HIP": hip}),
                           target=target)
        asm = k.asm["ptx"] if not hip else k.asm["amdgcn"]
        loads = [ln for ln in asm.splitlines() if ("ld." in ln or "global_load" in ln) and "param" not in ln]
        assert GATE_KERNEL == GATE and k.name == GATE
        assert clock in asm and loads and all(read in ln for ln in loads), (target.backend, loads)


def test_a_side_whose_call_waits_for_the_device_is_timed_without_the_gate_from_then_on(monkeypatch):
    """The device stood in for: a synchronize finds the gate still shut when the host has not opened it
    (the call waits inside, the gate opens by itself after its time-out). Each sample whose gate opened
    by itself says so; a side whose calls waited so twice in a row (each still being made when the gate
    opened) puts no gate from then on; the other side's keep theirs."""
    import contextlib

    import torch

    import arena.timing.timer as tm

    acts, kernel, _ = _timeline()

    timer = _stood_in_timer(tm, kernel)
    gates_seen: list[tuple[str, bool]] = []

    def synchronize():
        flag = timer.gate_flag
        if flag is not None and int(flag[1]) == -1:       # a gate is waiting on the device
            flag[1] = 0 if int(flag[0]) else 1              # opened by the host, or by itself

    monkeypatch.setattr(torch.profiler, "profile", lambda **kw: contextlib.nullcontext())
    monkeypatch.setattr(torch.cuda, "synchronize", synchronize)
    monkeypatch.setattr(torch.cuda, "Event", lambda **kw: _UntimedEvent())
    monkeypatch.setattr(tm, "_device_activities", lambda prof: sorted(acts))
    real_gate = timer.gate

    def gate(who):
        put = real_gate(who)
        gates_seen.append((who, put))
        return put

    timer.gate = gate

    waited = tm.GATE_TIMEOUT_NS / 1e9     # the gate's time-out, which a call that waits for it spends inside

    def waits_inside():
        kernel("s", 5_000)
        torch.cuda.synchronize()              # e.g. .item() on a result
        time.sleep(waited)
        kernel("s2", 5_000)

    steps = [("a", lambda: None, lambda: kernel("a", 5_000), lambda: None),
             ("s", lambda: None, waits_inside, lambda: None)]
    out, warnings = timer.sample_rounds([steps, steps[::-1], steps])
    assert gates_seen == [("a", True), ("s", True), ("s", True), ("a", True), ("a", True), ("s", False)]
    # every sample whose gate opened by itself, and every one of that side's after its second in a row
    assert warnings == [(1, tm.UNGATED_WARNING), (2, tm.UNGATED_WARNING), (5, tm.UNGATED_WARNING)]
    assert tm.UNGATED_WARNING.split(":")[0] == "ungated"      # the config's flag (arena.evaluation.decision)
    assert timer.ungated == {"s"}
    assert [side for side, *_ in out] == ["a", "s", "s", "a", "a", "s"]

    # unprofiled (a trusted side): the same, and its warning comes back too
    acts.clear()
    timer.ungated.clear()
    timer.strikes.clear()
    gates_seen.clear()
    out, warnings = timer.sample_rounds([steps, steps, steps], profiled=False)
    assert warnings == [(1, tm.UNGATED_WARNING), (3, tm.UNGATED_WARNING), (5, tm.UNGATED_WARNING)]
    assert gates_seen == [("a", True), ("s", True), ("a", True), ("s", True), ("a", True), ("s", False)]

    # a host stall: the gate opened by itself, but the call had returned before it (no wait inside): that sample
    # says so and the side keeps its gate; nor do waits inside that a held gate comes between take it off
    acts.clear()
    timer.ungated.clear()
    timer.strikes.clear()
    gates_seen.clear()
    calls = iter(range(100))

    def stalls():
        kernel("h", 5_000)
        torch.cuda.synchronize()              # the gate found shut, the call back at once

    def now_and_then():
        kernel("w", 5_000)
        if next(calls) % 2 == 0:
            torch.cuda.synchronize()
            time.sleep(waited)

    stalled = [("h", lambda: None, stalls, lambda: None), ("w", lambda: None, now_and_then, lambda: None)]
    out, warnings = timer.sample_rounds([stalled, stalled, stalled], profiled=False)
    assert gates_seen == [(who, True) for who in ("h", "w") * 3]
    assert warnings == [(0, tm.UNGATED_WARNING), (1, tm.UNGATED_WARNING), (2, tm.UNGATED_WARNING),
                        (4, tm.UNGATED_WARNING), (5, tm.UNGATED_WARNING)]
    assert timer.ungated == set()


def test_a_call_that_raises_opens_the_gate(monkeypatch):
    import torch

    import arena.timing.timer as tm

    monkeypatch.setattr(torch.cuda, "Event", lambda **kw: types.SimpleNamespace(record=lambda *a: None))
    monkeypatch.setattr(torch.cuda, "synchronize", lambda: None)
    timer = _stood_in_timer(tm, lambda name, ns: None)
    session = tm.Session(timer, profiled=False)

    def broken():
        raise ValueError("the candidate's call failed")

    with pytest.raises(ValueError):
        session.step(broken, "candidate")
    assert int(timer.gate_flag[0]) == 1       # the device is not left behind a shut gate


def test_a_trace_that_does_not_cut_in_the_candidates_process_is_its_integrity_violation():
    """Our flush, gate and marker kernels are launched as counted; in the candidate's process, a
    trace that does not cut holds kernels of the candidate's named like ours
    (tests/exploits/candidates/spoof_harness_names.py on a GPU): its failure, not the harness's."""
    from arena.evaluation.candidate.process import CandidateProcess
    from arena.evaluation.protocol import EndRequest, FailReply
    from arena.records import Status
    from arena.timing.timer import GATE_KERNEL, _cut

    class Session:
        def close(self):
            acts, _ = gated_sample(0, [(1_000, 90_000, GATE_KERNEL + "_axpy"), (91_000, 92_000, "_touch")])
            return _cut(acts, 1, [True])

    from arena.timing.timer import HostTimer

    proc = CandidateProcess(send=lambda f: None, notice_fd=None, mode="cpu")
    proc.timer, proc.session = HostTimer(), Session()
    reply = proc.handle(EndRequest())
    assert isinstance(reply, FailReply) and reply.status is Status.INTEGRITY_VIOLATION
    assert GATE_KERNEL in reply.message and "cannot be cut" in reply.message


def test_a_step_that_breaks_off_midway_tells_what_broke_it_not_the_trace(monkeypatch):
    """Out of memory between the gate and the end marker (a crowded device): the trace then holds a
    flush and a gate with no marker and cannot be cut; the error told is the one that broke the step
    (it was the cut's, which named no cause)."""
    acts, kernel, timer = _profiled_stand_in(monkeypatch)

    def marker():
        raise RuntimeError("CUDA error: out of memory")

    timer.marker = marker
    with pytest.raises(RuntimeError, match="out of memory"):
        timer.sample_round([("warm", lambda: None, lambda: None, lambda: None)])
    assert [a[2] for a in acts] == [FLUSH, GATE]


def test_a_step_whose_call_raises_leaves_the_sessions_other_steps_cut(monkeypatch):
    """In a process that makes its steps for another (the candidate's, serving the trusted process's
    requests): a call that raises (out of memory on a crowded device) after 2 steps were made. Its flush and
    gate are on the trace; it gets its marker too, so the session still cuts into the steps made when it
    ends, and the error told is the call's (on an H100 the cut's failure was told instead: "25 flush, 24
    marker and 25 gate kernels for 24 samples", an INTEGRITY_VIOLATION for a shipped solution)."""
    import torch

    import arena.timing.timer as tm

    acts, kernel, timer = _profiled_stand_in(monkeypatch)
    session = tm.Session(timer, profiled=True)
    session.open()
    session.step(lambda: kernel("axpy", 10_000), "candidate")
    session.step(lambda: kernel("axpy", 20_000), "candidate")

    def broken():
        kernel("axpy_partial", 5_000)
        raise torch.cuda.OutOfMemoryError("CUDA out of memory")

    with pytest.raises(torch.cuda.OutOfMemoryError):
        session.step(broken, "candidate")
    session.step(lambda: kernel("axpy", 30_000), "candidate")
    assert [a[2] for a in acts].count(MARKER) == 4 and [a[2] for a in acts].count(FLUSH) == 4
    out, warnings = session.close()
    assert [round(span) for span, _, _ in out] == [10, 20, 30]      # the broken step gives no sample
    assert all("axpy_partial" not in activity for _, _, activity in out)


def test_a_rounds_work_ahead_runs_before_its_section_outside_the_exclusive_hold():
    """``Timed.ahead(first, n)`` runs once before each section, for the rounds that section runs,
    with no exclusive hold of the GPU; each round's ``fill`` then comes inside the section."""
    import contextlib

    from arena.timing.timer import Timed, time_many

    timer = _SetDependentTimer(0.0, 0.0)
    held = [False]
    log: list = []

    @contextlib.contextmanager
    def alone():
        held[0] = True
        try:
            yield
        finally:
            held[0] = False

    sides = {name: {"prepare": lambda i: None, "call": lambda i: None, "after": lambda i, c=None: None}
             for name in ("baseline", "candidate")}
    item = Timed(sides, 4, min_pairs=8, max_pairs=40, target_rse=0.0,
                 fill=lambda r: log.append(("fill", r, held[0])),
                 ahead=lambda r, n: log.append(("ahead", r, n, held[0])))
    time_many(timer, [item], alone=alone)
    aheads = [e for e in log if e[0] == "ahead"]
    fills = [e for e in log if e[0] == "fill"]
    assert aheads and all(not e[3] for e in aheads) and all(e[2] for e in fills)
    assert [r for _, r, _ in fills] == list(range(len(fills)))
    # the rounds each ahead announced are the rounds its section filled, in order
    announced = [r for _, first, n, _ in aheads for r in range(first, first + n)]
    assert announced == [r for _, r, _ in fills]
    assert item.result.ahead_s >= 0 and len(item.result.spans_us["candidate"]) == 40

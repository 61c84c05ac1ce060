"""Paired, interleaved GPU timing whose clock is the device's own (METHODOLOGY.md).

Each sample is: [prepare] -> cache flush -> start event -> call -> device synchronize ->
end event -> end marker -> [after]. The primary time is the device-side span of every
kernel / copy on every stream between the flush kernel and the end marker, read from the
profiler (CUPTI on CUDA, roctracer on ROCm); the events around the call plus a device-wide
synchronize are a cross-check. The flush and the marker are kernels of ours with names of
ours, so the trace can be cut into samples. Samples alternate A B / B A so neither side
always runs right after the flush.
"""

from __future__ import annotations

import contextlib
import logging
import time
from dataclasses import dataclass, field
from typing import Callable, Iterable, Iterator, Sequence

import torch
import triton
import triton.language as tl

from arena.timing import stats

log = logging.getLogger(__name__)

FLUSH_KERNEL = "_arena_flush_kernel"
MARKER_KERNEL = "_arena_end_marker_kernel"
_FLUSH_BLOCK = 4096
Step = tuple[str, Callable[[], None], Callable[[], None], Callable[[], None]]   # side, prepare, call, after


@triton.jit
def _arena_flush_kernel(buf, n, value, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    tl.store(buf + offs, value, mask=offs < n)


@triton.jit
def _arena_end_marker_kernel(buf):
    tl.store(buf, 1)


@dataclass
class SampleSet:
    """Per-side samples in microseconds, in the order taken."""

    spans_us: dict[str, list[float]] = field(default_factory=dict)
    events_us: dict[str, list[float]] = field(default_factory=dict)
    rounds: int = 0
    wall_s: float = 0.0
    warnings: list[str] = field(default_factory=list)
    kernels: dict[str, set[str]] = field(default_factory=dict)   # names of the device activities per side
    profiler_s: float = 0.0      # host seconds starting, stopping and reading the profiler
    refresh_s: float = 0.0       # host seconds renewing input sets between rounds (and checking the last ones)


def preload() -> None:
    """The seconds every timing process spends once, spent ahead (a worker waiting for its
    job): the profiler's first start (CUPTI, ~4 s on an H200) and the compiles of our flush
    and marker kernels, for the argument kinds DeviceTimer calls them with. No kernel runs."""
    from torch.profiler import ProfilerActivity, profile

    with profile(activities=[ProfilerActivity.CUDA]):
        pass
    _arena_flush_kernel.warmup(torch.float32, 2**24, 1.0, BLOCK=_FLUSH_BLOCK, grid=(1,))
    _arena_end_marker_kernel.warmup(torch.int32, grid=(1,))


class DeviceTimer:
    """Owns the flush buffer and the markers for one device."""

    def __init__(self, llc_bytes: int, device: str = "cuda"):
        self.device = device
        n = max(2 * int(llc_bytes), 64 * 2**20) // 4
        self.flush_buf = torch.empty(n, dtype=torch.float32, device=device)
        self.marker_buf = torch.zeros(1, dtype=torch.int32, device=device)
        self._flush_grid = (triton.cdiv(n, _FLUSH_BLOCK),)
        self._tick = 0
        self.profiler_s = 0.0

    def flush(self) -> None:
        self._tick += 1
        _arena_flush_kernel[self._flush_grid](self.flush_buf, self.flush_buf.numel(), float(self._tick % 7),
                                               BLOCK=_FLUSH_BLOCK)

    def marker(self) -> None:
        _arena_end_marker_kernel[(1,)](self.marker_buf)

    def warm_up(self, call: Callable[[], None], *, min_calls: int = 3, min_s: float = 0.025,
                around: Callable[[], contextlib.AbstractContextManager] = contextlib.nullcontext) -> None:
        """Call until at least min_calls calls have been made and they took min_s seconds in all
        (JIT, autotune), each inside an ``around()`` section of its own (the GPU's shared lock,
        so a timed round elsewhere waits for one call at most; a Triton compile lets it go)."""
        with around():
            self.flush()
            self.marker()
            torch.cuda.synchronize()
        busy = 0.0
        calls = 0
        while calls < min_calls or busy < min_s:
            with around():
                start = time.perf_counter()
                call()
                torch.cuda.synchronize()
                busy += time.perf_counter() - start
            calls += 1
            if calls > 10_000:
                break

    def sample_round(self, steps: Sequence[Step], *,
                     alone: Callable[[], contextlib.AbstractContextManager] = contextlib.nullcontext
                     ) -> tuple[list[tuple[str, float, float, set[str]]], list[str]]:
        """Run (side, prepare, call, after) steps under one profiler session.
        Returns (side, span_us, events_us, names of the device activities) per step and warnings."""
        return self.sample_rounds([steps], alone=alone)

    def sample_rounds(self, rounds: Iterable[Sequence[Step]], *,
                      alone: Callable[[], contextlib.AbstractContextManager] = contextlib.nullcontext
                      ) -> tuple[list[tuple[str, float, float, set[str]]], list[str]]:
        """Several rounds of steps under one profiler session (a session costs ~170 ms of host
        time, METHODOLOGY.md). The rounds run inside one ``alone()`` section (the GPU's
        exclusive lock: taking it waits for every other evaluation's GPU work to drain, so a
        batch takes it once, not once a round); the profiler's start, stop and read-out are
        host work and run outside it (the profiler records this process's device work only).
        ``rounds`` may do work of its own before it yields the next round (renewing inputs):
        that work runs after a marker and before the next flush, so it falls in no sample's
        window."""
        from torch.profiler import ProfilerActivity, profile

        events = []
        t0 = time.perf_counter()
        prof = profile(activities=[ProfilerActivity.CUDA])
        prof.__enter__()
        self.profiler_s += time.perf_counter() - t0
        try:
            with alone():
                for steps in rounds:
                    self._steps(steps, events)
        finally:
            t0 = time.perf_counter()
            prof.__exit__(None, None, None)
        acts = _device_activities(prof)
        self.profiler_s += time.perf_counter() - t0
        windows, warnings = cut_windows(acts, len(events))
        out = []
        for (side, ev0, ev1), (span, names) in zip(events, windows):
            out.append((side, span, ev0.elapsed_time(ev1) * 1000.0, names))
        return out, warnings

    def _steps(self, steps: Sequence[Step], events: list) -> None:
        for side, prepare, call, after in steps:
            prepare()
            torch.cuda.synchronize()  # our fills and checks are done before the flush starts
            self.flush()
            ev0 = torch.cuda.Event(enable_timing=True)
            ev1 = torch.cuda.Event(enable_timing=True)
            ev0.record()
            call()
            torch.cuda.synchronize()
            ev1.record()
            self.marker()
            after()
            events.append((side, ev0, ev1))
        torch.cuda.synchronize()


def _device_activities(prof) -> list[tuple[int, int, str]]:
    acts = []
    for e in prof.profiler.kineto_results.events():
        if e.device_type() != torch.autograd.DeviceType.CUDA:
            continue
        kind = str(e.activity_type()).lower() if hasattr(e, "activity_type") else ""
        if "annotation" in kind or "runtime" in kind or "driver" in kind or e.is_user_annotation():
            continue
        acts.append((int(e.start_ns()), int(e.end_ns()), e.name()))
    acts.sort()
    return acts


def cut_spans(acts: list[tuple[int, int, str]], n_steps: int) -> tuple[list[float], list[str]]:
    """The spans of ``cut_windows`` (microseconds) and its warnings."""
    windows, warnings = cut_windows(acts, n_steps)
    return [span for span, _ in windows], warnings


def cut_windows(acts: list[tuple[int, int, str]], n_steps: int) -> tuple[list[tuple[float, set[str]]], list[str]]:
    """Cut a device timeline of (start_ns, end_ns, name) at our flush / marker kernels: the
    span of everything (any stream) that starts after a flush starts and before the next
    marker starts, and the names of those activities. Work the call put on another stream
    may begin while the flush still runs (it does not wait for our stream): it is counted
    from its own start."""
    acts = sorted(acts)
    flushes = [a for a in acts if FLUSH_KERNEL in a[2]]
    markers = [a for a in acts if MARKER_KERNEL in a[2]]
    warnings = []
    if len(flushes) != n_steps or len(markers) != n_steps:
        raise RuntimeError(f"timing trace has {len(flushes)} flush and {len(markers)} marker kernels "
                           f"for {n_steps} samples: the trace cannot be cut into samples")
    spans = []
    for (f0, _f1, _), (m0, _m1, _) in zip(flushes, markers):
        # everything that starts inside the window, and anything of the call's already running when the flush
        # starts (our own kernels run on one stream before the flush, so they end before it starts)
        inside = [a for a in acts if (f0 <= a[0] < m0 or a[0] < f0 < a[1])
                  and FLUSH_KERNEL not in a[2] and MARKER_KERNEL not in a[2]]
        straddling = [a for a in acts if a[0] < m0 < a[1] and MARKER_KERNEL not in a[2]]
        if straddling:
            warnings.append("device work overlapped the end marker")
        if not inside:
            spans.append((0.0, set()))
            continue
        spans.append(((max(a[1] for a in inside) - min(a[0] for a in inside)) / 1000.0, {a[2] for a in inside}))
    return spans, warnings


def time_paired(timer: DeviceTimer, sides: dict[str, dict[str, Callable[[int], None]]], n_sets: int, *,
                min_pairs: int = 10, max_pairs: int = 400, target_rse: float = 0.01, cap_s: float = 4.0,
                refresh: Callable[[int], None] | None = None,
                alone: Callable[[], contextlib.AbstractContextManager] = contextlib.nullcontext) -> SampleSet:
    """Interleaved samples of two sides until the median of each is known to target_rse.

    ``sides[name]`` holds ``prepare(i)``, ``call(i)`` and ``after(i)`` for input set i.
    A round calls each side once on each set, so no call sees inputs it has seen before
    in that round; ``refresh(round)``, if given, renews the input sets between rounds (not
    timed). Rounds run in batches, one profiler session each: the first batch has the
    rounds ``min_pairs`` needs, each later one twice as many as the one before (at most 16,
    and no more than ``max_pairs`` needs); the stopping rule is checked after each batch,
    the time cap also between its rounds. A batch runs inside one ``alone()`` section (the
    GPU's exclusive lock, so no other evaluation's kernels run meanwhile), the renewals
    between its rounds too; the profiler's work does not."""
    names = list(sides)
    result = SampleSet(spans_us={s: [] for s in names}, events_us={s: [] for s in names},
                       kernels={s: set() for s in names})
    start = time.perf_counter()
    prof0 = timer.profiler_s
    round_no = 0
    pairs_per_round = n_sets
    batch = max(1, -(-min_pairs // pairs_per_round))

    def steps_of(r: int) -> list[Step]:
        steps = []
        for k in range(pairs_per_round):
            i = k % n_sets
            order = names if (k + r) % 2 == 0 else list(reversed(names))
            for s in order:
                h = sides[s]
                steps.append((s, (lambda h=h, i=i: h["prepare"](i)), (lambda h=h, i=i: h["call"](i)),
                              (lambda h=h, i=i: h["after"](i))))
        return steps

    def rounds(n: int) -> Iterator[list[Step]]:
        nonlocal round_no
        for b in range(n):
            if b > 0 and time.perf_counter() - start > cap_s:
                return
            if refresh is not None and round_no > 0:
                t0 = time.perf_counter()
                refresh(round_no)
                result.refresh_s += time.perf_counter() - t0
            yield steps_of(round_no)
            round_no += 1

    while True:
        samples, warnings = timer.sample_rounds(rounds(batch), alone=alone)
        result.warnings.extend(w for w in warnings if w not in result.warnings)
        for side, span, ev, kernels in samples:
            result.spans_us[side].append(span)
            result.events_us[side].append(ev)
            result.kernels[side].update(kernels)
        n = min(len(v) for v in result.spans_us.values())
        elapsed = time.perf_counter() - start
        done = n >= min_pairs and all(stats.rse_of_median(result.spans_us[s]) < target_rse for s in names)
        if done or n >= max_pairs or (elapsed > cap_s and n >= min(min_pairs, 3)):
            break
        batch = max(1, min(2 * batch, 16, -(-(max_pairs - n) // pairs_per_round)))
    result.rounds = round_no
    result.wall_s = time.perf_counter() - start
    result.profiler_s = timer.profiler_s - prof0
    return result

"""Paired, interleaved GPU timing whose clock is the device's own (METHODOLOGY.md).

Each sample is: [prepare] -> cache flush -> gate -> start event -> call -> gate opened ->
device synchronize -> end event -> end marker -> [after]. The primary time is the device-side
span of every kernel / copy on every stream between the flush kernel and the end marker, read
from the profiler (CUPTI on CUDA, roctracer on ROCm); the events around the call plus a
device-wide synchronize are a cross-check. Samples alternate A B / B A so neither side always
runs right after the flush. Why the gate: ``_arena_gate_kernel``; when a trusted side is also
timed without the profiler: ``arena.evaluation.trusted.performance.HOST_BOUND_RATIO``.
"""

from __future__ import annotations

import contextlib
import logging
import os
import time
from dataclasses import dataclass, field
from typing import Any, Callable, Iterable, Iterator, Protocol, Sequence

import torch
import triton
import triton.language as tl

from arena.errors import ArenaException
from arena.timing import stats

log = logging.getLogger(__name__)
_HIP = bool(getattr(torch.version, "hip", None))

FLUSH_KERNEL = "_arena_flush_kernel"
MARKER_KERNEL = "_arena_end_marker_kernel"
GATE_KERNEL = "_arena_gate_kernel"
# the flush, the gate and the marker are kernels of ours with names of ours, so the trace can be cut into samples
OURS = (FLUSH_KERNEL, MARKER_KERNEL, GATE_KERNEL)
# how long the gate waits for the host before it opens by itself: far above any call's host time
# (an eager reference of a hundred launches under the profiler: about 2 ms), short enough that the
# one timed call of a side that synchronizes inside costs little
GATE_TIMEOUT_NS = 20_000_000
# how many calls in a row must have waited for the device inside (the gate opened by itself while the call was
# still being made) before a side is timed without the gate: one such opening is also what a host stall of that
# length gives (a process descheduled, its evaluation's CPU quota spent), and a side taken off the gate for one
# stall is timed with its launch gaps for the rest of its evaluation while the other side is not (AKA's
# triton_rms_norm on an H200, its starting kernel against itself, both sides replayed, eight evaluations a GPU:
# 1.21x and 1.77x on two small held-out configs flagged so, the baseline's side the slower)
GATE_STRIKES = 2
OVERLAP_WARNING = "device work overlapped the end marker"
UNGATED_WARNING = ("ungated: the gate opened by itself during a call of this side (the call waited for the device "
                   "inside, or its host stalled past the gate's time), so its launch gaps are in that sample's span; "
                   f"a side whose calls waited inside {GATE_STRIKES} times in a row is timed without the gate from "
                   "then on in its process")
_FLUSH_BLOCK = 4096
Step = tuple[str, Callable[[], None], Callable[[], None], Callable[[], None]]   # side, prepare, call, after


@triton.jit
def _arena_flush_kernel(buf, n, value, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    tl.store(buf + offs, value, mask=offs < n)


@triton.jit
def _arena_end_marker_kernel(buf):
    tl.store(buf, 1)


@triton.jit
def _arena_gate_kernel(flag, limit_ns, HIP: tl.constexpr):
    """Holds the stream until the host has made the whole call: spins on a flag in pinned host
    memory that the host sets when the call returns (``DeviceTimer.open_gate``).

    Without it, a call of several launches raced the flush: its second kernel's launch either
    was queued before the device got to it (the span: its kernels' own time) or was not (the
    span: the host's gap between launches too), and which one happened depended on the process
    (the logsumexp_rows solution on 16 rows read 6-50 us in different evaluations of the same
    file, scripts/gpu_launch_race.py). Behind the gate every call's device work runs as a queue
    the host has already filled, the same in every process: a figure is device time, for every
    side alike. A call that waits for the device inside (a synchronize, a copy to the host)
    would wait for the gate: the gate opens by itself after GATE_TIMEOUT_NS, and a side whose
    calls did so GATE_STRIKES times in a row (each call still being made when it opened) is
    timed without a gate from then on in this process (its span then holds its launch gaps).
    NVBench holds its measured launches behind a blocking kernel with a time-out for the same
    reasons.

    It spins until the host sets ``flag[0]`` (pinned host memory, each read past every cache:
    ``ld.volatile`` on NVIDIA, ``sc0 sc1`` on AMD) or ``limit_ns`` have passed; ``flag[1]``: 1
    if it opened by itself."""
    if HIP:
        t0 = tl.extra.hip.memrealtime() * 10        # a 100 MHz clock
    else:
        t0 = tl.extra.cuda.globaltimer()
    waited = t0 - t0
    shut = tl.load(flag, volatile=True, cache_modifier=".cv") == 0
    while shut & (waited < limit_ns):
        shut = tl.load(flag, volatile=True, cache_modifier=".cv") == 0
        if HIP:
            now = tl.extra.hip.memrealtime() * 10
        else:
            now = tl.extra.cuda.globaltimer()
        waited = now - t0
    tl.store(flag + 1, shut.to(tl.int32))


@dataclass
class SampleSet:
    """Per-side samples in microseconds, in the order taken."""

    spans_us: dict[str, list[float]] = field(default_factory=dict)
    events_us: dict[str, list[float]] = field(default_factory=dict)
    rounds: int = 0
    wall_s: float = 0.0
    warnings: list[str] = field(default_factory=list)
    # per side: the device activities (kernels, copies, fills) inside its windows, by name, and their device time
    activity_us: dict[str, dict[str, float]] = field(default_factory=dict)
    profiler_s: float = 0.0      # host seconds starting, stopping and reading the profiler
    refresh_s: float = 0.0       # host seconds renewing input sets between rounds (and checking the last ones)
    ahead_s: float = 0.0         # seconds of the rounds' work done before their exclusive sections (``Timed.ahead``)


# One timed call: its span and its events + synchronize (us), and its activities' device time by name
Sample = tuple[float, float, dict[str, float]]


class RemoteCall:
    """A step's call made by another process: ``remote`` is that process's half of the session
    (``Remote``), ``slot`` the call's buffers there. ``DeviceTimer.sample_rounds`` hands it to
    its remote."""

    def __init__(self, remote: "Remote", slot: int, copy_out: bool = True, who: str = ""):
        self.remote = remote
        self.slot = slot
        self.copy_out = copy_out
        self.who = who                      # the side it is (the gate's time-outs are per side)
        self.host_us: float | None = None   # the call's host time there, once made

    def __call__(self) -> None:
        raise RuntimeError("a remote call is made by its remote, not called")


class Remote(Protocol):
    """Another process's half of a session (arena.evaluation.trusted.process's handle on a process that makes
    calls: the candidate's, or the one that runs the baseline)."""

    def begin(self, profiled: bool) -> None: ...

    def sample(self, calls: Sequence[RemoteCall]) -> None: ...

    def end(self) -> tuple[list[Sample], list[tuple[int, str]], float]: ...


def preload(profiler: bool = True, kernel_cache: str = "") -> None:
    """The seconds every timing process spends once, spent as its job arrives: the profiler's
    first start (CUPTI, ~4 s on an H200, most of it importing torch's compiler stack, which a
    worker's processes import once, ahead: arena.evaluation.trusted.process.preload_imports) and the compiles of
    our flush and marker kernels, for the argument kinds DeviceTimer calls them with (0.6 s of
    one core each). ``kernel_cache``: a Triton cache for these two kernels only, shared by
    every worker of the harness (hidden from candidates by their sandbox), so a process finds
    them compiled. Opens the device's context first. No kernel runs."""
    torch.cuda.init()
    if profiler:
        from torch.profiler import ProfilerActivity, profile

        with profile(activities=[ProfilerActivity.CUDA]):
            pass
    old = os.environ.get("TRITON_CACHE_DIR")
    if kernel_cache:
        os.environ["TRITON_CACHE_DIR"] = kernel_cache
    try:
        _arena_flush_kernel.warmup(torch.float32, 2**24, 1.0, BLOCK=_FLUSH_BLOCK, grid=(1,))
        _arena_end_marker_kernel.warmup(torch.int32, grid=(1,))
        _arena_gate_kernel.warmup(torch.int32, GATE_TIMEOUT_NS, HIP=_HIP, grid=(1,))
    finally:
        if old is None:
            os.environ.pop("TRITON_CACHE_DIR", None)
        else:
            os.environ["TRITON_CACHE_DIR"] = old


class Session:
    """This process's part of a timing session: each ``step`` is [flush] -> [gate] -> start
    event -> call -> gate opened -> synchronize -> end event -> [marker]; ``close`` cuts the
    profiler's trace into one sample per step. ``profiled=False`` (trusted sides only): no
    profiler; a sample is the events around the call on its stream, the end event recorded
    right after the call (behind the gate: the call's device time, as under the profiler)."""

    def __init__(self, timer: "DeviceTimer", profiled: bool = True):
        self.timer = timer
        self.profiled = profiled
        self.events: list[tuple[Any, Any] | None] = []   # None: a step that broke off
        self.prof = None
        self.ungated_at: list[int] = []     # the steps without a gate, or whose gate opened by itself
        self.gated: list[bool] = []         # whether each step had a gate

    def open(self) -> None:
        if not self.profiled:
            return
        from torch.profiler import ProfilerActivity, profile

        t0 = time.perf_counter()
        self.prof = profile(activities=[ProfilerActivity.CUDA])
        self.prof.__enter__()
        self.timer.profiler_s += time.perf_counter() - t0

    def step(self, call: Callable[[], None], who: str = "") -> None:
        """One timed call; ``who``: the side it is, for the gate's time-outs (``DeviceTimer.gate``)."""
        parts, clock = self.timer.step_parts, time.perf_counter
        t0 = clock()
        self.timer.flush()
        gated = self.timer.gate(who)
        ev0 = torch.cuda.Event(enable_timing=True)
        ev1 = torch.cuda.Event(enable_timing=True)
        ev0.record()
        t1 = clock()
        try:
            call()
        except BaseException:
            self.timer.open_gate()
            # the step that broke off still gets its marker, so that the session's trace cuts into the
            # steps made (its own window is dropped at ``close``): a trace that does not cut would be told
            # instead of what broke the step (running out of memory, which is retried, read as a forgery)
            with contextlib.suppress(Exception):
                self.timer.marker()
                self.events.append(None)
                self.gated.append(gated)
            raise
        t2 = clock()
        if not self.profiled:       # a trusted call: its work is on this stream
            ev1.record()
            self.timer.open_gate()
            torch.cuda.synchronize()
        else:
            self.timer.open_gate()
            torch.cuda.synchronize()
            ev1.record()
        if not gated or self.timer.gate_done(who, t2 - t1):    # every sample without a gate says so (flagged)
            self.ungated_at.append(len(self.events))
        t3 = clock()
        self.timer.marker()
        self.events.append((ev0, ev1))
        self.gated.append(gated)
        parts["flush"] += t1 - t0
        parts["call"] += t2 - t1
        parts["wait"] += t3 - t2
        parts["marker"] += clock() - t3

    def close(self) -> tuple[list[Sample], list[tuple[int, str]]]:
        """One sample per step made (a step that broke off gives none), and their warnings."""
        torch.cuda.synchronize()
        made = [j for j, e in enumerate(self.events) if e is not None]
        number = {j: k for k, j in enumerate(made)}        # a step's position among the samples
        ungated = [(number[j], UNGATED_WARNING) for j in self.ungated_at if j in number]
        if not self.profiled:
            return [(ev0.elapsed_time(ev1) * 1000.0, ev0.elapsed_time(ev1) * 1000.0, {})
                    for ev0, ev1 in (self.events[j] for j in made)], ungated
        t0 = time.perf_counter()
        prof, self.prof = self.prof, None
        if prof is None:
            return [], []
        prof.__exit__(None, None, None)
        acts = _device_activities(prof)
        self.timer.profiler_s += time.perf_counter() - t0
        windows = _cut(acts, len(self.events), self.gated)
        out, warnings = [], []
        for j, (events, (span, activity, overlapped)) in enumerate(zip(self.events, windows)):
            if events is None:
                continue
            ev0, ev1 = events
            out.append((span, ev0.elapsed_time(ev1) * 1000.0, activity))
            if overlapped:
                warnings.append((number[j], OVERLAP_WARNING))
        warnings += ungated
        return out, warnings


STEP_PARTS = ("flush", "call", "wait", "marker", "threads")


def _step_parts() -> dict[str, float]:
    """Host seconds of a process's timed steps (``Session.step``), by part: the ``flush`` and
    the start event, the ``call``, the ``wait`` for the device after it (the end event
    included), the end ``marker``; and the ``threads`` check around a remote step (made by
    the process that serves it, arena.evaluation.candidate.process). A remote's are summed into its reply at
    the session's end, and land in the record as ``alone_<part>_s`` (inside ``served``)."""
    return dict.fromkeys(STEP_PARTS, 0.0)


def _alone_parts() -> dict[str, float]:
    """Host seconds inside timed sections, by what they went to: a step's ``prepare`` (new
    inputs, poisoned outputs), the ``sync`` after it, the ``step`` itself (a remote one: the
    round trip to its process), its ``after``, and the ``rounds``' own work between steps; of
    that, the ``checks`` of timed outputs made inside the section, for want of memory
    (arena.evaluation.trusted.performance counts them)."""
    return {"prepare": 0.0, "sync": 0.0, "step": 0.0, "after": 0.0, "rounds": 0.0, "checks": 0.0}


class DeviceTimer:
    """Owns the flush buffer and the markers for one device."""

    def __init__(self, llc_bytes: int, device: str = "cuda"):
        self.device = device
        self._n = max(2 * int(llc_bytes), 64 * 2**20) // 4
        self.flush_buf = None              # allocated on the first flush: a process that times nothing has none
        self.marker_buf = None
        self._flush_grid = (triton.cdiv(self._n, _FLUSH_BLOCK),)
        self._tick = 0
        self.profiler_s = 0.0
        self.alone_parts = _alone_parts()
        self.step_parts = _step_parts()
        self.gate_flag = None              # pinned host memory: [open, opened by itself]
        self.ungated: set[str] = set()     # the sides whose call waited for the gate: timed without it here
        self.strikes: dict[str, int] = {}  # a side's calls in a row that waited for the gate (``gate_done``)

    def gate(self, who: str) -> bool:
        """Hold this stream until ``open_gate`` (the call made): unless ``who``'s calls waited
        for it before. Whether a gate was put."""
        if who in self.ungated:
            return False
        if self.gate_flag is None:
            self.gate_flag = self._pinned_flag()
        flag = self.gate_flag.numpy()
        flag[0], flag[1] = 0, -1
        self._launch_gate()
        return True

    def _pinned_flag(self) -> torch.Tensor:
        return torch.zeros(2, dtype=torch.int32).pin_memory()

    def _launch_gate(self) -> None:
        _arena_gate_kernel[(1,)](self.gate_flag, GATE_TIMEOUT_NS, HIP=_HIP)

    def open_gate(self) -> None:
        if self.gate_flag is not None:
            self.gate_flag.numpy()[0] = 1

    def gate_done(self, who: str, call_s: float) -> bool:
        """After the device synchronized: did the gate open by itself? ``call_s``: the host seconds of the call
        it held. A call still being made when the gate opened by itself (``call_s`` half its time or more)
        waited for the device inside, or stalled; where ``who``'s calls did so ``GATE_STRIKES`` times in a row
        (a call that returned before the gate opened is no strike, nor does it break the row; a gate the host
        opened does), ``who`` is timed without a gate from now on: a call that waits inside does so every time,
        a stall seldom twice in a row."""
        if int(self.gate_flag.numpy()[1]) != 1:
            self.strikes.pop(who, None)
            return False
        if call_s * 1e9 >= GATE_TIMEOUT_NS / 2:
            self.strikes[who] = self.strikes.get(who, 0) + 1
            if self.strikes[who] >= GATE_STRIKES:
                self.ungated.add(who)
                log.info("the gate opened by itself for %r %d times in a row: its calls wait for the device; "
                         "timed without it", who, GATE_STRIKES)
        return True

    def flush(self) -> None:
        if self.flush_buf is None:
            self.flush_buf = torch.empty(self._n, dtype=torch.float32, device=self.device)
        self._tick += 1
        _arena_flush_kernel[self._flush_grid](self.flush_buf, self.flush_buf.numel(), float(self._tick % 7),
                                               BLOCK=_FLUSH_BLOCK)

    def marker(self) -> None:
        if self.marker_buf is None:
            self.marker_buf = torch.zeros(1, dtype=torch.int32, device=self.device)
        _arena_end_marker_kernel[(1,)](self.marker_buf)

    def synchronize(self) -> None:
        torch.cuda.synchronize()

    def session(self, profiled: bool = True) -> Session:
        return Session(self, profiled)

    def warm_up(self, call: Callable[[], None], *, min_calls: int = 3, min_s: float = 0.025,
                around: Callable[[], contextlib.AbstractContextManager] = contextlib.nullcontext,
                slice_s: float = 0.05) -> None:
        """Call until at least min_calls calls have been made and they took min_s seconds in all
        (JIT, autotune), inside ``around()`` sections (the GPU's shared lock; a Triton compile
        lets it go) of about ``slice_s`` each: a timed round elsewhere waits for one slice at
        most, and a warm-up enters a section or two, not one a call (each entry may queue
        behind a waiting writer)."""
        busy = 0.0
        calls = 0
        first = True
        while calls < min_calls or busy < min_s:
            with around():
                t_section = time.perf_counter()
                if first:
                    self.flush()
                    self.marker()
                    self.synchronize()
                    first = False
                while True:
                    start = time.perf_counter()
                    call()
                    self.synchronize()
                    busy += time.perf_counter() - start
                    calls += 1
                    if (calls >= min_calls and busy >= min_s) or calls > 10_000 \
                            or time.perf_counter() - t_section >= slice_s:
                        break
            if calls > 10_000:
                break

    def sample_round(self, steps: Sequence[Step], *,
                     alone: Callable[[], contextlib.AbstractContextManager] = contextlib.nullcontext
                     ) -> tuple[list[tuple[str, float, float, dict[str, float]]], list[tuple[int, str]]]:
        """Run (side, prepare, call, after) steps under one profiler session.
        Returns (side, span_us, events_us, device time by activity name) per step, and
        (step index, warning) for the steps that drew one."""
        return self.sample_rounds([steps], alone=alone)

    def sample_rounds(self, rounds: Iterable[Sequence[Step]], *,
                      alone: Callable[[], contextlib.AbstractContextManager] = contextlib.nullcontext,
                      profiled: bool = True, remotes: Sequence[Remote] = (), local: bool = True
                      ) -> tuple[list[tuple[str, float, float, dict[str, float]]], list[tuple[int, str]]]:
        """Several rounds of steps under one profiler session (a session costs ~170 ms of host
        time, METHODOLOGY.md). The rounds run inside one ``alone()`` section (the GPU's
        exclusive lock: taking it waits for every other evaluation's GPU work to drain, so a
        section takes it once, not once a round); the profiler's start, stop and read-out are
        host work and run outside it. ``rounds`` may do work of its own before it yields the
        next round (renewing inputs): that work runs after a marker and before the next flush,
        so it falls in no sample's window.

        A step whose call is a ``RemoteCall`` is made by its remote, another process, which
        keeps a session of its own over its steps (a profiler records only the device work of
        the process it runs in): every one of ``remotes`` has a session open over the rounds.
        ``local=False``: no step is made here, and this process opens no session. The samples
        come back in step order.

        ``profiled=False`` (trusted sides only): no profiler session; a sample is the events
        around the call on its stream, as both its span and its events."""
        where: list[tuple[str, int]] = []         # (side, whose session: 0 here, else id(remote)) per step
        out_of: dict[int, list[Sample]] = {}
        warn_of: dict[int, dict[int, str]] = {}
        begun: list[Remote] = []
        local_session = self.session(profiled) if local else None
        try:
            for r in remotes:
                r.begin(profiled)
                begun.append(r)
            if local_session is not None:
                local_session.open()
            made = False
            try:
                with alone():
                    parts = self.alone_parts
                    clock = time.perf_counter
                    t = clock()
                    for steps in rounds:
                        t0 = clock()
                        parts["rounds"] += t0 - t      # the rounds' own work (new sets, kept ones)
                        for run in _runs(steps):
                            # consecutive steps that one other process makes go to it as one request: their
                            # preparations first, then its calls one after the other with no round trip between
                            for _, prepare, _, _ in run:
                                prepare()
                            t1 = clock()
                            self.synchronize()   # our fills and checks are done before the flush starts
                            t2 = clock()
                            side, _, call, _ = run[0]
                            if isinstance(call, RemoteCall):
                                if not any(call.remote is r for r in begun):
                                    raise RuntimeError("a remote step whose remote has no session open")
                                call.remote.sample([c for _, _, c, _ in run])
                                where.extend((s, id(call.remote)) for s, _, _, _ in run)
                            else:
                                if local_session is None:
                                    raise RuntimeError("a local step in a session with none here")
                                local_session.step(call, side)
                                where.append((side, 0))
                            t3 = clock()
                            for _, _, _, after in run:
                                after()
                            t = clock()
                            parts["prepare"] += t1 - t0
                            parts["sync"] += t2 - t1
                            parts["step"] += t3 - t2
                            parts["after"] += t - t3
                            t0 = t
                    self.synchronize()
                    parts["rounds"] += clock() - t
                made = True
            finally:
                if local_session is not None:
                    try:
                        out, warn = local_session.close()
                    except TraceCutError:
                        if made:
                            raise
                        out, warn = [], []    # a step broke off midway: what broke it is the error to tell
                    out_of[0], warn_of[0] = out, dict(warn)
        finally:
            for r in begun:
                out, warn, secs = r.end()
                out_of[id(r)], warn_of[id(r)] = out, dict(warn)
                self.profiler_s += secs
        counts: dict[int, int] = {}
        for _, who in where:
            counts[who] = counts.get(who, 0) + 1
        for who, n in counts.items():
            if len(out_of.get(who, ())) != n:
                raise RuntimeError(f"a timing session gave {len(out_of.get(who, ()))} samples for {n} steps "
                                   f"({'here' if who == 0 else 'remote'})")
        samples: list[tuple[str, float, float, dict[str, float]]] = []
        warnings: list[tuple[int, str]] = []
        k: dict[int, int] = {}
        for j, (side, who) in enumerate(where):
            i = k.get(who, 0)
            span, ev, activity = out_of[who][i]
            w = warn_of[who].get(i)
            if w:
                warnings.append((j, w))
            k[who] = i + 1
            samples.append((side, span, ev, activity))
        return samples, warnings


def _runs(steps: Sequence[Step]) -> Iterator[list[Step]]:
    """A round's steps in runs: a local step alone, consecutive steps whose calls one remote
    makes together."""
    run: list[Step] = []
    for step in steps:
        call = step[2]
        if run and isinstance(call, RemoteCall) and isinstance(run[-1][2], RemoteCall) and \
                call.remote is run[-1][2].remote:
            run.append(step)
            continue
        if run:
            yield run
        run = [step]
    if run:
        yield run


class HostTimer(DeviceTimer):
    """The host's clock in place of the device's, for the cpu backend, where kernels run on
    the host (Triton's interpreter, the reference on the CPU): a sample is the wall time of
    the call; there is no cache flush and no device trace. It exercises the same protocol as
    a GPU run (pairing, interleaving, sessions in two processes, re-checked outputs); its
    figures are host timings of interpreted code, not kernel timings."""

    def __init__(self) -> None:
        self.profiler_s = 0.0
        self.alone_parts = _alone_parts()
        self.step_parts = _step_parts()

    def flush(self) -> None:
        pass

    def marker(self) -> None:
        pass

    def synchronize(self) -> None:
        pass

    def session(self, profiled: bool = True) -> Session:
        return _HostSession(self, profiled)


class _HostSession(Session):
    def open(self) -> None:
        pass

    def step(self, call: Callable[[], None], who: str = "") -> None:
        t0 = time.perf_counter()
        call()
        t1 = time.perf_counter()
        self.events.append((t0, t1))
        self.timer.step_parts["call"] += t1 - t0

    def close(self) -> tuple[list[Sample], list[tuple[int, str]]]:
        return [((e[1] - e[0]) * 1e6, (e[1] - e[0]) * 1e6, {}) for e in self.events if e is not None], []


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


def cut_spans(acts: list[tuple[int, int, str]], n_steps: int, gates: Sequence[bool] | None = None
              ) -> tuple[list[float], list[str]]:
    """The spans of ``cut_windows`` (microseconds) and its warnings."""
    windows, warnings = cut_windows(acts, n_steps, gates)
    return [span for span, _ in windows], warnings


def cut_windows(acts: list[tuple[int, int, str]], n_steps: int, gates: Sequence[bool] | None = None
                ) -> tuple[list[tuple[float, dict[str, float]]], list[str]]:
    """Cut a device timeline of (start_ns, end_ns, name) at our flush / marker kernels: the
    span of everything (any stream) that starts after a flush starts and before the next
    marker starts, and the device time of those activities by name (microseconds). Work the
    call put on another stream may begin while the flush still runs (it does not wait for
    our stream): it is counted from its own start. ``gates``: whether each step had a gate
    (none if not given); our gate kernel is in no span, so a window must hold exactly the gates
    its step was given: a kernel of the call named like one of ours fails the cut, it is not
    left out."""
    windows = _cut(acts, n_steps, gates)
    return [(span, activity) for span, activity, _ in windows], [OVERLAP_WARNING for *_, over in windows if over]


class TraceCutError(ArenaException, RuntimeError):
    """A device trace that does not cut into the samples its steps made: our flush, gate and
    marker kernels are not there as launched (in a candidate's process: a kernel of its own
    named like one of them)."""


def _ours(name: str) -> bool:
    return any(k in name for k in OURS)


def _cut(acts: list[tuple[int, int, str]], n_steps: int, gates: Sequence[bool] | None = None
         ) -> list[tuple[float, dict[str, float], bool]]:
    """``cut_windows``, with whether device work overlapped each window's end marker."""
    acts = sorted(acts)
    gates = list(gates) if gates is not None else [False] * n_steps
    flushes = [a for a in acts if FLUSH_KERNEL in a[2]]
    markers = [a for a in acts if MARKER_KERNEL in a[2]]
    n_gates = sum(GATE_KERNEL in a[2] for a in acts)
    if len(flushes) != n_steps or len(markers) != n_steps or len(gates) != n_steps or n_gates != sum(gates):
        raise TraceCutError(f"timing trace has {len(flushes)} flush, {len(markers)} marker and {n_gates} gate "
                           f"kernels for {n_steps} samples with {sum(gates)} gates: the trace cannot be cut "
                           f"into samples")
    out = []
    for (f0, _f1, _), (m0, _m1, _), gated in zip(flushes, markers, gates):
        # everything that starts inside the window, and anything of the call's already running when the flush
        # starts (our own kernels run on one stream before the flush, so they end before it starts)
        window = [a for a in acts if f0 <= a[0] < m0 or a[0] < f0 < a[1]]
        if sum(GATE_KERNEL in a[2] for a in window) != int(gated):
            raise TraceCutError("a timing window holds a gate kernel its step did not put, or lacks the one it "
                               "did: the trace cannot be cut into samples")
        inside = [a for a in window if not _ours(a[2])]
        overlapped = any(a[0] < m0 < a[1] and MARKER_KERNEL not in a[2] for a in acts)
        if not inside:
            out.append((0.0, {}, overlapped))
            continue
        activity: dict[str, float] = {}
        for a0, a1, name in inside:
            activity[name] = activity.get(name, 0.0) + (a1 - a0) / 1000.0
        out.append(((max(a[1] for a in inside) - min(a[0] for a in inside)) / 1000.0, activity, overlapped))
    return out


@dataclass
class Timed:
    """One thing ``time_many`` times: the sides of one config, its input sets and its stopping
    rule, and (filled in as it goes) its samples.

    ``sides[name]`` holds ``prepare(i)``, ``call(i)`` and ``after(i)`` for input set i, and for a
    side whose calls another process makes, ``remote(i)`` (the ``RemoteCall`` of set i) and
    ``remote_of`` (that process's ``Remote``).
    ``fill(r)``, if given, runs before each round r (new input sets, the config's shapes);
    ``retire(r)`` after it (which of its sets to keep for the checks). Both run inside the
    exclusive section, in no sample's window. ``ahead(r, n)``, if given, runs before the section
    that runs rounds r to r + n - 1, outside it: their work that needs no exclusive hold of the
    GPU (a replayed candidate's records of those rounds' sets); a time cap may end the batch
    before its last rounds. ``profiled=False``: timed without the
    profiler (``DeviceTimer.sample_rounds``). ``split(item)``, if given, runs once after the
    first batch: it may take sides out of ``sides`` (their samples stay in ``result``) and
    return a new item that times them from then on. ``settled(item)``, if given, may end it
    after any batch."""

    sides: dict[str, dict[str, Callable[[int], None]]]
    n_sets: int
    min_pairs: int = 10
    max_pairs: int = 400
    target_rse: float = 0.01
    cap_s: float = 4.0                # the longest this item's own rounds may take (its stopping rule)
    paired_with: str | None = None    # the side the others are paired with in the stopping rule
    side_rse: float = 0.03            # ... and how well each side's own median must then be known
    fill: Callable[[int], None] | None = None
    retire: Callable[[int], None] | None = None
    ahead: Callable[[int, int], None] | None = None
    profiled: bool = True
    split: Callable[["Timed"], "Timed | None"] | None = None
    settled: Callable[["Timed"], bool] | None = None     # after a batch: nothing more to learn from it
    result: SampleSet = field(default_factory=SampleSet)
    done: bool = False
    batch: int = 0                    # rounds of its current batch
    todo: int = 0                     # of those, not yet run
    own_s: float = 0.0                # seconds of its own rounds (fills and retirements included)

    def __post_init__(self) -> None:
        for s in self.sides:
            self.result.spans_us.setdefault(s, [])
            self.result.events_us.setdefault(s, [])
            self.result.activity_us.setdefault(s, {})

    def n(self) -> int:
        """Pairs taken of the sides it still times."""
        return min((len(self.result.spans_us[s]) for s in self.sides), default=0)

    def steps(self, r: int) -> list[Step]:
        """Round r: each side once on each set, the order of the sides alternating by set and
        round, so neither always runs right after the flush."""
        names = list(self.sides)
        steps = []
        for i in range(self.n_sets):
            order = names if (i + r) % 2 == 0 else list(reversed(names))
            for s in order:
                h = self.sides[s]
                if "remote" in h:
                    call: Any = h["remote"](i)
                    call.who = s
                else:
                    call = lambda h=h, i=i: h["call"](i)  # noqa: E731
                # a side's ``after`` sees the call it follows (a remote call's host time there)
                steps.append((s, (lambda h=h, i=i: h["prepare"](i)), call,
                              (lambda h=h, i=i, c=call: h["after"](i, c))))
        return steps

    def finished(self) -> bool:
        """After a batch (min_pairs at least): is the median of each side known to target_rse,
        or, where the sides are paired with ``paired_with``, is the median of each other side's
        ratios to it known to target_rse and each side's median to side_rse? Or is max_pairs or
        the time cap reached?

        The paired answer is for calls whose time depends on the input set (a set's segment
        lengths, say): each side's samples then spread as the sets do, and its median needs
        hundreds of samples to be known to 1%, while the ratio of two sides on the same sets,
        which is what the speedup is, may be known to 1% after a few dozen."""
        if not self.sides or (self.settled is not None and self.settled(self)):
            return True
        n = self.n()
        spans = self.result.spans_us
        rse = {s: stats.rse_of_median(spans[s]) for s in self.sides}
        quiet = n >= self.min_pairs and (all(r < self.target_rse for r in rse.values()) or self._paired_quiet(rse))
        return quiet or n >= self.max_pairs or (self.own_s > self.cap_s and n >= min(self.min_pairs, 3))

    def _paired_quiet(self, rse: dict[str, float]) -> bool:
        ref = self.paired_with
        if ref not in self.sides or len(self.sides) < 2 or any(r >= self.side_rse for r in rse.values()):
            return False
        spans = self.result.spans_us
        k = len(spans[ref])       # the sides still timed here were sampled together, in the same order
        for s in self.sides:
            if s == ref:
                continue
            if len(spans[s]) != k:
                return False
            ratios = [a / b for a, b in zip(spans[s], spans[ref]) if a > 0 and b > 0]
            if len(ratios) < k or stats.rse_of_median(ratios) >= self.target_rse:
                return False
        return True


def time_many(timer: DeviceTimer, items: Sequence[Timed], *,
              alone: Callable[[], contextlib.AbstractContextManager] = contextlib.nullcontext,
              between: Callable[[], None] | None = None, remotes: Sequence[Remote] = ()) -> None:
    """Interleaved samples of the sides of every item (a split's configs) until each item's
    stopping rule holds, in as few exclusive sections as the rule and memory allow.

    An item's rounds run in batches: the first has the rounds ``min_pairs`` needs, each later
    one twice as many as the one before (at most 16, and no more than ``max_pairs`` needs); the
    stopping rule is checked after each batch, the time cap (the item's own seconds) also
    between its rounds. A section runs the next batch of every unfinished item, one item after
    the other, under one profiler session and one ``alone()`` section (the GPU's exclusive
    lock: taking it waits for every other evaluation's GPU work to drain, so it is taken once
    for all of them); the items timed without the profiler get a section of their own.
    ``between()`` runs after each section, outside it (the checks of the timed outputs). An
    exception leaves every item as it was before the section's samples, so the call can be
    made again. ``remotes``: the processes that make the steps whose call is a ``RemoteCall``."""
    items = list(items)
    while True:
        for it in items:                 # an item split off below is planned in this pass too
            if it.done or it.todo > 0:
                continue
            if it.batch == 0:
                it.batch = it.todo = max(1, -(-it.min_pairs // it.n_sets))
                continue
            if it.split is not None:
                split, it.split = it.split, None
                extra = split(it)
                if extra is not None:
                    items.append(extra)
            if it.finished():
                it.done = True
            else:
                it.batch = it.todo = max(1, min(2 * it.batch, 16, -(-(it.max_pairs - it.n()) // it.n_sets)))
        plans = [[it for it in items if not it.done and it.profiled == profiled] for profiled in (True, False)]
        if not any(plans):
            return
        for plan, profiled in zip(plans, (True, False)):
            if plan:
                _section(timer, plan, profiled, alone, between, remotes)


def _section(timer: DeviceTimer, plan: list[Timed], profiled: bool,
             alone: Callable[[], contextlib.AbstractContextManager], between: Callable[[], None] | None,
             remotes: Sequence[Remote] = ()) -> None:
    """One exclusive section: the next batch of rounds of every item of the plan."""
    log: list[tuple[Timed, int]] = []      # the item and the number of steps of each round run

    def rounds() -> Iterator[list[Step]]:
        for it in plan:
            while it.todo > 0:
                if it.todo < it.batch and it.own_s > it.cap_s:
                    it.todo = 0                  # the time cap ends a batch between its rounds
                    break
                r = it.result.rounds
                t0 = time.perf_counter()
                if it.fill is not None:
                    it.fill(r)
                it.result.refresh_s += time.perf_counter() - t0
                steps = it.steps(r)
                log.append((it, len(steps)))
                yield steps
                t1 = time.perf_counter()
                if it.retire is not None:
                    it.retire(r)
                it.result.refresh_s += time.perf_counter() - t1
                it.result.rounds += 1
                it.todo -= 1
                it.own_s += time.perf_counter() - t0

    for it in plan:
        if it.ahead is not None and it.todo > 0:
            t0 = time.perf_counter()
            it.ahead(it.result.rounds, it.todo)
            it.result.ahead_s += time.perf_counter() - t0
    prof0 = timer.profiler_s
    local = any("remote" not in h for it in plan for h in it.sides.values())
    used = [r for r in remotes if any(h.get("remote_of") is r for it in plan for h in it.sides.values())]
    samples, warnings = timer.sample_rounds(rounds(), alone=alone, profiled=profiled, remotes=used, local=local)
    if between is not None:
        between()            # before the samples count: if it raises, they do not
    share = (timer.profiler_s - prof0) / max(1, len({id(it) for it, _ in log}))
    k = 0
    flagged = dict(warnings)
    for it, n_steps in log:
        res = it.result
        for j in range(k, k + n_steps):
            side, span, ev, activity = samples[j]
            res.spans_us[side].append(span)
            res.events_us[side].append(ev)
            acc = res.activity_us[side]
            for name, us in activity.items():
                acc[name] = acc.get(name, 0.0) + us
            w = flagged.get(j)
            if w == UNGATED_WARNING:    # the config's warning says whose call it was: one side's may skew the ratio
                w = w.replace("of this side", f"of the {side}", 1)
            if w and w not in res.warnings:
                res.warnings.append(w)
        k += n_steps
    for it in {id(it): it for it, _ in log}.values():
        it.result.profiler_s += share
    for it in plan:
        it.result.wall_s = it.own_s


def time_paired(timer: DeviceTimer, sides: dict[str, dict[str, Callable[[int], None]]], n_sets: int, *,
                min_pairs: int = 10, max_pairs: int = 400, target_rse: float = 0.01, cap_s: float = 4.0,
                refresh: Callable[[int], None] | None = None,
                alone: Callable[[], contextlib.AbstractContextManager] = contextlib.nullcontext) -> SampleSet:
    """``time_many`` of one item: interleaved samples of two (or more) sides until the median of
    each is known to target_rse. ``refresh(round)``, if given, renews the input sets between
    rounds (not before the first)."""
    item = Timed(sides, n_sets, min_pairs=min_pairs, max_pairs=max_pairs, target_rse=target_rse, cap_s=cap_s,
                 fill=None if refresh is None else (lambda r: refresh(r) if r > 0 else None))
    time_many(timer, [item], alone=alone)
    return item.result

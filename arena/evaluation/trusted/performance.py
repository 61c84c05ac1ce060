"""The timing of a split, in the trusted process: paired, interleaved, re-checked.

The baseline (and torch.compile's side) run here; the candidate's calls are made by the
candidate process, step by step, inside the same rounds: a round is A B / B A over its input
sets, each step preceded by a cache flush, each process keeping a profiler session over its
own steps (a device profiler sees only the work of its own process) under this process's
exclusive GPU lock (``arena.timing.timer``). A set's seed is drawn and its inputs made only
right before its first call. After each round a share of its sets is drawn and kept (their
inputs and the candidate's outputs copied here); after the exclusive section they are
checked against the reference on inputs made again from each set's seed.

The decision on the candidate's device activity is made here too: a kernel is the
candidate's own only if this evaluation built it from the candidate's file (the HIP build's
kernels, or the kernels Triton's JIT compiled from the candidate's file in its process),
matched by exact name; any other compute kernel in its timed calls is FORBIDDEN_CALL, and so
are copies and fills that take more of its device time than the baseline's copies and fills
take of the baseline's, by more than ``INCIDENTAL_MAX``.
"""

from __future__ import annotations

import contextlib
import math
import time
from pathlib import Path
from typing import TYPE_CHECKING, Any, Callable, Iterator

from arena.errors import Interruption, interrupted_after
from arena.evaluation.memory import RESERVE_FRACTION
from arena.evaluation.protocol import PerformanceResult
from arena.evaluation.trusted.correctness import OOM_RETRIES, GateFailure, check_bytes, retry_after_oom, task_failure
from arena.evaluation.trusted.stage import EvaluationState
from arena.records import Status

if TYPE_CHECKING:
    from arena.evaluation.trusted.calls import SharedSet

# A profiler session slows every kernel launch (CUPTI's per-launch work, about 5 us on an H200, more inside a
# timed round): a side whose call is many launches from Python (an eager PyTorch reference) then reads up to
# twice its own time (``llama_mlp_decode_block``'s reference: 360 us under the profiler, 219 us without, 113 us
# of kernels; scripts/gpu_timer_overhead.py). So a trusted side (the harness's own baseline or reference, which
# launches on the current stream) whose host time is at least HOST_BOUND_RATIO of its span is timed again
# without the profiler: the events around its call on its stream, the end event recorded right after the call
# (no synchronize, whose wake-up would add to it); its figure is the lower median of the two. A candidate is
# always timed under the profiler: its spans count every stream, and its kernels are seen.
HOST_BOUND_RATIO = 0.5   # a trusted side whose host time is this share of its span is also timed unprofiled
# ... if its device was idle for this share of its span at least: the profiler's cost per launch stretches
# the gaps between a host-bound call's kernels, never one kernel's own time. A call whose kernels fill its
# span (one launch: an elementwise starting kernel) stays profiled, timed by the same instrument as the
# candidate, which always is (an H100: a 78 us kernel read 6% longer under the profiler than by events, for
# the trusted side and the candidate alike, so moving only the trusted one put the starting kernel as its
# own candidate at 0.93-0.95)
IDLE_SHARE_MIN = 0.10
# the most pairs of that unprofiled timing: a host-bound call's own jitter (Python, launches) keeps
# its median from the 1% target; its interval says how well it is known
UNPROFILED_MAX_PAIRS = 100
# Copies and fills (torch's allocation-side kernels, runtime memcpy / memset) are incidental: a
# candidate may need some (zeroing an accumulator, padding operands to an aligned buffer, a state
# update the task's signature makes an out-of-place copy), but they are not the work. Their share of
# the device time of a candidate's timed calls may pass the baseline's own share (measured in the same
# rounds) by at most this much. Where the baseline does the work with kernels, a copy doing it, or a
# part of it, is refused (on an H200, a strided copy as a transpose: 100% of the device time; as half
# of one, a tiled kernel of its own doing the other half: 83%); where the task's own starting point
# copies (an out-of-place state update), so may the candidate. Measured on an H200 over every shipped
# solution and specialised kernel, seen and held-out (1,711 configs; records
# 2026-11-24-cuda-h200-between-requests-solutions-*), the most any passes its baseline's share by is
# 11.4 points (hip2hip/avgpool_global, stem-224-b1, held-out), then 7.3 and 5.8, and 1,685 configs
# spend under 1% of their time in copies and fills; on four random shapes a task (656 configs,
# 2026-11-25-cuda-h200-solutions-random-records), 8.0 points at most. The limit is over twice the most.
INCIDENTAL_MAX = 0.25


def time_split(ev: EvaluationState, split: str, configs: list) -> None:
    """Time every config of a split (each passed the correctness gate) and send the results
    in config order, up to the first config that failed, then the GPU lock's counters of
    the split's timing."""
    lock0 = ev.lock_stats()
    was_lost = ev.lost
    results = time_configs(ev, split, configs)
    if ev.lost and not was_lost and results and results[-1][1].status is Status.PASSED:
        # stopped as its timed buffers were given back (a check of what its process holds then): the split's failure,
        # on the last config timed, not a pass with the next split's configs left unrun
        assert ev.fatal is not None
        results[-1] = (results[-1][0], _failure(ev.fatal))
    ev.release_memory()
    ev.send_lock(split, ev.lock_stats(lock0))
    for config, result in results:
        ev.send_performance(split, config.name, result)


def _failure(exc: BaseException) -> PerformanceResult:
    if isinstance(exc, GateFailure):
        return PerformanceResult(status=exc.status, message=exc.message, traceback=list(exc.traceback))
    return PerformanceResult(status=Status.HARNESS_ERROR, message=f"out of memory while timing: {exc}"[:1000])


# with a memory account, the most of what it hands out that one split's timing may hold (its sets and the
# kept ones); the rest is for the other evaluations' checks and timing
TIMING_SHARE = 0.5
FAIR_SHARE = 0.4 / RESERVE_FRACTION      # 0.4 of the device's memory: a split's sets when evaluations share it


def _per_set_bytes(ev: EvaluationState, config: Any) -> int:
    """Device memory an input set takes while timed, from the signature's shapes: its inputs
    three times (the candidate's, this process's sides' copy, made again for the check), its
    outputs four times (every side's) and its inputs updated in place once more (kept for the
    check as the call left them)."""
    from arena.taskdef.shapes import tensor_bytes

    env = ev.task.env(config)
    return 3 * tensor_bytes(ev.task, env, ev.task.inputs) + 4 * tensor_bytes(ev.task, env, ev.task.outputs) + \
        tensor_bytes(ev.task, env, ev.task.inout_inputs)


def _fair_share(capacity: int, tp: dict[str, Any]) -> float:
    """A split's timing sets when ``gpu_share`` evaluations share the GPU (``--workers-per-gpu``):
    0.4 of the device's memory over their number (2.8 GB each for 12 on an H100). What a
    split's sets want is about 26 GiB at the median (16 sets of each config): given that, 12
    evaluations side by side waited 60 s each for room at the median, one split's timing
    at a time, and the starting kernels of 94 tasks took the time 206 took without it."""
    return FAIR_SHARE * capacity / max(1, int(tp.get("gpu_share", 1)))


def check_max(ev: EvaluationState, configs: list) -> int:
    """The largest of the configs' checks (``check_bytes``)."""
    return max((check_bytes(ev, c) for c in configs), default=0)


def _n_sets(ev: EvaluationState, config: Any, budget: float, tp: dict[str, Any]) -> int:
    """Input sets a round: 16 (the 10 pairs the stopping rule wants at least fit in one
    round), fewer if they would not fit in the memory budget."""
    return int(max(1, min(int(tp.get("max_sets", 16)), budget // max(_per_set_bytes(ev, config), 1))))


def _memory(ev: EvaluationState) -> tuple[int, int]:
    if ev.gpu:
        return ev.torch.cuda.mem_get_info()
    return 64 * 2**30, 64 * 2**30


def time_configs(ev: EvaluationState, split: str, configs: list) -> list[tuple[Any, PerformanceResult]]:
    """Each config's inputs, compiles, warm-up and checks run in short shared sections beside
    other evaluations' work (arena.evaluation.gpulock); then the timed rounds of all of them run in as
    few exclusive sections as their stopping rules and memory allow
    (``arena.timing.timer.time_many``): every exclusive section waits for the GPU work of the
    other evaluations to drain, so a split takes a few, not a few per config. A config that
    failed for want of memory is tried again (``OOM_RETRIES`` times at most) with a quarter of
    its input sets."""
    tp = ev.job.timing_params
    max_set = float(tp.get("max_set_bytes", 8 * 2**30))
    # the kept sets are checked against the reference inside the timing's reservation: the check's own working
    # set too (an H100 with 12 evaluations side by side: the upcast reference of a 4.2 GB log_softmax config ran
    # out of memory there)
    check = check_max(ev, configs) if ev.memory.active else 0
    # the input sets of a round of every config of the split together (all are held until the split's timed
    # rounds end), and half as much for the sets kept for the checks; a config's sets 8 GiB at most
    if ev.memory.active:
        # the GPU's account (arena.evaluation.memory) sets it aside, waiting for room: what the sets want, up to a share
        # of what the account hands out
        want = sum(min(max_set, int(tp.get("max_sets", 16)) * _per_set_bytes(ev, c)) for c in configs)
        budget = min(float(want), TIMING_SHARE * ev.memory.capacity / 1.5, _fair_share(ev.memory.capacity, tp))
        # and what leaves room beside the processes that stand on the GPU now and this split's largest check (a
        # reservation past that makes the GPU drain of other evaluations first: arena.evaluation.memory), but one input
        # set of its largest config at least; fewer sets a round cost more rounds, never a wrong time
        room = ev.memory.capacity - ev.memory.standing() - check
        budget = min(budget, max(room / 1.5, max((_per_set_bytes(ev, c) for c in configs), default=0)))
    else:
        # no account: a half of what is free now, and a share of the device when several evaluations use it
        # (--workers-per-gpu; each has three processes with a device context, the reference's working set besides)
        free, total = _memory(ev)
        budget = min(0.5 * free, _fair_share(int(RESERVE_FRACTION * total), tp))
    per_config = min(max_set, budget / max(1, len(configs)))
    budget = min(budget, per_config * len(configs))
    with ev.memory.reserve(int(1.5 * budget) + check, f"timing {split}", wait=ev.waiting):
        return _time_configs(ev, split, configs, tp, budget, per_config)


def _time_configs(ev: EvaluationState, split: str, configs: list, tp: dict[str, Any], budget: float,
                  per_config: float) -> list[tuple[Any, PerformanceResult]]:
    torch = ev.torch
    if ev.compiled is not None:
        # each config compiled afresh and static, for its own shapes (dynamic-shape lowering fails on some
        # references), as a user of torch.compile at that shape gets it; all of them are kept until the
        # split's timed rounds are done, so the recompile limit (dynamo then runs the eager function) is raised
        torch._dynamo.reset()
        for knob in ("recompile_limit", "cache_size_limit"):
            if hasattr(torch._dynamo.config, knob):
                setattr(torch._dynamo.config, knob, max(getattr(torch._dynamo.config, knob), len(configs) + 8))
    out: list[tuple[Any, PerformanceResult]] = []
    timings: list[ConfigTiming] = []
    ev.current = None
    try:
        for config in configs:
            ev.stage("performance", split, config.name)
            max_sets = None
            for attempt in range(OOM_RETRIES + 1):
                try:
                    timings.append(_ready(ev, config, per_config, tp, max_sets))
                    break
                except (GateFailure, torch.cuda.OutOfMemoryError) as exc:
                    result = _failure(exc)
                    if isinstance(exc, GateFailure) and exc.fatal:
                        ev.fatal = exc
                    if retry_after_oom(ev, result, attempt):    # again, a quarter of the sets
                        max_sets = max(1, _n_sets(ev, config, per_config, tp) // 4)
                        continue
                    return out + [(config, result)]
        return out + _run_rounds(ev, timings, budget)
    finally:
        for ct in timings:
            ct.close()


def _run_rounds(ev: EvaluationState, timings: list["ConfigTiming"],
                budget: float) -> list[tuple[Any, PerformanceResult]]:
    from arena.timing.timer import time_many

    torch = ev.torch

    def room(ct: ConfigTiming, round_no: int) -> None:
        """Before a round inside an exclusive section: the sets kept for the checks may take half
        as much memory as a round's sets; if this round's would pass that, the kept ones are
        checked now, inside the section (ending it instead would cost a drain of the other
        evaluations' work, far more than the checks)."""
        if sum(c.kept_bytes() for c in timings) + ct.kept_per_round(round_no) > budget / 2:
            t0 = time.perf_counter()
            for c in timings:
                c.verify_kept()
            ev.timer.alone_parts["checks"] += time.perf_counter() - t0

    for ct in timings:
        ct.room = room

    def between() -> None:  # after each exclusive section: the candidate's timed calls checked
        ev.sync()
        for ct in timings:
            ct.verify_kept()
        ev.check_device_memory("after its timed calls")  # and what its process holds (arena.evaluation.trusted.process)

    retries: dict[int, int] = {}
    # a replayed candidate's process is stopped while its records are timed (let go on only to make one)
    with getattr(ev.remote, "frozen", contextlib.nullcontext)():
        while True:
            try:
                time_many(
                    ev.timer,
                    [t for ct in timings for t in ct.items()],
                    alone=ev.gpu_lock.exclusive,
                    between=between,
                    # the processes that time the sides' calls (the baseline's and a replayed candidate's: one)
                    remotes=list({id(r): r for r in (h.timing_remote for h in (ev.base_remote, ev.remote)
                                                     if h is not None)}.values()),
                )
                break
            except (GateFailure, torch.cuda.OutOfMemoryError) as exc:
                ct = ev.current
                if not any(ct is c for c in timings):  # before any config's own work: the first one not done
                    ct = next((c for c in timings if not c.done()), timings[0])
                result = _failure(exc)
                if isinstance(exc, GateFailure) and exc.fatal:
                    ev.fatal = exc
                for other in timings:
                    other.drop()
                retry = retries.get(id(ct), 0)
                if retry_after_oom(ev, result, retry):
                    retries[id(ct)] = retry + 1
                    if retry == 0:
                        ct.shrink()
                    continue
                done = [(c.config, c.result()) for c in timings if c.done() and c is not ct]
                return done + [(ct.config, result)]
    own = _own_kernels(ev)
    results = [(ct.config, ct.result(own)) for ct in timings]
    out = []
    for config, result in results:
        out.append((config, result))
        if result.status is not Status.PASSED:
            break
    return out


def _own_kernels(ev: EvaluationState) -> set[str] | None:
    """The kernels this evaluation built from the candidate's file (None: the candidate is
    the task's own reference, torch's kernels by definition)."""
    if ev.candidate_trusted:
        return None
    if ev.job.candidate["language"] == "hip":
        return set(ev.own_hip_kernels)
    from arena.evaluation.trusted.kernels import defined_functions

    # what the candidate's process says Triton compiled from the candidate's file, checked against the file
    try:
        defined = defined_functions(Path(ev.job.candidate["path"]).read_text(errors="replace"))
    except OSError:
        defined = set()
    return set(ev.remote.kernels()) & defined


def _ready(ev: EvaluationState, config: Any, budget: float, tp: dict[str, Any], max_sets: int | None) -> "ConfigTiming":
    """One config made ready for its timed rounds: its buffers made and mapped, its sides
    warmed up (JIT, autotune, torch.compile's compile) in shared sections, the warm-up's
    outputs checked."""
    ev.set_config(config)
    n_sets = max_sets or _n_sets(ev, config, budget, tp)
    side_list: list[tuple[str, Any]] = [("baseline", ev.baseline), ("candidate", ev.remote)]
    if ev.compiled is not None:
        side_list.append(("compiled", ev.compiled))
    shared = ev.gpu_lock.shared
    ct = ConfigTiming(ev, config, n_sets, side_list, int(tp.get("check_sets", 4)), int(tp.get("check_sets_after", 1)))
    ct.per_set = _per_set_bytes(ev, config)
    t_warm = time.perf_counter()
    try:
        ct.make_sets(around=lambda: shared("sets"))
        # the trusted sides first
        budget_s = float(tp.get("torch_compile_budget_s", 120.0))
        for name in sorted(ct.sides, key=lambda n: n == "candidate"):
            side = ct.sides[name]
            try:
                # as in a timed sample: the harness's own work is done before the call starts; torch.compile
                # compiles on its first call of a shape, within a time budget
                with _time_limit(budget_s if name == "compiled" else None):
                    ev.timer.warm_up(
                        lambda side=side: (side["prepare"](0), ev.sync(), side["call"](0), side["after"](0)),
                        around=lambda: shared("warm"),
                    )
            except GateFailure as exc:
                if name != "compiled":
                    raise
                if _OverBudget.__name__ in exc.message:
                    # dynamo unrolls Python loops: a long one compiles for minutes. No torch.compile
                    # figure for this config nor the ones after it (their compiles would cost as much)
                    ct.warnings.append(
                        f"torch_compile_timeout: torch.compile did not compile the reference "
                        f"within {budget_s:g} s; no torch.compile figure for this config or the "
                        f"later ones"
                    )
                    ev.compiled = None
                else:
                    ct.warnings.append(f"torch_compile_failed: {exc.message[:200]}")
                del ct.sides[name]
        ct.retire(-1)
        ct.verify_kept()  # the warm-up's outputs, checked like a timed round's
    except BaseException:
        ct.close()
        raise
    ct.warm_s = time.perf_counter() - t_warm
    for v in ct.host_us.values():
        v.clear()
    ct.spent["prepare_s"] = ct.spent["verify_s"] = 0.0
    ct.make_timed(tp)
    return ct


class ConfigTiming:
    """One config's part of a split's timing: its sides, its input sets (the candidate's
    buffers, mapped in its process, and the outputs of the sides of this process), the sets
    kept for the checks of the timed outputs and the outcome of those checks.

    A set's seed is drawn and its inputs made only right before its first call: when the
    candidate runs, no later input exists anywhere (nothing to batch ahead or precompute).
    Every call starts from the set's inputs as made: a side's inputs updated in place (inout)
    by its last call on the set (the warm-up calls one set again and again) are made again
    from the set's seed before its next one, outside the timed window.
    After each round a share of its sets (``check_sets`` of 16, ``check_sets_after`` after the
    first timed round: ``check_share``) is drawn and kept, the rest let go; after the exclusive
    section the kept ones are checked against the reference on inputs made again from each
    set's seed (which also shows the inputs were left alone), in shared sections: no call
    could know whether its output would be checked (METHODOLOGY.md). Only when the kept sets
    would take more memory than allowed are they checked inside the section."""

    def __init__(
        self, ev: EvaluationState, config: Any, n_sets: int, side_list: list, check_sets: int, check_sets_after: int = 1
    ):
        self.ev, self.config, self.n_sets, self.check_sets = ev, config, n_sets, check_sets
        self.check_sets_after = check_sets_after
        self.slots_of: dict[str, list[SharedSet]] = {}  # the candidate's and the baseline's buffers, per set
        self.private_ins: list[list] = []  # the same inputs for this process's own sides, per set
        self.outs: dict[str, list[list]] = {}  # this process's own sides' outputs, per set
        self.seeds: list[int | None] = []
        self.drawn: list[int | None] = []  # seeds drawn for a round's sets before its first step (``fill``)
        self.planned: dict[int, list[int]] = {}  # round -> its sets' seeds, drawn ahead (``record_ahead``)
        self.kept: list[dict[str, Any]] = []
        self.oks: list[bool] = []
        self.host_us: dict[str, list[float]] = {name: [] for name, _ in side_list}  # host-side duration of calls
        self.spent = {"verify_s": 0.0, "prepare_s": 0.0}
        self.warnings: list[str] = []
        self.warm_s = 0.0
        self.timed = None
        self.plain = None  # the trusted host-bound sides' item, timed without the profiler
        self.per_set = 0
        self.room: Callable[[ConfigTiming, int], None] | None = None  # makes room for a round's kept sets
        self.tolerances = [ev.task.tolerance_of(s) for s in ev.task.compared]
        self.poisoned = [not getattr(s, "inout", False) for s in ev.task.compared]
        self.inout = bool(ev.task.inout_inputs)
        self.called: dict[str, dict[int, int]] = {name: {} for name, _ in side_list}  # side -> set -> its seed
        from arena.evaluation.trusted.calls import REMOTES

        self.side_handles = {name: side for name, side in side_list if isinstance(side, REMOTES)}
        self.sides: dict[str, dict[str, Any]] = {}
        for name, side in side_list:
            self.sides[name] = self._side(name, side)

    def _side(self, name: str, side: Any) -> dict[str, Any]:
        """A side's steps: the baseline's and the candidate's calls are made by their processes
        (``side`` is the handle on it, arena.evaluation.trusted.process), torch.compile's here."""
        from arena.check.compare import poison_
        from arena.evaluation.trusted.calls import REMOTES
        from arena.timing.timer import RemoteCall

        ev = self.ev
        remote = isinstance(side, REMOTES)
        if name == "candidate":
            copy_out = not ev.candidate_trusted  # the eager reference as candidate: timed as run, not copied
        else:  # the eager reference as the baseline, likewise
            copy_out = (ev.job.baseline or {}).get("language") != "reference" if name == "baseline" else False

        def sets() -> list:
            return self.slots_of[name] if remote else []

        def outs(i: int) -> list:
            return sets()[i].outs if remote else self.outs[name][i]

        def ins(i: int) -> list:
            return sets()[i].ins if remote else self.private_ins[i]

        def prepare(i: int) -> None:
            t0 = time.perf_counter()
            if self.seeds[i] is None:
                pre = self.drawn[i] if i < len(self.drawn) else None  # drawn when the round began (``fill``)
                self.seeds[i] = pre if pre is not None else ev.rng.getrandbits(62)
                if pre is not None:
                    self.drawn[i] = None
                ev.fill_inputs(
                    self.seeds[i],
                    *[st[i].ins for st in self.slots_of.values()],
                    *([self.private_ins[i]] if self.private_ins else []),
                )
            elif self.inout and self.called[name].get(i) == self.seeds[i]:
                ev.fill_inputs(self.seeds[i], ins(i), inout_only=True)  # its last call updated them
            if self.inout:
                self.called[name][i] = self.seeds[i]
            for o in outs(i):
                poison_(o)
            if hasattr(side, "record_for"):  # a replayed side (candidate, recorded baseline): its record here
                side.record_for(sets()[i].id, self.seeds[i])
            self.spent["prepare_s"] += time.perf_counter() - t0

        if remote:

            def call(i: int) -> None:  # a warm-up call: guarded, like the correctness gate's
                self.host_us[name].append(side.call(sets()[i].id, seed=self.seeds[i], trace=False, copy_out=copy_out))

            def after(i: int, call: Any = None) -> None:
                if call is not None and call.host_us is not None:   # a timed call's host time there
                    self.host_us[name].append(call.host_us)
                if name != "candidate":  # no correct answer of another side stays in memory
                    for o in outs(i):
                        poison_(o)

            return {
                "prepare": prepare,
                "call": call,
                "after": after,
                "remote_of": side.timing_remote,
                "remote": lambda i: RemoteCall(side.timing_remote, sets()[i].id, copy_out, name),
            }

        def local_call(i: int) -> None:
            t0 = time.perf_counter()
            try:
                side(self.private_ins[i], outs(i), ev._scalars, copy_out=copy_out)
            except GateFailure:
                raise
            except BaseException as exc:  # noqa: BLE001 - the task's own code failed
                raise task_failure(f"the task's {name}", exc) from None
            self.host_us[name].append((time.perf_counter() - t0) * 1e6)

        def local_after(i: int, call: Any = None) -> None:
            for o in outs(i):  # no correct answer of this process's sides stays in memory while others run
                poison_(o)

        return {"prepare": prepare, "call": local_call, "after": local_after}

    def make_sets(self, around: Callable[[], Any] = contextlib.nullcontext) -> None:
        """The buffers of every set of a round: the candidate's and the baseline's mapped in their
        processes, this process's own sides' here. Each set's buffers of a process in a section
        of ``around()`` of its own (the GPU's shared lock): allocating and mapping sixteen sets
        of two processes in one section kept a waiting timed round out for most of a second."""
        self.use()
        for name, side in self.side_handles.items():
            have = self.slots_of.setdefault(name, [])
            while len(have) < self.n_sets:
                with around():
                    have.append(self.ev.new_slot(side))
        local = [name for name in self.sides if name not in self.side_handles]
        for name in local:
            outs = self.outs[name] = []
            for _ in range(self.n_sets):
                with around():
                    outs.append(self.ev.allocate_outputs())
        self.private_ins = []
        for _ in range(self.n_sets if local else 0):
            with around():
                self.private_ins.append(self.ev.allocate_inputs())
        self.seeds = [None] * self.n_sets

    def close(self) -> None:
        self.ev.drop_slots([st for have in self.slots_of.values() for st in have])
        self.slots_of, self.outs, self.kept, self.private_ins = {}, {}, [], []

    def make_timed(self, tp: dict[str, Any]) -> None:
        from arena.timing.timer import Timed

        self.rule = {
            "min_pairs": int(tp.get("min_pairs", 10)),
            "max_pairs": int(tp.get("max_pairs", 400)),
            "target_rse": float(tp.get("target_rse", 0.01)),
            "cap_s": float(tp.get("cap_s", 4.0)),
            "paired_with": "candidate",
            "side_rse": float(tp.get("side_rse", 0.03)),
        }
        self.timed = Timed(
            dict(self.sides),
            self.n_sets,
            **self.rule,
            fill=lambda r: self.fill(r, record=True),
            retire=self.retire,
            ahead=self.record_ahead,
            split=self.split_host_bound,
        )
        self.plain = None

    def items(self) -> list:
        """What time_many times for this config: the profiled item, and the one split off it."""
        return [self.timed] + ([self.plain] if self.plain is not None else [])

    def done(self) -> bool:
        return all(t.done for t in self.items())

    def host_bound(self, name: str) -> bool:
        """A side whose calls' host time (launches from Python) is at least HOST_BOUND_RATIO
        of its span, and whose device sat idle inside its span (IDLE_SHARE_MIN at least): the
        profiler's per-launch work stretches the gaps between its kernels. Behind the timer's
        gate a call's kernels run from a queue already filled, with no such gaps: in practice
        only a side timed without the gate (its call waits for the device inside) is one."""
        from arena.timing import stats

        result = self.timed.result
        host, spans = self.host_us.get(name), result.spans_us.get(name)
        if not (host and spans) or stats.median(host) < HOST_BOUND_RATIO * stats.median(spans):
            return False
        busy_us = sum(result.activity_us.get(name, {}).values())
        if busy_us <= 0:  # no device activity recorded (a timer that gives none): by host time alone
            return True
        return busy_us <= (1.0 - IDLE_SHARE_MIN) * sum(spans)

    def split_host_bound(self, timed: Any) -> Any:
        """After the first batch: the trusted sides (the baseline, torch.compile's, the reference
        as candidate) that are host-bound go on without the profiler, in an item of their own
        (arena.timing.timer); the candidate's own code is always profiled."""
        from arena.timing.timer import Timed

        moved = [n for n in list(timed.sides) if (n != "candidate" or self.ev.candidate_trusted) and self.host_bound(n)]
        if not moved:
            return None
        for n in moved:
            del timed.sides[n]
        retire = self.retire if "candidate" in moved else self.let_go
        rule = {**self.rule, "max_pairs": min(self.rule["max_pairs"], UNPROFILED_MAX_PAIRS)}
        self.plain = Timed(
            {n: self.sides[n] for n in moved},
            self.n_sets,
            **rule,
            fill=self.fill,
            retire=retire,
            profiled=False,
            settled=self.span_is_lower,
        )
        return self.plain

    def medians(self, name: str) -> tuple[float, float] | None:
        """A side's median under the profiler and without it, where it has both."""
        from arena.timing import stats

        by_span = self.timed.result.spans_us.get(name)
        by_events = self.plain.result.spans_us.get(name) if self.plain is not None else None
        if not by_span or not by_events:
            return None
        return stats.median(by_span), stats.median(by_events)

    def span_is_lower(self, plain: Any) -> bool:
        """The unprofiled item has nothing more to give once every side of it reads slower than
        under the profiler (their figure is then the profiled one)."""
        return all(m is not None and m[1] >= m[0] for m in map(self.medians, plain.sides))

    def let_go(self, round_no: int) -> None:
        """After a round of trusted sides alone: nothing to check."""
        self.seeds = [None] * self.n_sets

    def use(self) -> None:
        """This config's shapes and scalars for the calls that follow; failures are its own."""
        self.ev.set_config(self.config)
        self.ev.current = self

    def _baseline_called(self) -> list[str]:
        """A warning where the baseline's calls were recorded to be replayed and one could not be
        (``arena.evaluation.trusted.calls.ReplayedBaseline``): its time is then of calls as they ran."""
        why = getattr(self.side_handles.get("baseline"), "live", "")
        return [f"baseline_not_replayed: its call could not be recorded ({why[:300]}); it was timed as it ran, "
                f"the device idle between its launches included, where the candidate's record was replayed"] if why \
            else []

    def _replayed_sides(self) -> list[str]:
        """The sides whose calls were timed as replays of their records: a replayed candidate, and a recorded
        baseline whose calls could all be recorded."""
        return sorted(name for name, side in self.side_handles.items()
                      if hasattr(side, "record_for") and not getattr(side, "live", ""))

    def _records_follow_sets(self) -> list[str]:
        """The replayed sides (the candidate, a recorded baseline) whose records follow each set's structure."""
        if not self.ev.structural_inputs():
            return []
        return [name for name, side in self.side_handles.items() if hasattr(side, "record_for")]

    def record_ahead(self, first: int, n: int) -> None:
        """Before the exclusive section of rounds ``first`` .. ``first + n - 1``, outside it: a
        replayed side's records of their sets, where they follow each set's structure, made
        now on seeds drawn now for them (``fill`` gives them to the replay process), so that no
        call of the candidate's (nor a recording of the baseline's) runs while the GPU is held alone."""
        names = self._records_follow_sets()
        if not names:
            return
        self.use()
        self.planned = {r: [self.ev.rng.getrandbits(62) for _ in range(self.n_sets)] for r in range(first, first + n)}
        for name in names:
            self.side_handles[name].make_records(self.slots_of[name][0].id,
                                                 [seed for seeds in self.planned.values() for seed in seeds])

    def fill(self, round_no: int, record: bool = False) -> None:
        """New sets for a round (inside the exclusive section, before its first flush): each
        set's inputs are made right before its first call. ``record``: a replayed candidate's
        records of the round's sets, where they follow each set's structure, are given to the
        replay process now (made before the section: ``record_ahead``; a set whose seed was not
        drawn ahead has its record made here), so that its process, stopped while timed, is not
        let go on between the round's timed steps."""
        if self.room is not None:
            self.room(self, round_no)
        self.use()
        self.seeds = [None] * self.n_sets
        self.drawn = [None] * self.n_sets
        names = self._records_follow_sets() if record else []
        if names:
            planned = self.planned.pop(round_no, None) or [self.ev.rng.getrandbits(62) for _ in range(self.n_sets)]
            self.drawn = list(planned[:self.n_sets])
            for name in names:
                for i, st in enumerate(self.slots_of[name]):
                    self.side_handles[name].record_for(st.id, self.drawn[i])
        self.ev.sync()

    def check_share(self, round_no: int = 0) -> float:
        """How many of a round's sets are kept for the checks: ``check_sets`` of 16 in the
        warm-up's round and the first timed one (one at least; every set if 0), then
        ``check_sets_after`` of 16 of the calls, on average: a round of fewer sets keeps one with
        that chance (a config of one set a round kept every set of its ten-round first batch,
        past the memory for them, and was checked inside the exclusive section). A median moves
        only if more than half the calls are off, and each check catches such a candidate with
        a chance above one half."""
        if self.check_sets <= 0:
            return float(self.n_sets)
        if round_no <= 0:
            return float(min(self.n_sets, max(1, -(-self.check_sets * self.n_sets // 16))))
        return min(float(self.n_sets), self.check_sets_after * self.n_sets / 16)

    def checked_per_round(self, round_no: int = 0) -> int:
        """The most sets round ``round_no`` keeps (``check_share`` rounded up)."""
        return math.ceil(self.check_share(round_no))

    def retire(self, round_no: int) -> None:
        """After a round: keep its share of the sets it used (``check_share``: a whole number of
        them, and one more with the chance of the fraction), drawn now (their inputs as the
        candidate was given them and what is compared: its outputs and its inout inputs as the
        call left them, copied: the buffers serve the next round); let the rest go."""
        from arena.check.inputs import clone

        used = [i for i, seed in enumerate(self.seeds) if seed is not None]
        share = self.check_share(round_no)
        k = int(share) + (1 if self.ev.rng.random() < share - int(share) else 0)
        if k < len(used):
            used = self.ev.rng.sample(used, k)
        for i in used:
            st = self.slots_of["candidate"][i]
            self.kept.append(
                {
                    "seed": self.seeds[i],
                    "ins": [clone(t) for t in st.ins],
                    "outs": [clone(o) for o in self.ev.compared(st.ins, st.outs)],
                }
            )
        self.seeds = [None] * self.n_sets

    def verify_kept(self, slice_s: float = 0.1) -> None:
        """The kept sets checked, then let go: in shared sections of about ``slice_s`` each (a
        waiting timed round gets in between them; one section a set would wait behind every
        writer once a set)."""
        from arena.check.compare import all_ok, check_tensors

        ev = self.ev
        t0 = time.perf_counter()
        self.check_guards()
        kept, self.kept = self.kept, []
        if kept:
            self.use()
        i = 0
        while i < len(kept):
            with ev.gpu_lock.shared("verify"):
                t_section = time.perf_counter()
                while i < len(kept) and (time.perf_counter() - t_section < slice_s):
                    st = kept[i]
                    i += 1
                    bad_input, fresh = ev.mutated_input(st["ins"], st["seed"])
                    if bad_input >= 0:
                        raise GateFailure(Status.INPUT_MUTATED, "an input was written to during the timed calls")
                    if not ev.candidate_trusted:  # the reference itself (torch2hip's starting point): no copy-out
                        exp = ev.expected(fresh)
                        for o, e, tol, poisoned in zip(st["outs"], exp, self.tolerances, self.poisoned):
                            if o is not None:  # None: an inout input the config leaves out
                                self.oks.append(bool(all_ok(check_tensors(o, e, tol, poisoned))))  # waits
                        del exp
                    del fresh
                ev.sync()
        self.spent["verify_s"] += time.perf_counter() - t0

    def check_guards(self) -> None:
        """The guard bands of the candidate's sets (``arena.evaluation.buffers``): a timed or warm-up call
        that wrote past a buffer it was given fails the config."""
        sets = self.slots_of.get("candidate", [])
        if not sets:
            return
        with self.ev.gpu_lock.shared("guards"):
            hit = bool(self.ev.torch.stack([st.slot.overrun_flag() for st in sets]).any())
        if hit:
            where = next(w for w in (st.slot.overrun() for st in sets) if w is not None)
            raise GateFailure(
                Status.RUNTIME_ERROR, f"a timed call wrote {where} (memory it was not given: a size or mask wrong)"
            )

    def drop(self) -> None:
        """Let the sets' state go (after a section that failed: its samples are not used)."""
        self.seeds = [None] * self.n_sets
        self.kept = []

    def shrink(self) -> None:
        """A quarter of the input sets a round (after running out of memory)."""
        self.n_sets = max(1, self.n_sets // 4)
        for name, have in self.slots_of.items():
            self.ev.drop_slots(have[self.n_sets :])
            self.slots_of[name] = have[: self.n_sets]
        for name in self.outs:
            self.outs[name] = self.outs[name][: self.n_sets]
        self.private_ins = self.private_ins[: self.n_sets]
        self.seeds = [None] * self.n_sets
        for t in self.items():
            t.n_sets = self.n_sets

    def kept_bytes(self) -> int:
        from arena.check.inputs import storage

        return sum(
            storage(t).numel() * t.element_size()
            for st in self.kept
            for t in (*st["ins"], *st["outs"])
            if t is not None
        )

    def kept_per_round(self, round_no: int = 0) -> int:
        """Device memory the sets kept from round ``round_no`` take (their inputs and the
        candidate's outputs: at most half of ``per_set`` a set)."""
        return self.checked_per_round(round_no) * self.per_set // 2

    def result(self, own: set[str] | None = None) -> PerformanceResult:
        samples = self.timed.result
        spans, events = dict(samples.spans_us), dict(samples.events_us)
        timers = {n: "span" for n in spans}
        other: dict[str, float] = {}  # a side's median by the timer not used, where it had two
        plain = self.plain.result if self.plain is not None else None
        if plain is not None:
            for n in self.plain.sides:
                m = self.medians(n)
                if m is None:
                    continue
                by_span, by_events = m
                if by_events < by_span:  # the lower of two complete measures of trusted code
                    spans[n], events[n], timers[n] = plain.spans_us[n], plain.events_us[n], "events"
                other[n] = round(by_span if timers[n] == "events" else by_events, 3)
        parts = [samples] + ([plain] if plain is not None else [])
        n_bad = sum(0 if ok else 1 for ok in self.oks)
        activity = samples.activity_us.get("candidate", {})
        result = PerformanceResult(
            status=Status.PASSED,
            spans_us=spans,
            events_us=events,
            timers=timers,
            other_timer_median_us=other,
            rounds=sum(p.rounds for p in parts),
            n_sets=self.n_sets,
            wall_s=round(sum(p.wall_s for p in parts), 3),
            profiler_s=round(samples.profiler_s, 3),
            refresh_s=round(sum(p.refresh_s for p in parts), 3),
            ahead_s=round(sum(p.ahead_s for p in parts), 3),
            warm_s=round(self.warm_s, 3),
            verify_s=round(self.spent["verify_s"], 3),
            prepare_s=round(self.spent["prepare_s"], 3),
            warnings=samples.warnings + self.warnings + self._baseline_called(),
            replayed=self._replayed_sides(),
            timed_checks=len(self.oks),
            timed_bad=n_bad,
            host_us=self.host_us,
            kernels=sorted(activity)[:50],
            own_kernels=sorted(own or ())[:50],
        )
        if n_bad:
            result.status = Status.INCORRECT_NUMERICAL
            result.message = f"{n_bad} of {len(self.oks)} outputs of timed calls were wrong"
            note = getattr(self.ev.remote, "NOTE", "")  # a replayed candidate's: how its call was made
            result.message += f" ({note})" if note else ""
            return result
        if own is None:  # the eager reference (a trusted candidate): torch's kernels by definition
            return result
        from arena.evaluation.trusted.kernels import foreign_kernels

        foreign = foreign_kernels(activity, own)
        if foreign:
            result.status = Status.FORBIDDEN_CALL
            result.message = (
                "the candidate's timed calls ran kernels this evaluation did not build from its file "
                "(library or torch compute kernels): " + ", ".join(foreign[:5])
            )
            return result
        share = _incidental_share(samples, "candidate", own)
        base = _incidental_share(samples, "baseline", set()) or 0.0
        result.incidental_share = share
        result.baseline_incidental_share = round(base, 4)
        if share is not None and share > base + INCIDENTAL_MAX:
            result.status = Status.FORBIDDEN_CALL
            result.message = (
                f"copies and fills took {100 * share:.0f}% of the device time of the candidate's timed "
                f"calls, the baseline's {100 * base:.0f}% (at most {100 * INCIDENTAL_MAX:.0f} points "
                f"more): the work must be done by its own kernels"
            )
        return result


def _incidental_share(samples: Any, side: str, own: set[str]) -> float | None:
    """The share of a side's device time (its profiled samples) spent in copies and fills. The device time is
    its spans, or the summed time of its activities where that is less: a span also holds the device idle
    between launches (a side timed off the gate, one whose call waits for the device), which diluted that
    side's share and not the other's (AKA's per_token_quant_int8 against itself: the baseline's 37%, its own
    code's as the candidate 78%, the baseline's side the one ungated). Never more than the spans: activities
    side by side on several streams add up past them, and a candidate's kernels run beside its copies would
    otherwise dilute its share at no cost in time."""
    from arena.evaluation.trusted.kernels import incidental

    activity = samples.activity_us.get(side, {})
    device_us = min(sum(samples.spans_us.get(side, ())), sum(activity.values()) or float("inf"))
    if device_us <= 0:
        return None
    copies = sum(us for name, us in activity.items() if incidental(name) and name not in own)
    return round(copies / device_us, 4)


class _OverBudget(Interruption):
    """Raised in the main thread when a time limit of ``_time_limit`` runs out (it interrupts
    torch.compile's compiler)."""


@contextlib.contextmanager
def _time_limit(seconds: float | None) -> Iterator[None]:
    """Raise _OverBudget in the main thread if the block is still running after ``seconds``
    (SIGALRM; nothing if None). For trusted host-side work only (torch.compile compiling the
    reference): the candidate's calls are bounded by the stage's deadline."""
    if seconds is None:
        yield
        return
    with interrupted_after(seconds, lambda: _OverBudget(f"over the time limit of {seconds:g} s")):
        yield

"""The correctness gate, in the trusted process: every config of a split x fresh seeds.

For each seed: the inputs are made from the seed into the call's buffers (``arena.evaluation.buffers``),
the outputs poisoned, and the candidate process makes the call. Then, here: the inputs are
made again from the seed (nothing the candidate saw) and compared with what it was given;
the reference runs on the fresh ones, in higher precision, on the same device; each output
is compared elementwise and normwise (``arena.check.compare``), and so is each input updated
in place (``inout``) against the reference's own update of its copy. No expected output exists
before the call returns, and none ever exists in the candidate's process.
"""

from __future__ import annotations

import time
from dataclasses import asdict
from typing import Any

from arena.errors import ArenaException
from arena.evaluation.protocol import CorrectnessResult
from arena.evaluation.trusted.stage import EvaluationState
from arena.records import Status, TraceEntry

OOM_RETRIES = 2      # a config that failed for want of device memory is tried this many times more


class GateFailure(ArenaException):
    """A failure with a status. ``fatal``: nothing more can run with this candidate (its
    process is gone, or it broke what the harness relies on). ``traceback``: where in the
    candidate's file its code raised, where it did (``arena.evaluation.tracebacks``, already bounded)."""

    def __init__(self, status: Status, message: str, fatal: bool = False, traceback: list[TraceEntry] | None = None):
        super().__init__(message)
        self.status = status
        self.message = message
        self.fatal = fatal
        self.traceback = list(traceback or [])


def out_of_memory(message: str) -> bool:
    """The message of a failure for want of device memory (torch's, CUDA's or HIP's words)."""
    text = message.lower()
    return "out of memory" in text or "outofmemory" in text


def task_failure(what: str, exc: BaseException) -> GateFailure:
    """The failure of the task's own code (its reference, input maker or baseline) raising
    ``exc``: TASK_ERROR, unless the device ran out of memory, which is the harness's to answer
    for (the GPU is shared, or its budget was wrong): HARNESS_ERROR, with a message that the
    out-of-memory retries recognise. Neither is the candidate's."""
    text = f"{type(exc).__name__}: {exc}"
    if isinstance(exc, MemoryError) or out_of_memory(text):
        return GateFailure(Status.HARNESS_ERROR, f"out of memory in {what}: {text}"[:2000])
    return GateFailure(Status.TASK_ERROR, f"{what} failed: {text}"[:2000])


# What checking one config holds on the device, in multiples of its inputs' and outputs' bytes (an
# estimate, for the GPU's memory account, arena.evaluation.memory): the inputs in the call's buffers, made again for
# the mutation check, and upcast for the reference (2x); the outputs in the call's buffers, the
# reference's upcast outputs (2x) and its working set (taken as twice that), and the comparison's
# temporaries in the compare dtype (diff, tolerance, masks: about 3 outputs' upcast worth). An input
# updated in place counts as both: it is given, and compared like an output
CHECK_INPUTS = 1 + 1 + 2
CHECK_OUTPUTS = 1 + 2 + 4 + 6
CHECK_SLACK = 64 * 2**20


def check_bytes(ev: EvaluationState, config: Any) -> int:
    """What checking ``config`` holds on the device (the multiples above), and what drawing an
    input set holds beside its inputs while it is drawn (``arena.check.inputs.draw_bytes``: on an
    H100 the fp32 draw of a 4.2 GB fp16 embedding table, 7.8 GiB, was what ran the GPU out of
    memory where the account had let 12 evaluations in)."""
    from arena.check.inputs import draw_bytes
    from arena.taskdef.shapes import tensor_bytes

    env = ev.task.env(config)
    return (CHECK_INPUTS * tensor_bytes(ev.task, env, ev.task.inputs) +
            CHECK_OUTPUTS * tensor_bytes(ev.task, env, ev.task.compared) + draw_bytes(ev.task, env) + CHECK_SLACK)


def check_config(ev: EvaluationState, config: Any) -> CorrectnessResult:
    """The gate on one config. Its memory is set aside in the GPU's account first (waiting for
    room while other evaluations hold theirs: ``arena.evaluation.memory``); if it still fails for want of
    device memory (the estimate was short, or memory outside the account was used), it is tried
    again (``OOM_RETRIES``) after a pause."""
    need = check_bytes(ev, config) if ev.memory.active else 0
    with ev.memory.reserve(need, f"checking {getattr(config, 'name', config)}", wait=ev.waiting):
        result = _check_once(ev, config)
        retry = 0
        while retry_after_oom(ev, result, retry):
            retry += 1
            result = _check_once(ev, config)
        ev.release_memory()
    return result


HOARD_WAIT_S = 60.0     # the most a check waits for another evaluation's candidate to give back what it hoards


def retry_after_oom(ev: EvaluationState, result: Any, retry: int) -> bool:
    """A result (``CorrectnessResult`` or ``PerformanceResult``) that failed for want of device
    memory, after ``retry`` retries: try again? Not where the candidate's process holds more
    than its allowance: the result becomes its failure (``ev.fatal``). Where another
    evaluation's candidate does, after waiting until it no longer does (its own evaluation
    stops it at its next check). Otherwise up to ``OOM_RETRIES`` times, after the memory this
    process caches is given back, beside no other evaluation's work (``MemoryAccount.exclusive``,
    until this piece's reservation ends; a pause without an account): the shortage is the
    harness's."""
    if not ev.gpu or result.status is Status.PASSED or not out_of_memory(result.message) or ev.lost:
        return False
    cause = ev.memory_cause()
    if isinstance(cause, GateFailure):
        result.status, result.message = cause.status, cause.message
        ev.fatal = cause
        return False
    if retry >= OOM_RETRIES:
        return False
    ev.release_memory()
    if cause is not None:
        end = time.monotonic() + HOARD_WAIT_S
        while isinstance(cause, str) and time.monotonic() < end:
            time.sleep(0.5)
            cause = ev.memory_cause()
        if isinstance(cause, GateFailure):
            result.status, result.message = cause.status, cause.message
            ev.fatal = cause
            return False
    elif ev.memory.active:
        # the account had room and the device had not: the retry runs beside no other evaluation's work
        ev.memory.exclusive(f"retrying {ev.task.id} after running out of memory", wait=ev.waiting)
    else:
        time.sleep(0.5 * 6 ** retry)
    return True


def _merge_worst(worst: CorrectnessResult, stats: dict[str, Any]) -> None:
    for key in ("max_abs_err", "max_rel_err", "norm_err", "mismatch_fraction"):
        v = stats.get(key)
        if v is not None and (getattr(worst, key) is None or v > getattr(worst, key)):
            setattr(worst, key, v)
            if key == "max_abs_err":
                worst.where = stats.get("where")


def _check_once(ev: EvaluationState, config: Any) -> CorrectnessResult:
    import torch

    from arena.check.compare import compare_output, poison_

    ev.set_config(config)
    seeds = list(ev.job.seeds) if ev.job.seeds else [ev.rng.getrandbits(32) for _ in range(ev.job.n_seeds)]
    worst = CorrectnessResult(status=Status.PASSED, seeds=seeds)
    shared = ev.gpu_lock.shared
    slot = None
    try:
        with shared("slot"):
            slot = ev.new_slot()
        for seed in seeds:
            # three shared sections per seed (arena.evaluation.gpulock), each ending with the device idle: a timed round
            # elsewhere waits for the piece in flight, not for a whole check (a compile lets the lock go)
            with shared("call"):
                ev.fill_inputs(seed, slot.ins)
                for o in slot.outs:
                    poison_(o)
                ev.sync()
                ev.remote.call(slot.id, seed=seed, trace=True)
            with shared("reference"):
                where = slot.slot.overrun()
                if where is not None:
                    worst.status, worst.seed = Status.RUNTIME_ERROR, seed
                    worst.message = f"the call wrote {where} (memory it was not given: a size or mask wrong)"
                    return worst
                # the reference runs now, on inputs made again from the seed: nothing the candidate saw
                bad_input, fresh = ev.mutated_input(slot.ins, seed)
                if bad_input >= 0:
                    worst.status, worst.seed = Status.INPUT_MUTATED, seed
                    worst.message = f"input {ev.task.inputs[bad_input].name!r} was written to"
                    return worst
                expected = ev.expected(fresh)
                ev.sync()
            with shared("compare"):
                for spec, out, ref in zip(ev.task.compared, ev.compared(slot.ins, slot.outs), expected):
                    if out is None:       # an inout input the config leaves out
                        continue
                    res = compare_output(spec.name, out, ref, ev.task.tolerance_of(spec),
                                         poisoned=not getattr(spec, "inout", False))
                    stats = {k: v for k, v in asdict(res).items() if k != "status"}
                    if res.status is not Status.PASSED:
                        for k, v in stats.items():
                            setattr(worst, k, v)
                        worst.status, worst.seed = res.status, seed
                        note = getattr(ev.remote, "NOTE", "")     # a replayed candidate's: how its call was made
                        worst.message = f"{worst.message} ({note})" if note else worst.message
                        return worst
                    _merge_worst(worst, stats)
                del expected, fresh
                ev.sync()
        # what its process holds after its calls, outside the GPU lock's sections (arena.evaluation.trusted.process)
        ev.check_device_memory(f"after its calls of {getattr(config, 'name', config)}")
    except GateFailure as exc:
        worst.status, worst.message, worst.traceback = exc.status, exc.message, list(exc.traceback)
        if exc.fatal:
            ev.fatal = exc
    except torch.cuda.OutOfMemoryError as exc:     # the harness's own allocations: tried again
        worst.status, worst.message = Status.HARNESS_ERROR, f"out of memory while checking: {exc}"[:1000]
    finally:
        if slot is not None:
            ev.drop_slots([slot])
    return worst

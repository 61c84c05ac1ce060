"""The trusted process of an evaluation: inputs, reference, baseline, comparison, timing, decision.

The parent (``arena.evaluation.parent``) starts ``python -m arena.evaluation.trusted.process JOB_FD RESULT_FD MODE``,
writes the job on JOB_FD and reads signed frames (``arena.evaluation.protocol`` reports) from
RESULT_FD. This process never runs candidate code: the candidate lives in a process of its
own (``arena.evaluation.candidate.process``), started by this one ahead of the job, which gets a call's buffers
when the call is made and answers requests (``CandidateHandle``). Here live the task, its
reference, its baseline (the starting kernel, the eager reference, torch.compile's), the
GPU's lock, the correctness gate (``arena.evaluation.trusted.correctness``) and the timing
(``arena.evaluation.trusted.performance``); whatever the candidate process changes in itself reaches none of
them.

A failure of the candidate process is the candidate's: a fault that loses its device
context, a crash, a hang or a forbidden act ends it, and every config not run yet, in this
split and the later ones, is recorded as the candidate's failure.
"""

from __future__ import annotations

import contextlib
import itertools
import os
import random
import re
import sys
import time
import traceback
from pathlib import Path
from types import ModuleType
from typing import Any, Callable, Iterator

from arena.evaluation.channel import read_frame, signed_writer
from arena.evaluation.memory import MemoryAccount, capacity_of
from arena.evaluation.processes import CandidatePeer, preload_servers, shares_by_fd
from arena.evaluation.protocol import (
    WAITING_STAGE,
    CandidateSpec,
    CorrectnessFrame,
    CorrectnessResult,
    DoneFrame,
    FailureFrame,
    JobFrame,
    LoadedFrame,
    LockFrame,
    OpenRequest,
    PerformanceFrame,
    PerformanceResult,
    SandboxFrame,
    SetupRequest,
    SplitDoneFrame,
    StageFrame,
    decode,
    encode,
)
from arena.evaluation.sides import Side
from arena.evaluation.trusted.calls import MESSAGE_CHARS, CandidateHandle, SharedSet
from arena.evaluation.trusted.correctness import GateFailure, check_config, out_of_memory, task_failure
from arena.records import NOT_RUN, Status

OPEN_S = 300.0       # the most a process of this worker may take to open its device as the job arrives
# a stage that resumes after a wait which began past its deadline has this long: the request it was about to make
# still fails on the limit, not the parent's kill
WAIT_LEFT_MIN_S = 0.05
MEASURE_SEED = 0     # the inputs of a reference run made only to measure its working memory (``reference_bytes``)


class Evaluation:
    def __init__(self, job: JobFrame, send: Callable[[Any], None], peer: CandidatePeer,
                 base_peer: CandidatePeer | None = None, replay_peer: CandidatePeer | None = None):
        import torch

        from arena.evaluation.gpulock import GpuLock
        from arena.taskdef.loader import load_task

        self.job = job
        self._send = send
        self.torch = torch
        self.task = load_task(job.task_dir, validate=False)
        self.device = job.device
        self.gpu = self.device["kind"] in ("cuda", "rocm")
        self.torch_device = "cuda" if self.gpu else "cpu"
        self.rng = random.SystemRandom()     # seeds no one can predict from the job
        self.timeouts = dict(job.timeouts)
        self.deadline: float | None = None
        self._waiting = False
        self.stage_name, self.stage_limit = "load", 0.0
        self.fatal: GateFailure | None = None
        self.remote = CandidateHandle(self, peer)
        # the replay process (arena.evaluation.replay): it runs the task's baseline, a process like the candidate's
        # running the task's own code, so the two sides are called and timed the same way and nothing the
        # candidate's process does reaches it; and where the candidate's calls are recorded it replays them, and
        # what counts is measured there. Two handles on it: the baseline's (its failures the task's) and the
        # replays' (their failures the candidate's).
        self.base_remote = CandidateHandle(self, base_peer, trusted=True) if base_peer is not None else None
        self.base_slots = None
        self.config_key = ""
        self.replay_remote = CandidateHandle(self, replay_peer, harness=True) if replay_peer is not None else None
        self.record_numbers = itertools.count(1)    # the numbers of the records the replay process holds, every side's
        if self.base_remote is not None and replay_peer is base_peer:
            self.base_remote.timing_remote = self.replay_remote   # one session there, both sides' steps in it
        self.candidate_trusted = bool(job.candidate.get("trusted"))
        self.own_hip_kernels = list(job.candidate.get("kernels") or [])
        # correctness shares the GPU with other evaluations; the timed rounds have it alone
        self.gpu_lock = GpuLock(*(job.gpu_lock or (None, None)))
        self.gpu_lock.wait = self.waiting       # other evaluations' sections: no stage's time
        if self.gpu and self.gpu_lock.active:
            compile_off_gpu(self.gpu_lock)
        # the GPU's memory, one account for every evaluation on it: work waits for room instead of failing
        self.memory = MemoryAccount(
            job.gpu_memory if self.gpu else None,
            capacity_of(self.torch.cuda.mem_get_info()[1]) if self.gpu else 0,
        )
        # what its processes hold while they live (contexts, workspaces): this one, the candidate's, the replay one's
        self.memory.stand(2 + len({id(p) for p in (base_peer, replay_peer) if p is not None}),
                          "the evaluation's processes")
        # what each of them holds, as the driver counts it: the candidate's is held to an allowance
        from arena.devices.usage import DeviceUsage

        self.usage = (
            DeviceUsage(self.device["kind"], self.device.get("uuid"), self.device.get("index")) if self.gpu else None
        )
        self._io_bytes = 0
        self.local_bytes = 0        # the most local memory a thread of the candidate's replayed kernels takes (named)
        # per config (its key): the most device memory the reference's upcast run held beyond its inputs (``expected``)
        self._reference_bytes: dict[str, int] = {}
        self._unmeasured: dict[str, str] = {}     # config -> why its reference's working memory was not measured
        self.held: dict[str, dict[str, float]] = {}  # per split: the candidate's most, at a check
        self._slot_ids = 0
        self._lost_at = ""
        self.current = None  # the config whose timing work runs now (arena.evaluation.trusted.performance)
        self.slots = None
        self.timer = None
        self.marks: dict[str, float] = {}
        self._mark = time.perf_counter()

    @property
    def lost(self) -> bool:
        return self.fatal is not None

    # -- frames --------------------------------------------------------------------------------
    def send(self, frame: Any) -> None:
        self._send(encode(frame))

    def stage(self, stage: str, split: str = "", config: str = "", left_s: float | None = None) -> None:
        """Tell the parent which stage runs now; requests to the candidate process get that
        stage's time limit from now (the parent's own limit is a little longer), or ``left_s``:
        the time a stage resumed after a wait had left."""
        limit = self.timeouts.get(f"{stage}_s", self.timeouts.get("load_s"))
        left = float(limit) if limit and left_s is None else left_s
        self.deadline = time.monotonic() + left if left is not None else None
        self.stage_name, self.stage_limit = stage, float(limit or 0)
        self._stage_now = (stage, split, config)
        self.send(StageFrame(stage=stage, split=split, config=config, left_s=left_s or 0.0))

    @contextlib.contextmanager
    def waiting(self) -> Iterator[None]:
        """Waiting for other evaluations: for room in the GPU's memory (``arena.evaluation.memory``)
        or for the GPU's lock (``arena.evaluation.gpulock``, where it cannot be had at once). The
        parent is told (its limit is then the wait's own, ``WAITING_STAGE``), and the stage that
        was running resumes after with the time it had left, so other evaluations' work never
        counts as a candidate's time. A wait is never one of the candidate's process while it
        runs: between its requests, or with it stopped (``arena.evaluation.trusted.calls``)."""
        if self._waiting:
            yield
            return
        stage, split, config = getattr(self, "_stage_now", ("load", "", ""))
        left = None if self.deadline is None else max(self.deadline - time.monotonic(), WAIT_LEFT_MIN_S)
        self._waiting = True
        self.send(StageFrame(stage=WAITING_STAGE, split=split, config=config))
        try:
            yield
        finally:
            self._waiting = False
            self.stage(stage, split, config, left_s=left)

    def mark(self, part: str) -> None:
        """How long a part of loading took (seconds since the last mark), for the record."""
        now = time.perf_counter()
        self.marks[part] = round(self.marks.get(part, 0.0) + now - self._mark, 3)
        self._mark = now

    def sync(self) -> None:
        if self.gpu:
            self.torch.cuda.synchronize()

    # -- the task's side -------------------------------------------------------------------------
    def load_reference(self) -> ModuleType:
        from arena.evaluation.sides import import_reference

        try:
            return import_reference(self.task.reference_path)
        except BaseException as exc:  # noqa: BLE001
            raise GateFailure(
                Status.TASK_ERROR, f"reference.py failed to import: {type(exc).__name__}: {exc}"
            ) from None

    def set_config(self, config: Any) -> None:
        """This config's shapes and scalars for the calls that follow."""
        from arena.taskdef.shapes import tensor_bytes

        self._env = self.task.env(config)
        self.config_key = repr(sorted(self._env.items()))
        self._scalars = [self.task.scalar_value(s, self._env) for s in self.task.scalars]
        # the most any config of this evaluation so far moved, as the reference's working memory is counted: a
        # process's allocator keeps what an earlier, larger config needed (a launcher that allocates its outputs
        # held 4.3 GiB at a 0.13 GiB config after configs of 0.5-0.8 GiB), and the allowance does not shrink under it
        self._io_bytes = max(self._io_bytes, tensor_bytes(self.task, self._env, self.task.inputs) + tensor_bytes(
            self.task, self._env, self.task.outputs
        ))

    # -- the candidate's device memory -------------------------------------------------------------
    def allowance(self, measure: bool = False) -> int:
        """What the candidate's process may hold on the device now (``arena.evaluation.memory.allowance``);
        ``measure``: see ``reference_bytes``."""
        from arena.evaluation.memory import allowance

        live = self.slots.live_bytes if self.slots is not None else 0
        return allowance(self._io_bytes, live, self.reference_bytes(measure))

    def working_allowance(self, measure: bool = False) -> int:
        """The working memory the candidate may hold beside its context and buffers (a
        replayed candidate's records may ask no more of the replay process)."""
        from arena.evaluation.memory import working_allowance

        return working_allowance(self._io_bytes, self.reference_bytes(measure))

    def reference_bytes(self, measure: bool = False) -> int:
        """The most device memory the reference's upcast run held beyond its inputs, on any config
        of this evaluation so far (its process's allocator keeps what an earlier config needed),
        as this process measured it (``expected``). ``measure``: where the current config's run
        has not been measured yet, run the reference once now, on the inputs of a fixed seed (a
        check that would otherwise stop the candidate before the reference ran on its config).
        The measure is asked for only where the candidate's process holds (or its record asks for)
        more than the allowance without it: where the device has no memory left for that run, it
        is not taken, and the candidate is judged on what was measured before (its hoard is what
        the reference could not run beside, not the harness's failure)."""
        key = self.config_key
        if measure and self.gpu and key not in self._reference_bytes and key not in self._unmeasured:
            try:
                with self.gpu_lock.shared("reference"):
                    self.expected(self.make_inputs(MEASURE_SEED))
                    self.sync()
            except Exception as exc:  # noqa: BLE001 - a shortage of device memory, told apart by its words
                message = exc.message if isinstance(exc, GateFailure) else f"{type(exc).__name__}: {exc}"
                if not out_of_memory(message):
                    raise
                self._unmeasured[key] = message.splitlines()[0][:300]
                self.release_memory()
        return max(self._reference_bytes.values(), default=0)

    def unmeasured_note(self) -> str:
        """Why the current config's reference was not measured for the allowance, or nothing."""
        why = self._unmeasured.get(self.config_key)
        return f" (the reference's working memory on this config could not be measured: {why})" if why else ""

    def check_device_memory(self, where: str) -> None:
        """After the candidate's code ran: its process within its allowance, else its failure
        (the process killed at once: what it holds is freed for the others). What this
        evaluation's processes hold goes into the GPU's memory account, with the allowance."""
        if self.usage is None or self.usage.handle is None or not self.remote.peer.pid:
            return
        used = self.usage.by_pid()
        pid, allow = self.remote.peer.pid, self.allowance()
        held = used.get(pid, 0)
        if held > allow:        # what the reference itself needs on this config, measured now if it was not
            allow = self.allowance(measure=True)
        split = getattr(self, "_stage_now", ("", "", ""))[1]
        m = self.held.setdefault(split, {"held_gib": 0.0, "allowance_gib": 0.0, "share": 0.0})
        if held / allow >= m["share"]:
            m.update(
                held_gib=round(held / 2**30, 3), allowance_gib=round(allow / 2**30, 3), share=round(held / allow, 4)
            )
        # the processes that make calls, at what they hold (at least what they stood for); not this one, whose
        # buffers and working sets are in the account already, reserved piece by piece
        from arena.evaluation.memory import PROCESS_BYTES

        self.memory.restand(
            PROCESS_BYTES + sum(max(PROCESS_BYTES, used.get(p, 0)) for p in self._confined()), {pid: allow}
        )
        if held > allow:
            raise self._over(held, allow, where)

    def _confined(self) -> list[int]:
        """The pids of this evaluation's processes that make calls (the candidate's, the replay one's)."""
        peers = {id(h.peer): h.peer for h in (self.remote, self.base_remote, self.replay_remote) if h is not None}
        return [p.pid for p in peers.values() if p.pid]

    def _over(self, held: int, allow: int, where: str) -> GateFailure:
        from arena.evaluation.memory import ALLOWANCE_FLOOR, ALLOWANCE_IO, ALLOWANCE_REFERENCE, local_reserved

        self.remote.peer.kill()
        reserved = local_reserved(self.local_bytes) / 2**30
        local = (f"; its replayed kernels take {self.local_bytes:,} bytes of local memory a thread, which a process "
                 f"that launched them holds for every thread of the GPU ({reserved:.2f} GiB) unless it sets the stack "
                 "size limit back, as the harness does in it after its code ran" if self.local_bytes else "")
        return GateFailure(
            Status.RUNTIME_ERROR,
            f"the candidate's process held {held / 2**30:.2f} GiB of device memory {where}, past its "
            f"allowance of {allow / 2**30:.2f} GiB (its context, the buffers it was given, and "
            f"{ALLOWANCE_IO}x the config's inputs and outputs, {ALLOWANCE_REFERENCE}x the reference's own working "
            f"memory ({self.reference_bytes() / 2**30:.2f} GiB) or {ALLOWANCE_FLOOR / 2**30:g} GiB, whichever is most"
            f"{local})" + self.unmeasured_note(),
            fatal=True,
        )

    def memory_cause(self) -> GateFailure | str | None:
        """Why this process (or the baseline's) ran out of device memory, where a process is to
        blame: the candidate's over its allowance (its failure), or a candidate process of
        another evaluation over its own (a message: wait for it to be stopped). None: no process
        holds more than it may, and the shortage is the harness's."""
        if self.usage is None or self.usage.handle is None:
            return None
        used = self.usage.by_pid()
        pid, allow = self.remote.peer.pid, self.allowance()
        if pid and used.get(pid, 0) > allow:
            return self._over(used[pid], allow, "when this evaluation ran out of device memory")
        mine = {os.getpid(), *self._confined()}
        for other, held, allow, what in self.memory.over_allowance(used):
            if other not in mine:
                return (
                    f"process {other} of another evaluation ({what}) held {held / 2**30:.2f} GiB, past its "
                    f"allowance of {allow / 2**30:.2f} GiB"
                )
        return None

    def make_inputs(self, seed: int) -> dict[str, Any]:
        from arena.check.inputs import make_inputs

        try:
            return make_inputs(self.task, self._env, seed, self.torch_device, self.reference)
        except Exception as exc:  # noqa: BLE001
            raise task_failure("making inputs", exc) from None

    def expected(self, ins: dict[str, Any]) -> list:
        """The reference on upcast clones of the inputs: one tensor per compared tensor
        (``Task.compared``: each output, then each inout input's value after the reference
        updated its clone in place)."""
        from arena.check.compare import compare_dtype
        from arena.check.inputs import DTYPES, ReferenceContractError, run_reference

        torch = self.torch
        # its working memory, for the candidate's allowance (``reference_bytes``)
        measure = self.gpu and torch.cuda.is_available()
        if measure:
            torch.cuda.reset_peak_memory_stats()
            before = torch.cuda.memory_allocated()
        try:
            results = run_reference(self.reference.reference, self.task, ins, self._scalars)
            if measure:
                key, used = self.config_key, torch.cuda.max_memory_allocated() - before
                self._reference_bytes[key] = max(self._reference_bytes.get(key, 0), used)
        except ReferenceContractError as exc:
            raise GateFailure(Status.TASK_ERROR, str(exc)) from None
        except BaseException as exc:  # noqa: BLE001
            raise task_failure("the reference", exc) from None
        out = []
        for r, spec in zip(results, self.task.compared):
            if r is None:  # an inout input the config leaves out
                out.append(None)
                continue
            shape = self.task.shape(spec, self._env)
            if tuple(r.shape) != shape:
                raise GateFailure(
                    Status.TASK_ERROR,
                    f"the reference's {spec.name!r} has shape {tuple(r.shape)}, the signature says {shape}",
                )
            dt = DTYPES[spec.dtype]
            out.append(r.to(compare_dtype(dt)) if dt.is_floating_point else r.to(dt))
        return out

    def compared(self, ins: list, outs: list) -> list:
        """A call's tensors that are compared with ``expected``: its outputs, then its inout
        inputs (as the call left them)."""
        return [*outs, *(ins[k] for k, spec in enumerate(self.task.inputs) if spec.inout)]

    def mutated_input(self, ins: list, seed: int) -> tuple[int, dict[str, Any]]:
        """Make the inputs again from the seed (nothing the candidate saw); return the index of
        the first given input that differs from them in memory (-1 if none) and the fresh
        inputs. The inputs updated in place (inout) are compared with the reference instead."""
        from arena.check.compare import same_bytes
        from arena.check.inputs import storage

        fresh = self.make_inputs(seed)
        for k, (spec, t, f) in enumerate(zip(self.task.inputs, ins, fresh.values())):
            if spec.inout or t is None or f is None:
                continue
            if t.shape != f.shape or not same_bytes(storage(t), storage(f)):
                return k, fresh
        return -1, fresh

    def output_specs(self) -> list[tuple[Any, tuple[int, ...]]]:
        from arena.check.inputs import DTYPES

        return [(DTYPES[s.dtype], self.task.shape(s, self._env)) for s in self.task.outputs]

    def input_specs(self) -> list:
        """Each input's (dtype, shape, strides) in this config; None for one it leaves out."""
        from arena.check.inputs import DTYPES

        return [
            (DTYPES[s.dtype], self.task.shape(s, self._env), self.task.strides(s, self._env))
            if self.task.present(s, self._env)
            else None
            for s in self.task.inputs
        ]

    def allocate_inputs(self) -> list:
        """Buffers for a set's inputs (of this process's sides); None for an absent one."""
        from arena.check.inputs import empty_input

        return [empty_input(self.task, s, self._env, self.torch_device) for s in self.task.inputs]

    def allocate_outputs(self) -> list:
        """Outputs of a side of this process (the baseline, torch.compile's), poisoned."""
        from arena.check.compare import poison_

        return [
            poison_(self.torch.empty(shape, dtype=dt, device=self.torch_device)) for dt, shape in self.output_specs()
        ]

    # -- the candidate's buffers ----------------------------------------------------------------
    def new_slot(self, remote: CandidateHandle | None = None) -> SharedSet:
        """Buffers for one call of the current config, mapped in the process of ``remote``
        (the candidate's by default). Each process's buffers come from a memory pool of their
        own: the candidate's never share a block with the baseline's."""
        remote = remote or self.remote
        # (the baseline's handle, or the one that replays its records)
        maker = self.base_slots if getattr(remote, "candidate", remote) is self.base_remote else self.slots
        specs = self.input_specs() + self.output_specs()
        slot = maker.allocate(specs, [s.name for s in (*self.task.inputs, *self.task.outputs)])
        n = len(self.task.inputs)
        self._slot_ids += 1
        shared = SharedSet(self._slot_ids, slot, slot.tensors[:n], slot.tensors[n:], remote)
        self.sync()
        try:
            remote.map_set(shared, self._scalars)
        except BaseException:
            slot.close()
            raise
        return shared

    def drop_slots(self, sets: list[SharedSet]) -> None:
        if not sets:
            return
        # the candidate's handles: its own (``remote``) and, where its calls are replayed, that of its process, which
        # the buffers it records on are mapped in (a failure of that process is the candidate's as much)
        candidate = (self.remote, getattr(self.remote, "candidate", None))
        for remote in {id(s.remote): s.remote for s in sets}.values():
            if any(remote is c for c in candidate) and self.lost:
                continue
            try:
                remote.release([s.id for s in sets if s.remote is remote])
            except GateFailure as exc:
                if exc.fatal and any(remote is c for c in candidate):
                    self.fatal = exc
        for s in sets:
            s.ins, s.outs = [], []
            s.slot.close()

    def fill_inputs(self, seed: int, *targets: list, inout_only: bool = False) -> None:
        """The inputs of ``seed`` into the input buffers of each of ``targets`` (the candidate's
        call, the baseline's, this process's own sides'): made once, copied to each.
        ``inout_only``: only the inputs updated in place (their buffers made fresh again for
        another call on the same set)."""
        self._copy_inputs(self.make_inputs(seed), targets, inout_only)

    def _copy_inputs(self, made: dict[str, Any], targets: Any, inout_only: bool = False) -> None:
        """Inputs made here (by name) into the input buffers of each of ``targets``."""
        from arena.check.inputs import copy_into

        for ins in targets:
            for spec, dst, src in zip(self.task.inputs, ins, made.values()):
                if dst is not None and src is not None and (spec.inout or not inout_only):
                    copy_into(dst, src)

    def structural_inputs(self) -> bool:
        """Has the current config an input whose values shape a call's work
        (``arena.check.inputs.structural``)?"""
        from arena.check.inputs import has_structural

        return has_structural(self.task, self._env)

    def fill_for_record(self, seed: int, ins: list) -> None:
        """The inputs a replayed candidate's call is recorded on (``arena.evaluation.trusted.calls.ReplayedCandidate``):
        the structural inputs of ``seed``, every other input drawn from a seed of its own,
        which nothing keeps (``arena.check.inputs.record_inputs``)."""
        from arena.check.inputs import record_inputs

        try:
            made = record_inputs(
                self.task, self._env, seed, self.rng.getrandbits(62), self.torch_device, self.reference
            )
        except Exception as exc:  # noqa: BLE001
            raise task_failure("making inputs", exc) from None
        self._copy_inputs(made, [ins])

    def release_memory(self) -> None:
        """Give the blocks torch's allocator caches back to the device, so evaluations sharing
        it can use them (after each config)."""
        if self.gpu:
            import gc

            for maker in (self.slots, self.base_slots):
                if maker is not None:
                    maker.renew()
            gc.collect()
            with self.gpu_lock.shared("release"):
                self.torch.cuda.empty_cache()
                try:
                    self.torch.cuda.ipc_collect()
                except Exception:  # noqa: BLE001 - nothing shared to collect
                    pass

    # -- the run --------------------------------------------------------------------------------
    def run(self) -> None:
        self.load()
        for split in self.job.splits:
            self.run_split(split)

    def _spec(self, side: dict, *, forbidden: list[str], trusted: bool) -> CandidateSpec:
        """What a process needs to call one side of the job (the candidate, or the task's
        baseline): its file, entry and library, and the task's call shape."""
        return CandidateSpec(
            language=side["language"],
            path=side.get("path") or str(self.task.reference_path),
            entry="reference" if side["language"] == "reference" else self.task.entry,
            n_inputs=len(self.task.inputs),
            n_outputs=len(self.task.outputs),
            scalar_types=[s.type for s in self.task.scalars],
            library=side.get("library") or "",
            forbidden=forbidden,
            trusted=trusted,
            device_code=side.get("device_code") or "",
            device_code_sha256=side.get("device_code_sha256") or "",
        )

    def load(self) -> None:
        """The task's side here (reference, baseline, torch.compile's, the timer) while the
        candidate process prepares itself, then the candidate there."""
        from arena.evaluation.buffers import SlotMaker

        self.stage("load")
        waited = self.gpu_lock.waited_s
        cand = self.job.candidate
        spec = self._spec(cand, forbidden=list(self.task.forbidden), trusted=self.candidate_trusted)
        timing = self.job.timing
        by_fd = shares_by_fd("gpu" if self.gpu else "cpu")
        self.slots = SlotMaker(self.torch_device, by_fd)
        # a probe of the buffer sharing, answered before any candidate code runs: its failure is the harness's
        probe = self.slots.allocate([(self.torch.int64, (2,))])
        token = self.rng.getrandbits(40)
        probe.tensors[0].copy_(self.torch.tensor([token, 0]))
        self.sync()
        self.remote.start_setup(
            SetupRequest(
                candidate=spec,
                env=dict(self.job.candidate_env),
                cpu_threads=self.job.cpu_threads,
                sandbox=self.job.sandbox,
                llc_bytes=int(self.device.get("llc_bytes") or 0),
                timing=timing,
                probe=probe.handle,
                record=self.replay_remote is not None,
            ),
            probe.fd,
        )
        self.baseline = None
        base_probe, base_spec = None, None
        harness = self.base_remote if timing and self.job.baseline else self.replay_remote
        if timing and self.job.baseline and self.base_remote is None:
            raise GateFailure(Status.HARNESS_ERROR, "no process to run the task's baseline in")
        if harness is not None:
            # the replay process: the task's baseline (where the candidate is timed), and the candidate's records
            # (where they are replayed); it runs no code of the candidate's host: no file, no sandbox of its own
            n_in, n_out = len(self.task.inputs), len(self.task.outputs)
            scalars = [s.type for s in self.task.scalars]
            replay = None
            if self.replay_remote is not None:
                replay = CandidateSpec(
                    language="replay", path="", entry="", n_inputs=n_in, n_outputs=n_out, scalar_types=scalars,
                    trusted=True, device_code=cand.get("device_code") or "",
                    device_code_sha256=cand.get("device_code_sha256") or "",
                )
            if harness is self.base_remote:
                base_spec = self._spec(self.job.baseline, forbidden=[], trusted=True)
                self.base_slots = SlotMaker(self.torch_device, by_fd)
                base_probe = self.base_slots.allocate([(self.torch.int64, (2,))])
                base_probe.tensors[0].copy_(self.torch.tensor([token, 0]))
                self.sync()
            harness.start_setup(
                SetupRequest(
                    candidate=base_spec if base_probe is not None else replay,
                    env=dict(self.job.env),
                    cpu_threads=self.job.cpu_threads,
                    sandbox=None,
                    llc_bytes=int(self.device.get("llc_bytes") or 0),
                    timing=timing,
                    probe=base_probe.handle if base_probe is not None else "",
                    replay=replay if base_probe is not None else None,
                    record=base_probe is not None and self._baseline_recorded(base_spec),
                ),
                base_probe.fd if base_probe is not None else -1,
            )
        self._mark = time.perf_counter()
        self.reference = self.load_reference()
        self.mark("reference")
        self.compiled = None
        if (
            self.gpu
            and timing
            and self.task.category == "torch2hip"
            and self.job.timing_params.get("torch_compile")
        ):
            self.compiled = compiled_side(self)
        if timing:
            if self.gpu:
                from arena.timing.timer import DeviceTimer

                self.timer = DeviceTimer(self.device.get("llc_bytes") or 64 * 2**20)
                if self.compiled is not None:  # a side timed here: the profiler and our kernels, ahead
                    self.timer.sample_round([])
                    self.mark("profiler")
                    self.timer.sample_round(
                        [("warm", lambda: None, lambda: None, lambda: None)], alone=self.gpu_lock.shared
                    )
                self.mark("timer")
            else:
                from arena.timing.timer import HostTimer

                self.timer = HostTimer()
        if harness is not None:
            harness.finish_setup()
            if base_probe is not None:
                _probe_answered(base_probe, token, "the replay process")
            harness.load()      # the baseline's (its failure is the task's)
            if base_probe is not None:
                self.baseline = self.base_remote
                if self._baseline_recorded(base_spec):
                    from arena.evaluation.trusted.calls import ReplayedBaseline

                    self.baseline = ReplayedBaseline(self, self.base_remote, self.record_numbers)
            self.mark("baseline")
        ready = self.remote.finish_setup()
        _probe_answered(probe, token, f"the candidate process ({self.slots.device})")
        defences = {**self.remote.peer.confinement, "landlock": "" if ready.sandbox_applied else ready.sandbox_reason}
        if self.usage is not None:
            defences["device memory allowance"] = self.usage.why or ""
        if (
            self.gpu and not self.candidate_trusted
        ):  # arena.evaluation.record: where the times and outputs that count are made
            defences["record and replay"] = (
                ""
                if self.replay_remote is not None
                else "this candidate's calls are timed in its own process (record and replay covers Triton and HIP "
                "on CUDA)"
            )
        self.send(SandboxFrame(applied=ready.sandbox_applied, reason=ready.sandbox_reason, defences=defences))
        self.mark("setup")
        self.remote.load()
        if self.replay_remote is not None:
            from arena.evaluation.trusted.calls import ReplayedCandidate

            self.remote = ReplayedCandidate(self, self.remote, self.replay_remote, self.record_numbers)
        self.mark("candidate")
        freeze_heap()  # the task's sides and the timer, loaded
        self.send(LoadedFrame(parts=self.marks, lock_wait_s=round(self.gpu_lock.waited_s - waited, 3)))

    def _baseline_recorded(self, base_spec: Any) -> bool:
        """Are the baseline's calls recorded and replayed (``ReplayedBaseline``)? Where the
        candidate's are, and the baseline is a kernel the replay process can record: Triton's,
        or a HIP build's for CUDA (its device code extracted, its recorder linked in)."""
        return self.replay_remote is not None and base_spec is not None and (
            base_spec.language == "triton" or (base_spec.language == "hip" and bool(base_spec.device_code)))

    def lock_stats(self, since: dict[str, float] | None = None) -> dict[str, float]:
        """The GPU lock's counters (seconds), and the time waited for room in the GPU's memory
        account, or their growth since an earlier reading."""
        lk = self.gpu_lock
        now = {
            "lock_wait_s": lk.waited_s,
            "shared_s": lk.shared_s,
            "off_gpu_s": lk.off_gpu_s,
            "shared_n": lk.shared_n,
            "exclusive_n": lk.exclusive_n,
            "failed_tries": lk.failed_tries,
            "writer_wait_s": lk.writer_waited_s,
            "alone_s": lk.alone_s,
            "memory_wait_s": self.memory.waited_s,
            "memory_waits": self.memory.waits,
            "memory_exclusives": self.memory.exclusives,
        }
        for label, secs in lk.held_by.items():  # the shared sections, by what they were for
            now[f"held_{label}_s"] = secs
        for label, secs in lk.over_by.items():
            now[f"over_{label}_s"] = secs
        if self.timer is not None:  # where the timed sections' host time went (arena.timing.timer)
            for part, secs in self.timer.alone_parts.items():
                now[f"alone_{part}_s"] = secs
            handles = [h for h in (self.remote, self.base_remote) if h is not None]
            now["alone_served_s"] = sum(h.served_us for h in handles) / 1e6
            for h in handles:  # of served, by part (arena.timing.timer.STEP_PARTS)
                for part, secs in h.served_parts.items():
                    now[f"alone_{part}_s"] = now.get(f"alone_{part}_s", 0.0) + secs
        given = getattr(self.remote, "given", None)  # records handed to the replay process (ReplayedCandidate)
        if given is not None:
            now.update({f"records_{k}": v for k, v in given.items()})
        if since is None:
            lk.longest_shared_s = 0.0
            return now
        out = {k: round(v - since.get(k, 0.0), 3) for k, v in now.items()}
        out["longest_shared_s"] = round(lk.longest_shared_s, 3)
        return out

    def not_run(self, name: str, config: str, where: str) -> CorrectnessResult:
        """A config the candidate can no longer run: its failure, with why."""
        f = self.fatal
        assert f is not None
        why = f": {f.message[:MESSAGE_CHARS // 2]}" if f.message else ""
        return CorrectnessResult(status=f.status, message=f"{NOT_RUN} {_why_gone(f)} {where}{why}")

    def run_split(self, split: dict[str, Any]) -> None:
        from arena.taskdef.loader import Config

        name = split["split"]
        configs = [Config(**cfg) for cfg in split["configs"]]
        all_passed = True
        for config in configs:
            if self.lost:  # the candidate's process is gone: the rest is its failure too
                self.send(
                    CorrectnessFrame(
                        split=name, config=config.name, result=self.not_run(name, config.name, f"(at {self._lost_at})")
                    )
                )
                all_passed = False
                continue
            self.stage("correctness", name, config.name)
            lock0 = self.lock_stats()
            result = check_config(self, config)
            result.lock = self.lock_stats(lock0)
            if self.lost and not self._lost_at:
                self._lost_at = f"{name}/{config.name}"
            self.send(CorrectnessFrame(split=name, config=config.name, result=result))
            all_passed &= result.status is Status.PASSED
        if all_passed and self.job.timing and self.baseline is not None and not self.lost:
            from arena.evaluation.trusted.performance import time_split

            time_split(self, name, configs)
        if self.lost and not self._lost_at:     # stopped in this split's timing, or as its buffers were given back
            stage, split, config = getattr(self, "_stage_now", ("", name, ""))
            self._lost_at = f"{split or name}/{config} ({stage})" if config else f"the end of {name}"
        self.send(SplitDoneFrame(split=name, memory=self.held.get(name, {})))

    def send_lock(self, split: str, stats: dict[str, float]) -> None:
        self.send(LockFrame(split=split, stats=stats))

    def send_performance(self, split: str, config: str, result: PerformanceResult) -> None:
        self.send(PerformanceFrame(split=split, config=config, result=result))


def _probe_answered(probe: Any, token: int, whose: str) -> None:
    """A setup's probe of the buffer sharing, read and let go: the process added one to the
    token, or the buffers are not shared (the harness's failure: no candidate code has run)."""
    answer = int(probe.tensors[0][1])
    probe.close()
    if answer != token + 1:
        raise GateFailure(Status.HARNESS_ERROR, f"the buffers shared with {whose} are not shared: the probe read "
                                                f"{answer}, not {token + 1}")


def _why_gone(f: GateFailure) -> str:
    if f.status is Status.RUNTIME_ERROR:
        return "the candidate process was stopped after a runtime error"
    if f.status is Status.CRASHED:
        return "the candidate process died"
    if f.status is Status.TIMEOUT:
        return "the candidate process was killed after a call did not finish in time"
    return f"the candidate process was stopped ({f.status.value})"


def compile_off_gpu(lock: Any) -> None:
    """Triton's JIT compiler is host-only work: a kernel compiled on its first call inside a
    shared section lets the GPU's lock go meanwhile (``GpuLock.off_gpu``), so no timed round of
    another evaluation waits for it. Installed before any kernel binds the compiler."""
    try:
        import triton.compiler as tc
    except ImportError:
        return
    real = tc.compile
    if getattr(real, "_arena_off_gpu", False):
        return

    def compile(*args: Any, **kwargs: Any) -> Any:
        with lock.off_gpu():
            return real(*args, **kwargs)

    compile._arena_off_gpu = True  # type: ignore[attr-defined]
    tc.compile = compile
    try:
        import triton.compiler.compiler as tcc

        tcc.compile = compile
    except ImportError:
        pass


def off_gpu_backend(lock: Any, inner: Callable | None = None) -> Callable:
    """A torch.compile backend: ``inner`` (inductor's compile_fx by default) with the GPU's lock
    let go while it compiles (``GpuLock.off_gpu``); the compiled graph runs under the caller's
    section as before."""

    def backend(gm: Any, example_inputs: list) -> Any:
        compile_fx = inner
        if compile_fx is None:
            from torch._inductor.compile_fx import compile_fx
        with lock.off_gpu():
            return compile_fx(gm, example_inputs)

    return backend


def compiled_side(ev: Evaluation) -> Side:
    """torch2hip: torch.compile of the reference as a second denominator (recorded, never the
    primary one). Inductor compiles in this process: its pool of compile processes failed to
    compile (on an H200: every config after the first, which inductor compiles in-process
    while the pool warms up). The backend compiles with the GPU's lock let go: no timed round
    waits for it. Each config is compiled for its own shapes (arena.evaluation.trusted.performance), as a user
    of torch.compile at that shape would get it."""
    import torch
    import torch._inductor.config as inductor_config

    inductor_config.compile_threads = 1
    side = Side(
        CandidateSpec(
            language="reference",
            path="",
            entry="reference",
            n_inputs=len(ev.task.inputs),
            n_outputs=len(ev.task.outputs),
            scalar_types=[s.type for s in ev.task.scalars],
        ),
        function=ev.reference.reference,
    )
    side.fn = torch.compile(ev.reference.reference, backend=off_gpu_backend(ev.gpu_lock), dynamic=False)
    return side


# ------------------------------------------------------------------------------------------


def preload_imports(mode: str) -> None:
    """The imports every process of an evaluation needs (torch, Triton, the harness's modules;
    on a GPU also what the profiler's first start imports, torch's compiler stack: 5.6 s of one
    core on an H100's host), done once in this process before its candidate's and baseline's
    processes are forked from it. Nothing here opens a device context or reads the job."""
    import torch

    if mode == "gpu":
        import torch._dynamo  # noqa: F401
        import torch._inductor  # noqa: F401

    import arena.check.compare  # noqa: F401
    import arena.check.inputs  # noqa: F401
    import arena.evaluation.buffers  # noqa: F401
    import arena.taskdef.loader  # noqa: F401
    import arena.timing.timer  # noqa: F401

    del torch
    preload_servers()  # what the processes forked from this one import
    if mode == "gpu":
        prime_triton()


def prime_triton() -> None:
    """What every process's first Triton compile (the timer's own kernels, as its job arrives)
    would do again in each: the key of Triton's installation, a hash of its compiler's and
    language's sources and of its library (about a second of one core; cached per process), and
    the modules that compile imports. Done here, before the forks, the forked processes have
    them. Only this Triton's own code runs; no device is touched."""
    import importlib

    try:
        from triton.runtime.cache import triton_key

        triton_key()
    except Exception:  # noqa: BLE001 - another Triton: its first compile does it, as before
        pass
    for name in ("triton.compiler.compiler", "triton.experimental.gluon"):
        try:
            importlib.import_module(name)
        except Exception:  # noqa: BLE001
            pass


def freeze_heap() -> None:
    """What exists now (the harness, torch, the task) set aside from the cycle collector: each
    config's collection (``release_memory``) then walks the objects made since, not torch's
    hundreds of thousands (about 60 ms a collection with torch and Triton imported; 256 CPU
    seconds of a 12-worker run's trusted processes, profiled on an H200's host). What is set
    aside is never garbage the collection is for: the device memory of a config's buffers."""
    import gc

    gc.collect()
    gc.freeze()


def open_devices(peers: list[CandidatePeer], kernel_cache: str) -> None:
    """The device of this process and of its peers, opened side by side as the job arrives (a
    process that cannot answer is the harness's failure: no candidate code has run)."""
    from arena.timing.timer import preload as timer_preload

    opening = [(p, p.start(OpenRequest(kernel_cache=kernel_cache))) for p in peers]
    try:
        # not the profiler: its first start is for the processes that make timed calls, and for this one
        # only when it times a side itself (Evaluation.load)
        timer_preload(profiler=False, kernel_cache=kernel_cache)
    except BaseException:  # noqa: BLE001 - the job then fails where the device is needed, with its message
        pass
    for p, nonce in opening:
        p.finish(nonce, time.monotonic() + OPEN_S)


def _peer(mode: str, name: str, fork: bool = False) -> CandidatePeer:
    """A process that makes calls, in this process's folder ``name`` ("c": the candidate's,
    "r": the replay process, which runs the task's baseline and replays the candidate's records)."""
    scratch = Path.cwd() / name
    env = {
        **os.environ,
        "TMPDIR": str(scratch),
        "TRITON_CACHE_DIR": str(scratch / "triton"),
        "TORCHINDUCTOR_CACHE_DIR": str(scratch / "triton" / "inductor"),
        "CUDA_CACHE_PATH": str(scratch / "nv"),
    }
    return CandidatePeer(mode, scratch, env, fork=fork, role={"c": "candidate", "r": "replay"}[name])


def replayed(job: JobFrame) -> bool:
    """Is the candidate's device work recorded and replayed (``arena.evaluation.record``)? On CUDA, a
    Triton candidate's, and a HIP candidate's whose build gave its device code apart (a job may
    turn it off: ``"replay": false``)."""
    cand = job.candidate
    language = cand.get("language")
    return (
        job.device.get("kind") == "cuda"
        and not cand.get("trusted")
        and job.replay
        and (language == "triton" or language == "hip" and bool(cand.get("device_code")))
    )


_PREPARED: list[str] = []   # the mode this process was prepared for (a process forked from a fork server: already)


def prepare(mode: str) -> None:
    """What a trusted process does before it forks its peers and reads its job, done once in a
    process (a fork server's forks find it done): its umask, the imports, fp32 as fp32, the heap set
    aside from the collector."""
    if _PREPARED:
        return
    os.umask(0o002)  # what it writes in the shared caches stays writable by the confined processes
    try:
        preload_imports(mode)
    except BaseException:  # noqa: BLE001 - the job then fails where the import is needed, with its message
        pass
    from arena.check.inputs import fp32_as_fp32

    fp32_as_fp32()   # before the forks: the reference and the task's own starting point compute fp32 in fp32
    freeze_heap()  # before the forks: the forked processes start with it set aside too
    _PREPARED.append(mode)


def main(argv: list[str]) -> int:
    in_fd, out_fd = int(argv[0]), int(argv[1])
    mode = argv[2] if len(argv) > 2 else "cpu"
    prepare(mode)
    # the candidate's process forked from this one now (and on a GPU, where every evaluation is timed, the replay
    # process, which runs the baseline): everything imported once, no device context (none can be forked). While
    # the worker waits for its job (started ahead: arena.evaluation.processes.Spares) none of its processes holds
    # device memory. The cpu backend starts a replay process only for the rare job timed on the host's clock.
    peers = [_peer(mode, "c", fork=True), *([_peer(mode, "r", fork=True)] if mode == "gpu" else [])]
    raw = read_frame(in_fd)
    os.close(in_fd)
    if raw is None:
        for p in peers:
            p.close()
        return 2
    key = raw.get("key") if isinstance(raw, dict) else None
    if not isinstance(key, str) or not re.fullmatch(r"(?:[0-9a-f]{2})+", key):
        for p in peers:
            p.close()
        return 2
    send = signed_writer(out_fd, bytes.fromhex(key))
    import faulthandler

    from arena.evaluation.processes import STACK_SIGNAL

    faulthandler.register(STACK_SIGNAL, all_threads=True)   # where it is, on its log, when the parent asks
    if mode == "gpu" and len(argv) > 3:
        # from now on its processes are in the GPU's memory account: they open their device contexts
        from arena.evaluation.memory import MemoryAccount

        MemoryAccount(int(argv[3]), 0).stand(3, "a worker's processes")
    try:
        # the job, decoded field by field (a job that does not decode is the harness's failure, told signed)
        job = decode({**raw, "key": ""}, (JobFrame,))
        os.environ.update(job.env)  # this job's caches (read when first used; the replay process's too)
        if job.cpu_threads:     # its share of the host's CPUs (the reference's loops), its processes' too
            import torch

            torch.set_num_threads(job.cpu_threads)
        if len(peers) == 1 and job.timing and job.baseline:
            peers.append(_peer(mode, "r"))
        if mode == "gpu":
            open_devices(peers, job.kernel_cache)
        harness = peers[1] if len(peers) > 1 else None
        ev = Evaluation(job, send, peers[0], harness, harness if replayed(job) else None)
        ev.run()
        send(encode(DoneFrame()))
    except GateFailure as exc:
        send(encode(FailureFrame(status=exc.status, message=exc.message, traceback=list(exc.traceback))))
    except BaseException as exc:  # noqa: BLE001
        send(
            encode(
                FailureFrame(
                    status=Status.HARNESS_ERROR,
                    message=f"{type(exc).__name__}: {exc}\n{traceback.format_exc()[-3000:]}",
                )
            )
        )
    for p in peers:
        p.close()
    sys.stdout.flush()
    sys.stderr.flush()
    os._exit(0)


if __name__ == "__main__":  # run as the package's module, not as __main__: one copy of its classes
    from arena.evaluation.trusted import process as _self

    sys.exit(_self.main(sys.argv[1:]))

"""The trusted process's handles on the processes that make calls (the candidate's, and the
replay process, which runs the task's baseline and replays the candidate's records), and the
buffers of one call.

Every request runs under the current stage's deadline. Every request to the candidate's
process that may run candidate code (its import, its calls, a finalizer a release runs: all
but ``arena.evaluation.protocol.HARNESS_ONLY``) runs inside a section of the GPU's lock, and that
process's word that it is only compiling does not let the lock go: only the replay process,
which runs the task's own code, is believed. Every failure comes back as a ``GateFailure``:
the candidate's own, or the task's where the baseline failed.
"""

from __future__ import annotations

import contextlib
import itertools
import time
from dataclasses import dataclass, field
from typing import Any, Callable, Iterator, Sequence

from arena.evaluation.processes import CandidateGone, CandidatePeer
from arena.evaluation.protocol import (
    HARNESS_ONLY,
    AckReply,
    BeginRequest,
    CalledReply,
    CallRequest,
    CompilingNotice,
    EndRequest,
    FailReply,
    KernelsReply,
    KernelsRequest,
    LoadedReply,
    LoadRequest,
    MapRequest,
    ReadyReply,
    ReleaseRequest,
    ReplayRequest,
    SampledReply,
    SampleRequest,
    SessionReply,
    SetupFailReply,
    SetupRequest,
    TakenReply,
    TimedStep,
    TuningNotice,
)
from arena.evaluation.tracebacks import bounded
from arena.evaluation.trusted.correctness import GateFailure
from arena.evaluation.trusted.stage import EvaluationState
from arena.records import Status

_GONE = {"died": (Status.CRASHED, "the candidate process died"),
         "timeout": (Status.TIMEOUT, "the candidate did not finish in time"),
         "forbidden": (Status.FORBIDDEN_CALL, "the candidate did what candidates may not"),
         "protocol": (Status.INTEGRITY_VIOLATION, "the candidate process broke the protocol")}
MESSAGE_CHARS = 4000      # of a failure's message from a process that makes calls
# the requests after which the candidate's device memory is checked at once (outside any section of the GPU's
# lock they were made in); after its calls, each config's checked calls and each exclusive section's timed
# ones, the stages check it (arena.evaluation.trusted.correctness, arena.evaluation.trusted.performance)
_CHECKED = {LoadRequest: "its import", ReleaseRequest: "a release of buffers"}


class CandidateHandle:
    """This process's side of a process that makes calls: the candidate's, or (``trusted``)
    the replay process as the baseline's (``harness``: as the replays'). Requests run under
    the current stage's deadline, the candidate's inside a section of the GPU's lock (a
    shared one where none is held yet). An autotuner timing its variants there takes the lock
    exclusive meanwhile; a compile in the replay process lets it go meanwhile (the
    candidate's word is not taken for it: its process, once the lock was let go, could run
    anything beside another evaluation's timed round). Every failure comes back as a
    ``GateFailure``: the candidate's own (``fatal`` when its process can do no more), or the
    task's (``TASK_ERROR``) where the baseline failed: any failure through the baseline's
    handle, and one the replay process says is the baseline's through the replays' (a
    candidate's own process is not believed on that)."""

    def __init__(self, ev: EvaluationState, peer: CandidatePeer, *, trusted: bool = False, harness: bool = False):
        self.ev = ev
        self.peer = peer
        self.trusted = trusted
        # that process runs none of the candidate's code (the replay process): its word that a failure is the task
        # baseline's is believed
        self.harness = trusted or harness
        self.timing_remote: Any = self     # the handle whose session times this one's calls (arena.timing.timer)
        self.served_us = 0.0     # the timed steps' host time there, in all (the rest of their round trips: the channel)
        self.served_parts: dict[str, float] = {}   # ... by part (arena.timing.timer.STEP_PARTS), seconds

    def _notice(self, notice: CompilingNotice | TuningNotice) -> None:
        lock = self.ev.gpu_lock
        if isinstance(notice, TuningNotice):     # an autotuner times its variants: the GPU alone meanwhile
            with self._still():
                if notice.on:
                    lock.alone_inside()
                else:
                    lock.share_again()
        elif not self.trusted:                   # the candidate's compile: the lock stays held
            return
        elif notice.on:
            lock.let_go()
        else:
            lock.take_back()

    @contextlib.contextmanager
    def _still(self) -> Iterator[None]:
        """A change of the lock while this process's request is served, its process waiting for
        the answer to a notice: a wait for other evaluations there is no stage's time where the
        process runs the harness's code, or where the candidate's is stopped meanwhile (SIGSTOP:
        none of its threads goes on through the wait). One that cannot be stopped counts it."""
        if self.harness:
            yield
            return
        stopped = not self.peer.pause(True)
        try:
            with contextlib.nullcontext() if stopped else self.ev.gpu_lock.counted():
                yield
        finally:
            if stopped:
                self.peer.pause(False)

    def _deadline(self) -> float | None:
        """The current stage's deadline, as it is now (a wait for other evaluations moves it)."""
        return self.ev.deadline

    def request(self, frame: Any, expect: type, fd: int = -1) -> Any:
        # a shared section where none is held (or nothing, inside one): candidate code may run now. Those
        # taken here (the import, a release: short, a few an evaluation) go ahead of waiting writers
        section = contextlib.nullcontext() if self.trusted or isinstance(frame, HARNESS_ONLY) else \
            self.ev.gpu_lock.shared(frame.type, queue=False)
        try:
            try:
                with section:
                    if fd >= 0:
                        self.peer.send_fd(fd, frame.slot)
                    reply = self.peer.request(frame, self._deadline, self._notice)
            except CandidateGone as exc:
                if self.ev.fatal is not None and not self.harness:
                    # the harness ended the candidate's process itself, for a failure it stated (its device memory
                    # past its allowance, found as it acknowledged a release): that failure is what happened, not
                    # its consequence here (the process gone as the next buffers were sent to it)
                    raise self.ev.fatal from None
                status, what = _GONE[exc.why]
                if exc.why == "timeout":
                    what = f"no progress within the {self.ev.stage_name} time limit of {self.ev.stage_limit:g} s; " \
                           f"the process was killed"
                    raise GateFailure(status, what, fatal=True) from None
                raise GateFailure(status, exc.message or what, fatal=True) from None
            finally:
                self.ev.gpu_lock.take_back()        # a compile the process never said was over
                self.ev.gpu_lock.share_again()      # a tuning likewise
            if not self.trusted:
                self._no_strays()
            if isinstance(reply, FailReply) and reply.baseline and self.harness:
                raise GateFailure(Status.TASK_ERROR, f"the task's baseline failed: {reply.message}"[:2000],
                                  traceback=bounded(reply.traceback))
            if isinstance(reply, FailReply):      # what that process says is data: bounded here
                raise GateFailure(reply.status, reply.message[:MESSAGE_CHARS],
                                  fatal=reply.context_lost or reply.status is Status.INTEGRITY_VIOLATION,
                                  traceback=bounded(reply.traceback))
            if isinstance(reply, SetupFailReply):   # only the setup may say the harness failed
                raise GateFailure(Status.INTEGRITY_VIOLATION, "the candidate process claimed a harness failure "
                                                              "after the candidate was loaded", fatal=True)
            if not isinstance(reply, expect):
                self.peer.close()
                raise GateFailure(Status.INTEGRITY_VIOLATION, f"the candidate process answered a {frame.type!r} "
                                                              f"request with {reply.type!r}", fatal=True)
            if not self.trusted and type(frame) in _CHECKED:     # its code ran: what it holds now
                self.ev.check_device_memory(f"after {_CHECKED[type(frame)]}")
            return reply
        except GateFailure as exc:
            if self.trusted and exc.status is not Status.TASK_ERROR:
                # the task's baseline failed: not the candidate's fault, and not fatal to it
                raise GateFailure(Status.TASK_ERROR, f"the task's baseline failed: {exc.message}"[:2000],
                                  traceback=exc.traceback) from None
            raise

    def _no_strays(self) -> None:
        """No process the candidate's started runs on once it has answered."""
        strays = getattr(self.peer, "strays", None)      # a process of ours, not a stand-in of a test
        left = strays() if strays is not None else []
        if left:
            self.peer.close()
            raise GateFailure(Status.INTEGRITY_VIOLATION, f"processes the candidate started were still running after "
                                                          f"its reply: {', '.join(left[:8])}", fatal=True)

    def start_setup(self, setup: SetupRequest, fd: int = -1) -> None:
        """The candidate process prepares itself (sandbox, timer, seal, audit hook) while this
        one loads the task's side; ``finish_setup`` takes its reply. ``fd``: the descriptor of
        the setup's probe of the buffers."""
        try:
            if fd >= 0:
                self.peer.send_fd(fd, 0)
            self._pending = self.peer.start(setup)
        except CandidateGone as exc:
            raise GateFailure(Status.HARNESS_ERROR, f"the candidate process failed before the candidate was loaded: "
                                                    f"{exc.message}", fatal=True) from None

    def finish_setup(self) -> ReadyReply:
        """No candidate code has run yet: a failure here is the harness's."""
        try:
            reply = self.peer.finish(self._pending, self._deadline, self._notice)
        except CandidateGone as exc:
            raise GateFailure(Status.HARNESS_ERROR, f"the candidate process failed before the candidate was loaded: "
                                                    f"{exc.message}", fatal=True) from None
        if isinstance(reply, SetupFailReply):
            raise GateFailure(Status.HARNESS_ERROR, f"the candidate process's setup failed: {reply.message}",
                              fatal=True)
        if not isinstance(reply, ReadyReply):
            raise GateFailure(Status.HARNESS_ERROR, f"the candidate process answered its setup with {reply.type!r}",
                              fatal=True)
        return reply

    def load(self) -> LoadedReply:
        """The candidate's code runs from here on: its failures are its own (fatal)."""
        try:
            return self.request(LoadRequest(), LoadedReply)
        except GateFailure as exc:
            exc.fatal = True
            raise

    def map(self, slot: int, handle: str, scalars: list, fd: int = -1, replayed: bool = False) -> None:
        """Map a call's buffers there (``fd``: the descriptor they come as, sent first;
        ``replayed``: the replay process replays the candidate's records on them)."""
        self.request(MapRequest(slot=slot, handle=handle, scalars=list(scalars), replayed=replayed), AckReply, fd=fd)

    def map_set(self, shared: "SharedSet", scalars: list, replayed: bool = False) -> None:
        """Map a set's buffers there."""
        self.map(shared.id, shared.slot.handle, scalars, shared.slot.fd, replayed)

    def release(self, slots: list[int]) -> None:
        self.request(ReleaseRequest(slots=slots), AckReply)

    def call(self, slot: int, *, seed: int | None = None, trace: bool = True, copy_out: bool = True) -> float:
        """One guarded call (on the set of ``seed``); the host time of the round trip (microseconds)."""
        t0 = time.perf_counter()
        self.request(CallRequest(slot=slot, trace=trace, copy_out=copy_out), CalledReply)
        return (time.perf_counter() - t0) * 1e6

    # the timer's Remote (arena.timing.timer)
    def begin(self, profiled: bool) -> None:
        self.request(BeginRequest(profiled=profiled), AckReply)

    def sample(self, calls: Sequence[Any]) -> None:
        """Timed calls (``arena.timing.timer.RemoteCall``), one request: each gets its host time there."""
        steps = [TimedStep(slot=c.slot, copy_out=c.copy_out, who=c.who) for c in calls]
        reply = self.request(SampleRequest(steps=steps), SampledReply)
        if len(reply.host_us) != len(steps):
            raise GateFailure(Status.INTEGRITY_VIOLATION, f"{len(reply.host_us)} host times for {len(steps)} timed "
                                                          f"calls", fatal=True)
        for c, us in zip(calls, reply.host_us):
            c.host_us = us
        self.served_us += reply.served_us

    def end(self) -> tuple[list, list, float]:
        from arena.timing.timer import STEP_PARTS

        reply = self.request(EndRequest(), SessionReply)
        for part in STEP_PARTS:   # that process's own account (diagnostics only): known parts, sane values
            secs = reply.parts.get(part)
            if isinstance(secs, (int, float)) and 0.0 <= secs < 1e6:
                self.served_parts[part] = self.served_parts.get(part, 0.0) + float(secs)
        warnings = []
        for w in reply.warnings:
            j, _, text = w.partition(": ")
            if j.isdigit():
                warnings.append((int(j), text))
        return [(s.span_us, s.events_us, dict(s.activities)) for s in reply.samples], warnings, reply.profiler_s

    def kernels(self) -> list[str]:
        return self.request(KernelsRequest(), KernelsReply).names


@dataclass
class SharedSet:
    """One call's buffers: its inputs and outputs, mapped in the process of ``remote`` (the
    candidate's, or the baseline's) under ``id``."""

    id: int
    slot: Any
    ins: list = field(default_factory=list)
    outs: list = field(default_factory=list)
    remote: Any = None




class ReplayedCandidate:
    """The trusted process's handle on a candidate whose calls are replayed (``arena.evaluation.record``):
    its process makes a call on buffers of its own and records it; the replay process, which
    runs none of its code, replays the record on the call's buffers. Those buffers, what is
    checked and what is timed are the replay's; the candidate's process never sees them.

    A record is made on inputs whose structural values (``arena.check.inputs.structural``:
    indices, offsets, counts, masks) are those of the set it is replayed on and whose other
    values are drawn afresh, so the record cannot carry the answer for the values it is
    replayed on: launches that follow the other values fail the check. Where a config has no
    structural input, one record serves every set of it; otherwise each set has its own
    (``record_for``), so launches that follow the structure replay on that structure alone.
    While its records are replayed and timed the candidate's process is stopped (``frozen``):
    it is let go on only to make a record."""

    NOTE = ("the call was recorded on other values of the inputs that are not indices, offsets, counts or masks, "
            "and its record replayed on these: launches chosen from those values are replayed as recorded")

    def __init__(self, ev: EvaluationState, candidate: CandidateHandle, replay: CandidateHandle,
                 numbers: Iterator[int] | None = None):
        self.ev, self.candidate, self.replay = ev, candidate, replay
        self.peer = candidate.peer
        self.sets: dict[int, SharedSet] = {}
        self.records: dict[Any, Any] = {}         # (config, the set's seed or None) -> its record
        self.refs: dict[Any, int] = {}            # ... and its number (a record made again gets a new one)
        self.sent: dict[int, Any] = {}            # slot -> the key of the record the replay process holds for it
        self.own: SharedSet | None = None         # the candidate's buffers, for the current config
        self._own_key: Any = None                 # ... and that config with its shapes
        self.stopped = False
        self.compiled: set[str] = set()           # the kernels the replay process has compiled
        self.kept: dict[int, int] = {}            # memory a HIP candidate keeps, by its serial: bytes
        self.ahead: set[Any] = set()              # the keys of records made ahead of their rounds (make_records)
        # the records' numbers: one count for every side whose records the replay process holds
        self._numbers = numbers if numbers is not None else itertools.count(1)
        # records handed to the replay process: how many, how many of them sent whole, and the seconds it took
        self.given: dict[str, float] = {"given_n": 0, "sent_n": 0, "given_s": 0.0}

    @property
    def timing_remote(self) -> CandidateHandle:
        return self.replay.timing_remote

    @property
    def served_us(self) -> float:
        return self.replay.served_us

    @property
    def served_parts(self) -> dict[str, float]:
        return self.replay.served_parts

    def map_set(self, shared: SharedSet, scalars: list) -> None:
        self.sets[shared.id] = shared
        self.replay.map_set(shared, scalars, replayed=True)

    def release(self, slots: list[int]) -> None:
        for s in slots:
            self.sets.pop(s, None)
            self.sent.pop(s, None)
        self.replay.release(slots)

    def _own_set(self, shared: SharedSet) -> SharedSet:
        """The candidate's own buffers the call is recorded on: made again for another config, not only for other
        shapes. A set is mapped in the candidate's process with its config's scalars, and two configs can share
        every shape and differ in a scalar (a sequence length that changes only the last block of a loop): the
        call recorded on the other config's scalars was replayed as the candidate's answer."""
        shapes = [(None if t is None else (tuple(t.shape), t.dtype, t.stride())) for t in (*shared.ins, *shared.outs)]
        key = (self.ev.config_key, shapes)
        if self.own is None or key != self._own_key:
            if self.own is not None:
                self.ev.drop_slots([self.own])
            self.own, self._own_key = None, None
            self.own = self.ev.new_slot(self.candidate)
            self._own_key = key
        return self.own

    def key(self, seed: int) -> Any:
        """The record that serves the set of ``seed`` in the current config."""
        return self.ev.config_key, (seed if self.ev.structural_inputs() else None)

    def _record(self, slot: int, seed: int, trace: bool) -> Any:
        """The candidate's call, recorded on its own buffers holding the inputs of ``seed``'s
        structure and of other values (``Evaluation.fill_for_record``)."""
        was = self.stopped
        self.pause(False)
        try:
            with self.ev.gpu_lock.shared("record", queue=False):
                own = self._own_set(self.sets[slot])
                self.ev.fill_for_record(seed, own.ins)
                self.ev.sync()
                reply = self.candidate.request(CallRequest(slot=own.id, trace=trace, record=True), CalledReply)
        finally:
            self.pause(was)
        if reply.record is None:
            raise GateFailure(Status.INTEGRITY_VIOLATION, "the candidate process answered a recorded call without its "
                                                          "record", fatal=True)
        if reply.record.refused:
            raise GateFailure(Status.FORBIDDEN_CALL, f"the call's device work cannot be replayed: "
                                                     f"{reply.record.refused[:MESSAGE_CHARS]}")
        self._within_allowance(reply.record)
        return reply.record

    def _within_allowance(self, record: Any) -> None:
        """A record asks the replay process for no more device memory than the candidate's own
        process may hold beside its buffers: what the call allocates, and the memory it keeps
        (held by the replay process for the evaluation), counted once however many records name it."""
        kept = {**self.kept, **{k.serial: max(0, k.nbytes) for k in record.kept}}
        asked = sum(max(0, op.nbytes) for op in record.ops if op.kind == "alloc") + sum(kept.values())
        allow = self.ev.working_allowance()
        if asked > allow:       # what the reference itself needs on this config, measured now if it was not
            allow = self.ev.working_allowance(measure=True)
        if asked > allow:
            raise GateFailure(Status.RUNTIME_ERROR, f"the call's record asks for {asked / 2**30:.2f} GiB of device "
                                                    f"memory (allocated in the call and kept between calls), past the "
                                                    f"candidate's working allowance of {allow / 2**30:.2f} GiB"
                                                    + self.ev.unmeasured_note())
        self.kept = kept

    def _make(self, slot: int, seed: int, trace: bool) -> Any:
        """The record that serves the set of ``seed`` (of ``slot``'s shapes), made now unless one is."""
        key = self.key(seed)
        if key not in self.records:
            live = set(self.sent.values()) | self.ahead
            for k in [k for k in self.records if k not in live]:     # those no slot replays any longer
                del self.records[k]
                del self.refs[k]
            self.records[key] = self._record(slot, seed, trace)
            self.refs[key] = next(self._numbers)
        return key

    def make_records(self, slot: int, seeds: list[int]) -> None:
        """The records that serve the sets of ``seeds`` (in the current config, of ``slot``'s
        shapes), made now, before the exclusive section whose rounds replay them, and kept until
        then (``arena.evaluation.trusted.performance.ConfigTiming.record_ahead``; a section runs the rounds of several
        configs, each made ahead in turn). Those of this config made ahead before and not used
        (a time cap ended their batch early) are let go."""
        config = self.ev.config_key
        self.ahead = {k for k in self.ahead if k[0] != config}
        for seed in seeds:
            self.ahead.add(self._make(slot, seed, False))

    def record_for(self, slot: int, seed: int, trace: bool = False) -> None:
        """The replay process holds for ``slot`` the record that serves its set (``seed``): made
        now unless one is."""
        key = self.key(seed)
        if self.sent.get(slot) == key:
            return
        self.sent.pop(slot, None)
        self._make(slot, seed, trace)
        self.ahead.discard(key)                   # given to a slot now: live while the slot replays it
        ref = self.refs[key]
        t0 = time.perf_counter()
        if key in self.sent.values():             # the replay process holds it (while a slot replays it): named alone
            self.replay.request(ReplayRequest(slot=slot, ref=ref), TakenReply)
        else:
            record = self.records[key]
            new = {k.id for k in record.kernels} - self.compiled
            # the replay process compiles the kernels it has not yet: host work of the harness's own code, with the
            # GPU's lock let go meanwhile (inside a shared section; nothing inside an exclusive one)
            with self.ev.gpu_lock.off_gpu() if new else contextlib.nullcontext():
                taken = self.replay.request(ReplayRequest(slot=slot, ref=ref, record=record), TakenReply)
            self.compiled |= new
            # the local memory its kernels take, read off the replay process's compile of them (named where the
            # candidate's process is past its allowance: arena.evaluation.trusted.process)
            self.ev.local_bytes = max(self.ev.local_bytes, int(taken.local_bytes))
            self.given["sent_n"] += 1
        self.given["given_n"] += 1
        self.given["given_s"] += time.perf_counter() - t0
        self.sent[slot] = key

    def call(self, slot: int, *, seed: int, trace: bool = True, copy_out: bool = True) -> float:
        """One guarded call on the set of ``seed``: its record (made now where none serves it;
        ``trace``: its torch operators checked), replayed."""
        self.record_for(slot, seed, trace)
        return self.replay.call(slot, trace=False, copy_out=copy_out)

    def pause(self, stop: bool) -> None:
        """The candidate's process stopped (or let go on again)."""
        if stop != self.stopped:
            self.peer.pause(stop)
            self.stopped = stop

    @contextlib.contextmanager
    def frozen(self) -> Iterator[None]:
        """The candidate's process stopped for the block (let go on only to make a record)."""
        self.pause(True)
        try:
            yield
        finally:
            self.pause(False)

    def kernels(self) -> list[str]:
        return self.candidate.kernels()

    def close(self) -> None:
        self.pause(False)
        if self.own is not None:
            self.ev.drop_slots([self.own])
            self.own = None


class ReplayedBaseline(ReplayedCandidate):
    """The task's baseline timed as the candidate is: its call recorded in the replay process
    (the task's own code, on buffers of its own filled as a candidate's are for a record), and
    its slots there replaying the record. A call timed as it runs leaves the device idle while
    its host code works between its launches; the candidate's record, replayed, never does, so
    timing only one side's replay credits every candidate with the baseline's host time
    (``triton_reshape_and_cache_flash`` of AKA: 140.9 us called, 5.3 us replayed, on an H200).

    Its process is never stopped (it is the replay process), its records ask for the memory of
    the task's own code, and where a call of the baseline cannot be recorded (a torch operator
    that computes, memory kept between calls, a record the replay refuses) it is called as it
    runs from then on, for the rest of the evaluation (``live``: why; the timing's warnings say
    so), every record its slots held let go first."""

    def __init__(self, ev: EvaluationState, base: CandidateHandle, numbers: Iterator[int] | None = None):
        super().__init__(ev, base, base, numbers)
        self.live = ""

    def map_set(self, shared: SharedSet, scalars: list) -> None:
        self.sets[shared.id] = shared
        self.replay.map_set(shared, scalars)     # a slot of the baseline's: it calls the baseline until it has a record

    def pause(self, stop: bool) -> None:
        """The replay process is never stopped."""

    def _within_allowance(self, record: Any) -> None:
        """The task's own code: its memory is not the candidate's allowance. A call that points into memory it keeps
        between calls (a workspace, a table made at its first call) is not replayed: a replay gives kept memory
        poisoned contents of its own, and a baseline that reads what it left there would read poison, where a
        candidate doing so fails on its own outputs."""
        if record.kept:
            raise GateFailure(Status.FORBIDDEN_CALL, f"its call points into {len(record.kept)} block(s) of memory it "
                                                     f"keeps between calls, which a replay does not carry")

    def make_records(self, slot: int, seeds: list[int]) -> None:
        if not self.live:
            self._live_on_failure(lambda: super(ReplayedBaseline, self).make_records(slot, seeds))

    def record_for(self, slot: int, seed: int, trace: bool = False) -> None:
        if not self.live:
            self._live_on_failure(lambda: super(ReplayedBaseline, self).record_for(slot, seed, trace))

    def _live_on_failure(self, step: Callable[[], None]) -> None:
        try:
            step()
        except GateFailure as exc:
            if exc.fatal:
                raise
            self.live = exc.message.removeprefix("the task's baseline failed: ")[:MESSAGE_CHARS] or exc.status.value
            for slot in list(self.sets):     # every slot of its (one may hold a record the trusted side let go of)
                self.replay.request(ReplayRequest(slot=slot, ref=0), TakenReply)
            self.sent.clear()
            self.records.clear()
            self.refs.clear()
            self.ahead.clear()


# the handles whose calls another process makes
REMOTES = (CandidateHandle, ReplayedCandidate)

"""What the processes that make calls for the trusted process share: the candidate's (and the
baseline's) process, ``arena.evaluation.candidate.process``, and the replay process,
``arena.evaluation.replay.process``. Each confines itself as it starts, then serves the trusted
process's requests (``arena.evaluation.protocol``) one at a time, one reply each: set up, load,
map a call's buffers (they come as descriptors on its control socket), call, time calls.

Signals are blocked and the collector is off here except while candidate code runs
(``candidate_code``); the candidate's Python signal handlers are set aside after each request
(``_handlers``); and the device is synchronized before every reply (``settle``), so work a
request started is over before the trusted process goes on.
"""

from __future__ import annotations

import _signal
import contextlib
import gc
import os
import signal
import socket
import sys
import threading
import time
import traceback
from pathlib import Path
from typing import Any, Callable

from arena.errors import ArenaException
from arena.evaluation.channel import read_frame, write_frame
from arena.evaluation.protocol import (
    REQUESTS,
    AckReply,
    BeginRequest,
    CalledReply,
    CallRequest,
    CandidateSpec,
    CompilingNotice,
    EndRequest,
    FailReply,
    KernelsReply,
    KernelsRequest,
    LoadRequest,
    MapRequest,
    OpenRequest,
    QuitRequest,
    ReadyReply,
    ReleaseRequest,
    ReplayRequest,
    ResumeRequest,
    SampledReply,
    SampleRequest,
    SessionReply,
    SetupFailReply,
    SetupRequest,
    StepSample,
    TuningNotice,
    decode,
    encode,
)
from arena.records import Status

# Every signal but the faults a crash raises (which must still end the process as they would)
_ASYNC_SIGNALS = frozenset(signal.valid_signals()) - {
    signal.SIGKILL, signal.SIGSTOP, signal.SIGSEGV, signal.SIGBUS, signal.SIGFPE, signal.SIGILL, signal.SIGABRT,
    signal.SIGTRAP, signal.SIGSYS}
# taken before any candidate code runs: a candidate that rebinds signal.pthread_sigmask does not reach these
_SIGMASK, _BLOCK, _UNBLOCK, _SETMASK = signal.pthread_sigmask, signal.SIG_BLOCK, signal.SIG_UNBLOCK, signal.SIG_SETMASK
_GETSIGNAL, _SETSIGNAL, _RAISE = _signal.getsignal, _signal.signal, _signal.raise_signal
_ASYNC_NUMBERS = tuple(sorted(int(s) for s in _ASYNC_SIGNALS))


def _handlers() -> tuple[Callable[[], None], Callable[[], None], Callable[[], None]]:
    """(keep, set aside, put back): the harness's signal handlers kept as they are before any
    candidate code runs; the candidate's Python handlers set aside, and put back.

    Blocking signals in this thread is not enough to keep a handler out of the harness's code:
    CPython runs a Python handler in the main thread whichever thread the signal came to, and a
    thread started while candidate code ran (a runtime's, or one the candidate let signals
    through to) takes them. So after a request, before the device is synchronized for its reply,
    every Python handler that is not the harness's is set aside: the harness's own is in place
    again where it had one, else a handler that only notes the signal. As candidate code next
    begins, the handlers are put back and the signals noted are raised again, so a handler still
    runs, inside the calls. The state lives in this closure, out of the candidate's reach by name."""
    harness: dict[int, Any] = {}
    aside: dict[int, Any] = {}
    noted: list[int] = []
    note_signal = noted.append

    def note(signum: int, frame: Any) -> None:
        note_signal(signum)

    def keep() -> None:
        harness.clear()
        harness.update((s, _GETSIGNAL(s)) for s in _ASYNC_NUMBERS)

    def set_aside() -> None:
        if threading.current_thread() is not threading.main_thread():
            return
        for s in _ASYNC_NUMBERS:
            h, own = _GETSIGNAL(s), harness.get(s)
            if h is note or h is own or not callable(h):
                continue
            aside[s] = h
            _SETSIGNAL(s, own if callable(own) else note)

    def put_back() -> None:
        """As candidate code begins: its handlers back, and what came meanwhile raised again
        (delivered as signals are let through)."""
        if not aside and not noted:
            return
        for s, h in aside.items():
            _SETSIGNAL(s, h)
        aside.clear()
        came = list(dict.fromkeys(noted))
        noted.clear()
        for s in came:
            _RAISE(s)

    return keep, set_aside, put_back


_KEEP_HANDLERS, _SET_ASIDE, _PUT_BACK = _handlers()


def between_requests() -> None:
    """From here on, until ``candidate_code`` lets them: signals wait (in this thread, and the
    threads it starts) and the collector is off (a finalizer of the candidate's garbage runs
    only inside its code, or where the harness collects, inside a section of the GPU's lock); the
    signal handlers in place now are the harness's (``_handlers``)."""
    _SIGMASK(_BLOCK, _ASYNC_SIGNALS)
    gc.disable()
    _KEEP_HANDLERS()


@contextlib.contextmanager
def candidate_code() -> Any:
    """Signals delivered, the candidate's handlers in place and the collector on while candidate
    code runs; as they were (between requests: held, set aside) when it returns, or raises (a
    handler that raises as signals are let through is still inside)."""
    collecting, before = gc.isenabled(), None
    try:
        gc.enable()
        _PUT_BACK()     # what it raises again waits for the line below (between requests signals are held)
        before = _SIGMASK(_UNBLOCK, _ASYNC_SIGNALS)
        yield
    finally:
        if not collecting:
            gc.disable()
        _SIGMASK(_SETMASK, _ASYNC_SIGNALS if before is None else before)
        _SET_ASIDE()    # the harness's code that follows, in this request too, runs none of its handlers


@contextlib.contextmanager
def harness_code() -> Any:
    """Inside candidate code, a stretch of the harness's own with signals held (the threads a
    compiler starts there inherit the mask, and so never take a signal between requests)."""
    before = _SIGMASK(_BLOCK, _ASYNC_SIGNALS)
    try:
        yield
    finally:
        _SIGMASK(_SETMASK, before)


class Refused(ArenaException):
    """A request the candidate failed: its status, message and where its own code raised."""

    baseline = False      # the failure is the task baseline's (the replay process's ``BaselineFailed``)

    def __init__(self, status: Status, message: str, context_lost: bool = False, traceback: list | None = None):
        super().__init__(message)
        self.status, self.message, self.context_lost = status, message, context_lost
        self.traceback = traceback or []


class CallServer:
    """Serves the trusted process's requests, one at a time, each with one reply."""

    def __init__(self, send: Callable[[Any], None], notice_fd: int | None, mode: str,
                 resume: Callable[[], None] | None = None, ctl: socket.socket | None = None,
                 private_tmp: bool = False):
        import torch

        self.torch = torch
        self.send = send
        self.resume = resume or (lambda: None)   # waits for the trusted process's ResumeRequest
        self.notice_fd = notice_fd
        self.ctl = ctl                           # the calls' buffers arrive on it as descriptors
        self.private_tmp = private_tmp
        self.gpu = mode == "gpu"
        self.side: Any = None          # what makes the calls, once loaded
        self.spec: CandidateSpec | None = None
        self.slots: dict[int, tuple[list, list, list, Any, list]] = {}   # ins, outs, scalars, keep, meta
        self.dropped: list[Any] = []     # the tensors of calls made, let go inside the next call (``renew``)
        self.runs_candidate_code = True  # (the replay process runs none: the task's baseline and records)
        self.timer = None
        self.session = None
        self.seal = None
        self.threads = None
        self.own: set[str] = set()
        self.candidate_file = ""
        self.own_files: set[str] = set()
        self.opened = False
        self.recorder: Any = None     # records the candidate's calls (arena.evaluation.recorder)

    def open(self, kernel_cache: str = "") -> None:
        """The device's context, the profiler's first start and the timer's kernels, once (the
        trusted process asks for it as the job arrives; the setup opens it if not). What fails
        here fails again where it is needed, with its message."""
        if self.opened or not self.gpu:
            return
        self.opened = True
        try:
            from arena.timing.timer import preload as timer_preload

            timer_preload(kernel_cache=kernel_cache)
        except BaseException:  # noqa: BLE001
            pass

    # -- requests ------------------------------------------------------------------------------
    def handle(self, req: Any) -> Any:
        try:
            if isinstance(req, OpenRequest):
                self.open(req.kernel_cache)
                return AckReply()
            if isinstance(req, SetupRequest):
                try:
                    return self.setup(req)
                except BaseException as exc:  # noqa: BLE001 - no candidate code has run: the harness's own failure
                    return SetupFailReply(message=f"{type(exc).__name__}: {exc}\n{traceback.format_exc()[-2000:]}")
            if isinstance(req, LoadRequest):
                return self.load()
            if isinstance(req, MapRequest):
                return self.map(req)
            if isinstance(req, ReleaseRequest):
                self.release(req.slots)
                gc.collect()
                return AckReply()
            if isinstance(req, CallRequest):
                return self.call(req)
            if isinstance(req, BeginRequest):
                self.timer.step_parts = dict.fromkeys(self.timer.step_parts, 0.0)
                self.session = self.timer.session(req.profiled)
                self.session.open()
                return AckReply()
            if isinstance(req, SampleRequest):
                return self.sample(req)
            if isinstance(req, EndRequest):
                return self.end()
            if isinstance(req, KernelsRequest):
                return KernelsReply(names=sorted(self.own))
            if isinstance(req, ReplayRequest):
                return self.take_record(req)
        except Refused as exc:
            return FailReply(status=exc.status, message=exc.message[:4000], context_lost=exc.context_lost,
                             traceback=exc.traceback, baseline=exc.baseline)
        raise RuntimeError(f"no handler for {type(req).__name__}")

    def setup(self, req: SetupRequest) -> Any:
        """All of this process's own preparation, before any candidate code runs (its own part:
        ``prepare``)."""
        t0 = time.perf_counter()
        self.open()
        # bytecode beside the sources only, as Python keeps it by default: the harness's own cache of it
        # (arena.evaluation.processes.bytecode_prefix) lies outside the roots the audit hook loads bytecode from
        sys.pycache_prefix = None
        os.environ.update(req.env)
        if req.cpu_threads:   # the job's share of the host's CPUs (a candidate may set its own after)
            import torch

            torch.set_num_threads(req.cpu_threads)
        self.spec = req.candidate
        if self.spec.trusted:    # the task's reference as a side: fp32 in fp32, as the reference computes
            from arena.check.inputs import fp32_as_fp32

            fp32_as_fp32()
        self.candidate_file = str(Path(req.candidate.path).resolve()) if req.candidate.path else ""
        # the file names the candidate's frames carry (the path it is imported under, resolved or not)
        self.own_files = {str(Path(req.candidate.path)), self.candidate_file} - {""}
        applied, reason = False, "no sandbox asked for"
        if req.sandbox:
            from arena.evaluation.sandbox import restrict

            write = list(req.sandbox["write"])
            if self.private_tmp:  # its own tmpfs, in its own mount namespace (arena.evaluation.sandbox.confine)
                write.append(os.environ["TMPDIR"])
            why = restrict(req.sandbox["hide"], req.sandbox["read"], write)
            applied, reason = why is None, why or ""
            if not applied:  # nothing bounds what it reads: no reading past file permissions
                from arena.evaluation.sandbox.confine import landlock_missing

                landlock_missing()
        if req.timing:
            if self.gpu:
                from arena.timing.timer import DeviceTimer

                self.timer = DeviceTimer(req.llc_bytes or 64 * 2**20)
                # the profiler starts and our flush and marker kernels run once, before any candidate code
                self.timer.sample_round([("warm", lambda: None, lambda: None, lambda: None)])
            else:
                from arena.timing.timer import HostTimer

                self.timer = HostTimer()
        self.prepare(req)
        if req.probe:  # the buffers of the calls to come are shared the same way
            from arena.evaluation.buffers import open_slot

            (probe,), keep = open_slot(req.probe, self._fd_of(req.probe, 0))
            probe[1] = probe[0] + 1
            self._sync()
            del probe, keep
        self.armed()
        # what exists now is the harness's (torch, triton, this module): set aside from the collector, so that the
        # collection after each call (below) walks the candidate's objects only
        gc.collect()
        gc.freeze()
        return ReadyReply(sandbox_applied=applied, sandbox_reason=reason, seconds=round(time.perf_counter() - t0, 3))

    def prepare(self, req: SetupRequest) -> None:
        """What this kind of process makes ready in its setup (the timer is there)."""
        self.warm_torch(contextlib.nullcontext())
        self.watch_compiles()

    def armed(self) -> None:
        """The last of the setup, once the calls' buffers are known to map."""

    def warm_torch(self, around: Any) -> None:
        """torch's first use on the device, inside ``around``; its CPU thread pools, and numpy's
        BLAS threads (Triton's interpreter multiplies with numpy), started now, not inside a
        call (a forked process starts them again on first use)."""
        torch = self.torch
        with around:
            torch.ones(4, device="cuda" if self.gpu else "cpu").add_(1)
            self._sync()
        warm = torch.ones(256, 256)
        float((warm @ warm).sum() + torch.ones(1 << 21).mul_(2).sum())
        try:
            import numpy as np

            for dt in (np.float32, np.float64):
                a = np.ones((256, 256), dtype=dt)
                float((a @ a).sum())
        except ImportError:
            pass

    def load(self) -> Any:
        raise NotImplementedError

    def take_record(self, req: ReplayRequest) -> Any:
        raise RuntimeError("a record sent to a process that does not replay")

    def release(self, slots: list[int]) -> None:
        """Slots no call will use again (with the tensors of the calls made on them: their mappings go)."""
        for s in slots:
            self.slots.pop(s, None)
        self.dropped.clear()

    def invoke(self, slot: int, copy_out: bool, checked: bool = True) -> None:
        """The call on a slot's buffers (a failure raises ``Refused``)."""
        raise NotImplementedError

    def trace(self, req: CallRequest) -> Any:
        """The trace of the torch operators a guarded call makes, where they are checked."""
        return None

    def watch_compiles(self) -> None:
        """Triton's compiler, wrapped: the trusted process is told while a kernel compiles (host
        work: it lets the GPU's lock go meanwhile, and says when it holds it again), and the
        names of the kernels compiled from the candidate's own file are kept (exact compiled
        names: a kernel is the candidate's only if this process compiled it from that file)."""
        try:
            import triton.compiler as tc
            import triton.compiler.compiler as tcc
        except ImportError:
            return
        real = tc.compile
        send = self.send
        resume = self.resume
        own = self.own
        candidate_file = self.candidate_file

        def compile(src: Any, *args: Any, **kwargs: Any) -> Any:
            send(CompilingNotice(on=True))
            resume()
            try:
                with harness_code():
                    kernel = real(src, *args, **kwargs)
            finally:
                send(CompilingNotice(on=False))
                resume()  # no launch of this process's until the trusted one holds the lock again
            fn = getattr(getattr(src, "fn", None), "fn", None)
            code = getattr(fn, "__code__", None)
            if code is not None and candidate_file and Path(code.co_filename).resolve() == Path(candidate_file):
                name = getattr(getattr(kernel, "metadata", None), "name", None) or getattr(kernel, "name", None)
                if isinstance(name, str):
                    own.add(name)
            return kernel

        tc.compile = compile
        tcc.compile = compile

    def _watch_tuning(self) -> None:
        """Triton's autotuner, wrapped (``watch_tuning``): the trusted process holds the GPU's
        lock exclusive while it times its variants."""
        try:
            from triton.runtime.autotuner import Autotuner
        except ImportError:
            return
        watch_tuning(Autotuner, self.send, self.resume)

    def map(self, req: MapRequest) -> Any:
        from arena.evaluation.buffers import map_slot

        mapped = map_slot(req.handle, self._fd_of(req.handle, req.slot))
        tensors = mapped.views()
        n_in = self.spec.n_inputs
        ins, outs = tensors[:n_in], tensors[n_in:]
        meta = [(o.shape, o.dtype, o.stride(), o.data_ptr()) for o in outs]
        self.slots[req.slot] = (ins, outs, list(req.scalars), mapped, meta)
        self._sync()
        return AckReply()

    def renew(self, slot: int) -> None:
        """New tensor objects over a slot's buffers, for the next call on it: what the code of a
        call did to the tensors it was given (pointed them at memory of its own with ``set_``, as
        torch's cuDNN recurrent layers do to the weights they are handed; reshaped them in place)
        stays with them; each call reads the inputs the trusted process wrote, where it wrote them."""
        ins, outs, scalars, mapped, meta = self._slot(slot)
        tensors = mapped.views()
        self.slots[slot] = (tensors[:len(ins)], tensors[len(ins):], scalars, mapped, meta)
        # where candidate code runs, the last call's tensors are let go inside the next call's code (``call_code``),
        # not here: a finalizer the candidate tied to them runs in its own code and time, not in the harness's
        # before a timed call
        if self.runs_candidate_code:
            self.dropped.append((ins, outs))

    @contextlib.contextmanager
    def call_code(self) -> Any:
        """A side's call: candidate code (``candidate_code``), where the tensors of the calls made
        before it are let go first."""
        with candidate_code():
            self.dropped.clear()
            yield

    def _fd_of(self, handle: str, tag: int) -> int:
        """The descriptor a slot's buffers come as (sent on the control socket ahead of the
        request that maps them, with ``tag``); -1 for buffers shared otherwise."""
        if '"kind": "ipc"' in handle:
            return -1
        data, fds, _, _ = socket.recv_fds(self.ctl, 64, 1)
        for extra in fds[1:]:
            os.close(extra)
        if len(data) != 8 or int.from_bytes(data, "little", signed=True) != tag or not fds:
            raise RuntimeError(f"the buffers of slot {tag} did not come with its request")
        return fds[0]

    def _slot(self, slot: int) -> tuple[list, list, list, Any, list]:
        if slot not in self.slots:
            raise RuntimeError(f"slot {slot} is not mapped")
        return self.slots[slot]

    def call(self, req: CallRequest) -> Any:
        """One guarded call (the correctness gate, a warm-up): the call, a synchronize, then the
        checks: nothing the harness relies on changed, no thread left, outputs the same tensors,
        and (a Python candidate) no torch operator that computes or that the task forbids."""
        trace = self.trace(req)
        self.renew(req.slot)
        self.before()
        t0 = time.perf_counter()
        recording = contextlib.nullcontext()
        if req.record:
            if self.recorder is None:
                raise RuntimeError("a recorded call in a process that does not record")
            ins, outs, _, _, _ = self._slot(req.slot)
            recording = self.recorder.recording((*ins, *outs))
        try:
            with recording as rec:
                if trace is not None:
                    with trace:
                        self.invoke(req.slot, req.copy_out)
                else:
                    self.invoke(req.slot, req.copy_out)
            try:
                self._sync()
            except Exception as exc:  # noqa: BLE001 - asynchronous device errors surface here
                raise Refused(
                    Status.RUNTIME_ERROR, f"{type(exc).__name__}: {exc}"[:2000], context_lost=self._lost()
                ) from None
        finally:
            gc.collect()  # finalizers of the candidate's garbage run now, before the checks below
            self._release_trusted_cache()
        host_us = (time.perf_counter() - t0) * 1e6
        self.guard("the candidate's call")
        self._outputs_intact(req.slot)
        if trace is not None:
            forbidden = trace.forbidden_calls(self.spec.forbidden)
            if forbidden:
                raise Refused(
                    Status.FORBIDDEN_CALL, f"the candidate called {', '.join(forbidden)}, which the task forbids"
                )
            compute = trace.compute_ops()
            if compute:
                raise Refused(
                    Status.FORBIDDEN_CALL,
                    "a Triton candidate computes in Triton kernels; it called the "
                    f"torch operators {', '.join(compute[:8])}",
                )
        return CalledReply(host_us=round(host_us, 3), record=rec.record() if req.record else None)

    def sample(self, req: SampleRequest) -> Any:
        """The request's timed calls in the open session, one after the other."""
        if self.session is None:
            raise RuntimeError("a sample outside a session")
        t_in = time.perf_counter()
        host: list[float] = []
        for step in req.steps:
            self.renew(step.slot)
            t0 = time.perf_counter()
            self.before()
            checks = time.perf_counter() - t0
            spent = [0.0]

            def call(slot: int = step.slot, copy_out: bool = step.copy_out, spent: list[float] = spent) -> None:
                t1 = time.perf_counter()
                self.invoke(slot, copy_out, checked=False)
                spent[0] = time.perf_counter() - t1

            self.session.step(call, step.who)
            t_out = time.perf_counter()
            if not self.spec.trusted and self.threads is not None:
                threads = self.threads.after()
                if threads:
                    raise Refused(
                        Status.INTEGRITY_VIOLATION, f"a timed call left threads running: {', '.join(threads[:8])}"
                    )
            self.timer.step_parts["threads"] += checks + time.perf_counter() - t_out
            host.append(round(spent[0] * 1e6, 3))
        served = time.perf_counter() - t_in
        return SampledReply(host_us=host, served_us=round(served * 1e6, 3))

    def end(self) -> Any:
        session, self.session = self.session, None
        if session is None:
            return SessionReply()
        from arena.timing.timer import OURS, TraceCutError

        prof0 = self.timer.profiler_s
        try:
            samples, warnings = session.close()
        except TraceCutError as exc:  # our kernels are launched as counted: the extra ones are its own
            raise Refused(
                Status.INTEGRITY_VIOLATION,
                f"the device trace of the candidate's timed calls does not cut into samples: the "
                f"harness's timing kernels ({', '.join(OURS)}) are not there as it launched them (a "
                f"kernel of the candidate's named like one of them): {exc}",
            ) from None
        self.guard("the candidate's timed calls")
        self._release_trusted_cache()
        return SessionReply(
            samples=[StepSample(span_us=s, events_us=e, activities=dict(a)) for s, e, a in samples],
            warnings=[f"{j}: {w}" for j, w in warnings],
            profiler_s=round(self.timer.profiler_s - prof0, 3),
            parts={k: round(v, 6) for k, v in self.timer.step_parts.items()},
        )

    def _release_trusted_cache(self) -> None:
        """The task's own eager reference, run as the torch2hip starting point, leaves its intermediates (and
        cuDNN's workspaces) in the caching allocator; they are the harness's to give back before this process's
        memory is held to its allowance, after a checked call and after the timed ones (not between timed calls:
        a call that allocates again would be timed doing it). A candidate's own process memory is its business."""
        if self.spec is not None and self.spec.trusted and self.torch.cuda.is_initialized():
            self.torch.cuda.empty_cache()

    # -- checks --------------------------------------------------------------------------------
    def before(self) -> None:
        """Before a call: the threads there are now (where they are watched)."""
        if self.threads is not None:
            self.threads.before()

    def guard(self, when: str) -> None:
        """After candidate code ran: what the harness here relies on is intact (where it runs
        candidate code)."""

    def _outputs_intact(self, slot: int) -> None:
        _, outs, _, _, meta = self._slot(slot)
        for k, (o, m) in enumerate(zip(outs, meta)):
            if type(o) is not self.torch.Tensor:
                raise Refused(
                    Status.INTEGRITY_VIOLATION, f"output {k} is no longer a plain tensor (now {type(o).__name__})"
                )
            if (o.shape, o.dtype, o.stride(), o.data_ptr()) != m:
                raise Refused(
                    Status.INCORRECT_SHAPE,
                    f"output {k} was replaced or reshaped (now {tuple(o.shape)} {o.dtype}, given {tuple(m[0])} {m[1]})",
                )

    def _sync(self) -> None:
        if self.gpu:
            self.torch.cuda.synchronize()

    def answer(self, req: Any) -> Any:
        """A request served, then its reply once no handler of the candidate's can run any more
        (``_handlers``: set aside as its code returns, and again here for one a finalizer of its
        set in the harness's code) and the device is idle (``settle``)."""
        reply = self.handle(req)
        _SET_ASIDE()
        return self.settle(reply)

    def settle(self, reply: Any) -> Any:
        """The reply to a request, once the device is idle: whatever candidate code launched
        while the request was served is over before the trusted process reads it. A device
        error here is the candidate's, its context lost, once its code has been loaded; before
        that it is the harness's (the setup's failure)."""
        if not self.gpu or not self.torch.cuda.is_initialized():
            return reply
        try:
            self.torch.cuda.synchronize()
        except Exception as exc:  # noqa: BLE001 - asynchronous device errors surface here
            message = f"{type(exc).__name__}: {exc}"[:2000]
            if isinstance(reply, FailReply):
                reply.context_lost = True
                return reply
            if isinstance(reply, SetupFailReply):
                return reply
            if self.side is None:  # no candidate code has run here
                return SetupFailReply(message=f"the device failed: {message}")
            return FailReply(status=Status.RUNTIME_ERROR, message=message, context_lost=True)
        return reply

    def _lost(self) -> bool:
        """Is the device context gone (a sticky error: nothing more can run in this process)?"""
        if not self.gpu:
            return False
        try:
            self.torch.cuda.synchronize()
            return False
        except Exception:  # noqa: BLE001
            return True

def watch_tuning(tuner: Any, send: Callable[[Any], None], resume: Callable[[], None]) -> None:
    """Wrap an autotuner class (Triton's ``Autotuner``): the first time one of its launches
    times a variant (``_bench``: a key it has not seen), the trusted process is told and takes
    the GPU alone before the timing starts; when the outermost launch returns, it is told the
    tuning is over. Each notice waits for the trusted process's answer."""
    real_run, real_bench = tuner.run, tuner._bench
    state = threading.local()

    def _bench(self: Any, *args: Any, **kwargs: Any) -> Any:
        if getattr(state, "depth", 0) and not getattr(state, "alone", False):
            send(TuningNotice(on=True))
            resume()
            state.alone = True
        return real_bench(self, *args, **kwargs)

    def run(self: Any, *args: Any, **kwargs: Any) -> Any:
        state.depth = getattr(state, "depth", 0) + 1
        try:
            return real_run(self, *args, **kwargs)
        finally:
            state.depth -= 1
            if state.depth == 0 and getattr(state, "alone", False):
                state.alone = False
                send(TuningNotice(on=False))
                resume()

    tuner.run, tuner._bench = run, _bench


def serve(argv: list[str], make: Callable[..., CallServer], preload: Callable[[], None]) -> int:
    """A process's main: ``REQ_FD REP_FD NOTICE_FD MODE CTL_FD STATUS_FD PLAN``: the channel's
    pipes, cpu or gpu, the control socket (the confinement's report out, the calls' buffers in),
    the pipe its namespace's init tells its end on, and its confinement
    (``arena.evaluation.sandbox.confine.Plan``); ``make`` builds the server, ``preload`` imports
    what it needs while it waits for its job."""
    from arena.evaluation.sandbox import confine

    ctl = socket.socket(fileno=int(argv[4]))
    plan = confine.Plan.from_json(argv[6])
    confine.enter(plan, ctl, int(argv[5]))
    between_requests()
    req_fd, rep_fd = int(argv[0]), int(argv[1])
    notice_fd = int(argv[2]) if argv[2] != "-" else None
    mode = argv[3]
    try:
        preload()
    except BaseException:  # noqa: BLE001 - what fails here fails again where it is needed, with its message
        pass
    # the channel's descriptors away from the low numbers candidate code might guess
    fds = []
    for fd in (req_fd, rep_fd):
        moved = os.dup2(fd, 900 + len(fds) * 5 + int.from_bytes(os.urandom(1), "little") % 5)
        os.close(fd)
        fds.append(moved)
    req_fd, rep_fd = fds

    current = {"nonce": 0}

    def send(frame: Any) -> None:  # every frame answers the request in progress
        write_frame(rep_fd, {"nonce": current["nonce"], "frame": encode(frame)})

    def resume() -> None:  # after a notice: the lock is as the notice asked
        raw = read_frame(req_fd)
        if raw is None:
            os._exit(0)
        decode(raw["frame"], (ResumeRequest,))

    proc = make(send, notice_fd, mode, resume, ctl, private_tmp=plan.namespaces)
    while True:
        raw = read_frame(req_fd)
        if raw is None:
            break
        current["nonce"] = raw["nonce"]
        req = decode(raw["frame"], REQUESTS)
        if isinstance(req, QuitRequest):
            break
        try:
            reply = proc.answer(req)
        except BaseException as exc:  # noqa: BLE001 - what broke here is told, then the process ends
            send(
                FailReply(
                    status=Status.RUNTIME_ERROR,
                    message=f"{type(exc).__name__}: {exc}\n{traceback.format_exc()[-2000:]}",
                )
            )
            break
        send(reply)
    sys.stdout.flush()
    sys.stderr.flush()
    os._exit(0)  # skip interpreter teardown: candidate atexit hooks and threads do not get a say

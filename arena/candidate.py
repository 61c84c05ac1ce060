"""The candidate process: the only process that runs candidate code.

The trusted process (``arena.trusted``) starts it (``main``: forked from itself, or ``python -m
arena.candidate``), and it confines itself first (``arena.sandbox.confine``: its own uid and
namespaces, limits, a seccomp filter); then it takes requests (``arena.protocol``): load the
candidate, map a call's buffers (they come as descriptors on its control socket), call, time
calls. This process holds the candidate's file and nothing else of the
task: it never loads the reference, the baseline or the task's folder (its filesystem
sandbox hides them), never sees an expected output, and gets a call's buffers only when the
call is made. Whatever candidate code changes here (classes, the environment, torch's flags,
the dispatcher, its own memory) stays here.

What it reports is not trusted: the trusted process decodes its replies strictly and takes a
failure from it as the candidate's. Before a Python candidate is imported, an audit hook
(``arena.audit``) is armed that ends this process on what candidates may not do (native
libraries, ctypes, processes); a HIP candidate's library was checked symbol by symbol when it
was built (``arena.toolchain.objcheck``). Its own calls are timed here, because a device
profiler sees only the work of the process it runs in: the seal and thread watch of
``arena.guard`` keep the candidate's code away from that timer between calls.

Candidate code runs only while a request of the trusted process is served, and its work is
done before the reply. Signals are blocked and the collector is off here except while the
candidate's own code runs (its import, its calls), so a handler it installs (a timer's, say)
does not run while this process waits for a request, when the trusted process may be timing
the baseline in another process, and a finalizer of its garbage runs only inside its code or
where the harness collects; and the device is synchronized before every reply, so work that
candidate code launched while a request was served (a finalizer a release ran, a handler that
ran as a call began) is over before the trusted process goes on.
"""

from __future__ import annotations

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

from arena.channel import read_frame, write_frame
from arena.protocol import (AckReply, BeginRequest, CalledReply, CallRequest, CandidateSpec, CompilingNotice,
                            EndRequest, FailReply, KernelsReply, KernelsRequest, LoadedReply, LoadRequest, MapRequest,
                            OpenRequest, QuitRequest, ReadyReply, ReleaseRequest, ReplayRequest, REQUESTS, ResumeRequest,
                            SampledReply, SampleRequest, SessionReply, SetupFailReply, SetupRequest, StepSample,
                            TuningNotice, decode, encode)
from arena.records import Status
from arena.sides import Side, SideError, call_status
from arena.tracebacks import candidate_traceback, describe


# Every signal but the faults a crash raises (which must still end the process as they would)
_ASYNC_SIGNALS = frozenset(signal.valid_signals()) - {
    signal.SIGKILL, signal.SIGSTOP, signal.SIGSEGV, signal.SIGBUS, signal.SIGFPE, signal.SIGILL, signal.SIGABRT,
    signal.SIGTRAP, signal.SIGSYS}
# taken before any candidate code runs: a candidate that rebinds signal.pthread_sigmask does not reach these
_SIGMASK, _BLOCK, _UNBLOCK = signal.pthread_sigmask, signal.SIG_BLOCK, signal.SIG_UNBLOCK


def between_requests() -> None:
    """From here on, until ``candidate_code`` lets them: signals wait (in this thread, and the
    threads it starts) and the collector is off (a finalizer of the candidate's garbage runs
    only inside its code, or where the harness collects, inside a section of the GPU's lock)."""
    _SIGMASK(_BLOCK, _ASYNC_SIGNALS)
    gc.disable()


@contextlib.contextmanager
def candidate_code() -> Any:
    """Signals delivered and the collector on while candidate code runs; both held again when
    it returns (or raises: a handler that raises as signals are let through is still inside)."""
    try:
        gc.enable()
        _SIGMASK(_UNBLOCK, _ASYNC_SIGNALS)
        yield
    finally:
        gc.disable()
        _SIGMASK(_BLOCK, _ASYNC_SIGNALS)


@contextlib.contextmanager
def harness_code() -> Any:
    """Inside candidate code, a stretch of the harness's own with signals held (the threads a
    compiler starts there inherit the mask, and so never take a signal between requests)."""
    before = _SIGMASK(_BLOCK, _ASYNC_SIGNALS)
    try:
        yield
    finally:
        _SIGMASK(signal.SIG_SETMASK, before)


class _Refused(Exception):
    def __init__(self, status: Status, message: str, context_lost: bool = False, traceback: list | None = None):
        super().__init__(message)
        self.status, self.message, self.context_lost = status, message, context_lost
        self.traceback = traceback or []


class CandidateProcess:
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
        self.side: Side | None = None
        self.spec: CandidateSpec | None = None
        self.slots: dict[int, tuple[list, list, list, Any, list]] = {}   # ins, outs, scalars, keep, meta
        self.timer = None
        self.session = None
        self.seal = None
        self.threads = None
        self.own: set[str] = set()
        self.candidate_file = ""
        self.own_files: set[str] = set()
        self.opened = False
        self.recorder: Any = None     # records the candidate's calls (arena.replay.recorder)
        self.record_calls = False     # its calls are recorded (the setup says so)
        self.player: Any = None       # the replay process's: replays them (arena.replay.player)
        self.records: dict[int, Any] = {}    # slot -> the record its calls replay

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
                for s in req.slots:
                    self.slots.pop(s, None)
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
        except _Refused as exc:
            return FailReply(status=exc.status, message=exc.message[:4000], context_lost=exc.context_lost,
                             traceback=exc.traceback)
        raise RuntimeError(f"no handler for {type(req).__name__}")

    def setup(self, req: SetupRequest) -> Any:
        """All of this process's own preparation, before any candidate code runs."""
        from arena.guard import OpTrace, Seal, ThreadWatch

        t0 = time.perf_counter()
        self.open()
        # bytecode beside the sources only, as Python keeps it by default: the harness's own cache of it
        # (arena.processes.bytecode_prefix) lies outside the roots the audit hook loads bytecode from
        sys.pycache_prefix = None
        os.environ.update(req.env)
        self.spec = req.candidate
        self.candidate_file = str(Path(req.candidate.path).resolve()) if req.candidate.path else ""
        # the file names the candidate's frames carry (the path it is imported under, resolved or not)
        self.own_files = {str(Path(req.candidate.path)), self.candidate_file} - {""}
        applied, reason = False, "no sandbox asked for"
        if req.sandbox:
            from arena.sandbox import restrict

            write = list(req.sandbox["write"])
            if self.private_tmp:              # its own tmpfs, in its own mount namespace (arena.sandbox.confine)
                write.append(os.environ["TMPDIR"])
            why = restrict(req.sandbox["hide"], req.sandbox["read"], write)
            applied, reason = why is None, why or ""
            if not applied:                 # nothing bounds what it reads: no reading past file permissions
                from arena.sandbox.confine import landlock_missing

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
        torch = self.torch
        with OpTrace():          # imports and first-use patches of torch happen now, before the seal
            torch.ones(4, device="cuda" if self.gpu else "cpu").add_(1)
            self._sync()
        # torch's CPU thread pools, and numpy's BLAS threads (Triton's interpreter multiplies with numpy), start
        # now, not inside a candidate's call (a forked process starts them again on first use)
        warm = torch.ones(256, 256)
        float((warm @ warm).sum() + torch.ones(1 << 21).mul_(2).sum())
        try:
            import numpy as np

            for dt in (np.float32, np.float64):
                a = np.ones((256, 256), dtype=dt)
                float((a @ a).sum())
        except ImportError:
            pass
        self._watch_compiles()
        if self.gpu:
            self._watch_tuning()
        self.record_calls = bool(req.record and self.gpu)
        if self.record_calls and self.spec.language == "triton":
            # the candidate's calls recorded (arena.replay): Triton wrapped before its import (a HIP library's
            # recorder is linked into it: arena.replay.native)
            from arena.replay.recorder import Recorder

            self.recorder = Recorder()
        if self.spec.language == "replay" and self.spec.device_code:
            from arena.replay.native_player import NativePlayer

            # (a failure here is the harness's: no candidate code has run in this process)
            self.player = NativePlayer(self.spec.device_code, self.spec.device_code_sha256)
        elif self.spec.language == "replay":
            from arena.replay.player import Player

            tmp = Path(os.environ.get("TMPDIR") or self.private_dir())
            # its kernels compiled in its own temporary folder: no cache another process can write
            os.environ["TRITON_CACHE_DIR"] = str(tmp / "triton")
            self.player = Player(tmp)
        if not self.gpu:
            # the interpreter cannot benchmark (an autotuner launches its first config) and has no libdevice (the
            # common functions get implementations of its own operations)
            from arena.toolchain import interpreter_fp8, interpreter_libdevice
            from arena.toolchain.autotune import first_config_only

            first_config_only()
            interpreter_libdevice.install()
            interpreter_fp8.install()       # and its fp8 conversions done as a GPU does them
        self.threads = ThreadWatch()
        self.seal = Seal()
        self.threads.before()
        if req.probe:             # the buffers of the calls to come are shared the same way
            from arena.buffers import open_slot

            (probe,), keep = open_slot(req.probe, self._fd_of(req.probe, 0))
            probe[1] = probe[0] + 1
            self._sync()
            del probe, keep
        if not self.spec.trusted and self.spec.language == "triton":
            self._arm_audit()
        # what exists now is the harness's (torch, triton, this module): set aside from the collector, so that the
        # collection after each call (below) walks the candidate's objects only
        gc.collect()
        gc.freeze()
        return ReadyReply(sandbox_applied=applied, sandbox_reason=reason, seconds=round(time.perf_counter() - t0, 3))

    def private_dir(self) -> str:
        import tempfile

        return tempfile.mkdtemp(prefix="arena-replay-")

    def load(self) -> Any:
        """The candidate's code runs from here on (in the replay process: no code of the
        candidate's host, its records replayed from now on)."""
        t0 = time.perf_counter()
        if self.player is not None:
            self.side = self.player
            return LoadedReply(seconds=0.0)
        try:
            with candidate_code():
                self.side = Side(self.spec, role="candidate")
        except SideError as exc:
            raise _Refused(exc.status, exc.message,
                           traceback=self._traceback(exc.origin) if exc.origin is not None else None) from None
        self.guard("loading the candidate")
        if self.record_calls and self.spec.language == "hip":     # the recorder linked into its library
            from arena.replay.native import NativeRecorder

            self.recorder = NativeRecorder(self.side.lib)
        return LoadedReply(seconds=round(time.perf_counter() - t0, 3))

    def _arm_audit(self) -> None:
        """The audit hook, armed for good before a Python candidate is imported (arena.audit)."""
        if self.notice_fd is None:
            return
        from arena import audit

        audit.install(audit.CandidatePolicy(candidate_file=self.candidate_file), self.notice_fd)
        audit.arm()

    def _watch_compiles(self) -> None:
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
                resume()         # no launch of this process's until the trusted one holds the lock again
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
        from arena.buffers import open_slot

        tensors, keep = open_slot(req.handle, self._fd_of(req.handle, req.slot))
        n_in = self.spec.n_inputs
        ins, outs = tensors[:n_in], tensors[n_in:]
        meta = [(o.shape, o.dtype, o.stride(), o.data_ptr()) for o in outs]
        self.slots[req.slot] = (ins, outs, list(req.scalars), keep, meta)
        self._sync()
        return AckReply()

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

    def take_record(self, req: ReplayRequest) -> Any:
        """The replay process: the record the calls on a slot replay from now on, its kernels
        compiled and every field checked first (a refusal is the candidate's)."""
        from arena.replay import region
        from arena.replay.player import Refused

        ins, outs, _, _, _ = self._slot(req.slot)
        try:
            self.player.load(req.record.kernels)
            self.player.check(req.record, [region(t) for t in (*ins, *outs)])
        except Refused as exc:
            raise _Refused(Status.FORBIDDEN_CALL, f"the record of the candidate's call was refused: {exc}") from None
        self.records[req.slot] = req.record
        return AckReply()

    def _invoke(self, slot: int, copy_out: bool, checked: bool = True) -> None:
        ins, outs, scalars, _, _ = self._slot(slot)
        if self.player is not None:      # the replay process: the record of the slot's inputs, replayed
            try:
                self.player.replay(self.records[slot], (*ins, *outs), poison=checked)
            except Exception as exc:  # noqa: BLE001 - the candidate's kernels failed
                raise _Refused(Status.RUNTIME_ERROR, f"the replay of the candidate's call failed: {describe(exc)}"[:2000],
                               context_lost=self._lost()) from None
            return
        try:
            with candidate_code():
                self.side(ins, outs, scalars, copy_out=copy_out)
        except BaseException as exc:  # noqa: BLE001 - candidate code may raise anything
            raise _Refused(call_status(exc), describe(exc)[:2000],
                           context_lost=self._lost(), traceback=self._traceback(exc)) from None

    def _traceback(self, exc: BaseException) -> list:
        """Where in its own file the candidate's code raised ``exc`` (``arena.tracebacks``)."""
        return candidate_traceback(exc, self.own_files, Path(self.spec.path).name if self.spec else "")

    def call(self, req: CallRequest) -> Any:
        """One guarded call (the correctness gate, a warm-up): the call, a synchronize, then the
        checks: nothing the harness relies on changed, no thread left, outputs the same tensors,
        and (a Python candidate) no torch operator that computes or that the task forbids."""
        from arena.guard import OpTrace

        trace = OpTrace() if req.trace and self.spec.language == "triton" and not self.spec.trusted else None
        self.threads.before()
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
                        self._invoke(req.slot, req.copy_out)
                else:
                    self._invoke(req.slot, req.copy_out)
            try:
                self._sync()
            except Exception as exc:  # noqa: BLE001 - asynchronous device errors surface here
                raise _Refused(Status.RUNTIME_ERROR, f"{type(exc).__name__}: {exc}"[:2000],
                               context_lost=self._lost()) from None
        finally:
            gc.collect()   # finalizers of the candidate's garbage run now, before the checks below
        host_us = (time.perf_counter() - t0) * 1e6
        self.guard("the candidate's call")
        self._outputs_intact(req.slot)
        if trace is not None:
            forbidden = trace.forbidden_calls(self.spec.forbidden)
            if forbidden:
                raise _Refused(Status.FORBIDDEN_CALL, f"the candidate called {', '.join(forbidden)}, which the "
                                                      f"task forbids")
            compute = trace.compute_ops()
            if compute:
                raise _Refused(Status.FORBIDDEN_CALL, "a Triton candidate computes in Triton kernels; it called the "
                                                      f"torch operators {', '.join(compute[:8])}")
        return CalledReply(host_us=round(host_us, 3), record=rec.record() if req.record else None)

    def sample(self, req: SampleRequest) -> Any:
        """One timed call in the open session."""
        if self.session is None:
            raise RuntimeError("a sample outside a session")
        t_in = time.perf_counter()
        self.threads.before()
        checks = time.perf_counter() - t_in
        spent = [0.0]

        def call() -> None:
            t0 = time.perf_counter()
            self._invoke(req.slot, req.copy_out, checked=False)
            spent[0] = time.perf_counter() - t0

        self.session.step(call)
        t_out = time.perf_counter()
        if not self.spec.trusted:
            threads = self.threads.after()
            if threads:
                raise _Refused(Status.INTEGRITY_VIOLATION, f"a timed call left threads running: "
                                                           f"{', '.join(threads[:8])}")
        end = time.perf_counter()
        self.timer.step_parts["threads"] += checks + end - t_out
        served = end - t_in
        return SampledReply(host_us=round(spent[0] * 1e6, 3), served_us=round(served * 1e6, 3))

    def end(self) -> Any:
        session, self.session = self.session, None
        if session is None:
            return SessionReply()
        from arena.timing.timer import OURS, TraceCutError

        prof0 = self.timer.profiler_s
        try:
            samples, warnings = session.close()
        except TraceCutError as exc:       # our kernels are launched as counted: the extra ones are its own
            raise _Refused(Status.INTEGRITY_VIOLATION,
                           f"the device trace of the candidate's timed calls does not cut into samples: the "
                           f"harness's timing kernels ({', '.join(OURS)}) are not there as it launched them (a "
                           f"kernel of the candidate's named like one of them): {exc}") from None
        self.guard("the candidate's timed calls")
        return SessionReply(samples=[StepSample(span_us=s, events_us=e, activities=dict(a)) for s, e, a in samples],
                            warnings=[f"{j}: {w}" for j, w in warnings],
                            profiler_s=round(self.timer.profiler_s - prof0, 3),
                            parts={k: round(v, 6) for k, v in self.timer.step_parts.items()})

    # -- checks --------------------------------------------------------------------------------
    def guard(self, when: str) -> None:
        """After candidate code ran: what the harness here relies on is as sealed, and no
        thread it started is still running. (The task's own reference, run as the torch2hip
        starting point, is trusted code and not checked.)"""
        if self.spec is None or self.spec.trusted:
            return
        broken = self.seal.broken() if self.seal is not None else []
        if broken:
            raise _Refused(Status.INTEGRITY_VIOLATION, f"{when} changed what the harness relies on: "
                                                       f"{', '.join(broken[:8])}")
        threads = self.threads.after()
        if threads:
            raise _Refused(Status.INTEGRITY_VIOLATION, f"{when} left threads running: {', '.join(threads[:8])}")

    def _outputs_intact(self, slot: int) -> None:
        _, outs, _, _, meta = self._slot(slot)
        for k, (o, m) in enumerate(zip(outs, meta)):
            if type(o) is not self.torch.Tensor:
                raise _Refused(Status.INTEGRITY_VIOLATION,
                               f"output {k} is no longer a plain tensor (now {type(o).__name__})")
            if (o.shape, o.dtype, o.stride(), o.data_ptr()) != m:
                raise _Refused(Status.INCORRECT_SHAPE, f"output {k} was replaced or reshaped (now {tuple(o.shape)} "
                                                       f"{o.dtype}, given {tuple(m[0])} {m[1]})")

    def _sync(self) -> None:
        if self.gpu:
            self.torch.cuda.synchronize()

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
            if self.side is None:        # no candidate code has run here
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


def preload() -> None:
    """What every candidate process imports, done while it waits for its job (a process forked
    from its trusted process, ``arena.processes``, has them already)."""
    import torch  # noqa: F401

    import arena.buffers  # noqa: F401
    import arena.guard  # noqa: F401


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


def main(argv: list[str]) -> int:
    """``REQ_FD REP_FD NOTICE_FD MODE CTL_FD STATUS_FD PLAN``: the channel's pipes, cpu or gpu, the
    control socket (the confinement's report out, the calls' buffers in), the pipe its
    namespace's init tells its end on, and its confinement (``arena.sandbox.confine.Plan``)."""
    from arena.sandbox import confine

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

    def send(frame: Any) -> None:             # every frame answers the request in progress
        write_frame(rep_fd, {"nonce": current["nonce"], "frame": encode(frame)})

    def resume() -> None:                     # after a notice: the lock is as the notice asked
        raw = read_frame(req_fd)
        if raw is None:
            os._exit(0)
        decode(raw["frame"], (ResumeRequest,))

    proc = CandidateProcess(send, notice_fd, mode, resume, ctl, private_tmp=plan.namespaces)
    while True:
        raw = read_frame(req_fd)
        if raw is None:
            break
        current["nonce"] = raw["nonce"]
        req = decode(raw["frame"], REQUESTS)
        if isinstance(req, QuitRequest):
            break
        try:
            reply = proc.settle(proc.handle(req))
        except BaseException as exc:  # noqa: BLE001 - what broke here is told, then the process ends
            send(FailReply(status=Status.RUNTIME_ERROR, message=f"{type(exc).__name__}: {exc}\n"
                                                                f"{traceback.format_exc()[-2000:]}"))
            break
        send(reply)
    sys.stdout.flush()
    sys.stderr.flush()
    os._exit(0)   # skip interpreter teardown: candidate atexit hooks and threads do not get a say


if __name__ == "__main__":      # run as the package's module, not as __main__: one copy of its classes
    from arena import candidate as _self

    sys.exit(_self.main(sys.argv[1:]))

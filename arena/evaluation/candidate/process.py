"""The candidate process: the only process that runs candidate code.

The trusted process starts it (forked from itself, or ``python -m
arena.evaluation.candidate.process``); it confines itself first (``arena.evaluation.sandbox``)
and then serves requests (``arena.evaluation.server``). It holds the candidate's file and
nothing else of the task, and gets a call's buffers only when the call is made. Before a
Python candidate is imported, an audit hook (``arena.evaluation.candidate.audit``) is armed; a
HIP candidate's library was checked symbol by symbol when it was built
(``arena.toolchain.objcheck``). On CUDA its calls are recorded (``recorder``, ``native_recorder``)
and replayed where none of its code runs (``arena.evaluation.replay``); elsewhere (the CPU,
ROCm) they are timed here, behind the seal and thread watch of
``arena.evaluation.candidate.guard``. What it
reports is not trusted: the trusted process decodes its replies strictly and takes a failure
from it as the candidate's.
"""

from __future__ import annotations

import sys
import time
from pathlib import Path
from typing import Any

from arena.evaluation.protocol import CallRequest, LoadedReply, SetupRequest
from arena.evaluation.server import CallServer, Refused, candidate_code, serve
from arena.evaluation.sides import Side, SideError, call_status
from arena.evaluation.tracebacks import candidate_traceback, describe
from arena.records import Status


class CandidateProcess(CallServer):
    """Serves the trusted process's requests with the candidate's code (or the baseline's)."""

    def __init__(self, *args: Any, **kwargs: Any):
        super().__init__(*args, **kwargs)
        self.record_calls = False     # its calls are recorded (the setup says so)
        self.stack_limit: Any = None  # gives back the local memory its kernels made this process reserve

    def prepare(self, req: SetupRequest) -> None:
        from arena.evaluation.candidate.guard import OpTrace, Seal, ThreadWatch

        self.warm_torch(OpTrace())   # imports and first-use patches of torch happen now, before the seal
        self.watch_compiles()
        if self.gpu:
            self._watch_tuning()
        self.record_calls = bool(req.record and self.gpu)
        self.stack_limit = stack_limit() if self.record_calls else None
        if self.record_calls and self.spec.language == "triton":
            # the candidate's calls recorded: Triton wrapped before its import (a HIP library's recorder is linked
            # into it: arena.evaluation.native_recorder)
            from arena.evaluation.recorder import Recorder

            self.recorder = Recorder()
        if not self.gpu:
            # the interpreter cannot benchmark (an autotuner launches its first config) and has no libdevice (the
            # common functions get implementations of its own operations); fp8 conversions as a GPU does them; a
            # launcher's torch.cuda.device of a CPU tensor's device selects nothing
            from arena.toolchain import cpu_interpreter

            cpu_interpreter.install()
        self.threads = ThreadWatch()
        self.seal = Seal()
        self.threads.before()

    def armed(self) -> None:
        if not self.spec.trusted and self.spec.language == "triton":
            self._arm_audit()

    def trace(self, req: CallRequest) -> Any:
        from arena.evaluation.candidate.guard import OpTrace

        return OpTrace() if req.trace and self.spec.language == "triton" and not self.spec.trusted else None

    def load(self) -> Any:
        """The candidate's code runs from here on."""
        t0 = time.perf_counter()
        try:
            with candidate_code():
                self.side = Side(self.spec, role="candidate")
        except SideError as exc:
            raise Refused(exc.status, exc.message,
                          traceback=self._traceback(exc.origin) if exc.origin is not None else None) from None
        self.guard("loading the candidate")
        if self.record_calls and self.spec.language == "hip":     # the recorder linked into its library
            from arena.evaluation.native_recorder import NativeRecorder

            self.recorder = NativeRecorder(self.side.lib)
        return LoadedReply(seconds=round(time.perf_counter() - t0, 3))

    def _arm_audit(self) -> None:
        """The audit hook, armed for good before a Python candidate is imported (arena.evaluation.candidate.audit)."""
        if self.notice_fd is None:
            return
        from arena.evaluation.candidate import audit

        audit.install(audit.CandidatePolicy(candidate_file=self.candidate_file), self.notice_fd)
        audit.arm()

    def invoke(self, slot: int, copy_out: bool, checked: bool = True) -> None:
        ins, outs, scalars, _, _ = self._slot(slot)
        try:
            with self.call_code():
                self.side(ins, outs, scalars, copy_out=copy_out)
        except BaseException as exc:  # noqa: BLE001 - candidate code may raise anything
            raise Refused(call_status(exc), describe(exc)[:2000],
                          context_lost=self._lost(), traceback=self._traceback(exc)) from None

    def _traceback(self, exc: BaseException) -> list:
        """Where in its own file the candidate's code raised ``exc`` (``arena.evaluation.tracebacks``)."""
        return candidate_traceback(exc, self.own_files, Path(self.spec.path).name if self.spec else "")

    def guard(self, when: str) -> None:
        """After candidate code ran: the local memory its kernels made this process reserve given back
        (``stack_limit``); what the harness here relies on is as sealed, and no thread it started is still running.
        (The task's own reference, run as the torch2hip starting point, is trusted code and not checked.)"""
        if self.stack_limit is not None:
            self.stack_limit()
        if self.spec is None or self.spec.trusted:
            return
        broken = self.seal.broken() if self.seal is not None else []
        if broken:
            raise Refused(Status.INTEGRITY_VIOLATION, f"{when} changed what the harness relies on: "
                                                      f"{', '.join(broken[:8])}")
        threads = self.threads.after()
        if threads:
            raise Refused(Status.INTEGRITY_VIOLATION, f"{when} left threads running: {', '.join(threads[:8])}")


CU_LIMIT_STACK_SIZE = 0


def stack_limit() -> Any:
    """A function that sets the current CUDA context's stack size limit back to what it is now (before any candidate
    code: 1,024 bytes), or None where the driver cannot be reached. A kernel of more local memory a thread (register
    spills) than the limit raises it at its launch, and the process then holds that much for every thread the GPU
    can hold, for as long as it lives: an autotuner's variants, launched once each to time them, leave the most of
    them held (AKA's ``triton_fla_chunk_fwd_o``: 2.3 GiB, its chosen variant 72 bytes a thread). Set back, the
    memory is given back, and a later launch takes what it needs again (on an H200: 3.90 GiB held after a kernel of
    16,528 bytes a thread, 0.002 GiB once set back to 1,024, 0.60 GiB after a kernel of 3,400 then:
    ``scripts/gpu_local_memory.py``). Called where the candidate's calls are recorded, after its code ran and
    before the trusted process holds this process's memory to its allowance; never between timed calls (none are
    made here then). The function is found now, before the audit hook is armed: calling it later raises no event.
    The candidate can stop it; what it holds then is its own, as before."""
    import ctypes

    try:
        lib = ctypes.CDLL("libcuda.so.1")
    except OSError:
        return None
    get, put = lib.cuCtxGetLimit, lib.cuCtxSetLimit
    get.argtypes = [ctypes.POINTER(ctypes.c_size_t), ctypes.c_int]
    put.argtypes = [ctypes.c_int, ctypes.c_size_t]
    value = ctypes.c_size_t(0)
    if get(ctypes.byref(value), CU_LIMIT_STACK_SIZE) != 0:
        return None
    limit = int(value.value)

    def set_back() -> None:
        put(CU_LIMIT_STACK_SIZE, limit)      # where the driver refuses, the memory stays held, as before

    return set_back


def preload() -> None:
    """What every candidate process imports, done while it waits for its job (a process forked
    from its trusted process, ``arena.evaluation.processes``, has them already)."""
    import torch  # noqa: F401

    import arena.evaluation.buffers  # noqa: F401
    import arena.evaluation.candidate.guard  # noqa: F401


def main(argv: list[str]) -> int:
    """The candidate process's main (``arena.evaluation.server.serve``)."""
    return serve(argv, CandidateProcess, preload)


if __name__ == "__main__":      # run as the package's module, not as __main__: one copy of its classes
    from arena.evaluation.candidate import process as _self

    sys.exit(_self.main(sys.argv[1:]))

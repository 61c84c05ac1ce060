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

    def prepare(self, req: SetupRequest) -> None:
        from arena.evaluation.candidate.guard import OpTrace, Seal, ThreadWatch

        self.warm_torch(OpTrace())   # imports and first-use patches of torch happen now, before the seal
        self.watch_compiles()
        if self.gpu:
            self._watch_tuning()
        self.record_calls = bool(req.record and self.gpu)
        if self.record_calls and self.spec.language == "triton":
            # the candidate's calls recorded: Triton wrapped before its import (a HIP library's recorder is linked
            # into it: arena.evaluation.candidate.native_recorder)
            from arena.evaluation.candidate.recorder import Recorder

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
            from arena.evaluation.candidate.native_recorder import NativeRecorder

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
        """After candidate code ran: what the harness here relies on is as sealed, and no
        thread it started is still running. (The task's own reference, run as the torch2hip
        starting point, is trusted code and not checked.)"""
        if self.spec is None or self.spec.trusted:
            return
        broken = self.seal.broken() if self.seal is not None else []
        if broken:
            raise Refused(Status.INTEGRITY_VIOLATION, f"{when} changed what the harness relies on: "
                                                      f"{', '.join(broken[:8])}")
        threads = self.threads.after()
        if threads:
            raise Refused(Status.INTEGRITY_VIOLATION, f"{when} left threads running: {', '.join(threads[:8])}")


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

"""What the stages of an evaluation use of it: ``EvaluationState``.

The correctness gate (``arena.evaluation.trusted.correctness``), the timed rounds
(``arena.evaluation.trusted.performance``) and the
handles on the processes that make calls (``arena.evaluation.trusted.calls``) work on one evaluation of the
trusted process, ``arena.evaluation.trusted.process.Evaluation``, which imports them. They see it through this
protocol, so the dependency runs one way: ``trusted`` imports the stages, the stages import
this module, and nothing below imports ``trusted``.
"""

from __future__ import annotations

import random
from typing import Any, ContextManager, Protocol

from arena.evaluation.gpulock import GpuLock
from arena.evaluation.memory import MemoryAccount
from arena.evaluation.protocol import JobFrame
from arena.taskdef.loader import Task


class EvaluationState(Protocol):
    """One evaluation in the trusted process, as its stages see it."""

    job: JobFrame  # what the parent asked for (candidate, splits, seeds, timing parameters)
    task: Task
    torch: Any  # the torch module (imported when the evaluation starts)
    gpu: bool  # a GPU backend (cuda, rocm), not the cpu one
    rng: random.SystemRandom  # seeds no one can predict from the job
    gpu_lock: GpuLock
    memory: MemoryAccount
    remote: Any  # arena.evaluation.trusted.calls.CandidateHandle: the candidate's process
    base_remote: Any  # ... the replay process, as the baseline's, or None (no timing)
    replay_remote: Any  # ... the replay process, as the replays', or None (the candidate's calls are not recorded)
    compiled: Any  # torch.compile's side, or None
    timer: Any  # arena.timing.timer.DeviceTimer or HostTimer, or None before the load
    current: Any  # the config whose timing work runs now
    candidate_trusted: bool  # the candidate is the task's own code (the reference, a baseline)
    own_hip_kernels: list[str]  # the exact symbols of the library built from a HIP candidate
    fatal: Any  # the GateFailure that ended the candidate's process, or None
    deadline: float | None  # the current stage's, on time.monotonic
    stage_name: str
    stage_limit: float
    _scalars: list  # the current config's scalar arguments
    config_key: str  # ... and what tells it from another config (its shapes and scalars)
    local_bytes: int  # the most local memory a thread of the candidate's replayed kernels takes (named)

    @property
    def lost(self) -> bool:
        """The candidate's process can make no more calls."""

    def stage(self, stage: str, split: str = "", config: str = "") -> None: ...

    def waiting(self) -> ContextManager[None]: ...

    def sync(self) -> None: ...

    def set_config(self, config: Any) -> None: ...

    def check_device_memory(self, where: str) -> None: ...

    def memory_cause(self) -> Any: ...

    def expected(self, ins: dict[str, Any]) -> list: ...

    def compared(self, ins: list, outs: list) -> list: ...

    def mutated_input(self, ins: list, seed: int) -> tuple[int, dict[str, Any]]: ...

    def fill_inputs(self, seed: int, *targets: list, inout_only: bool = False) -> None: ...

    def structural_inputs(self) -> bool: ...

    def fill_for_record(self, seed: int, ins: list) -> None: ...

    def working_allowance(self, measure: bool = False) -> int: ...

    def new_slot(self, remote: Any = None) -> Any: ...

    def allocate_inputs(self) -> list: ...

    def allocate_outputs(self) -> list: ...

    def drop_slots(self, sets: list) -> None: ...

    def release_memory(self) -> None: ...

    def lock_stats(self, since: dict[str, float] | None = None) -> dict[str, float]: ...

    def send_lock(self, split: str, stats: dict[str, float]) -> None: ...

    def send_performance(self, split: str, config: str, result: Any) -> None: ...

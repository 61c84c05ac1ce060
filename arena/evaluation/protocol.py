"""The typed frames that cross between the processes of an evaluation, and their codec.

An evaluation has three processes: the parent (``arena.evaluation.parent``), the trusted process
(``arena.evaluation.trusted.process``: inputs, reference, baseline, comparison, timing, decision) and the
candidate process (``arena.evaluation.candidate.process``: the candidate's code and nothing else of the task).
Only the dataclasses below cross between them, as JSON objects with a ``type`` field;
``decode`` rebuilds a frame and checks every field against its annotation (unknown types,
missing or extra fields, wrong kinds of values and statuses a sender may not give are a
``ProtocolError``). The candidate process is not trusted: the trusted process decodes what
it says with ``decode(..., allowed=CANDIDATE_REPLIES)``, and a candidate can only report a
failure of its own (``CANDIDATE_STATUSES``), never a pass, a harness error or a task error.
"""

from __future__ import annotations

import dataclasses
import json
import types
import typing
from dataclasses import dataclass, field
from typing import Any, ClassVar

from arena.errors import ArenaException
from arena.records import Status, TraceEntry

# What the candidate process may say went wrong: failures of the candidate's own. A pass is
# decided by the trusted process alone; the harness's and the task's faults are the trusted
# process's to report.
CANDIDATE_STATUSES = frozenset({
    Status.COMPILE_ERROR, Status.LOAD_ERROR, Status.SIGNATURE_MISMATCH, Status.RUNTIME_ERROR,
    Status.INCORRECT_SHAPE, Status.FORBIDDEN_CALL, Status.INTEGRITY_VIOLATION,
})


class ProtocolError(ArenaException):
    """A frame that the protocol does not allow (wrong type, field, value or status)."""


_REGISTRY: dict[str, type] = {}


def frame(cls: type) -> type:
    """Register a frame dataclass under its ``type`` name."""
    name: str = cls.type  # type: ignore[attr-defined]  # every frame class declares its ClassVar type
    if name in _REGISTRY:
        raise ValueError(f"frame type {name!r} registered twice")
    _REGISTRY[name] = cls
    return cls


def encode(obj: Any) -> dict[str, Any]:
    """A frame as a JSON-ready dict (statuses as their values)."""
    out = {"type": obj.type}
    for f in dataclasses.fields(obj):
        out[f.name] = _plain(getattr(obj, f.name))
    return out


def dumps(obj: Any) -> bytes:
    return json.dumps(encode(obj)).encode()


def _plain(v: Any) -> Any:
    if isinstance(v, Status):
        return v.value
    if dataclasses.is_dataclass(v) and not isinstance(v, type):
        return {f.name: _plain(getattr(v, f.name)) for f in dataclasses.fields(v)}
    if isinstance(v, dict):
        return {str(k): _plain(x) for k, x in v.items()}
    if isinstance(v, (list, tuple)):
        return [_plain(x) for x in v]
    return v


def decode(obj: Any, allowed: tuple[type, ...] | frozenset[type] | None = None) -> Any:
    """The frame a dict stands for, every field checked; ``allowed`` limits the frame types."""
    if not isinstance(obj, dict) or not isinstance(obj.get("type"), str):
        raise ProtocolError("a frame is a JSON object with a string 'type'")
    cls = _REGISTRY.get(obj["type"])
    if cls is None:
        raise ProtocolError(f"unknown frame type {obj['type']!r}")
    if allowed is not None and cls not in allowed:
        raise ProtocolError(f"a {obj['type']!r} frame is not expected here")
    frame_obj = _build(cls, {k: v for k, v in obj.items() if k != "type"}, obj["type"])
    statuses = getattr(cls, "statuses", None)
    status = getattr(frame_obj, "status", None)
    if statuses is not None and status is not None and status not in statuses:
        raise ProtocolError(f"a {obj['type']!r} frame may not carry the status {status.value}")
    return frame_obj


def loads(raw: bytes | str, allowed: tuple[type, ...] | frozenset[type] | None = None) -> Any:
    try:
        obj = json.loads(raw)
    except ValueError as exc:
        raise ProtocolError(f"a frame is not JSON: {exc}") from None
    return decode(obj, allowed)


_HINTS: dict[type, dict[str, Any]] = {}


def _hints(cls: type) -> dict[str, Any]:
    if cls not in _HINTS:
        _HINTS[cls] = typing.get_type_hints(cls)
    return _HINTS[cls]


def _build(cls: type, data: dict[str, Any], where: str) -> Any:
    if not isinstance(data, dict):
        raise ProtocolError(f"{where}: expected an object")
    hints = _hints(cls)
    fields = {f.name: f for f in dataclasses.fields(cls)}
    extra = set(data) - set(fields)
    if extra:
        raise ProtocolError(f"{where}: unknown fields {sorted(extra)}")
    kwargs = {}
    for name, f in fields.items():
        if name not in data:
            if f.default is dataclasses.MISSING and f.default_factory is dataclasses.MISSING:
                raise ProtocolError(f"{where}: missing field {name!r}")
            continue
        kwargs[name] = _value(data[name], hints[name], f"{where}.{name}")
    return cls(**kwargs)


def _value(v: Any, hint: Any, where: str) -> Any:
    origin = typing.get_origin(hint)
    if origin in (typing.Union, types.UnionType):
        opts = typing.get_args(hint)
        if v is None and type(None) in opts:
            return None
        errors = []
        for opt in opts:
            if opt is type(None):
                continue
            try:
                return _value(v, opt, where)
            except ProtocolError as exc:
                errors.append(str(exc))
        raise ProtocolError("; ".join(errors) or f"{where}: null not allowed")
    if hint is Any:
        return v
    if hint is Status:
        try:
            return Status(v)
        except ValueError:
            raise ProtocolError(f"{where}: unknown status {v!r}") from None
    if hint is bool:
        if not isinstance(v, bool):
            raise ProtocolError(f"{where}: expected a boolean")
        return v
    if hint is int:
        if isinstance(v, bool) or not isinstance(v, int):
            raise ProtocolError(f"{where}: expected an integer")
        return v
    if hint is float:
        if isinstance(v, bool) or not isinstance(v, (int, float)):
            raise ProtocolError(f"{where}: expected a number")
        return float(v)
    if hint is str:
        if not isinstance(v, str):
            raise ProtocolError(f"{where}: expected a string")
        return v
    if origin in (list, tuple):
        if not isinstance(v, list):
            raise ProtocolError(f"{where}: expected a list")
        args = typing.get_args(hint)
        if origin is tuple and args and args[-1] is not Ellipsis:
            if len(args) != len(v):
                raise ProtocolError(f"{where}: expected {len(args)} items")
            return tuple(_value(x, a, f"{where}[{i}]") for i, (x, a) in enumerate(zip(v, args)))
        item = args[0] if args else Any
        out = [_value(x, item, f"{where}[{i}]") for i, x in enumerate(v)]
        return tuple(out) if origin is tuple else out
    if origin is dict:
        if not isinstance(v, dict):
            raise ProtocolError(f"{where}: expected an object")
        _, val = typing.get_args(hint) or (str, Any)
        return {str(k): _value(x, val, f"{where}.{k}") for k, x in v.items()}
    if isinstance(hint, type) and dataclasses.is_dataclass(hint):
        return _build(hint, v, where)
    raise ProtocolError(f"{where}: no rule for {hint!r}")  # pragma: no cover - a frame definition error


# ------------------------------------------------------------------------------------------
# The trusted process to the parent (signed: arena.evaluation.channel)


@dataclass
class CorrectnessResult:
    """One config's correctness gate: its status and the worst error over its seeds."""

    status: Status
    message: str = ""
    seeds: list[int] = field(default_factory=list)
    seed: int | None = None                       # the seed that failed, where one did
    max_abs_err: float | None = None
    max_rel_err: float | None = None
    norm_err: float | None = None
    mismatch_fraction: float | None = None
    where: dict[str, Any] | None = None
    lock: dict[str, float] = field(default_factory=dict)     # the GPU lock's counters over the config
    traceback: list[TraceEntry] = field(default_factory=list)    # the candidate's frames (arena.evaluation.tracebacks)


@dataclass
class PerformanceResult:
    """One config's timing: per side, its samples in microseconds and by which timer."""

    status: Status
    message: str = ""
    spans_us: dict[str, list[float]] = field(default_factory=dict)
    events_us: dict[str, list[float]] = field(default_factory=dict)
    timers: dict[str, str] = field(default_factory=dict)
    other_timer_median_us: dict[str, float] = field(default_factory=dict)
    host_us: dict[str, list[float]] = field(default_factory=dict)
    rounds: int = 0
    n_sets: int = 0
    wall_s: float = 0.0
    profiler_s: float = 0.0
    refresh_s: float = 0.0
    ahead_s: float = 0.0
    warm_s: float = 0.0
    verify_s: float = 0.0
    prepare_s: float = 0.0
    warnings: list[str] = field(default_factory=list)
    timed_checks: int = 0
    timed_bad: int = 0
    kernels: list[str] = field(default_factory=list)          # the device activities of the candidate's calls
    own_kernels: list[str] = field(default_factory=list)      # which of them this evaluation built from its file
    incidental_share: float | None = None    # copies and fills: their share of the candidate's device time
    baseline_incidental_share: float | None = None    # ... and of the baseline's
    traceback: list[TraceEntry] = field(default_factory=list)    # the candidate's frames (arena.evaluation.tracebacks)
    # the sides whose calls were timed as replays of their records (arena.evaluation.record), not as they ran
    replayed: list[str] = field(default_factory=list)


# the stage a trusted process reports while it waits for other evaluations (room in the GPU's memory,
# arena.evaluation.memory, or the GPU's lock, arena.evaluation.gpulock): the harness's wait, not the candidate's
# time; the parent bounds it by ``waiting_s`` and a wait that runs out is the harness's failure
WAITING_STAGE = "waiting"

@frame
@dataclass
class StageFrame:
    type: ClassVar[str] = "stage"
    stage: str
    split: str = ""
    config: str = ""
    left_s: float = 0.0    # > 0: the stage resumes after a wait with this much of its time limit left


@frame
@dataclass
class SandboxFrame:
    """How the candidate's process was confined: ``applied``/``reason`` for its filesystem
    sandbox (Landlock); ``defences`` for each of its defences (``arena.evaluation.sandbox.confine.DEFENCES``),
    "" where applied, else why not."""
    type: ClassVar[str] = "sandbox"
    applied: bool
    reason: str = ""
    defences: dict[str, str] = field(default_factory=dict)


@frame
@dataclass
class LoadedFrame:
    type: ClassVar[str] = "loaded"
    parts: dict[str, float] = field(default_factory=dict)
    lock_wait_s: float = 0.0


@frame
@dataclass
class CorrectnessFrame:
    type: ClassVar[str] = "correctness"
    split: str
    config: str
    result: CorrectnessResult


@frame
@dataclass
class PerformanceFrame:
    type: ClassVar[str] = "performance"
    split: str
    config: str
    result: PerformanceResult


@frame
@dataclass
class LockFrame:
    type: ClassVar[str] = "lock"
    split: str
    stats: dict[str, float] = field(default_factory=dict)


@frame
@dataclass
class SplitDoneFrame:
    """A split is done. ``memory``: the most device memory the candidate's process held at a
    check during it, and its allowance then (``held_gib``, ``allowance_gib``, ``share``: the
    largest ratio of the two), where they were read."""
    type: ClassVar[str] = "split_done"
    split: str
    memory: dict[str, float] = field(default_factory=dict)


@frame
@dataclass
class FailureFrame:
    """The evaluation stopped: every config not reported yet gets this status."""

    type: ClassVar[str] = "failure"
    status: Status
    message: str
    traceback: list[TraceEntry] = field(default_factory=list)    # the candidate's frames (arena.evaluation.tracebacks)


@frame
@dataclass
class DoneFrame:
    type: ClassVar[str] = "done"


REPORTS = (StageFrame, SandboxFrame, LoadedFrame, CorrectnessFrame, PerformanceFrame, LockFrame, SplitDoneFrame,
           FailureFrame, DoneFrame)


# ------------------------------------------------------------------------------------------
# The trusted process to the candidate process (requests)


@dataclass
class CandidateSpec:
    """What the candidate process needs to call the candidate: no task, no reference."""

    language: str                 # hip | triton | reference | replay (the replay process: no file of its own)
    path: str
    entry: str
    n_inputs: int
    n_outputs: int
    scalar_types: list[str]       # int64 | int32 | float32 | bool, in call order
    library: str = ""             # the built shared library (hip)
    device_code: str = ""
    device_code_sha256: str = ""
    forbidden: list[str] = field(default_factory=list)  # torch functions the task forbids
    trusted: bool = False  # the task's own reference, run as the candidate (torch2hip's starting point)


@frame
@dataclass
class OpenRequest:
    """Open the device: its context, the profiler's first start, the timer's kernels. Sent as
    the job arrives (a process started ahead holds no device memory while it waits), before
    the setup, so this process opens its device while the trusted one opens its own."""

    type: ClassVar[str] = "open"
    kernel_cache: str = ""  # where the timer's own kernels are compiled (arena.timing.timer.preload)


@frame
@dataclass
class JobFrame:
    """The job the parent gives its trusted process: the one frame on the job pipe. The nested
    objects are the parent's own (the builds, the device, the configs of each split, the
    sandbox); the trusted process reads them as it needs them."""

    type: ClassVar[str] = "job"
    task_dir: str
    candidate: dict[str, Any]                  # the candidate's build (language, path, library, ...)
    device: dict[str, Any]                     # arena.devices.Device.to_dict
    splits: list[dict[str, Any]]               # {"split": name, "configs": [config dicts]}
    timeouts: dict[str, float]
    key: str = ""                              # the result frames' HMAC key (hex), dropped once read
    baseline: dict[str, Any] | None = None     # the baseline's build, where the job is timed
    seeds: list[int] | None = None             # the correctness gate's input seeds (fresh ones if None)
    n_seeds: int = 3
    timing: bool = False
    timing_params: dict[str, Any] = field(default_factory=dict)
    sandbox: dict[str, Any] | None = None      # what the candidate's process may read and write
    candidate_dir: str = ""
    replay_dir: str = ""
    kernel_cache: str = ""
    candidate_env: dict[str, str] = field(default_factory=dict)
    env: dict[str, str] = field(default_factory=dict)
    gpu_lock: list[int] | None = None          # the GPU's lock descriptors (arena.evaluation.gpulock)
    gpu_memory: int | None = None              # ... and its memory account's
    replay: bool = True                        # record and replay where the candidate allows it
    cpu_threads: int = 0                       # torch's CPU threads in its processes (processes.cpu_share; 0: torch's)


@frame
@dataclass
class SetupRequest:
    """Everything before the candidate's code runs: the environment, the filesystem sandbox,
    the timer, the seal, the audit hook. Its failure is the harness's."""

    type: ClassVar[str] = "setup"
    candidate: CandidateSpec
    env: dict[str, str] = field(default_factory=dict)
    sandbox: dict[str, list[str]] | None = None  # hide / read / write (arena.evaluation.sandbox)
    llc_bytes: int = 0
    timing: bool = False
    probe: str = ""  # a small slot (arena.evaluation.buffers) to map and answer through: the sharing works
    record: bool = False  # the candidate's calls are recorded when asked (arena.evaluation.record)
    # to the replay process: the candidate whose records it replays besides the task's baseline (``candidate``),
    # where the candidate's calls are recorded
    replay: CandidateSpec | None = None
    cpu_threads: int = 0  # torch's CPU threads in this process from now on (the job's; 0: torch's own default)


@frame
@dataclass
class LoadRequest:
    """Load the candidate (import its module, or load its library): its code runs from now on."""

    type: ClassVar[str] = "load"


@frame
@dataclass
class MapRequest:
    """Map one call's buffers (arena.evaluation.buffers) under a slot number, with the call's scalars."""

    type: ClassVar[str] = "map"
    slot: int
    handle: str
    scalars: list[bool | int | float] = field(default_factory=list)  # a bool scalar stays a bool
    replayed: bool = False  # to the replay process: the candidate's calls on it are replays of its records


@frame
@dataclass
class ReleaseRequest:
    type: ClassVar[str] = "release"
    slots: list[int]


@frame
@dataclass
class CallRequest:
    type: ClassVar[str] = "call"
    slot: int
    trace: bool = True  # record the torch operators a Python candidate calls
    copy_out: bool = True
    record: bool = False  # record the call's device work (arena.evaluation.record): it comes back in the reply


# ------------------------------------------------------------------------------------------
# A call's device work as the candidate process recorded it (arena.evaluation.record): data from an
# untrusted process, replayed where none of its code runs, after checks of every field


@dataclass
class Place:
    """Where a pointer of a recorded call points: one of the call's buffers (``buffer``: its
    inputs, then its outputs, by index), memory the call allocated (``scratch``: by the order
    of its allocations) or memory a HIP candidate allocated and keeps (``kept``: by the serial
    number of its allocation, ``CallRecord.kept``), at a byte offset. ``unknown``: memory of
    none of them (``offset``: the address), which a replay refuses."""

    space: str
    index: int
    offset: int


@dataclass
class View:
    """A strided tensor over a place (a fill's or a copy's operand): sizes and strides in
    elements of ``dtype`` (torch's name: float32, bfloat16, ...)."""

    place: Place
    dtype: str
    sizes: list[int]
    strides: list[int]


@dataclass
class Pointer:
    """A pointer inside a native launch's parameter: the 8 bytes at ``at`` hold the address of
    ``place``."""

    at: int
    place: Place


@dataclass
class KernelArg:
    """One argument of a launch: a pointer (``place``), or a scalar by value (``place`` None;
    a null pointer is the value 0). A native (HIP) launch's parameter is its bytes instead
    (``raw``, in hex), with the pointers found in them (``pointers``)."""

    place: Place | None = None
    value: bool | int | float | None = None
    raw: str = ""
    pointers: list[Pointer] = field(default_factory=list)


@dataclass
class RecordedOp:
    """One piece of a call's device work, in the order the call asked for it: ``launch`` (a
    kernel of the record's table on ``grid``; a native kernel by its name, with its ``block``
    and dynamic ``shared`` memory), ``alloc`` (``nbytes`` of scratch), ``fill`` (``dst`` set
    to ``value``), ``copy`` (``src`` into ``dst``), ``event`` (``event`` recorded) or ``wait``
    (until ``event`` is reached), each on the call's ``stream`` (0: the one it was called on;
    others numbered as the call first used them)."""

    kind: str
    kernel: str = ""
    grid: list[int] = field(default_factory=list)
    block: list[int] = field(default_factory=list)
    shared: int = 0
    args: list[KernelArg] = field(default_factory=list)
    nbytes: int = 0
    dst: View | None = None
    src: View | None = None
    value: bool | int | float | None = None
    stream: int = 0
    event: int = 0


@dataclass
class KernelCode:
    """A kernel a record launches, as code the replay compiles itself: Triton's IR of it
    (``ttir``) and the compile options it was built with; ``id`` the sha256 of both
    (``arena.evaluation.record.kernel_id``)."""

    id: str
    name: str
    ttir: str
    options: dict[str, Any] = field(default_factory=dict)


@dataclass
class KeptMemory:
    """Memory a HIP candidate allocated and keeps between calls, that a record points into:
    its allocation's serial number and its size."""

    serial: int
    nbytes: int


@dataclass
class CallRecord:
    """One call's device work: its operations, the kernels first launched in it, the kept
    memory it points into, and what the recorder saw that it could not record (``refused``:
    the call cannot be replayed)."""

    ops: list[RecordedOp] = field(default_factory=list)
    kernels: list[KernelCode] = field(default_factory=list)
    refused: str = ""
    kept: list[KeptMemory] = field(default_factory=list)


@frame
@dataclass
class ReplayRequest:
    """To the replay process: the record its calls on ``slot`` replay from now on (checked, its
    new kernels compiled, before the reply). A record is sent once, with the first slot that
    replays it, under a number of its own (``ref``); the replay process keeps it while a slot
    replays it, and a later slot names it by ``ref`` alone. Answered with ``TakenReply``."""

    type: ClassVar[str] = "replay"
    slot: int
    ref: int
    record: CallRecord | None = None


@frame
@dataclass
class BeginRequest:
    """Start a timing session: the samples that follow are cut from one profiler trace."""

    type: ClassVar[str] = "begin"
    profiled: bool = True


@dataclass
class TimedStep:
    """One timed call of a ``SampleRequest``: the slot whose buffers it is made on, whether the
    call copies its result out (the eager reference), and the side it is (a side whose calls
    wait for the device inside is timed without the gate from then on: ``arena.timing.timer``)."""

    slot: int
    copy_out: bool = True
    who: str = ""


@frame
@dataclass
class SampleRequest:
    """Timed calls in the open session, made one after the other with no request between them
    (consecutive steps of a round that this process makes: the baseline's and a replayed
    candidate's alternate here with no round trip)."""

    type: ClassVar[str] = "sample"
    steps: list[TimedStep] = field(default_factory=list)


@frame
@dataclass
class EndRequest:
    type: ClassVar[str] = "end"


@frame
@dataclass
class KernelsRequest:
    type: ClassVar[str] = "kernels"


@frame
@dataclass
class QuitRequest:
    type: ClassVar[str] = "quit"


@frame
@dataclass
class ResumeRequest:
    """The answer to a notice (``CompilingNotice``, ``TuningNotice``), sent while the request
    is still in progress, once the trusted process has done what the notice asks of the GPU's
    lock: the process that sent it may go on (its GPU work after a compile never runs outside
    the lock, beside another evaluation's timed round; an autotuner times its variants only
    once the GPU is held alone). Read only by the code that waits for it."""

    type: ClassVar[str] = "resume"


REQUESTS = (
    OpenRequest,
    SetupRequest,
    LoadRequest,
    MapRequest,
    ReleaseRequest,
    CallRequest,
    BeginRequest,
    SampleRequest,
    EndRequest,
    KernelsRequest,
    QuitRequest,
    ReplayRequest,
)
# Requests whose handling in the candidate process runs no candidate code: its signals are held,
# its threads are gone, the collector is off meanwhile (no finalizer of the candidate's runs) and
# nothing the candidate was handed is dropped. The rest may run candidate code (its import, its
# calls, a finalizer that dropping a call's buffers runs), and are made inside a section of the
# GPU's lock (arena.evaluation.trusted.calls).
HARNESS_ONLY = (BeginRequest, EndRequest, KernelsRequest, ReplayRequest)


# ------------------------------------------------------------------------------------------
# The candidate process to the trusted process (replies and notices: not trusted)


@frame
@dataclass
class ReadyReply:
    type: ClassVar[str] = "ready"
    sandbox_applied: bool = False
    sandbox_reason: str = ""
    seconds: float = 0.0


@frame
@dataclass
class SetupFailReply:
    """The setup failed (no candidate code had run: the harness's failure). Taken only as the
    reply to the setup request."""

    type: ClassVar[str] = "setup_fail"
    message: str


@frame
@dataclass
class LoadedReply:
    type: ClassVar[str] = "loaded_reply"
    seconds: float = 0.0


@frame
@dataclass
class AckReply:
    type: ClassVar[str] = "ack"


@frame
@dataclass
class TakenReply:
    """The replay process's answer to a ``ReplayRequest``: the record taken, and the most local memory a thread of
    the kernels it launches takes (``CU_FUNC_ATTRIBUTE_LOCAL_SIZE_BYTES`` of its compile of them: register spills, a
    stack; 0 for a record named by its number alone). A process that launched them holds that much for every thread
    the GPU can hold until its stack size limit is set back: named where the candidate's process is past its
    device-memory allowance."""

    type: ClassVar[str] = "taken"
    local_bytes: int = 0


@frame
@dataclass
class FailReply:
    """The request failed through the candidate's fault (its import raised, its call raised,
    it changed what the harness relies on, it called what it may not)."""

    type: ClassVar[str] = "fail"
    statuses: ClassVar[frozenset[Status]] = CANDIDATE_STATUSES
    status: Status
    message: str
    context_lost: bool = False  # a sticky device error: nothing more can run in that process
    # the task's baseline failed (believed only from the replay process, which runs none of the candidate's code)
    baseline: bool = False
    # where in the candidate's file the failure was raised (arena.evaluation.tracebacks): data only, bounded on arrival
    traceback: list[TraceEntry] = field(default_factory=list)


@frame
@dataclass
class CalledReply:
    type: ClassVar[str] = "called"
    host_us: float = 0.0
    record: CallRecord | None = None  # the call's device work, where the request asked for it


@frame
@dataclass
class SampledReply:
    """The timed calls made: the host time of each (the call alone, microseconds), as that
    process saw it, and the host time of all its steps there (flush, call, synchronize,
    markers, checks)."""

    type: ClassVar[str] = "sampled"
    host_us: list[float] = field(default_factory=list)
    served_us: float = 0.0


@dataclass
class StepSample:
    """One timed call: its device span, events + synchronize around it, and the device time
    of each activity (kernel, copy, fill) inside its window, by name."""

    span_us: float
    events_us: float
    activities: dict[str, float] = field(default_factory=dict)


@frame
@dataclass
class SessionReply:
    type: ClassVar[str] = "session"
    samples: list[StepSample] = field(default_factory=list)
    warnings: list[str] = field(default_factory=list)  # "<step index>: <warning>"
    profiler_s: float = 0.0
    parts: dict[str, float] = field(default_factory=dict)  # the steps' host seconds there, by part (timer.STEP_PARTS)


@frame
@dataclass
class KernelsReply:
    """The kernels Triton's JIT compiled from the candidate's own file (exact names)."""

    type: ClassVar[str] = "kernels_reply"
    names: list[str] = field(default_factory=list)


@frame
@dataclass
class CompilingNotice:
    """Sent while a request is in progress: the candidate's kernels are being compiled (host
    work), so the trusted process may let the GPU's lock go meanwhile. After each, the
    process waits for a ``ResumeRequest``."""

    type: ClassVar[str] = "compiling"
    on: bool


@frame
@dataclass
class TuningNotice:
    """Sent while a request is in progress: Triton's autotuner is about to time its variants
    (``on``: a key it has not seen), or has chosen one. The trusted process holds the GPU's
    lock exclusive meanwhile, so that no other evaluation's kernels run beside the timings
    (beside them, a starting kernel's autotuner chose a variant twice as slow in one
    evaluation of two). After each, the process waits for a ``ResumeRequest``."""

    type: ClassVar[str] = "tuning"
    on: bool


CANDIDATE_REPLIES = (
    ReadyReply,
    SetupFailReply,
    LoadedReply,
    AckReply,
    TakenReply,
    FailReply,
    CalledReply,
    SampledReply,
    SessionReply,
    KernelsReply,
    CompilingNotice,
    TuningNotice,
)

"""The record type everything downstream reads: Status, Verdict, and the JSONL file.

A Verdict is one (task, candidate, split, device) evaluation. records.jsonl is
append-only: each line is written whole and fsynced; a torn last line (a killed run) is
ignored on reading and overwritten on the next append.
"""

from __future__ import annotations

import dataclasses
import enum
import gzip
import hashlib
import json
import math
import os
import statistics
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Iterable, Iterator

RECORD_VERSION = 1


def utc_now() -> str:
    """Now, in UTC, to the second, as every record and report writes it (ISO 8601)."""
    from datetime import datetime, timezone

    return datetime.now(timezone.utc).isoformat(timespec="seconds")


class Status(str, enum.Enum):
    PASSED = "PASSED"
    COMPILE_ERROR = "COMPILE_ERROR"
    COMPILE_TIMEOUT = "COMPILE_TIMEOUT"
    LOAD_ERROR = "LOAD_ERROR"
    SIGNATURE_MISMATCH = "SIGNATURE_MISMATCH"
    RUNTIME_ERROR = "RUNTIME_ERROR"
    CRASHED = "CRASHED"
    TIMEOUT = "TIMEOUT"
    INCORRECT_SHAPE = "INCORRECT_SHAPE"
    INCORRECT_NUMERICAL = "INCORRECT_NUMERICAL"
    NAN_INF = "NAN_INF"
    OUTPUT_UNWRITTEN = "OUTPUT_UNWRITTEN"
    INPUT_MUTATED = "INPUT_MUTATED"
    FORBIDDEN_CALL = "FORBIDDEN_CALL"  # library / torch compute calls where the task wants a kernel written
    INTEGRITY_VIOLATION = "INTEGRITY_VIOLATION"  # tampering with the harness: patched timer, forged frames, threads
    NOT_RUNNABLE = "NOT_RUNNABLE"      # correct status for a HIP candidate on the cpu backend: never a pass
    AGENT_FAILED = "AGENT_FAILED"      # the agent's program crashed or never started: its failure, whatever its file
    AGENT_UNAVAILABLE = "AGENT_UNAVAILABLE"  # its model service refused it or was not reached: not scored, redone
    TASK_ERROR = "TASK_ERROR"  # the task itself is broken (reference raised, bad file): not the candidate's fault
    HARNESS_ERROR = "HARNESS_ERROR"  # infrastructure failure, kept apart from candidate failures

    @property
    def passed(self) -> bool:
        return self is Status.PASSED

    @property
    def infra(self) -> bool:
        """A failure of the task or the harness (TASK_ERROR, HARNESS_ERROR): not the candidate's."""
        return _KIND[self] == "infra"

    @property
    def scored(self) -> bool:
        """Whether a verdict of this status counts in an agent's rates, speedups, drops and reward.
        Infrastructure failures do not (they are the harness's or the task's, and ``arena run
        --resume`` redoes them), nor does NOT_RUNNABLE (the machine cannot run the candidate:
        HIP on the cpu backend), nor AGENT_UNAVAILABLE (the agent's model service refused it or
        could not be reached: nothing was asked of the agent; ``--resume`` asks it again).
        Everything else does, failures included: AGENT_FAILED (its program crashed or never
        started) is the agent's failure on every split, whatever the file it left would score.

        No route from the candidate to "not scored": a failure that happens after the
        candidate's code has run is the candidate's unless the harness can show a cause of its
        own. So:
        - the trusted process dying after the candidate was loaded, with no signal the parent
          sent (its own deadline), is CRASHED (``arena.evaluation.decision.assemble``); before any
          candidate code, HARNESS_ERROR;
        - running out of device memory, in the trusted process or the baseline's, is the
          candidate's RUNTIME_ERROR where its process holds more than its allowance then
          (``arena.evaluation.trusted.process.Evaluation.memory_cause``); where another evaluation's candidate does,
          the check waits for it and is tried again; only where no process holds more than it
          may is the shortage the harness's (HARNESS_ERROR, tried again);
        - the candidate's process cannot reach the others (its own uid and PID namespace, a
          seccomp filter: ``arena.evaluation.sandbox``), so a failure of the task's own code (its
          reference raising, its baseline failing but for memory) stays TASK_ERROR, and an
          exception of the harness's own code, HARNESS_ERROR."""
        return _KIND[self] not in ("infra", "not_runnable", "service")

    @property
    def kind(self) -> str:
        """compile | init | incorrect | runtime | timeout | integrity | agent | service |
        not_runnable | infra | passed."""
        return _KIND[self]


_KIND = {
    Status.PASSED: "passed",
    Status.COMPILE_ERROR: "compile",
    Status.COMPILE_TIMEOUT: "compile",
    Status.LOAD_ERROR: "init",
    Status.SIGNATURE_MISMATCH: "init",
    Status.RUNTIME_ERROR: "runtime",
    Status.CRASHED: "runtime",
    Status.TIMEOUT: "timeout",
    Status.INCORRECT_SHAPE: "incorrect",
    Status.INCORRECT_NUMERICAL: "incorrect",
    Status.NAN_INF: "incorrect",
    Status.OUTPUT_UNWRITTEN: "incorrect",
    Status.INPUT_MUTATED: "incorrect",
    Status.FORBIDDEN_CALL: "integrity",
    Status.INTEGRITY_VIOLATION: "integrity",
    Status.NOT_RUNNABLE: "not_runnable",
    Status.AGENT_FAILED: "agent",
    Status.AGENT_UNAVAILABLE: "service",
    Status.TASK_ERROR: "infra",
    Status.HARNESS_ERROR: "infra",
}

# How a config's message begins where it was never run: its candidate's process was lost at another config first
# (the status is that loss's; ``arena.evaluation.trusted.process``)
NOT_RUN = "not run:"

# Flags that make a PASSED verdict count as a failure: its time cannot be trusted.
SUSPICIOUS_FLAGS = ("above_roofline", "no_device_work")

# KernelBench environment rewards (ANCHORS.md); PASSED gets speedup - 1; integrity failures get
# the lowest non-timeout reward (-6, "unknown").
_REWARD = {"incorrect": -2.0, "runtime": -3.0, "init": -4.0, "compile": -5.0, "timeout": -7.0}


def reward(status: Status, speedup: float | None) -> float | None:
    """None where the status is not scored (``Status.scored``): no reward, not a low one."""
    if not status.scored:
        return None
    if status is Status.PASSED:
        return (speedup - 1.0) if speedup is not None else 0.0
    return _REWARD.get(status.kind, -6.0)


@dataclass
class SideTiming:
    """Timing of one side (baseline or candidate) on one config, microseconds."""

    median_us: float
    iqr_us: float
    n: int
    events_median_us: float | None = None  # cross-check: events around call + device synchronize
    min_us: float | None = None
    # "span": device span under the profiler (every side by default); "events": a trusted, host-bound
    # side timed without the profiler, events around its call on its stream (arena.timing.timer)
    timer: str = "span"
    other_timer_median_us: float | None = None  # its median by the other timer, where it had both
    # its calls timed as replays of their records (record and replay: launches back to back), not as they ran
    replayed: bool = False


@dataclass
class TraceEntry:
    """One line of a candidate's traceback (``arena.evaluation.tracebacks``): a frame in the candidate's own
    file (``file`` as the candidate knows it, ``line``, ``function``, the source line ``code``),
    or a run of frames elsewhere collapsed into one (``elsewhere`` says where: triton, torch,
    python ...). ``frames``: how many frames it stands for (a run, or a frame repeated by
    recursion)."""

    file: str = ""
    line: int = 0
    function: str = ""
    code: str = ""
    elsewhere: str = ""
    frames: int = 1

    @classmethod
    def from_dict(cls, d: dict[str, Any]) -> "TraceEntry":
        known = {f.name for f in dataclasses.fields(cls)}
        return cls(**{k: v for k, v in d.items() if k in known})


@dataclass
class ConfigResult:
    name: str
    params: dict[str, Any]
    status: Status
    message: str = ""
    seeds: list[int] = field(default_factory=list)
    max_abs_err: float | None = None
    max_rel_err: float | None = None
    norm_err: float | None = None
    where: dict[str, Any] | None = None  # output, index, candidate and reference values of the worst element
    mismatch_fraction: float | None = None
    baseline: SideTiming | None = None
    candidate: SideTiming | None = None
    speedup: float | None = None
    speedup_ci: tuple[float, float] | None = None
    roofline_fraction: float | None = None
    flags: list[str] = field(default_factory=list)
    compiled: SideTiming | None = None  # torch2hip: torch.compile of the reference, where measured
    speedup_compiled: float | None = None  # median(compiled) / median(candidate)
    # copies and fills: their share of the candidate's device time in its timed calls, and of the baseline's
    incidental_share: float | None = None
    baseline_incidental_share: float | None = None
    # speed of light: the share of the gap between the baseline's time and the roofline time the candidate
    # closes (arena.devices.ceilings.sol_score): 0 at the baseline, 1 at the roofline
    sol: float | None = None
    sol_absent: str = ""  # why a timed config has no speed-of-light score (arena.devices.ceilings)
    # where a failure of the candidate's code was raised: its frames in the candidate's own file
    # (arena.evaluation.tracebacks); empty for other failures and in records written before it existed
    traceback: list[TraceEntry] = field(default_factory=list)

    @classmethod
    def from_dict(cls, d: dict[str, Any]) -> "ConfigResult":
        d = dict(d)
        d["status"] = Status(d["status"])
        d["traceback"] = [TraceEntry.from_dict(e) for e in d.get("traceback") or []]
        for side in ("baseline", "candidate", "compiled"):
            if d.get(side) is not None:
                d[side] = SideTiming(**d[side])
        if d.get("speedup_ci") is not None:
            d["speedup_ci"] = tuple(d["speedup_ci"])
        return cls(**d)


@dataclass
class Verdict:
    task_id: str
    category: str
    split: str
    status: Status
    candidate: dict[str, Any]  # path, sha256, origin (agent name), language
    device: dict[str, Any]  # kind, name, arch, vendor, ...
    stage: str = ""  # compile | load | correctness | performance | done
    message: str = ""
    configs: list[ConfigResult] = field(default_factory=list)
    build: dict[str, Any] = field(default_factory=dict)
    speedup: float | None = None  # geometric mean over configs
    speedup_ci: tuple[float, float] | None = None
    roofline_fraction: float | None = None
    speedup_compiled: float | None = None  # torch2hip: geomean over configs vs torch.compile, where measured
    sol: float | None = None  # speed-of-light score: the mean over the configs that have one ...
    sol_configs: int = 0  # ... and how many those are (of ``configs``)
    ceilings: dict[str, Any] = field(default_factory=dict)  # the roofline's ceilings: source (measured,
    #                                                          datasheet, none) and the figures used
    flags: list[str] = field(default_factory=list)
    run_id: str = ""
    agent: str = ""
    repeat: int = 0
    seeds: list[int] = field(default_factory=list)  # input seeds of the correctness gate
    split_seed: int | None = None  # the secret the random split was drawn with
    versions: dict[str, Any] = field(default_factory=dict)
    started_at: str = ""
    finished_at: str = ""
    wall_s: float = 0.0
    agent_run: dict[str, Any] = field(default_factory=dict)  # an agent's run: wall_s, exit_reason, tokens, cost
    phases: dict[str, float] = field(default_factory=dict)  # the evaluation's seconds: build, start, load,
    # correctness, timing, lock_wait (arena.evaluation.parent)
    # which evaluation of this (run, agent, task, repeat, split) this is: 1, then 2, 3 ... where
    # ``arena run --resume`` redid an infrastructure failure; the latest one stands (``current``)
    attempt: int = 1
    record_version: int = RECORD_VERSION

    @property
    def suspicious(self) -> bool:
        """Passed, but with a time the harness cannot trust: counts as a failure."""
        return any(f in self.flags for f in SUSPICIOUS_FLAGS)

    @property
    def counts_as_pass(self) -> bool:
        return self.status is Status.PASSED and not self.suspicious

    @property
    def median_speedup(self) -> float | None:
        """The median of the per-config speedups (when every config was timed): the reward's speedup."""
        s = [c.speedup for c in self.configs if c.speedup is not None]
        if not s or len(s) != len(self.configs):
            return self.speedup
        return float(statistics.median(s))

    @property
    def key(self) -> tuple[str, str, str, int, str]:
        """What one verdict is of: (run, agent, task, repeat, split)."""
        return (self.run_id, self.agent, self.task_id, self.repeat, self.split)

    @property
    def reward(self) -> float | None:
        """KernelBench environment reward (METHODOLOGY.md): a pass earns median speedup - 1; a
        status that is not scored (an infrastructure failure, NOT_RUNNABLE) has none."""
        if self.status is Status.PASSED and self.suspicious:
            return -6.0
        return reward(self.status, self.median_speedup)

    def to_dict(self) -> dict[str, Any]:
        d = dataclasses.asdict(self)
        d["status"] = self.status.value
        for c in d["configs"]:
            c["status"] = Status(c["status"]).value
        d["reward"] = self.reward
        return d

    @classmethod
    def from_dict(cls, d: dict[str, Any]) -> "Verdict":
        d = dict(d)
        d.pop("reward", None)
        d["status"] = Status(d["status"])
        d["configs"] = [ConfigResult.from_dict(c) for c in d.get("configs", [])]
        if d.get("speedup_ci") is not None:
            d["speedup_ci"] = tuple(d["speedup_ci"])
        known = {f.name for f in dataclasses.fields(cls)}
        return cls(**{k: v for k, v in d.items() if k in known})


def _json_default(o: Any) -> Any:
    if isinstance(o, enum.Enum):
        return o.value
    if isinstance(o, Path):
        return str(o)
    raise TypeError(f"not JSON serialisable: {type(o).__name__}")


def _finite(o: Any) -> Any:
    """Non-finite floats (an infinite CI bound, say) become null: JSON has no NaN."""
    if isinstance(o, float):
        return o if math.isfinite(o) else None
    if isinstance(o, dict):
        return {k: _finite(v) for k, v in o.items()}
    if isinstance(o, (list, tuple)):
        return [_finite(v) for v in o]
    return o


def dumps(verdict: Verdict) -> str:
    return json.dumps(_finite(verdict.to_dict()), default=_json_default, allow_nan=False, sort_keys=False)


def append(path: Path, verdict: Verdict) -> None:
    """Append one Verdict as one line, fsynced. A torn tail from a killed writer is cut first."""
    path.parent.mkdir(parents=True, exist_ok=True)
    line = (dumps(verdict) + "\n").encode()
    with open(path, "ab+") as f:
        f.seek(0, os.SEEK_END)
        size = f.tell()
        if size:
            f.seek(size - 1)
            if f.read(1) != b"\n":
                # the last line was torn by a crash: drop it (it was never a complete record)
                f.seek(0)
                data = f.read()
                keep = data.rfind(b"\n") + 1
                f.truncate(keep)
                f.seek(keep)
        f.write(line)
        f.flush()
        os.fsync(f.fileno())


# how many times ``arena run --resume`` redoes a split whose verdict was an infrastructure failure,
# unless the run's run.json states another limit
INFRA_RETRIES = 2


def redoable(status: Status, attempt: int, limit: int) -> bool:
    """An infrastructure failure, or an agent its service refused, that ``resume`` may still
    redo: attempts 1 .. limit + 1."""
    return (status.infra or status.kind == "service") and attempt <= limit


def stated_retry_limit(run_dir: Path) -> int:
    """The limit a run's run.json states (``INFRA_RETRIES`` where it states none)."""
    from arena.errors import ArenaError

    meta_path = Path(run_dir) / "run.json"
    try:
        stated = json.loads(meta_path.read_text()).get("infra_retries", INFRA_RETRIES)
    except OSError:
        return INFRA_RETRIES
    except (ValueError, AttributeError):
        raise ArenaError("run.json is not a JSON object", path=meta_path) from None
    return stated if isinstance(stated, int) and not isinstance(stated, bool) and stated >= 0 else INFRA_RETRIES


def file_sha256(path: Path) -> str:
    """The content hash a record names a file by (a candidate, a task's kernel)."""
    return hashlib.sha256(Path(path).read_bytes()).hexdigest()


def current(verdicts: Iterable[Verdict]) -> list[Verdict]:
    """The verdicts that stand: for each (run, agent, task, repeat, split) the last one written.
    An earlier one was an infrastructure failure that ``arena run --resume`` redid; it stays in
    records.jsonl (nothing recorded is lost) but no longer counts. Order: as first written."""
    latest: dict[tuple[str, str, str, int, str], Verdict] = {}
    for v in verdicts:
        latest[v.key] = v  # a dict keeps the key's first place
    return list(latest.values())


def read(path: Path) -> Iterator[Verdict]:
    """The complete records of a file, in order (a torn last line is skipped), superseded ones included
    (``current`` keeps those that stand). A file named ``*.gz`` is read through gzip (the records kept
    under reports/validation); one cut short ends where it was cut."""
    if not path.is_file():
        return
    with gzip.open(path, "rb") if path.suffix == ".gz" else open(path, "rb") as f:
        try:
            for raw in f:
                if not raw.endswith(b"\n"):
                    break
                raw = raw.strip()
                if raw:
                    yield Verdict.from_dict(json.loads(raw))
        except EOFError:  # a compressed file cut short
            return

"""The processes that make calls are confined by the kernel (arena.evaluation.sandbox.confine, .seccomp):
seen from inside a candidate's process, and through what it can and cannot do to the others.
Also the rule that no failure after the candidate's code ran is "not scored" without a cause
the harness can show (Status.scored), and the device-memory allowance's bookkeeping."""

from __future__ import annotations

import contextlib
import json
import os
import re
import subprocess
import sys
import time
import types
from pathlib import Path

import pytest

from arena.devices import detect
from arena.evaluation.parent import Candidate, evaluate
from arena.evaluation.sandbox import confine, seccomp
from arena.records import Status
from arena.taskdef.loader import load_task

ROOT = Path(__file__).resolve().parents[1]
AXPY = ROOT / "tests" / "fixtures" / "tasks" / "triton2triton" / "axpy"
MISSING = {k: v for k, v in confine.features().items() if k != "landlock abi" and v}


def _require(*defences: str) -> None:
    missing = {d: MISSING[d] for d in defences if d in MISSING}
    if missing:
        if os.environ.get("ARENA_REQUIRE_TOOLCHAINS"):
            pytest.fail(f"this machine lacks defences the tests need: {missing}")
        pytest.skip(f"this machine lacks {missing}")


@pytest.fixture(scope="module")
def cpu():
    return detect("cpu")


def _run(tmp_path: Path, body: str, cpu) -> object:
    """A Triton candidate of the axpy fixture whose call runs ``body`` (then the work)."""
    path = tmp_path / "probe.py"
    path.write_text("import json, os, resource, socket\nimport triton\nimport triton.language as tl\n\n\n"
                    "@triton.jit\ndef _k(x_ptr, y_ptr, out_ptr, n, alpha, BLOCK: tl.constexpr):\n"
                    "    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)\n    mask = offs < n\n"
                    "    tl.store(out_ptr + offs, alpha * tl.load(x_ptr + offs, mask=mask) + "
                    "tl.load(y_ptr + offs, mask=mask), mask=mask)\n\n\n"
                    "def axpy(x, y, out, n, alpha):\n" + "".join(f"    {line}\n" for line in body.splitlines()) +
                    "    _k[(triton.cdiv(n, 1024),)](x, y, out, n, alpha, BLOCK=1024)\n")
    task = load_task(AXPY)
    (v,) = evaluate(task, Candidate(task, path, origin="test"), ["smoke"], cpu)
    return v


FACTS = """\
facts = {"uid": os.getuid(), "pid": os.getpid(), "ppid": os.getppid(),
         "proc": sorted(int(p) for p in os.listdir("/proc") if p.isdigit()),
         "init": "arena.evaluation.trusted.process" in open("/proc/1/cmdline", "rb").read().decode(errors="replace"),
         "oom": open("/proc/self/oom_score_adj").read().strip(),
         "cap": [l.split()[1] for l in open("/proc/self/status") if l.startswith("CapEff")][0],
         "nproc": resource.getrlimit(resource.RLIMIT_NPROC)[0],
         "data": resource.getrlimit(resource.RLIMIT_DATA)[0],
         "net": [l.split(":")[0].strip() for l in open("/proc/net/dev").readlines()[2:]],
         "shm": os.statvfs("/dev/shm").f_blocks * os.statvfs("/dev/shm").f_frsize,
         "tmp": os.environ.get("TMPDIR"), "home": os.environ.get("HOME")}
try:
    open("/proc/1/environ", "rb").read()
    facts["init_environ"] = "read"
except OSError:
    facts["init_environ"] = "refused"
raise RuntimeError("FACTS" + json.dumps(facts))
"""


def test_seen_from_inside_the_candidate_process(tmp_path, cpu):
    _require("uid", "pid namespace", "network namespace", "seccomp")
    v = _run(tmp_path, FACTS, cpu)
    assert v.status is Status.RUNTIME_ERROR, v.message
    facts = json.loads(re.search(r"FACTS(\{.*\})", v.message).group(1))
    assert facts["uid"] != 0 and facts["uid"] >= confine.UID_BASE
    assert facts["pid"] == 2 and facts["ppid"] == 1          # its namespace's init is its parent
    assert facts["proc"] == [1, 2]                           # nothing of the harness: init and itself
    assert facts["init"] is False and facts["init_environ"] == "refused"
    assert facts["oom"] == "1000"                            # the OOM killer takes it first
    assert int(facts["cap"], 16) == 1 << confine.CAP_DAC_READ_SEARCH
    assert facts["nproc"] == confine.nproc_limit() and facts["data"] > 0
    assert facts["net"] == ["lo"]
    assert facts["shm"] == confine.TMP_BYTES and facts["tmp"] == facts["home"] == confine.PRIVATE_TMP
    assert "seccomp" in v.build["sandbox"] and "uid" in v.build["sandbox"] and not v.build.get("sandbox_missing")


@pytest.mark.parametrize("call, named", [
    ("os.setpriority(os.PRIO_PROCESS, 1, 19)", "setpriority(0, 1, 19)"),
    ("resource.prlimit(1, resource.RLIMIT_CPU, (1, 1))", "prlimit64(1, 0)"),
    ("os.sched_setaffinity(1, {0})", "sched_setaffinity(1)"),
    ("os.setpriority(os.PRIO_USER, 0, 19)", "setpriority(2, 0, 19)"),
    ("socket.socket(socket.AF_INET, socket.SOCK_DGRAM)", "socket(2,"),
])
def test_a_call_on_another_process_or_the_network_ends_the_candidate_named(tmp_path, cpu, call, named):
    _require("pid namespace", "seccomp")
    v = _run(tmp_path, call, cpu)
    assert v.status is Status.FORBIDDEN_CALL, v.message
    if not call.startswith("socket"):            # the audit hook refuses every socket event before the kernel
        assert "system call its sandbox refuses" in v.message and named in v.message, v.message


def _forked(code) -> tuple[dict, int, object, int, int]:
    """A child confined as a candidate process is, running ``code()``: its report, its pid, the
    listener, its namespace's init and the pipe the init tells its end on."""
    a, b = confine.socketpair()
    status_r, status_w = os.pipe()
    plan = confine.plan("candidate")
    with confine.pid_namespace(plan.namespaces):
        pid = os.fork()
    if pid == 0:                                    # pragma: no cover - the child
        a.close()
        os.close(status_r)
        try:
            confine.enter(plan, b, status_w)
            code()
        finally:
            os._exit(0)
    b.close()
    os.close(status_w)
    report, cpid, fd = confine.receive(a, 60)
    a.close()
    return report, cpid, seccomp.Listener(fd) if fd is not None else None, pid, status_r


def _wait(pid: int, listener, timeout: float = 60.0) -> object:
    end = time.monotonic() + timeout
    while time.monotonic() < end:
        got = listener.take() if listener is not None else None
        if got is not None:
            os.kill(pid, 9)
            os.waitpid(pid, 0)
            return got
        if os.waitpid(pid, os.WNOHANG)[0]:
            return None
        time.sleep(0.005)
    os.kill(pid, 9)
    raise AssertionError("the confined child did not end")


def test_seccomp_names_refused_calls_and_lets_the_allowed_ones_run():
    _require("pid namespace", "seccomp", "uid")

    def work():
        import ctypes

        subprocess.run(["true"], check=True)               # fork and exec: a compiler's way
        os.setpriority(os.PRIO_PROCESS, 0, 5)                # its own priority
        libc = ctypes.CDLL(None, use_errno=True)
        assert libc.syscall(435, 0, 0) == -1 and ctypes.get_errno() == 38     # clone3: ENOSYS, glibc falls back
        libc.unshare(0x10000000)                              # CLONE_NEWUSER: refused

    report, cpid, listener, pid, status_r = _forked(work)
    assert report["seccomp"] == "" and cpid > 0 and cpid != pid
    got = _wait(pid, listener)
    assert got is not None and got.name == "unshare", got


def test_without_notification_a_refused_call_kills_the_process():
    """Where the kernel or libseccomp cannot hold a call for its starter, the filter's default
    kills the process (SIGSYS), which the trusted process reads as FORBIDDEN_CALL, unnamed."""
    _require("seccomp")
    pid = os.fork()
    if pid == 0:                                    # pragma: no cover - the child
        try:
            seccomp.build(os.getpid(), notify=False).load()
            os.getppid()                            # allowed
            os.setpriority(os.PRIO_PROCESS, os.getppid(), 19)      # another process: the default
        finally:
            os._exit(0)
    _, status = os.waitpid(pid, 0)
    assert os.waitstatus_to_exitcode(status) == -31     # SIGSYS
    assert os.getpriority(os.PRIO_PROCESS, 0) < 19


def test_the_init_reports_how_the_confined_process_ended():
    _require("pid namespace")
    report, cpid, listener, pid, status_r = _forked(lambda: os.abort())
    _wait(pid, listener)
    data = os.read(status_r, 4)
    assert len(data) == 4 and os.waitstatus_to_exitcode(int.from_bytes(data, sys.byteorder, signed=True)) == -6


def test_the_trusted_process_dying_after_the_candidate_ran_is_the_candidates_failure():
    from arena.evaluation.decision import assemble
    from arena.evaluation.protocol import LoadedFrame, StageFrame

    task = load_task(AXPY)
    splits = {"smoke": task.configs("smoke")}
    base = {"task_id": task.id, "category": task.category, "candidate": {}, "device": {}}
    exit_info = {"timed_out": None, "returncode": -9, "log_tail": "", "stage": "correctness", "forged": None,
                 "phases": {}}
    before = assemble(task, splits, [StageFrame(stage="load")], exit_info, base, {}, detect("cpu"))
    after = assemble(task, splits, [StageFrame(stage="load"), LoadedFrame(parts={}, lock_wait_s=0.0),
                                    StageFrame(stage="correctness", split="smoke", config=splits["smoke"][0].name)],
                     exit_info, base, {}, detect("cpu"))
    assert before[0].status is Status.HARNESS_ERROR and not before[0].status.scored
    assert after[0].status is Status.CRASHED and after[0].status.scored
    assert "after the candidate's code had run" in after[0].configs[0].message


def test_the_memory_account_counts_what_processes_hold_and_finds_one_over_its_allowance(tmp_path, monkeypatch):
    from arena.evaluation.memory import CONTEXT_ALLOWANCE, PROCESS_BYTES, MemoryAccount, allowance

    monkeypatch.setenv("ARENA_LOCK_DIR", str(tmp_path))
    fd = os.open(tmp_path / "acct", os.O_RDWR | os.O_CREAT, 0o600)
    mine = MemoryAccount(fd, 80 * 2**30)
    mine.stand(3, "an evaluation")
    assert mine.standing() == 3 * PROCESS_BYTES
    allow = allowance(2**30, 3 * 2**30)
    assert allow == CONTEXT_ALLOWANCE + 3 * 2**30 + 4 * 2**30
    mine.restand(10 * 2**30, {4242: allow})
    assert mine.standing() == 10 * 2**30             # what they really hold, past what they stood for
    assert mine.over_allowance({4242: allow}) == []
    (over,) = mine.over_allowance({4242: allow + 1, 77: 50 * 2**30})
    assert over[:3] == (4242, allow + 1, allow)
    mine.restand(0)
    assert mine.standing() == 3 * PROCESS_BYTES      # never below what it stood for


class _Ev:
    """The parts of an evaluation ``retry_after_oom`` uses."""

    def __init__(self, causes):
        self.gpu, self.lost, self.fatal, self.causes, self.released = True, False, None, list(causes), 0
        self.exclusive = []                     # the retries taken beside no other work
        self.memory = types.SimpleNamespace(active=True, exclusive=lambda what, wait: self.exclusive.append(what))
        self.task = types.SimpleNamespace(id="cat/t")

    def waiting(self):
        return contextlib.nullcontext()

    def memory_cause(self):
        return self.causes.pop(0) if self.causes else None

    def release_memory(self):
        self.released += 1


def test_out_of_memory_is_the_candidates_when_its_process_is_over_its_allowance(monkeypatch):
    from arena.evaluation.protocol import CorrectnessResult
    from arena.evaluation.trusted import correctness
    from arena.evaluation.trusted.correctness import GateFailure, retry_after_oom

    monkeypatch.setattr(correctness.time, "sleep", lambda s: None)
    over = GateFailure(Status.RUNTIME_ERROR, "the candidate's process held 70 GiB", fatal=True)
    r = CorrectnessResult(status=Status.HARNESS_ERROR, message="out of memory in making inputs")
    ev = _Ev([over])
    assert retry_after_oom(ev, r, 0) is False
    assert r.status is Status.RUNTIME_ERROR and ev.fatal is over and r.status.scored
    # a neighbour over its allowance: waited for, then tried again
    r = CorrectnessResult(status=Status.HARNESS_ERROR, message="CUDA out of memory")
    ev = _Ev(["process 9 of another evaluation held 70 GiB", "process 9 ...", None])
    assert retry_after_oom(ev, r, 0) is True and ev.released == 1 and not ev.causes
    assert ev.exclusive == []                   # waiting for the neighbour is enough
    # nobody over: the harness's shortage, tried again a few times beside no other evaluation's work, then
    # kept as the harness's
    ev = _Ev([])
    assert retry_after_oom(ev, r, 0) is True and ev.exclusive == ["retrying cat/t after running out of memory"]
    assert retry_after_oom(ev, r, correctness.OOM_RETRIES) is False and r.status is Status.HARNESS_ERROR


def test_the_candidates_device_memory_is_held_to_its_allowance(tmp_path):
    """The trusted process's checks of what the candidate's process holds (the driver's
    per-process figure, faked here): within its allowance it is counted in the GPU's account;
    past it, the process is killed and the candidate fails; a shortage with another
    evaluation's candidate over its own is put down to that one."""
    import types

    from arena.evaluation.memory import PROCESS_BYTES, MemoryAccount, allowance
    from arena.evaluation.trusted.correctness import GateFailure
    from arena.evaluation.trusted.process import Evaluation

    killed: list[int] = []
    used = {4242: 2 * 2**30, 4343: 3 * 2**30}
    peer = types.SimpleNamespace(pid=4242, kill=lambda: killed.append(4242))
    replay_peer = types.SimpleNamespace(pid=4343)    # the replay process: the baseline's handle and the replays'
    ev = types.SimpleNamespace(usage=types.SimpleNamespace(handle=object(), by_pid=lambda: dict(used)),
                               remote=types.SimpleNamespace(peer=peer),
                               base_remote=types.SimpleNamespace(peer=replay_peer),
                               replay_remote=types.SimpleNamespace(peer=replay_peer),
                               slots=types.SimpleNamespace(live_bytes=2**30), _io_bytes=2**20, local_bytes=0, held={},
                               _stage_now=("correctness", "heldout", "c1"), gpu=False, _reference_bytes={},
                               _unmeasured={}, config_key="c1",
                               memory=MemoryAccount(os.open(tmp_path / "acct", os.O_RDWR | os.O_CREAT, 0o600),
                                                    80 * 2**30))
    for name in ("allowance", "_confined", "_over", "check_device_memory", "memory_cause", "reference_bytes",
                 "unmeasured_note"):
        setattr(ev, name, getattr(Evaluation, name).__get__(ev))
    ev.memory.stand(3)
    allow = allowance(2**20, 2**30)
    ev.check_device_memory("after a call")
    assert not killed and ev.held["heldout"]["held_gib"] == 2.0 and ev.held["heldout"]["share"] < 1
    # counted at what they hold: this process's standing, the candidate's 2 GiB, the replay process's 3 GiB (once)
    assert ev.memory.standing() == PROCESS_BYTES + 5 * 2**30
    assert ev.memory_cause() is None
    used[9999] = 70 * 2**30                  # another evaluation's candidate, over the allowance it published
    other = MemoryAccount(ev.memory.fd, 80 * 2**30)
    other._mine["standing"] = PROCESS_BYTES
    other._try(f"{os.getppid()}:standing", PROCESS_BYTES, "a neighbour", standing=True)
    with open(tmp_path / "acct") as f:
        data = json.load(f)
    data[f"{os.getppid()}:standing"]["members"] = {"9999": 3 * 2**30}
    with open(tmp_path / "acct", "w") as f:
        json.dump(data, f)
    assert "process 9999 of another evaluation" in ev.memory_cause()
    used[4242] = allow + 1
    with pytest.raises(GateFailure) as info:
        ev.check_device_memory("after a call")
    assert info.value.status is Status.RUNTIME_ERROR and info.value.fatal and killed == [4242]
    assert "past its allowance" in info.value.message
    assert isinstance(ev.memory_cause(), GateFailure)


def _measuring_evaluation(tmp_path, used: dict, killed: list, stage: tuple, key: str, expected, **more):
    """An ``Evaluation``'s device-memory methods on a stand-in: the candidate process 4242 (killed into
    ``killed``), the driver's per-process counts ``used``, ``expected`` as the reference's run."""
    import types

    from arena.evaluation.gpulock import GpuLock
    from arena.evaluation.memory import MemoryAccount
    from arena.evaluation.trusted.process import Evaluation

    peer = types.SimpleNamespace(pid=4242, kill=lambda: killed.append(4242))
    more.setdefault("local_bytes", 0)
    ev = types.SimpleNamespace(usage=types.SimpleNamespace(handle=object(), by_pid=lambda: dict(used)),
                               remote=types.SimpleNamespace(peer=peer), base_remote=None, replay_remote=None,
                               slots=types.SimpleNamespace(live_bytes=2**30), _io_bytes=2**20, held={},
                               _stage_now=stage, gpu=True, _reference_bytes={}, _unmeasured={}, config_key=key,
                               gpu_lock=GpuLock(None, None), sync=lambda: None,
                               memory=MemoryAccount(os.open(tmp_path / "acct", os.O_RDWR | os.O_CREAT, 0o600),
                                                    80 * 2**30), **more)
    ev.expected, ev.make_inputs = expected, lambda seed: {"seed": seed}
    for name in ("allowance", "working_allowance", "_confined", "_over", "check_device_memory", "memory_cause",
                 "reference_bytes", "unmeasured_note"):
        setattr(ev, name, getattr(Evaluation, name).__get__(ev))
    return ev


def test_the_allowance_grows_with_what_the_reference_itself_needs(tmp_path):
    """A candidate's process over the allowance its config's inputs and outputs give is not
    stopped before the task's own reference has been measured on that config (run once now, in
    the trusted process, where it had not run yet): a chain of operators whose temporaries dwarf
    its inputs and outputs may hold twice the reference's working memory. Past that it fails, and
    the message names the reference's figure; a later config keeps the most measured."""
    from arena.evaluation.memory import ALLOWANCE_REFERENCE, allowance
    from arena.evaluation.trusted.correctness import GateFailure
    from arena.evaluation.trusted.process import MEASURE_SEED

    killed: list[int] = []
    ran: list[tuple[str, int]] = []
    used = {4242: 0}

    def expected(ins):      # the reference's upcast run, as measured in the trusted process
        ran.append((ev.config_key, ins["seed"]))
        ev._reference_bytes[ev.config_key] = 6 * 2**30
        return []

    ev = _measuring_evaluation(tmp_path, used, killed, ("performance", "seen", "big"), "big", expected)
    from_io = allowance(2**20, 2**30)
    assert ev.allowance() == from_io and ran == []          # nothing measured, nothing run for it
    used[4242] = from_io + 4 * 2**30                          # past what the inputs and outputs allow
    ev.check_device_memory("after its timed calls")
    assert not killed and ran == [("big", MEASURE_SEED)]
    assert ev.allowance() == allowance(2**20, 2**30, 6 * 2**30) == from_io - 2 * 2**30 + ALLOWANCE_REFERENCE * 6 * 2**30
    assert ev.working_allowance() == ALLOWANCE_REFERENCE * 6 * 2**30
    ev.check_device_memory("after its timed calls")
    assert ran == [("big", MEASURE_SEED)]                     # measured once a config
    ev.config_key = "small"                                   # a later config: the allocator keeps what it needed
    assert ev.allowance() > from_io
    used[4242] = ev.allowance(measure=True) + 1
    assert ran[-1] == ("small", MEASURE_SEED)
    with pytest.raises(GateFailure) as info:
        ev.check_device_memory("after its timed calls")
    assert killed == [4242] and "2x the reference's own working memory (6.00 GiB)" in info.value.message


def test_a_candidate_past_its_allowance_is_told_the_local_memory_its_replayed_kernels_take(tmp_path, monkeypatch):
    """A process that launched a kernel whose threads spill holds that kernel's local memory for every thread the
    GPU can hold (an H200: 16,528 bytes a thread, 3.90 GiB held past the allocator's). The candidate's process gives
    it back after its code ran (``stack_limit``); it is not counted in the allowance, where a kernel that declares
    local memory it never touches would buy that much memory to hold. What a thread of the candidate's replayed
    kernels takes, read off the replay process's compile of them (``TakenReply``), is named when it is over."""
    import types

    import torch

    from arena.evaluation.memory import allowance, local_reserved
    from arena.evaluation.protocol import CallRecord, TakenReply
    from arena.evaluation.trusted.calls import ReplayedCandidate, SharedSet
    from arena.evaluation.trusted.correctness import GateFailure

    monkeypatch.setattr(torch.cuda, "current_device", lambda: 0)
    h200 = types.SimpleNamespace(multi_processor_count=132, max_threads_per_multi_processor=2048)
    monkeypatch.setattr(torch.cuda, "get_device_properties", lambda i: h200)
    assert local_reserved(0) == 0 and local_reserved(16528) == 16528 * 132 * 2048
    killed: list[int] = []
    used = {4242: allowance(2**20, 2**30)}
    ev = _measuring_evaluation(tmp_path, used, killed, ("correctness", "seen", "c1"), "c1", lambda ins: [],
                               structural_inputs=lambda: False)

    class Handle:           # the replay process, answering as its compile of a record's kernels says
        def __init__(self, local):
            self.local, self.peer = local, types.SimpleNamespace(pid=4343)

        def request(self, frame, expect):
            return TakenReply(local_bytes=self.local)

    rc = ReplayedCandidate(ev, Handle(0), Handle(16528))
    rc.sets[1] = SharedSet(1, None, [], [], rc)
    rc.records[rc.key(7)] = CallRecord(ops=[])
    rc.refs[rc.key(7)] = 1
    rc.record_for(1, 7)
    assert ev.local_bytes == 16528 and ev.allowance() == allowance(2**20, 2**30)     # read, not counted
    ev.check_device_memory("after its calls")
    assert not killed
    used[4242] += 3 * 2**30          # the process holding its kernels' local memory: over
    with pytest.raises(GateFailure) as info:
        ev.check_device_memory("after its calls")
    assert killed == [4242]
    assert "its replayed kernels take 16,528 bytes of local memory a thread" in info.value.message
    assert "(4.16 GiB) unless it sets the stack size limit back" in info.value.message


def test_the_candidate_process_gives_back_its_kernels_local_memory_after_its_code_ran(monkeypatch):
    """An autotuner launches each of its variants once to time them, and the candidate's process then holds the local
    memory of the one that spills most for every thread of the GPU (AKA's ``triton_fla_chunk_fwd_o``: 2.3 GiB, its
    chosen variant 72 bytes a thread). Where its calls are recorded, the process sets the context's stack size limit
    back to what it was before any candidate code after each request that ran its code, the trusted (starting
    kernel's) too, before its memory is held to its allowance; where the driver cannot be reached, nothing is set."""
    import types

    import arena.evaluation.candidate.process as cp

    assert cp.stack_limit() is None or callable(cp.stack_limit())   # no libcuda on a CPU machine: None
    proc = cp.CandidateProcess.__new__(cp.CandidateProcess)
    given: list[int] = []
    proc.stack_limit = lambda: given.append(1)
    for trusted in (True, False):
        proc.spec, proc.seal = types.SimpleNamespace(trusted=trusted), None
        proc.threads = types.SimpleNamespace(after=lambda: [])
        proc.guard("the candidate's call")
    assert given == [1, 1]
    proc.stack_limit = None              # calls not recorded (timed here): nothing set between timed calls
    proc.guard("the candidate's timed calls")
    assert given == [1, 1]


def test_a_candidate_that_holds_the_devices_memory_fails_though_the_reference_cannot_be_measured_beside_it(tmp_path):
    """A process over the allowance its config's inputs and outputs give has the reference
    measured before it is judged; where the candidate holds the device's memory, that run finds
    none. The shortage is not the harness's failure (HARNESS_ERROR, unscored, as a hoarder of
    device memory got on an H200): the measure is left out, the candidate fails on the allowance
    measured so far, and the message says why the reference's figure is missing."""
    from arena.evaluation.memory import allowance
    from arena.evaluation.trusted.correctness import GateFailure, task_failure

    killed: list[int] = []
    released: list[int] = []
    used = {4242: 0}
    runs: list[int] = []

    def expected(ins):      # the reference, beside a process that holds all but 24 MiB of the device
        runs.append(1)
        raise task_failure("the reference", RuntimeError("CUDA out of memory. Tried to allocate 20.00 MiB"))

    ev = _measuring_evaluation(tmp_path, used, killed, ("correctness", "heldout", "c1"), "c1", expected,
                               release_memory=lambda: released.append(1))
    used[4242] = 118 * 2**30
    with pytest.raises(GateFailure) as info:
        ev.check_device_memory("after a call")
    assert info.value.status is Status.RUNTIME_ERROR and info.value.fatal and killed == [4242]
    assert "118.00 GiB" in info.value.message and "could not be measured" in info.value.message
    assert "out of memory" in info.value.message and runs == [1] and released == [1]
    assert ev.allowance(measure=True) == allowance(2**20, 2**30) and runs == [1]    # not tried again on the config

    def broken(ins):        # any other failure of the reference is still the task's
        raise task_failure("the reference", ValueError("shapes do not match"))

    ev.expected, ev.config_key = broken, "c2"
    with pytest.raises(GateFailure) as info:
        ev.check_device_memory("after a call")
    assert info.value.status is Status.TASK_ERROR


def test_a_process_stopped_as_its_timed_buffers_go_back_fails_that_split(monkeypatch):
    """A check of what the candidate's process holds that stops it after its split's timed
    rounds (as the buffers are given back) fails that split on its last config; the configs of
    the next split say where it was stopped and why, not only that it was."""
    import types

    from arena.evaluation.protocol import PerformanceResult
    from arena.evaluation.trusted import performance
    from arena.evaluation.trusted.correctness import GateFailure
    from arena.evaluation.trusted.process import Evaluation

    over = GateFailure(Status.RUNTIME_ERROR, "the candidate's process held 9.00 GiB of device memory after a release "
                                             "of buffers, past its allowance of 5.00 GiB", fatal=True)
    class _Ev(types.SimpleNamespace):
        lost = property(lambda self: self.fatal is not None)

    ev = _Ev(fatal=None, sent=[], lock_stats=lambda since=None: {}, release_memory=lambda: None,
             send_lock=lambda split, stats: None, _lost_at="")
    ev.send_performance = lambda split, config, result: ev.sent.append((split, config, result))
    configs = [types.SimpleNamespace(name="a"), types.SimpleNamespace(name="b")]

    def timed(ev_, split, cfgs):
        ev_.fatal = over                        # stopped in the timing's last release, after every round
        return [(c, PerformanceResult(status=Status.PASSED)) for c in cfgs]

    monkeypatch.setattr(performance, "time_configs", timed)
    performance.time_split(ev, "seen", configs)
    assert [(s, c, r.status) for s, c, r in ev.sent] == [("seen", "a", Status.PASSED),
                                                         ("seen", "b", Status.RUNTIME_ERROR)]
    assert "past its allowance" in ev.sent[1][2].message
    ev.not_run = Evaluation.not_run.__get__(ev)
    msg = ev.not_run("heldout", "c", "(at seen/b (performance))").message
    assert msg.startswith("not run: the candidate process was stopped after a runtime error "
                          "(at seen/b (performance)): ")
    assert msg.endswith("past its allowance of 5.00 GiB")

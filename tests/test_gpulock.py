"""Sharing a GPU (arena/evaluation/gpulock.py): timed sections exclude every other evaluation's GPU
work, correctness sections share, a waiting writer goes before readers that come later
unless a long reader keeps it waiting past its window (then the others go on), and an
evaluation's trusted process really holds the lock the parent hands it (its wait is in the
record)."""

from __future__ import annotations

import threading
import time
from pathlib import Path

import pytest

from arena.devices import Device, detect
from arena.evaluation.decision import phase_times
from arena.evaluation.gpulock import GpuLock, open_fds
from arena.evaluation.parent import Candidate, evaluate
from arena.records import Status
from arena.taskdef.loader import load_task

AXPY = Path(__file__).parent / "fixtures" / "tasks" / "triton2triton" / "axpy"


@pytest.fixture(autouse=True)
def _lock_dir(tmp_path, monkeypatch):
    monkeypatch.setenv("ARENA_GPU_LOCK_DIR", str(tmp_path / "locks"))


def _lock(key="cuda-GPU-test", window_s=0.1):
    return GpuLock(*open_fds(key), window_s=window_s)


def _files(key="cuda-GPU-test") -> list[Path]:
    from arena.evaluation.gpulock import lock_dir

    return [lock_dir() / f"{key}.{part}" for part in ("turnstile", "rw")]


def _lock_lines(path: Path) -> list[str]:
    ino = path.stat().st_ino
    return [line for line in Path("/proc/locks").read_text().splitlines() if line.split()[-3].endswith(f":{ino}")]


def _waiters(path: Path) -> int:
    """Flocks of ``path`` being waited for (the "->" lines of /proc/locks for its inode)."""
    return sum(1 for line in _lock_lines(path) if "->" in line)


def _holders(path: Path) -> int:
    """Flocks of ``path`` held (the other lines of /proc/locks for its inode)."""
    return sum(1 for line in _lock_lines(path) if "->" not in line)


def _until(condition, limit_s: float = 60.0) -> None:
    """Wait for a state of the locks, however slow the machine (``limit_s`` only ends a hang)."""
    deadline = time.monotonic() + limit_s
    while not condition():
        assert time.monotonic() < deadline, "the locks never reached the state the test waits for"
        time.sleep(0.01)


def test_a_waiting_writer_goes_before_readers_that_came_later():
    """Each step waits for the state it needs (seen in /proc/locks), not for a time."""
    order: list[str] = []
    r1, w, r2 = _lock(), _lock(window_s=30.0), _lock()
    r1_in = threading.Event()
    release_r1 = threading.Event()
    turnstile = _files()[0]

    def reader1():
        with r1.shared():
            order.append("r1 in")
            r1_in.set()
            release_r1.wait(60)
            order.append("r1 out")

    def writer():
        with w.exclusive():
            order.append("w in")
            time.sleep(0.2)
            order.append("w out")  # still inside: the later reader cannot have entered yet

    def reader2():
        with r2.shared():
            order.append("r2 in")

    threads = [threading.Thread(target=reader1), threading.Thread(target=writer), threading.Thread(target=reader2)]
    threads[0].start()
    assert r1_in.wait(60)
    threads[1].start()
    _until(lambda: _holders(turnstile) == 1)      # the writer waits for reader 1, holding the turnstile
    threads[2].start()
    _until(lambda: _waiters(turnstile) == 1)      # the later reader queues behind it
    time.sleep(0.2)
    assert order == ["r1 in"]             # neither the writer nor the later reader got in
    release_r1.set()
    for t in threads:
        t.join(60)
    assert order == ["r1 in", "r1 out", "w in", "w out", "r2 in"]
    # each waited at least as long as it was seen waiting: the writer through the 0.2 s above, the
    # later reader through the writer's 0.2 s inside too (less a clock's rounding)
    assert w.waited_s >= 0.19 and r2.waited_s >= 0.39


def test_a_short_section_that_does_not_queue_goes_ahead_of_a_waiting_writer_but_never_beside_one_inside():
    """``queue=False`` (the candidate's import or a release, once in a while): while a writer
    waits for the readers inside to drain, such a section enters at once; while a writer holds
    the lock, it waits like any other."""
    rw, turnstile = _files()[1], _files()[0]
    r1, w, short = _lock(), _lock(window_s=30.0), _lock()
    order: list[str] = []
    r1_in, release_r1, w_in, release_w = (threading.Event() for _ in range(4))

    def reader1():
        with r1.shared():
            r1_in.set()
            release_r1.wait(60)

    def writer():
        with w.exclusive():
            order.append("w in")
            w_in.set()
            release_w.wait(60)

    def barge():
        with short.shared("load", queue=False):
            order.append("short in")

    t1 = threading.Thread(target=reader1)
    t1.start()
    assert r1_in.wait(60)
    tw = threading.Thread(target=writer)
    tw.start()
    _until(lambda: _holders(turnstile) == 1)      # the writer waits for reader 1, holding the turnstile
    barge()
    assert order == ["short in"], "a section that does not queue goes ahead of a writer still waiting"
    release_r1.set()
    assert w_in.wait(60)
    tb = threading.Thread(target=barge)
    tb.start()
    _until(lambda: _waiters(rw) == 1)             # it waits for the writer inside
    time.sleep(0.1)
    assert order == ["short in", "w in"]
    release_w.set()
    for t in (t1, tw, tb):
        t.join(60)
    assert order == ["short in", "w in", "short in"]


def test_a_long_reader_does_not_hold_everyone_up_behind_a_waiting_writer():
    order: list[str] = []
    long_reader, w, short_reader = _lock(), _lock(window_s=0.1), _lock()
    release = threading.Event()

    def reader():
        with long_reader.shared():
            release.wait(10)

    def writer():
        with w.exclusive():
            order.append("w")

    def other():
        with short_reader.shared():
            order.append("short reader")

    ts = [threading.Thread(target=reader)]
    ts[0].start()
    time.sleep(0.1)
    ts.append(threading.Thread(target=writer))
    ts[1].start()
    time.sleep(0.3)                       # the writer has given up its first window
    ts.append(threading.Thread(target=other))
    ts[2].start()
    ts[2].join(5)
    assert order == ["short reader"], "a reader must get past a writer stuck behind a long reader"
    release.set()
    ts[1].join(10)
    assert order == ["short reader", "w"]


def test_readers_share_and_other_gpus_are_independent():
    a, b, other = _lock(), _lock(), _lock("cuda-GPU-other")
    with a.shared():
        done = threading.Event()

        def second_reader():
            with b.shared():
                done.set()
        threading.Thread(target=second_reader).start()
        assert done.wait(5), "two correctness sections must run side by side"
        with other.exclusive():           # another GPU's lock is not this one's
            pass


def test_shared_sections_are_counted_by_what_they_were_for():
    lk = _lock()
    with lk.shared("reference"):
        time.sleep(0.15)                  # past a writer's window: 0.05 s of it kept a writer out
    with lk.shared("reference"):
        pass
    with lk.shared():
        lk.let_go()                       # a compile inside: not held meanwhile
        time.sleep(0.2)
        lk.take_back()
    assert 0.15 <= lk.held_by["reference"] < 0.3 and 0.05 <= lk.over_by["reference"] < 0.2
    assert lk.held_by["other"] < 0.1 and "other" not in lk.over_by
    assert abs(sum(lk.held_by.values()) - lk.shared_s) < 1e-9


def test_no_lock_on_the_cpu():
    assert detect("cpu").gpu_key is None
    assert Device(kind="cuda", name="H200", vendor="nvidia", arch="sm_90", uuid="GPU-1").gpu_key == "cuda-GPU-1"
    lock = GpuLock(None, None)
    with lock.shared(), lock.exclusive():   # no descriptors: nothing to wait for
        pass


class _CpuWithLock(Device):
    """The cpu backend with a GPU's lock: the worker's use of the lock is what is tested."""

    @property
    def gpu_key(self) -> str | None:
        return "cuda-GPU-stand-in"


def test_the_worker_waits_for_a_timed_section_of_another_evaluation(tmp_path):
    """No wall-clock assumption: the timed section is held until the evaluation is seen
    blocked on the lock (/proc/locks), then ``hold`` seconds more."""
    from arena.evaluation.gpulock import lock_dir

    task = load_task(AXPY)
    cpu = detect("cpu")
    device = _CpuWithLock(**cpu.to_dict())
    timer = _lock("cuda-GPU-stand-in")
    result = {}

    def run():
        result["v"] = evaluate(task, Candidate(task, None, "baseline"), ["smoke"], device, timing=True,
                               timing_params={"host_clock": True, "min_pairs": 3, "max_pairs": 3})

    hold = 0.5
    files = [lock_dir() / f"cuda-GPU-stand-in.{part}" for part in ("turnstile", "rw")]
    with timer.exclusive():               # another evaluation is being timed on "this GPU"
        t = threading.Thread(target=run)
        t.start()
        deadline = time.monotonic() + 240
        while not any(_waiters(f) for f in files):
            assert t.is_alive() and time.monotonic() < deadline, "the evaluation never waited for the GPU"
            time.sleep(0.05)
        time.sleep(hold)
        assert t.is_alive(), "the evaluation must not check a config while the GPU is being timed"
    t.join(300)
    (v,) = result["v"]
    assert v.status is Status.PASSED, v.message
    # the wait is in its record: it began before it was seen and ended after the hold (one clock,
    # the machine's monotonic one), inside the worker's time as the parent saw it
    assert v.phases["lock_wait_s"] >= hold - 0.01
    assert v.phases["worker_s"] >= v.phases["lock_wait_s"]
    assert v.phases["start_s"] > 0 and v.phases["worker_s"] >= v.phases["start_s"]
    # the host's time inside its own timed sections, by part: within the time it held the lock alone,
    # and the candidate's steps' own time in its process within their round trips
    parts = sum(v.phases.get(f"alone_{p}_s", 0.0) for p in ("prepare", "sync", "step", "after", "rounds"))
    assert 0.0 < parts <= v.phases["alone_s"] + 0.01
    assert 0.0 < v.phases["alone_served_s"] <= v.phases["alone_step_s"]
    # and the served time by part, as the processes that made the calls counted it: the calls
    # themselves and the thread checks around them, within the served time
    served = sum(v.phases.get(f"alone_{p}_s", 0.0) for p in ("flush", "call", "wait", "marker", "threads"))
    assert v.phases["alone_call_s"] > 0.0 and v.phases["alone_threads_s"] > 0.0
    assert served <= v.phases["alone_served_s"] + 0.01


def test_phase_times_from_frame_arrivals():
    from arena.evaluation.protocol import (
        CorrectnessFrame,
        CorrectnessResult,
        DoneFrame,
        LoadedFrame,
        LockFrame,
        PerformanceFrame,
        PerformanceResult,
        StageFrame,
    )

    frames = [
        (2.0, StageFrame(stage="load")),
        (2.9, LoadedFrame(parts={"reference": 0.25, "timer": 0.5, "../x": 9.0}, lock_wait_s=0.125)),
        (3.0, StageFrame(stage="correctness", config="a")),
        (4.5, CorrectnessFrame(split="", config="a", result=CorrectnessResult(
            status=Status.PASSED, lock={"lock_wait_s": 0.5, "shared_s": 0.5, "longest_shared_s": 0.25,
                                        "off_gpu_s": 0.125, "shared_n": 3}))),
        (4.5, StageFrame(stage="performance", config="a")),
        (5.0, StageFrame(stage="performance", config="b")),     # a split's configs timed together
        (7.5, LockFrame(split="", stats={"lock_wait_s": 1.0, "shared_s": 0.25, "longest_shared_s": 0.125,
                                         "alone_s": 0.5, "exclusive_n": 1, "alone_step_s": 0.25,
                                         "alone_served_s": 0.125, "alone_../x_s": 9.0, "held_warm_s": 0.25,
                                         "over_warm_s": 0.125, "over_Warm_s": 1.0})),
        (7.5, PerformanceFrame(split="", config="a", result=PerformanceResult(
            status=Status.PASSED, warm_s=0.5, profiler_s=0.25, refresh_s=0.75,
            spans_us={"baseline": [1e5, 2e5], "candidate": [3e5]}))),
        (7.75, PerformanceFrame(split="", config="b", result=PerformanceResult(status=Status.PASSED))),
        (8.0, DoneFrame()),
    ]
    assert phase_times(frames) == {
        "start_s": 2.0,
        "load_s": 1.0,
        "correctness_s": 1.5,
        "timing_s": 3.25,
        "lock_wait_s": 1.625,
        "worker_s": 8.0,
        "warm_s": 0.5,
        "profiler_s": 0.25,
        "refresh_s": 0.75,
        "ahead_s": 0.0,
        "timed_gpu_s": 0.6,
        "alone_s": 0.5,
        "prepare_s": 0.0,
        "verify_s": 0.0,
        "shared_s": 0.75,
        "longest_shared_s": 0.25,
        "off_gpu_s": 0.125,
        "shared_n": 3.0,
        "exclusive_n": 1.0,
        "load_reference_s": 0.25,
        "load_timer_s": 0.5,
        "alone_step_s": 0.25,
        "alone_served_s": 0.125,
        "held_warm_s": 0.25,
        "over_warm_s": 0.125,
    }


def test_host_only_work_inside_a_shared_section_lets_a_waiting_writer_in():
    reader, writer = _lock(), _lock(window_s=30.0)
    order: list[str] = []
    compiling = threading.Event()
    resume = threading.Event()
    w_in = threading.Event()
    w_release = threading.Event()

    def read():
        with reader.shared():
            order.append("r in")
            with reader.off_gpu():  # e.g. Triton compiling a kernel on its first call
                compiling.set()
                resume.wait(60)
            order.append("r back")

    def write():
        with writer.exclusive():
            order.append("w in")
            w_in.set()
            w_release.wait(60)
            order.append("w out")

    tr = threading.Thread(target=read)
    tr.start()
    assert compiling.wait(60)
    tw = threading.Thread(target=write)
    tw.start()
    assert w_in.wait(60), "the writer must not wait for a compile"
    assert order == ["r in", "w in"]
    resume.set()  # the reader comes back while the writer is inside
    _until(lambda: _waiters(_files()[0]) == 1)  # ... and queues at the turnstile
    time.sleep(0.1)
    assert order == ["r in", "w in"], "the reader must wait for the GPU again"
    w_release.set()
    tr.join(60)
    tw.join(60)
    assert order == ["r in", "w in", "w out", "r back"]
    assert reader.off_gpu_s > 0 and reader.waited_s >= 0.09
    assert reader.shared_n == 2 and writer.shared_n == 0  # entered, and taken back after the compile


def test_a_shared_section_inside_an_exclusive_one_is_part_of_it():
    w, other = _lock(), _lock()
    entered = threading.Event()

    def read():
        with other.shared():
            entered.set()

    with w.exclusive():
        with w.shared():  # renewing inputs between timed rounds: still alone
            t = threading.Thread(target=read)
            t.start()
            assert not entered.wait(0.3), "another evaluation got in while the GPU was held alone"
        assert not entered.wait(0.2)
    assert entered.wait(5)
    t.join(5)
    with w.shared(), pytest.raises(RuntimeError):
        with w.exclusive():  # flock would convert the shared lock, not nest it
            pass


def test_an_autotuner_timing_its_variants_has_the_gpu_alone_inside_a_shared_section():
    """A call in a shared section whose autotuner times its variants (a key it has not
    seen): the section takes the GPU alone once the other readers inside have left, keeps
    newcomers out meanwhile, and shares it again afterwards. A section that ends while alone
    (the process never said the tuning was over) gives the lock back."""
    tuner, other = _lock(window_s=30.0), _lock()
    inside, leave, entered = threading.Event(), threading.Event(), threading.Event()

    def read_long():
        with other.shared():
            inside.set()
            leave.wait(60)

    def read():
        with other.shared():
            entered.set()

    with tuner.shared("call"):
        t = threading.Thread(target=read_long)
        t.start()
        assert inside.wait(60)
        alone = threading.Event()
        up = threading.Thread(target=lambda: (tuner.alone_inside(), alone.set()))
        up.start()
        assert not alone.wait(0.3), "the timings must wait for the other evaluation's work to leave"
        leave.set()
        assert alone.wait(60)
        up.join(60)
        t.join(60)
        assert tuner.mode == "exclusive"
        t = threading.Thread(target=read)
        t.start()
        assert not entered.wait(0.3), "another evaluation got in while the variants were timed"
        tuner.share_again()
        assert entered.wait(60), "the section is shared again once the tuning is over"
        t.join(60)
        assert tuner.mode == "shared" and tuner.exclusive_n == 1
    assert tuner.alone_inside() is False, "outside a shared section there is nothing to take alone"
    with tuner.shared():
        assert tuner.alone_inside()
    entered.clear()
    t = threading.Thread(target=read)
    t.start()
    assert entered.wait(60), "a section that ended alone gave the lock back"
    t.join(60)
    with tuner.exclusive():  # a timed round: already alone
        assert tuner.alone_inside() is False and tuner.mode == "exclusive"


def test_every_request_to_the_candidate_holds_the_gpu_and_its_word_that_it_compiles_lets_nothing_go():
    """Candidate code may run while any request is served (its import, a finalizer that a
    release runs), so each request to the candidate's process is made inside a section of the
    GPU's lock: a shared one of its own where none is held (but those that run none of it:
    ``HARNESS_ONLY``). A compile notice from that process
    leaves the lock held: once let go, the process could launch anything beside another
    evaluation's timed round, and only its own word says it is compiling. The baseline's
    process, which runs the task's code, is believed: its compile lets the lock go."""
    from types import SimpleNamespace

    from arena.evaluation.protocol import AckReply, CompilingNotice, KernelsRequest, ReleaseRequest
    from arena.evaluation.trusted.calls import CandidateHandle

    rw = _files()[1]
    lock = _lock()
    seen: list = []

    class Peer:
        def request(self, frame, deadline, on_notice):
            seen.append(("asked", lock.mode, _holders(rw)))
            on_notice(CompilingNotice(on=True))
            seen.append(("compiling", lock.mode, _holders(rw)))
            on_notice(CompilingNotice(on=False))
            return AckReply()

    ev = SimpleNamespace(
        gpu_lock=lock, deadline=None, stage_name="correctness", stage_limit=60.0, check_device_memory=lambda where: None
    )
    candidate = CandidateHandle(ev, Peer())
    candidate.release([1])  # no section held: one of its own
    assert seen == [("asked", "shared", 1), ("compiling", "shared", 1)]
    assert lock.mode is None and _holders(rw) == 0 and lock.held_by.get("release", 0) > 0
    seen.clear()
    with lock.shared("call"):  # inside a section: that one
        candidate.request(ReleaseRequest(slots=[1]), AckReply)
        assert lock.shared_n == 2
    assert seen == [("asked", "shared", 1), ("compiling", "shared", 1)]
    seen.clear()
    candidate.request(KernelsRequest(), AckReply)  # runs no candidate code (HARNESS_ONLY): no section
    assert seen == [("asked", None, 0), ("compiling", None, 0)]
    seen.clear()
    baseline = CandidateHandle(ev, Peer(), trusted=True)
    with lock.shared("call"):
        baseline.release([1])
    assert seen == [("asked", "shared", 1), ("compiling", "off", 0)]
    assert lock.off_gpu_s > 0


def test_the_worker_lets_the_lock_go_while_triton_compiles(monkeypatch):
    import triton.compiler
    import triton.compiler.compiler

    from arena.evaluation.trusted.process import compile_off_gpu as _compile_off_gpu

    reader, writer = _lock(), _lock(window_s=30.0)
    got_in: list[bool] = []
    tried = threading.Event()
    held: list = []  # the writer's section, kept open until the test closes it

    def fake_compile(*args, **kwargs):  # stands in for Triton's compiler: can a writer get in now?
        held.append(writer.exclusive())
        t = threading.Thread(target=lambda: held[0].__enter__() or got_in.append(True))
        t.start()
        t.join(5)
        tried.set()
        return "compiled"

    monkeypatch.setattr(triton.compiler, "compile", fake_compile)
    monkeypatch.setattr(triton.compiler.compiler, "compile", fake_compile)
    _compile_off_gpu(reader)
    assert triton.compiler.compile is triton.compiler.compiler.compile is not fake_compile
    done = threading.Event()

    def read():
        with reader.shared():
            assert triton.compiler.compile("src") == "compiled"
            done.set()

    t = threading.Thread(target=read)
    t.start()
    assert tried.wait(10)
    assert got_in == [True], "the writer must get the GPU while the kernel compiles"
    assert not done.wait(0.3), "the reader must wait for the writer before it goes on"
    held[0].__exit__(None, None, None)
    assert done.wait(5)
    t.join(5)


def test_overlapping_readers_cannot_starve_a_writer():
    """Two readers in turn, so that one of them is inside at almost every moment, until the
    writer got in: it gets in (the test's limit only ends a hang), and all its wait was as a
    writer."""
    readers = [_lock(), _lock()]
    writer = _lock(window_s=0.05)
    writer.patience_s = 0.5
    stop = threading.Event()
    inside = [threading.Event(), threading.Event()]
    got_in = threading.Event()

    def read(k, lock):
        if k:
            inside[0].wait(60)  # the second starts while the first is inside
        while not stop.is_set():
            with lock.shared():
                inside[k].set()
                time.sleep(0.3)

    def write():
        with writer.exclusive():
            got_in.set()

    ts = [threading.Thread(target=read, args=(k, r)) for k, r in enumerate(readers)]
    for t in ts:
        t.start()
    assert inside[0].wait(60) and inside[1].wait(60)
    tw = threading.Thread(target=write)
    tw.start()
    try:
        assert got_in.wait(120), "the writer must get in once its patience is spent"
    finally:
        stop.set()
        for t in (*ts, tw):
            t.join(60)
    assert writer.exclusive_n == 1
    assert writer.writer_waited_s == writer.waited_s > 0  # its whole wait was as a writer


def test_torch_compile_compiles_with_the_lock_let_go():
    import torch

    from arena.evaluation.trusted.process import off_gpu_backend

    lock = _lock()
    modes: list = []

    def inner(gm, example_inputs):  # stands in for inductor: records the lock's state
        modes.append(lock.mode)
        return gm.forward

    torch._dynamo.reset()
    fn = torch.compile(lambda x: torch.relu(x) * 2, backend=off_gpu_backend(lock, inner))
    with lock.shared():
        out = fn(torch.tensor([-1.0, 3.0]))
        assert lock.mode == "shared"
    assert modes == ["off"] and out.tolist() == [0.0, 6.0]
    assert lock.off_gpu_s > 0


def test_a_torch_compile_over_its_time_budget_is_stopped():
    """dynamo unrolls a Python loop: a long one compiles for minutes. The worker's time limit
    (a BaseException, which dynamo's handlers of Exception do not swallow) stops it, lets the
    lock's section end normally, and leaves later eager calls working."""
    import torch

    from arena.evaluation.trusted.performance import _OverBudget, _time_limit
    from arena.evaluation.trusted.process import off_gpu_backend

    def scan(x):
        for _ in range(5000):
            x = x * 0.5 + 1.0
        return x

    lock = _lock()
    torch._dynamo.reset()
    fn = torch.compile(scan, backend=off_gpu_backend(lock, lambda gm, ex: gm.forward))
    with pytest.raises(_OverBudget):  # the 1 s limit, not the compile's end, stopped it
        with lock.shared(), _time_limit(1.0):
            fn(torch.ones(4))
    assert lock.mode is None
    with _time_limit(5.0):
        assert scan(torch.zeros(1)).item() == pytest.approx(2.0)  # no alarm left behind
    time.sleep(0.1)
    torch._dynamo.reset()


def test_a_config_that_ran_out_of_memory_is_tried_once_more_with_the_cache_given_back(monkeypatch):
    """Evaluations sharing a GPU: one may hold memory the moment another needs it (seen with 12
    workers on an H200). The trusted process gives its cached blocks back after every config
    and retries a config that failed for want of memory (timing does the same with a quarter of
    the input sets: tests/test_split_timing.py); any other failure is final."""
    import contextlib
    import types

    import arena.evaluation.trusted.correctness as correctness
    from arena.evaluation.protocol import CorrectnessResult

    released: list[int] = []
    from arena.evaluation.memory import MemoryAccount

    ev = types.SimpleNamespace(
        gpu=True,
        lost=False,
        release_memory=lambda: released.append(1),
        memory=MemoryAccount(None, 0),
        waiting=contextlib.nullcontext,
        memory_cause=lambda: None,
    )
    oom = "OutOfMemoryError: CUDA out of memory. Tried to allocate 1002.00 MiB"
    outcomes = iter(
        [CorrectnessResult(status=Status.RUNTIME_ERROR, message=oom), CorrectnessResult(status=Status.PASSED)]
    )
    monkeypatch.setattr(correctness, "_check_once", lambda ev, config: next(outcomes))
    monkeypatch.setattr(correctness.time, "sleep", lambda s: None)
    assert correctness.check_config(ev, "a").status is Status.PASSED
    assert len(released) == 2  # before the retry, and after the config
    calls: list[int] = []

    def wrong(ev, config):
        calls.append(1)
        return CorrectnessResult(status=Status.INCORRECT_NUMERICAL, message="y: 3 of 10 elements outside atol")

    monkeypatch.setattr(correctness, "_check_once", wrong)
    assert correctness.check_config(ev, "a").status is Status.INCORRECT_NUMERICAL and calls == [1]
    # a candidate process gone (a lost device context, a crash): nothing to retry with
    ev.lost = True
    monkeypatch.setattr(
        correctness, "_check_once", lambda ev, config: CorrectnessResult(status=Status.RUNTIME_ERROR, message=oom)
    )
    assert correctness.check_config(ev, "a").status is Status.RUNTIME_ERROR


def _logged_wait(log: list):
    import contextlib

    @contextlib.contextmanager
    def wait():
        log.append("wait")
        try:
            yield
        finally:
            log.append("in")

    return wait


def test_only_a_wait_for_another_evaluation_runs_in_the_wait_context():
    """Sections that can be had at once never enter the lock's wait context; one behind another
    evaluation's section (a shared one behind a timed round, a timed round behind work still
    inside, a timed round behind another) waits in it; ``counted`` waits outside it."""
    log: list = []
    lock, other = _lock(), _lock()
    lock.wait = _logged_wait(log)
    with lock.shared("call"):
        with lock.shared():
            pass
    with lock.exclusive():
        pass
    with lock.shared():
        assert lock.alone_inside()
        lock.share_again()
    assert log == [], "nothing was in the way"
    for mine, theirs in ((lock.shared, other.exclusive), (lock.exclusive, other.shared),
                         (lock.exclusive, other.exclusive)):
        log.clear()
        held, release, done = threading.Event(), threading.Event(), threading.Event()

        def hold(theirs=theirs, held=held, release=release):
            with theirs():
                held.set()
                release.wait(60)

        def enter(mine=mine, done=done):
            with mine():
                done.set()

        t = threading.Thread(target=hold)
        t.start()
        assert held.wait(60)
        u = threading.Thread(target=enter)
        u.start()
        _until(lambda: log == ["wait"])
        assert not done.is_set()
        release.set()
        t.join(60)
        u.join(60)
        assert done.is_set() and log == ["wait", "in"], (mine, theirs)
    log.clear()
    done = threading.Event()

    def counted():
        with lock.counted(), lock.shared():
            done.set()

    with other.exclusive():
        u = threading.Thread(target=counted)
        u.start()
        _until(lambda: sum(_waiters(f) for f in _files()) > 0)
    u.join(60)
    assert done.is_set() and log == [] and lock.waited_s > 0


def _stages(lock, limits, log=None):
    """The trusted process's own stage keeping (``Evaluation.stage``, ``Evaluation.waiting``) on a
    stand-in evaluation, its lock waiting in it as the worker's does."""
    from functools import partial
    from types import SimpleNamespace

    from arena.evaluation.trusted.process import Evaluation

    ev = SimpleNamespace(gpu_lock=lock, timeouts=limits, deadline=None, _waiting=False, sent=[], stage_name="load",
                         stage_limit=0.0, check_device_memory=lambda where: None)

    def send(frame):
        ev.sent.append(frame)
        if log is not None:
            log.append(("frame", frame.stage))

    ev.send = send
    ev.stage = partial(Evaluation.stage, ev)
    ev.waiting = partial(Evaluation.waiting, ev)
    lock.wait = ev.waiting
    return ev


def test_a_wait_for_another_evaluation_is_no_stage_s_time_and_the_stage_resumes_with_what_it_had_left():
    """A request to the candidate whose section waits behind another evaluation's timed round
    for longer than the stage's limit: the parent hears of the wait (``waiting``) and of the
    stage resumed with the time it had left, and the request gets that time, not a deadline
    that passed while the candidate's process had no request to serve."""
    from arena.evaluation.protocol import WAITING_STAGE, AckReply
    from arena.evaluation.trusted.calls import CandidateHandle

    lock, other = _lock(), _lock()
    ev = _stages(lock, {"correctness_s": 0.5, "load_s": 0.5})
    left: list = []

    class Peer:
        def request(self, frame, deadline, on_notice):
            left.append(deadline() - time.monotonic())
            return AckReply()

    candidate = CandidateHandle(ev, Peer())
    ev.stage("correctness", "seen", "c0")
    with other.exclusive():
        t = threading.Thread(target=candidate.release, args=([1],))
        t.start()
        _until(lambda: sum(_waiters(f) for f in _files()) > 0)
        time.sleep(0.8)          # past the stage's limit
    t.join(60)
    assert len(left) == 1 and 0.3 < left[0] <= 0.5, left
    assert [(f.stage, f.split, f.config) for f in ev.sent] == [("correctness", "seen", "c0"),
                                                               (WAITING_STAGE, "seen", "c0"),
                                                               ("correctness", "seen", "c0")]
    assert ev.sent[0].left_s == 0.0 and 0.3 < ev.sent[2].left_s <= 0.5
    assert lock.waited_s >= 0.8


def _tuning_wait(kind: str) -> tuple[list, float, GpuLock]:
    """A request whose call's autotuner asks for the GPU alone while another evaluation's work is
    inside for longer than the stage's limit, through a handle of ``kind``: what happened in
    order (frames to the parent, pauses of the process), and the time the request had left
    once it had the GPU alone."""
    from arena.evaluation.protocol import AckReply, ReleaseRequest, TuningNotice
    from arena.evaluation.trusted.calls import CandidateHandle

    lock, other = _lock(), _lock()
    log: list = []
    ev = _stages(lock, {"correctness_s": 0.5, "load_s": 0.5}, log)
    left: list = []

    class Peer:
        def pause(self, stop):
            if kind == "unstoppable":
                return "the harness may not signal the candidate process"
            log.append(("pause", stop))
            return ""

        def request(self, frame, deadline, on_notice):
            inside = threading.Event()

            def read():
                with other.shared():
                    inside.set()
                    time.sleep(0.8)   # another evaluation's work, past the stage's limit

            t = threading.Thread(target=read)
            t.start()
            assert inside.wait(60)
            on_notice(TuningNotice(on=True))
            left.append(deadline() - time.monotonic())
            on_notice(TuningNotice(on=False))
            t.join(60)
            return AckReply()

    handle = CandidateHandle(ev, Peer(), harness=kind == "harness")
    ev.stage("correctness", "seen", "c0")
    handle.request(ReleaseRequest(slots=[1]), AckReply)
    return log, left[0], lock


def test_an_autotuner_s_wait_for_the_gpu_alone_stops_the_candidate_s_process_or_counts():
    """The wait of a tuning inside a request the candidate's process is serving (its notice
    waits for the answer, its other threads need not): that process is stopped through it
    (SIGSTOP), so the wait is no stage's time; one that cannot be stopped has the wait counted.
    The replay process, running the harness's code, is not stopped and its wait is not counted."""
    from arena.evaluation.protocol import WAITING_STAGE

    log, left, lock = _tuning_wait("candidate")
    assert lock.exclusive_n == 1 and lock.waited_s >= 0.5
    assert log[:5] == [("frame", "correctness"), ("pause", True), ("frame", WAITING_STAGE), ("frame", "correctness"),
                       ("pause", False)], log
    assert 0.3 < left <= 0.5
    log, left, lock = _tuning_wait("unstoppable")
    assert lock.exclusive_n == 1 and lock.waited_s >= 0.5
    assert log == [("frame", "correctness")] and left < 0, "a process that runs on has the wait counted"
    log, left, lock = _tuning_wait("harness")
    assert lock.exclusive_n == 1 and lock.waited_s >= 0.5
    assert log[:3] == [("frame", "correctness"), ("frame", WAITING_STAGE), ("frame", "correctness")]
    assert not any(e[0] == "pause" for e in log) and 0.3 < left <= 0.5


def test_an_evaluation_waiting_longer_than_its_stage_s_limit_for_another_s_timed_round_passes(monkeypatch):
    """End to end: an evaluation whose correctness check waits for another evaluation's timed
    round three times as long as the stage's limit still passes, and the parent heard it wait
    there (before, such a wait ended as the candidate's TIMEOUT)."""
    import dataclasses

    import arena.evaluation.parent as parent

    monkeypatch.setattr(parent, "WAIT_NOTE_S", 0.05)     # the parent's notes of silence name the stage
    task = load_task(AXPY)
    task = dataclasses.replace(task, timeouts={"correctness_s": 2.0})
    device = _CpuWithLock(**detect("cpu").to_dict())
    timer = _lock("cuda-GPU-stand-in")
    configs = [dataclasses.replace(c, name=f"{c.name}{i}", index=i) for i, c in
               enumerate(task.configs("smoke") * 8)]   # checks enough to be inside them when the round begins
    notes: list = []
    checking, grabbed, release = threading.Event(), threading.Event(), threading.Event()

    def note(message):
        notes.append(message)
        if message.startswith("correctness of smoke/"):
            checking.set()

    def hold():
        assert checking.wait(240)
        with timer.exclusive():      # another evaluation's timed round, begun while this one checks
            grabbed.set()
            release.wait(240)

    t = threading.Thread(target=hold)
    t.start()
    out = {}
    u = threading.Thread(target=lambda: out.setdefault("v", evaluate(
        task, Candidate(task, None, "baseline"), {"smoke": configs}, device, timing=False, on_wait=note)))
    u.start()
    assert grabbed.wait(240)
    _until(lambda: any(n.startswith("waiting of smoke/") for n in notes), 240)
    time.sleep(6.0)                   # three times the stage's limit
    release.set()
    t.join(60)
    u.join(300)
    (v,) = out["v"]
    assert v.status is Status.PASSED, v.message
    assert v.phases["lock_wait_s"] >= 6.0


def test_the_parent_s_clock_stops_through_a_wait_and_a_resumed_stage_gets_what_it_had_left():
    """The parent's own limit on the trusted process (``StageClock``): a stage's limit and the
    grace from its frame; a wait has the waiting limit and stops the stage's clock; the stage
    resumed after it has what it had left, grace included, so waits one after the other give a
    stage whose time has run out no more (each resumed frame says a little time is left: the
    trusted process's floor)."""
    from arena.evaluation.parent import PARENT_GRACE_S, StageClock
    from arena.evaluation.protocol import WAITING_STAGE, StageFrame

    t = [1000.0]
    limits = {"load_s": 180.0, "correctness_s": 120.0, "waiting_s": 3600.0}
    clock = StageClock(limits, None, now=lambda: t[0])
    assert clock.deadline == 1000.0 + 180.0 + PARENT_GRACE_S
    assert clock.stage(StageFrame(stage="correctness", split="seen", config="c0")) == 1000.0 + 120.0 + PARENT_GRACE_S
    t[0] = 1100.0
    assert clock.stage(StageFrame(stage=WAITING_STAGE, split="seen", config="c0")) == 1100.0 + 3600.0 + PARENT_GRACE_S
    t[0] = 2000.0          # a long wait: none of it the stage's
    left = 20.0 + PARENT_GRACE_S
    assert clock.stage(StageFrame(stage="correctness", split="seen", config="c0", left_s=20.0)) == 2000.0 + left
    for _ in range(5):     # past its time, waits keep coming: nothing more
        t[0] = clock.deadline
        clock.stage(StageFrame(stage=WAITING_STAGE, split="seen", config="c0"))
        t[0] += 50.0
        assert clock.stage(StageFrame(stage="correctness", split="seen", config="c0", left_s=0.05)) == t[0]
    t[0] += 1.0            # the next config: its own limit afresh
    assert clock.stage(StageFrame(stage="correctness", split="seen", config="c1")) == t[0] + 120.0 + PARENT_GRACE_S
    capped = StageClock(limits, 1050.0, now=lambda: t[0])
    assert capped.stage(StageFrame(stage=WAITING_STAGE)) == 1050.0, "the evaluation's own end caps every deadline"

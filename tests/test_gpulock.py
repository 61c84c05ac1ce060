"""Sharing a GPU (arena/gpulock.py): timed sections exclude every other evaluation's GPU
work, correctness sections share, a waiting writer goes before readers that come later
unless a long reader keeps it waiting past its window (then the others go on), and an
evaluation's worker really holds the lock the parent hands it (its wait is in the record)."""

from __future__ import annotations

import threading
import time
from pathlib import Path

import pytest

from arena.devices import Device, detect
from arena.evaluate import Candidate, evaluate, phase_times
from arena.gpulock import GpuLock, open_fds
from arena.records import Status
from arena.spec.loader import load_task

AXPY = Path(__file__).parent / "fixtures" / "tasks" / "triton2triton" / "axpy"


@pytest.fixture(autouse=True)
def _lock_dir(tmp_path, monkeypatch):
    monkeypatch.setenv("ARENA_GPU_LOCK_DIR", str(tmp_path / "locks"))


def _lock(key="cuda-GPU-test", window_s=0.1):
    return GpuLock(*open_fds(key), window_s=window_s)


def test_a_waiting_writer_goes_before_readers_that_came_later():
    order: list[str] = []
    r1, w, r2 = _lock(), _lock(window_s=30.0), _lock()
    release_r1 = threading.Event()

    def reader1():
        with r1.shared():
            order.append("r1 in")
            release_r1.wait(10)
            order.append("r1 out")

    def writer():
        with w.exclusive():
            order.append("w in")
            time.sleep(0.2)
            order.append("w out")  # still inside: the later reader cannot have entered yet

    def reader2():
        with r2.shared():
            order.append("r2 in")

    threads = [threading.Thread(target=reader1)]
    threads[0].start()
    time.sleep(0.2)
    threads.append(threading.Thread(target=writer))
    threads[1].start()
    time.sleep(0.2)                       # the writer now waits for reader 1, holding the turnstile
    threads.append(threading.Thread(target=reader2))
    threads[2].start()
    time.sleep(0.2)
    assert order == ["r1 in"]             # neither the writer nor the later reader got in
    release_r1.set()
    for t in threads:
        t.join(10)
    assert order == ["r1 in", "r1 out", "w in", "w out", "r2 in"]
    assert w.waited_s >= 0.15 and r2.waited_s >= 0.15


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


def test_the_worker_waits_for_a_timed_section_of_another_evaluation():
    task = load_task(AXPY)
    cpu = detect("cpu")
    device = _CpuWithLock(**cpu.to_dict())
    timer = _lock("cuda-GPU-stand-in")
    result = {}

    def run():
        result["v"] = evaluate(task, Candidate(task, None, "baseline"), ["smoke"], device)

    hold = 8.0
    with timer.exclusive():               # another evaluation is being timed on "this GPU"
        t = threading.Thread(target=run)
        t.start()
        time.sleep(hold)
        assert t.is_alive(), "the evaluation must not check a config while the GPU is being timed"
    t.join(300)
    (v,) = result["v"]
    assert v.status is Status.PASSED, v.message
    # it waited from its first config (after starting and loading) until the timed section ended
    reached_lock = v.phases["start_s"] + v.phases["load_s"]
    assert reached_lock < hold - 1.0, "the worker took too long to start for this test to tell anything"
    assert v.phases["lock_wait_s"] >= hold - reached_lock - 0.5
    assert v.phases["correctness_s"] >= v.phases["lock_wait_s"] - 0.1
    assert v.phases["start_s"] > 0 and v.phases["worker_s"] >= v.phases["start_s"]


def test_phase_times_from_frame_arrivals():
    frames = [
        {"type": "stage", "stage": "load", "_t": 2.0},
        {"type": "stage", "stage": "correctness", "config": "a", "_t": 3.0},
        {"type": "config", "phase": "correctness", "config": "a", "_t": 4.5, "result": {"lock_wait_s": 0.5}},
        {"type": "stage", "stage": "performance", "config": "a", "_t": 4.5},
        {"type": "config", "phase": "performance", "config": "a", "_t": 7.5, "result": {"lock_wait_s": 1.0}},
        {"type": "done", "_t": 8.0},
    ]
    frames[4]["result"].update(warm_s=0.5, profiler_s=0.25, refresh_s=0.75,
                               spans_us={"baseline": [1e5, 2e5], "candidate": [3e5]})
    assert phase_times(frames) == {"start_s": 2.0, "load_s": 1.0, "correctness_s": 1.5, "timing_s": 3.0,
                                   "lock_wait_s": 1.5, "worker_s": 8.0, "warm_s": 0.5, "profiler_s": 0.25,
                                   "refresh_s": 0.75, "timed_gpu_s": 0.6, "alone_s": 0.0, "prepare_s": 0.0,
                                   "verify_s": 0.0}

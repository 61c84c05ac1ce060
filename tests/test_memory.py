"""The GPU's memory account (arena.evaluation.memory): work that does not fit beside what other processes
hold waits for room instead of failing; what fits goes in at once; a killed holder's memory
comes back; one piece larger than the whole capacity runs alone. Real processes share one
account file, as the evaluations on one GPU do."""

from __future__ import annotations

import json
import os
import select
import signal
import threading
import time

import pytest
from memory_holder import alone, go_exclusive, held, hold, release  # tests/ is on the path

from arena.evaluation.memory import PROCESS_BYTES, MemoryAccount, capacity_of, open_account, wait_to_start

GIB = 2**30
KEY = "cuda-GPU-memory-test"

@pytest.fixture(autouse=True)
def lock_dir(tmp_path, monkeypatch):
    monkeypatch.setenv("ARENA_GPU_LOCK_DIR", str(tmp_path / "locks"))
    return tmp_path / "locks"


def _holder(nbytes: int, capacity: int = GIB):
    return hold(KEY, capacity, nbytes)


def test_two_workers_that_cannot_both_fit_run_one_after_the_other():
    other = _holder(int(0.6 * GIB))            # another worker's config holds 0.6 of 1 GiB
    acct = MemoryAccount(open_account(KEY), GIB, poll_s=0.01)
    entered, leave = threading.Event(), threading.Event()
    order = []

    def second_config():
        with acct.reserve(int(0.6 * GIB), "this worker's config"):
            order.append("second in")
            entered.set()
            leave.wait(30)

    t = threading.Thread(target=second_config)
    t.start()
    try:
        # it cannot get in while the other holds its memory: it waits, it does not fail
        assert not entered.wait(0.5) and acct.held() == int(0.6 * GIB)
        order.append("first out")
        release(other)
        assert entered.wait(30)
        assert order == ["first out", "second in"] and acct.waits == 1 and acct.waited_s > 0
        assert acct.held() == int(0.6 * GIB)
    finally:
        leave.set()
        t.join(30)
        other.kill()
    assert acct.held() == 0


def test_work_that_fits_beside_the_others_goes_in_at_once():
    other = _holder(int(0.6 * GIB))
    acct = MemoryAccount(open_account(KEY), GIB, poll_s=0.01)
    try:
        with acct.reserve(int(0.3 * GIB)):
            assert acct.held() == int(0.9 * GIB) and acct.waits == 0
            with acct.reserve(int(0.3 * GIB)):     # its own process's holdings never make it wait
                assert acct.held() == int(1.2 * GIB) and acct.peak == int(0.6 * GIB)
    finally:
        release(other)


def test_a_killed_holder_s_memory_comes_back():
    other = _holder(int(0.9 * GIB))
    acct = MemoryAccount(open_account(KEY), GIB, poll_s=0.01)
    assert acct.held() == int(0.9 * GIB)
    os.kill(other.pid, signal.SIGKILL)
    other.wait(30)
    with acct.reserve(int(0.6 * GIB)):
        assert acct.waits == 0 and acct.held() == int(0.6 * GIB)


def test_more_than_the_capacity_runs_alone_and_nothing_is_admitted_without_an_account(monkeypatch):
    acct = MemoryAccount(open_account(KEY), GIB, poll_s=0.01)
    with acct.reserve(3 * GIB, "a config larger than the account"):
        assert acct.held() == 3 * GIB and acct.waits == 0
    none = MemoryAccount(None, 0)
    assert not none.active
    with none.reserve(100 * GIB):
        assert none.held() == 100 * GIB
    monkeypatch.setenv("ARENA_GPU_MEMORY_GIB", "2.5")
    assert capacity_of(80 * GIB) == int(2.5 * GIB)
    monkeypatch.delenv("ARENA_GPU_MEMORY_GIB")
    assert capacity_of(80 * GIB) == int(0.85 * 80 * GIB)


def test_a_killed_holder_not_yet_reaped_holds_nothing():
    other = _holder(int(0.9 * GIB))
    acct = MemoryAccount(open_account(KEY), GIB, poll_s=0.01)
    os.kill(other.pid, signal.SIGKILL)
    while open(f"/proc/{other.pid}/stat").read().rsplit(")", 1)[1].split()[0] != "Z":
        pass                                  # dead, not reaped: a zombie still answers kill(pid, 0)
    try:
        with acct.reserve(int(0.6 * GIB)):
            assert acct.waits == 0 and acct.held() == int(0.6 * GIB)
    finally:
        other.wait(30)


def test_standing_memory_counts_against_the_capacity_but_never_keeps_work_out_alone():
    """Every evaluation's processes hold memory while they live (contexts: ~0.7 GiB each on an
    H100): it is in the account, so work waits where the processes and the work together would
    not fit; but an evaluation's own processes never keep its work out when it is alone on the
    GPU, and a standing entry makes no process skip the queue."""
    from arena.evaluation.memory import PROCESS_BYTES

    cap = 4 * PROCESS_BYTES
    other = hold(KEY, cap, PROCESS_BYTES)                # another evaluation's work: 1 unit
    acct = MemoryAccount(open_account(KEY), cap, poll_s=0.01)
    acct.stand(2)                                        # this evaluation's two processes: 2 units
    assert acct.held() == 3 * PROCESS_BYTES
    entered = threading.Event()

    def work():
        with acct.reserve(3 * PROCESS_BYTES, "a config"):  # 3 + 3 > 4: waits, though this process stands
            entered.set()

    t = threading.Thread(target=work)
    t.start()
    try:
        assert not entered.wait(0.5)
        release(other)                                   # no work held now: 2 standing + 3 > 4, still in
        assert entered.wait(30) and acct.waits == 1
    finally:
        t.join(30)
        other.kill()
    acct.sit()
    assert acct.held() == 0


def test_only_a_wait_runs_in_the_wait_context_and_a_wait_that_runs_out_is_the_harness_s():
    """Waiting for room is the harness's time, not the candidate's: the evaluation tells the
    parent it waits (arena.evaluation.trusted.process.Evaluation.waiting: no stage's limit runs meanwhile), and a
    wait the parent's limit ends is HARNESS_ERROR (not scored), never the candidate's TIMEOUT."""
    from pathlib import Path

    from arena.devices import detect
    from arena.evaluation.decision import assemble
    from arena.evaluation.protocol import WAITING_STAGE, StageFrame
    from arena.taskdef.loader import load_task

    entered = []

    class Wait:
        def __enter__(self):
            entered.append("waiting")

        def __exit__(self, *a):
            entered.append("admitted")
            return False

    acct = MemoryAccount(open_account(KEY), GIB, poll_s=0.01)
    with acct.reserve(int(0.5 * GIB), wait=Wait):        # fits: no wait
        pass
    assert entered == []
    other = _holder(int(0.9 * GIB))
    t = threading.Timer(0.3, release, (other,))
    t.start()
    with acct.reserve(int(0.5 * GIB), wait=Wait):
        assert entered == ["waiting", "admitted"] and acct.waits == 1
    t.join(30)

    task = load_task(Path(__file__).parent / "fixtures" / "tasks" / "triton2triton" / "axpy")
    cfgs = {"seen": task.configs("seen")}
    frames = [StageFrame(stage="correctness", split="seen", config=cfgs["seen"][0].name),
              StageFrame(stage=WAITING_STAGE, split="seen", config=cfgs["seen"][0].name)]
    exit_info = {"timed_out": WAITING_STAGE, "returncode": -9, "log_tail": ""}
    base = {"task_id": task.id, "category": task.category, "candidate": {}, "device": {}}
    (v,) = assemble(task, cfgs, frames, exit_info, base, {}, detect("cpu"))
    assert v.status.value == "HARNESS_ERROR" and not v.status.scored
    assert "room in the GPU's memory" in v.configs[0].message


def _started(target, *args):
    done = threading.Event()
    out = []

    def run():
        out.append(target(*args))
        done.set()

    t = threading.Thread(target=run, daemon=True)
    t.start()
    return done, out


def test_a_piece_too_large_beside_other_evaluations_processes_drains_the_gpu_of_them():
    """A piece that cannot fit beside the processes that stand on the GPU (another evaluation's,
    with no work held) waits for them to end instead of running out of memory beside them, and
    while it waits or runs no new evaluation starts (``wait_to_start``: a parent's worker threads
    wait); then they do."""
    cap = 4 * PROCESS_BYTES
    other = hold(KEY, cap, 0, stand=2)                   # another evaluation: its 3 processes, no work
    acct = MemoryAccount(open_account(KEY), cap, poll_s=0.01)
    acct.stand(1)
    assert acct.blocking() is None and wait_to_start(KEY, n_processes=1) == 0.0     # 2 + 1 + 1 fit in 4
    entered, leave = threading.Event(), threading.Event()

    def work():
        # 2 + 1 + 2.5 > 4: only the others' ending makes room
        with acct.reserve(int(2.5 * PROCESS_BYTES), "a large config"):
            entered.set()
            leave.wait(30)

    t = threading.Thread(target=work)
    t.start()
    try:
        assert not entered.wait(0.5)
        start_done, waited = _started(lambda: wait_to_start(KEY, poll_s=0.01, n_processes=1))
        assert not start_done.wait(0.3) and "waits for the GPU to itself" in (acct.blocking() or "")
        release(other)                                   # the other evaluation ends: its processes' memory goes
        assert entered.wait(30) and acct.waits == 1
        assert not start_done.wait(0.3)                   # 1 + 2.5 held: a new one's process would not fit
        leave.set()
        t.join(30)
        assert start_done.wait(30) and waited[0] > 0.5
    finally:
        leave.set()
        t.join(30)
        other.kill()
    assert acct.blocking() is None and acct.held() == PROCESS_BYTES


def test_the_wait_to_start_ends_at_the_evaluations_deadline():
    """An evaluation with a deadline does not wait past it for a GPU that another piece of work keeps
    to itself: its wait ends there (its stages then end at once, a TIMEOUT), where one with no deadline
    waits on."""
    cap = 4 * PROCESS_BYTES
    other = hold(KEY, cap, 0, stand=2)
    acct = MemoryAccount(open_account(KEY), cap, poll_s=0.01)
    entered, leave = threading.Event(), threading.Event()

    def work():
        with acct.reserve(int(3.5 * PROCESS_BYTES), "a large config"):   # waits for the GPU to itself
            entered.set()
            leave.wait(30)

    t = threading.Thread(target=work)
    t.start()
    try:
        assert not entered.wait(0.3) and "waits for the GPU to itself" in (acct.blocking() or "")
        t0 = time.monotonic()
        waited = wait_to_start(KEY, poll_s=0.01, n_processes=1, until=t0 + 0.4)
        assert 0.35 <= waited <= 5 and acct.blocking() is not None
        unbounded, _ = _started(lambda: wait_to_start(KEY, poll_s=0.01, n_processes=1))
        assert not unbounded.wait(0.5)
    finally:
        leave.set()
        release(other)
        t.join(30)
        other.kill()


def test_two_evaluations_that_each_need_the_gpu_to_themselves_go_one_after_the_other():
    """Each waits for the other's processes to end, which would never happen: the one that began
    to wait first does not count the processes of one that waits behind it, and goes first."""
    cap = 4 * PROCESS_BYTES
    blocker = hold(KEY, cap, PROCESS_BYTES)             # work that keeps both out for now
    acct = MemoryAccount(open_account(KEY), cap, poll_s=0.01)
    acct.stand(1)
    entered, leave = threading.Event(), threading.Event()

    def work():
        with acct.reserve(3 * PROCESS_BYTES, "first large config"):
            entered.set()
            leave.wait(30)

    t = threading.Thread(target=work)
    t.start()
    second = None
    try:
        assert not entered.wait(0.3)
        second = hold(KEY, cap, 3 * PROCESS_BYTES, stand=1, wait=False)   # begins to wait after this one
        release(blocker)
        assert entered.wait(30)                          # the first, though the second's process stands
        leave.set()
        t.join(30)
        acct.sit()                                       # the first evaluation ends
        assert held(second) == 1
        release(second)
    finally:
        leave.set()
        t.join(30)
        for p in (blocker, second):
            if p is not None:
                p.kill()
    assert acct.held() == 0


def test_a_worker_started_ahead_takes_its_place_in_the_account_only_when_its_job_arrives(lock_dir):
    """While a worker waits for its job its processes have imported everything but opened no
    device context: the account holds nothing of it (an idle worker is no reason for work to
    wait). Its job's arrival makes it stand, for its three processes, before they open their
    contexts."""
    from arena.evaluation.channel import signed_reader, write_frame
    from arena.evaluation.processes import spawn_worker

    class Device:               # a GPU's kind, as far as starting a worker goes
        gpu_key, runs_kernels, visible_devices, kind = KEY, True, {}, "cuda"

    acct = MemoryAccount(open_account(KEY), 4 * PROCESS_BYTES)
    worker = spawn_worker(Device())
    try:
        deadline = time.monotonic() + 120
        while len(_children(worker.proc.pid)) < 2:      # its candidate's and baseline's processes, forked
            assert worker.proc.poll() is None and time.monotonic() < deadline, "the worker did not fork its two"
            time.sleep(0.1)
        time.sleep(0.5)
        assert acct.held() == 0 and acct.standing() == 0
        write_frame(worker.job_w, {"key": "00" * 32, "env": {}})      # no GPU here: the job then fails
        frame = signed_reader(worker.res_r, bytes(32))()
        assert frame is not None and frame["type"] == "failure"       # its failure, once it stood
        raw = json.loads((lock_dir / f"{KEY}.memory").read_text() or "{}")    # as written, dead or alive
        assert raw[f"{worker.proc.pid}:standing"]["bytes"] == 3 * PROCESS_BYTES
    finally:
        worker.discard()


def _children(pid: int) -> list[int]:
    try:
        return [int(c) for t in os.listdir(f"/proc/{pid}/task")
                for c in open(f"/proc/{pid}/task/{t}/children").read().split()]
    except OSError:
        return []




def _answered(p, timeout: float) -> bool:
    """Whether the holder process said something within ``timeout`` seconds."""
    return bool(select.select([p.stdout], [], [], timeout)[0])


def test_an_exclusive_retry_waits_for_the_others_work_keeps_new_work_out_and_ends_with_its_reservation():
    """A piece that ran out of memory though the account had room is retried beside no other
    work (``MemoryAccount.exclusive``): it waits until another process's work is given back, and
    meanwhile work that would fit waits behind it and no evaluation starts; once in, nothing of
    another process fits beside it; it ends when this process's reservation does."""
    cap = 8 * GIB
    acct = MemoryAccount(open_account(KEY), cap, poll_s=0.01)
    acct.stand(1)
    other = hold(KEY, cap, GIB)                          # another evaluation's work in flight
    third = None
    try:
        with acct.reserve(GIB, "a config that ran out of memory"):
            entered = threading.Event()
            t = threading.Thread(target=lambda: (acct.exclusive(), entered.set()))
            t.start()
            assert not entered.wait(0.5)                 # the other's work is held
            third = hold(KEY, cap, GIB, wait=False)      # 3 of 8 GiB held: it would fit, but waits behind
            assert not _answered(third, 0.5)
            assert acct.blocking() is not None           # and no new evaluation starts
            release(other)
            assert entered.wait(30)
            t.join(30)
            assert acct.exclusives == 1 and acct.held() >= cap
            assert not _answered(third, 0.5)             # nothing of another process beside it
        assert held(third) == 1                          # the reservation ended, and the exclusive entry with it
        assert acct.blocking() is None
    finally:
        for p in (other, third):
            if p is not None:
                p.kill()
        acct.sit()


def test_two_exclusive_retries_holding_work_do_not_wait_for_each_other():
    """Two evaluations each holding work, each asking to run beside no other work: the one that
    asked first goes in (the later one's work does not keep it out: that one waits behind it),
    the later one when the first one's reservation ends."""
    cap = 8 * GIB
    acct = MemoryAccount(open_account(KEY), cap, poll_s=0.01)
    other = hold(KEY, cap, 2 * GIB)
    try:
        with acct.reserve(2 * GIB, "a config that ran out of memory"):
            entered = threading.Event()
            t = threading.Thread(target=lambda: (acct.exclusive(), entered.set()))
            t.start()
            assert not entered.wait(0.5)                 # the other's work is held, and it asks nothing yet
            go_exclusive(other)                          # now it asks too, after this one, holding its work
            assert entered.wait(30)
            t.join(30)
            assert not _answered(other, 0.5)             # it waits behind this one
        alone(other)                                     # this reservation ended: the other's turn
        release(other)
    finally:
        other.kill()


def test_the_threads_of_one_process_that_share_an_account_never_lose_the_others_entries():
    """``flock`` through one file description does not exclude the threads of the process holding it:
    threads that read and write one account at once must still never see it empty (and write that back,
    so that another evaluation's standing processes are forgotten)."""
    cap = 8 * PROCESS_BYTES
    other = hold(KEY, cap, 0, stand=2)                   # another evaluation's processes
    acct = MemoryAccount(open_account(KEY), cap, poll_s=0.001)
    seen: list[int] = []

    def churn():
        for _ in range(300):
            with acct.reserve(PROCESS_BYTES // 4, "a small config"):
                seen.append(acct.standing())
            acct.blocking(PROCESS_BYTES)

    threads = [threading.Thread(target=churn) for _ in range(4)]
    try:
        for t in threads:
            t.start()
        for t in threads:
            t.join(120)
        assert seen and min(seen) == 2 * PROCESS_BYTES and acct.standing() == 2 * PROCESS_BYTES
    finally:
        release(other)
        other.kill()
    assert acct.held() == 0

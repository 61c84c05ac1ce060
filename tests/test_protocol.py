"""The typed frames between the processes of an evaluation (arena.evaluation.protocol): every frame
survives its codec, and what the protocol does not allow is refused, above all a candidate
process that claims a pass or a fault that is not its own."""

from __future__ import annotations

import json

import pytest

from arena.evaluation.protocol import (
    CANDIDATE_REPLIES,
    CANDIDATE_STATUSES,
    REPORTS,
    REQUESTS,
    CandidateSpec,
    CorrectnessFrame,
    CorrectnessResult,
    FailReply,
    MapRequest,
    PerformanceFrame,
    PerformanceResult,
    ProtocolError,
    SessionReply,
    SetupRequest,
    StepSample,
    decode,
    dumps,
    encode,
    loads,
)
from arena.records import Status


def test_frames_round_trip_with_their_types():
    frames = [
        SetupRequest(candidate=CandidateSpec(language="triton", path="/k.py", entry="axpy", n_inputs=2, n_outputs=1,
                                             scalar_types=["int64", "float32"]), sandbox={"hide": ["/t"]}),
        MapRequest(slot=3, handle="{}", scalars=[2**40 + 1, 0.5]),
        CorrectnessFrame(split="seen", config="a", result=CorrectnessResult(
            status=Status.NAN_INF, seeds=[1, 2], where={"output": "y", "index": [3]}, max_abs_err=None)),
        PerformanceFrame(split="seen", config="a", result=PerformanceResult(
            status=Status.PASSED, spans_us={"baseline": [1.0, 2.5]}, timers={"baseline": "events"},
            incidental_share=0.02)),
        SessionReply(samples=[StepSample(span_us=3.0, events_us=4.0, activities={"k": 2.5})], warnings=["0: w"]),
        FailReply(status=Status.RUNTIME_ERROR, message="boom", context_lost=True),
    ]
    for f in frames:
        back = loads(dumps(f))
        assert back == f and type(back) is type(f)
    # integers stay integers (an int64 scalar past 2**53), statuses are the enum
    assert loads(dumps(frames[1])).scalars[0] == 2**40 + 1
    assert loads(dumps(frames[2])).result.status is Status.NAN_INF


def test_every_frame_type_is_in_exactly_one_direction():
    kinds = [set(REPORTS), set(REQUESTS), set(CANDIDATE_REPLIES)]
    for i, a in enumerate(kinds):
        for b in kinds[i + 1:]:
            assert not a & b


@pytest.mark.parametrize("raw, why", [
    ({"type": "nope"}, "unknown frame type"),
    ({"slot": 1}, "string 'type'"),
    ({"type": "map", "slot": 1, "handle": "h", "extra": 1}, "unknown fields"),
    ({"type": "map", "handle": "h"}, "missing field"),
    ({"type": "map", "slot": "1", "handle": "h"}, "expected an integer"),
    ({"type": "map", "slot": True, "handle": "h"}, "expected an integer"),
    ({"type": "map", "slot": 1, "handle": "h", "scalars": ["x"]}, "expected a number"),
])
def test_malformed_frames_are_refused(raw, why):
    with pytest.raises(ProtocolError, match=why):
        decode(raw)


@pytest.mark.parametrize("status", sorted({s.value for s in Status} - {s.value for s in CANDIDATE_STATUSES}))
def test_the_candidate_process_can_only_report_its_own_failures(status):
    """No pass, no timeout it was not given, no harness or task fault: those are the trusted
    process's to say."""
    raw = {"type": "fail", "status": status, "message": "m"}
    with pytest.raises(ProtocolError, match="may not carry"):
        decode(raw, CANDIDATE_REPLIES)


def test_a_candidate_process_frame_of_another_direction_is_refused():
    frame = encode(CorrectnessFrame(split="s", config="c", result=CorrectnessResult(status=Status.PASSED)))
    with pytest.raises(ProtocolError, match="not expected"):
        decode(frame, CANDIDATE_REPLIES)
    with pytest.raises(ProtocolError, match="not JSON"):
        loads(b"{not json", CANDIDATE_REPLIES)
    assert decode(json.loads(json.dumps(frame)), REPORTS).result.status is Status.PASSED


class _Channel:
    """A CandidatePeer whose process is a stand-in (``sleep``) and whose reply pipe the test
    writes, as a candidate's code could."""

    def __init__(self, tmp_path):
        import os
        import subprocess

        from arena.evaluation.processes import CandidatePeer
        from arena.evaluation.sandbox.confine import Plan

        self.peer = peer = CandidatePeer.__new__(CandidatePeer)
        self.proc = peer.proc = subprocess.Popen(["sleep", "60"])
        peer.req_w = os.open(os.devnull, os.O_WRONLY)
        peer.rep_r, self.w = os.pipe()
        peer.notice_r, self.notice_w = os.pipe()
        peer.cwd = tmp_path
        peer.listener, peer.role, peer.status_r = None, "candidate", os.open(os.devnull, os.O_RDONLY)
        peer.confine_error = ""
        peer.plan = Plan(role="candidate")            # not confined: a stand-in of its own
        CandidatePeer._channel(peer)

    def write(self, data: bytes) -> None:
        import os

        os.write(self.w, data)

    def close(self):
        import os

        self.proc.kill()
        self.proc.wait()
        for fd in (self.w, self.notice_w, self.peer.req_w, self.peer.rep_r, self.peer.notice_r, self.peer.status_r):
            try:
                os.close(fd)
            except OSError:
                pass


def _framed(obj) -> bytes:
    import struct

    body = json.dumps(obj).encode()
    return struct.pack("<I", len(body)) + body


def test_a_reply_is_read_whole_however_it_arrives_and_a_partial_one_cannot_hold_the_deadline_up(tmp_path):
    """The trusted process reads its candidate's replies without blocking: a frame that comes
    in pieces is put together; one the candidate leaves half-written ends at the deadline, as a
    timeout, and its process is stopped."""
    import time

    from arena.evaluation.processes import CandidateGone
    from arena.evaluation.protocol import AckReply, encode

    ch = _Channel(tmp_path)
    try:
        data = _framed({"nonce": 5, "frame": encode(AckReply())})
        ch.write(data[:3])
        assert ch.peer._next(0.05) is None          # not whole yet
        ch.write(data[3:10])
        assert ch.peer._next(0.05) is None
        ch.write(data[10:] + data)                  # the rest, and a second frame in the same read
        assert ch.peer.finish(5, time.monotonic() + 5) == AckReply()
        assert ch.peer.finish(5, time.monotonic() + 5) == AckReply()
        ch.write(data[:-1])                         # half a frame, and then nothing
        t0 = time.monotonic()
        with pytest.raises(CandidateGone) as gone:
            ch.peer.finish(5, time.monotonic() + 0.3)
        assert gone.value.why == "timeout" and 0.25 < time.monotonic() - t0 < 10
        assert ch.proc.poll() is not None           # killed
    finally:
        ch.close()


@pytest.mark.parametrize("data, why", [
    (b"\x05\x00\x00\x00{nope", "protocol"),                          # not JSON
    (_framed({"nonce": 6, "frame": {"type": "ack"}}), "protocol"),   # another request's nonce
    (b"", "died"),                                                   # the channel closed
])
def test_a_reply_that_breaks_the_channel_ends_the_candidate(data, why, tmp_path):
    import os
    import time

    from arena.evaluation.processes import CandidateGone

    ch = _Channel(tmp_path)
    try:
        if data:
            ch.write(data)
        else:
            os.close(ch.w)
        with pytest.raises(CandidateGone) as gone:
            ch.peer.finish(5, time.monotonic() + 5)
        assert gone.value.why == why
    finally:
        ch.close()


@pytest.mark.parametrize("ended", [True, False])
def test_a_buffer_the_candidate_cannot_take_says_how_its_process_ended(ended, tmp_path):
    """A call's buffers go to the candidate's process over its control socket. Where the send fails because
    that process has ended (killed for its memory, crashed), the candidate died, and the verdict says how
    (CRASHED, its signal), not that it broke the protocol (INTEGRITY_VIOLATION); a process alive that closed
    its end of the socket did break it."""
    import os
    import socket

    from arena.evaluation.processes import CandidateGone

    ch = _Channel(tmp_path)
    ch.peer.ctl, theirs = socket.socketpair(socket.AF_UNIX, socket.SOCK_STREAM)
    theirs.close()
    fd = os.open(os.devnull, os.O_RDONLY)
    try:
        if ended:
            ch.proc.kill()
        with pytest.raises(CandidateGone) as gone:
            ch.peer.send_fd(fd, 1)
        if ended:
            assert gone.value.why == "died" and "SIGKILL" in str(gone.value), gone.value
        else:
            assert gone.value.why == "protocol" and "could not be sent" in str(gone.value), gone.value
        assert ch.proc.poll() is not None
    finally:
        os.close(fd)
        ch.peer.ctl.close()
        ch.close()


def test_the_candidates_process_ended_for_its_memory_at_a_release_is_its_failure_whatever_comes_after():
    """Where the candidate's calls are replayed, the buffers it records on are mapped in its own process, under
    that process's handle. A release of them acknowledged, the harness checks what the process holds on the device
    and, past its allowance, kills it with a failure that says so. That failure is the candidate's, though the set's
    handle is not the evaluation's own (the replayed candidate's): and when the next buffers are sent to the process
    it killed, the verdict is that failure, not the process gone (CRASHED) or a protocol broken
    (INTEGRITY_VIOLATION)."""
    import contextlib
    import types

    from arena.evaluation.processes import CandidateGone
    from arena.evaluation.trusted.calls import CandidateHandle, SharedSet
    from arena.evaluation.trusted.correctness import GateFailure
    from arena.evaluation.trusted.process import Evaluation

    over = GateFailure(Status.RUNTIME_ERROR, "the candidate's process held 4.61 GiB of device memory after a release "
                                             "of buffers, past its allowance of 4.24 GiB", fatal=True)

    class Killed:
        """The candidate's process as the harness left it: each request fails as a process gone does."""

        def send_fd(self, fd, tag):
            raise CandidateGone("died", "the candidate process died (signal SIGKILL)")

        def request(self, frame, deadline, on_notice):
            raise CandidateGone("died", "the candidate process died (signal SIGKILL)")

    lock = types.SimpleNamespace(shared=lambda *a, **k: contextlib.nullcontext(), take_back=lambda: None,
                                 share_again=lambda: None)
    ev = types.SimpleNamespace(fatal=None, lost=False, gpu_lock=lock, deadline=0.0)
    process = CandidateHandle(ev, Killed())                                      # its process's handle
    ev.remote = types.SimpleNamespace(candidate=process, peer=process.peer)     # the replayed candidate

    def release(slots):
        raise over
    process.release = release                                        # type: ignore[method-assign]
    closed = []
    own = SharedSet(1, types.SimpleNamespace(close=lambda: closed.append(1)), remote=process)
    Evaluation.drop_slots(ev, [own])                                 # type: ignore[arg-type]
    assert ev.fatal is over and closed == [1]

    frame = types.SimpleNamespace(type="map", slot=2)
    with pytest.raises(GateFailure) as got:
        process.request(frame, object, fd=3)                         # the next set's buffers, to the process gone
    assert got.value is over and got.value.status is Status.RUNTIME_ERROR


def test_the_candidates_memory_allowance_does_not_shrink_under_what_a_larger_config_before_needed(axpy, monkeypatch):
    """A process's allocator keeps what an earlier, larger config needed (a launcher that allocates its outputs
    held 4.3 GiB at a 0.13 GiB config after configs of 0.5-0.8 GiB, on an H200, and was killed for it): the
    inputs and outputs the allowance counts are the most any config of the evaluation moved so far, as the
    reference's working memory is."""
    import arena.evaluation.memory as memory
    from arena.evaluation.trusted.process import Evaluation
    from arena.taskdef.shapes import tensor_bytes

    counted = []
    monkeypatch.setattr(memory, "allowance", lambda io, live, ref: counted.append(io) or io)   # the I/O it counts
    ev = Evaluation.__new__(Evaluation)
    ev.task, ev._io_bytes, ev._reference_bytes, ev.slots, ev.gpu = axpy, 0, {}, None, False
    small, _, large = axpy.configs("seen")

    def moved(c):
        env = axpy.env(c)
        return tensor_bytes(axpy, env, axpy.inputs) + tensor_bytes(axpy, env, axpy.outputs)

    assert moved(large) > moved(small)
    for c in (small, large, small):            # a small config after the large one
        ev.set_config(c)
        ev.allowance()
    assert counted == [moved(small), moved(large), moved(large)]


def _alone(code: str, *args: str, timeout: float = 300) -> str:
    """The last line ``code`` prints, run in a process of its own (forks, signals and threads of
    its own: a test runner's threads make its process unsound to fork); its failure fails the test."""
    import subprocess
    import sys

    out = subprocess.run([sys.executable, "-c", code, *args], capture_output=True, text=True, timeout=timeout)
    assert out.returncode == 0, out.stderr[-2000:]
    return out.stdout.strip().splitlines()[-1]


def test_a_worker_forks_both_of_its_processes(tmp_path):
    """The candidate's process and the replay process are both forks of the trusted one: the first
    one's channel starts no thread that would make the process unsound to fork again. In a
    process of its own, as a worker's trusted process is (a test runner's threads would make
    this one unforkable whatever the channel does)."""
    code = (
        "import sys\n"
        "from pathlib import Path\n"
        "from arena.evaluation.processes import CandidatePeer, child_env\n"
        "from arena.evaluation.protocol import OpenRequest\n"
        "d = Path(sys.argv[1])\n"
        "peers = [CandidatePeer('cpu', d / n, child_env(d / n, d / 'triton', interpret=True), fork=True, role=r)\n"
        "         for n, r in (('c', 'candidate'), ('r', 'replay'))]\n"
        "print([type(p.proc).__name__ for p in peers], [type(p.request(OpenRequest(kernel_cache=''))).__name__\n"
        "                                              for p in peers])\n"
        "for p in peers:\n"
        "    p.close()\n")
    assert _alone(code, str(tmp_path)) == "['_Forked', '_Forked'] ['AckReply', 'AckReply']"


def test_a_forked_process_that_dies_of_an_exception_says_which_even_without_its_stderr(tmp_path):
    """A forked candidate process ended by an exception writes its type and message to its log
    before it exits, even where no traceback can be printed (its ``sys.stdout`` and
    ``sys.stderr`` taken away, as candidate code can; a traceback that fails to print in turn):
    the death's message ("the candidate process died (exit code 1)" and the log's tail) names
    the cause. It said nothing before. In a process of its own."""
    code = (
        "import sys, types\n"
        "from pathlib import Path\n"
        "import arena.evaluation.processes as p\n"
        "m = types.ModuleType('lost_for_words')\n"
        "def main(argv):\n"
        "    sys.stderr = sys.stdout = None\n"
        "    raise RuntimeError('lost for words')\n"
        "m.main = main\n"
        "sys.modules['lost_for_words'] = m\n"
        "p.SERVERS['candidate'] = 'lost_for_words'\n"
        "print(p._fork_candidate([], (), Path(sys.argv[1]), {}).wait(timeout=60))\n")
    assert _alone(code, str(tmp_path)) == "1"
    assert "RuntimeError: lost for words" in (tmp_path / "candidate.log").read_text()


def test_after_a_notice_the_candidate_process_goes_on_only_when_the_lock_is_as_it_asked(tmp_path, monkeypatch):
    """A compile lets the GPU's lock go; the process that compiled must not launch its next
    kernels until the trusted process has taken the lock back (else they run beside another
    evaluation's timed round): the trusted side answers the end of a compile with a
    ResumeRequest, after its notice handler (which takes the lock back) has returned, and
    the candidate's compile waits for it."""
    import os
    import time

    import triton.compiler
    import triton.compiler.compiler

    from arena.evaluation.candidate.process import CandidateProcess
    from arena.evaluation.protocol import AckReply, CompilingNotice, ResumeRequest, TuningNotice, decode, encode

    # the trusted side
    ch = _Channel(tmp_path)
    req_r, ch.peer.req_w = os.pipe()
    try:
        order: list[str] = []
        notices = [CompilingNotice(on=True), CompilingNotice(on=False), TuningNotice(on=True), TuningNotice(on=False)]
        ch.write(b"".join(_framed({"nonce": 7, "frame": encode(n)}) for n in notices)
                 + _framed({"nonce": 7, "frame": encode(AckReply())}))

        from arena.evaluation.channel import read_frame

        answered = [0]

        def drain():
            while _readable(req_r):
                raw = read_frame(req_r)
                assert raw["nonce"] == 7 and decode(raw["frame"], (ResumeRequest,)) == ResumeRequest()
                answered[0] += 1

        def on_notice(n):
            order.append(n)
            drain()
            assert answered[0] == len(order) - 1, "a notice is answered once the lock is as it asks, not before"

        assert ch.peer.finish(7, time.monotonic() + 5, on_notice) == AckReply()
        assert order == notices
        drain()
        assert answered[0] == len(notices), "every notice is answered, once"
    finally:
        os.close(req_r)
        ch.close()

    # the candidate's side
    events: list = []

    def fake_compile(src, *args, **kwargs):
        events.append("compiling")
        return "kernel"

    monkeypatch.setattr(triton.compiler, "compile", fake_compile)
    monkeypatch.setattr(triton.compiler.compiler, "compile", fake_compile)
    proc = CandidateProcess(send=events.append, notice_fd=None, mode="cpu", resume=lambda: events.append("resumed"))
    proc.watch_compiles()
    assert triton.compiler.compile("src") == "kernel"
    assert events == [CompilingNotice(on=True), "resumed", "compiling", CompilingNotice(on=False), "resumed"]


def _readable(fd: int) -> bool:
    import select

    return bool(select.select([fd], [], [], 0.05)[0])


def test_an_autotuner_times_its_variants_only_once_the_gpu_is_held_alone():
    """Triton's autotuner times each variant (``_bench``) on its first launch of a key: the
    process says so before the first timing and waits for the answer, says when the launch
    is over, and says nothing for a key it has tuned (a stand-in with the autotuner's shape:
    ``run`` times the variants of a new key, then launches the fastest)."""
    from arena.evaluation.protocol import TuningNotice
    from arena.evaluation.server import watch_tuning

    events: list = []

    class Tuner:
        def __init__(self, inner=None):
            self.cache = {}
            self.inner = inner       # another autotuner this one's launch runs

        def _bench(self, x, config):
            events.append(f"time {config}")
            return {"a": 2.0, "b": 1.0}[config]

        def run(self, x):
            if self.inner is not None:
                return self.inner.run(x) + Tuner(None).run(x)
            if x not in self.cache:
                self.cache[x] = min("ab", key=lambda c: self._bench(x, config=c))
            events.append(f"launch {self.cache[x]}")
            return self.cache[x]

    watch_tuning(Tuner, events.append, lambda: events.append("resumed"))
    t = Tuner()
    assert t.run(1) == "b"
    assert events == [TuningNotice(on=True), "resumed", "time a", "time b", "launch b", TuningNotice(on=False),
                      "resumed"]
    events.clear()
    assert t.run(1) == "b"
    assert events == ["launch b"], "a key already tuned is launched without a word"

    # an autotuner whose launch runs others, each with a new key: one notice each way, around all
    events.clear()
    assert Tuner(Tuner()).run(2) == "bb"
    assert events.count(TuningNotice(on=True)) == 1 and events.count(TuningNotice(on=False)) == 1
    assert events[:2] == [TuningNotice(on=True), "resumed"] and events[-2:] == [TuningNotice(on=False), "resumed"]


def test_a_request_that_runs_no_candidate_code_runs_no_finalizer_of_the_candidates():
    """Begin, end and kernels requests are made outside the GPU's lock (``HARNESS_ONLY``): no
    candidate code may run while they are served. Garbage the candidate left, whose finalizer
    could launch work, is not collected meanwhile, however soon the collector would run: it
    runs only inside candidate code (or where the harness collects, inside a section)."""
    import gc
    import signal

    from arena.evaluation.candidate.process import CandidateProcess
    from arena.evaluation.protocol import HARNESS_ONLY, KernelsReply, KernelsRequest
    from arena.evaluation.server import between_requests, candidate_code

    ran: list[str] = []

    class Left:
        def __del__(self):
            ran.append("finalizer")

    proc = CandidateProcess(send=lambda f: None, notice_fd=None, mode="cpu")
    req = KernelsRequest()
    assert isinstance(req, HARNESS_ONLY)
    threshold, mask = gc.get_threshold(), signal.pthread_sigmask(signal.SIG_BLOCK, [])
    gc.collect()
    try:
        between_requests()           # as the candidate process's main does
        gc.set_threshold(1)          # the collector would run at the next allocation
        a, b = Left(), Left()
        a.other, b.other = b, a
        del a, b
        assert proc.handle(req) == KernelsReply(names=[])
        assert ran == [], "a finalizer of the candidate's ran while a harness-only request was served"
        assert signal.SIGALRM in signal.pthread_sigmask(signal.SIG_BLOCK, [])
        with candidate_code():
            assert signal.SIGALRM not in signal.pthread_sigmask(signal.SIG_BLOCK, [])
            [object() for _ in range(3)]
        assert ran == ["finalizer", "finalizer"], "inside candidate code the collector runs"
        assert not gc.isenabled() and signal.SIGALRM in signal.pthread_sigmask(signal.SIG_BLOCK, [])
    finally:
        gc.set_threshold(*threshold)
        gc.enable()
        signal.pthread_sigmask(signal.SIG_SETMASK, mask)


TIED_FINALIZER = """
import gc, weakref
import torch
from arena.evaluation.buffers import Mapped, plan
from arena.evaluation.candidate.process import CandidateProcess
from arena.evaluation.server import between_requests

proc = CandidateProcess(send=lambda f: None, notice_fd=None, mode="cpu")
layout, _, size = plan([(torch.float32, (4,)), (torch.float32, (4,))])
mapped = Mapped(torch.zeros(size, dtype=torch.uint8), layout)
ins, outs = mapped.views()[:1], mapped.views()[1:]
proc.slots[1] = (ins, outs, [], mapped, [])
del ins, outs
ran = []

def side(ins, outs, scalars, copy_out=False):  # the candidate's call: on the first, a finalizer tied to its input
    if not ran:
        weakref.finalize(ins[0], lambda: ran.append("inside" if gc.isenabled() else "in the harness's code"))
        ran.append("tied")
    outs[0].copy_(ins[0])

proc.side = side
between_requests()                 # as the candidate process's main does: the collector off outside its code
for _ in range(3):                 # three calls on one slot, as call() makes them: new tensors, then the call
    proc.renew(1)
    proc.invoke(1, copy_out=False)
print(ran)
"""


SIGNALS_BETWEEN_REQUESTS = """
import signal, threading, time
from arena.evaluation.candidate.process import CandidateProcess
from arena.evaluation.protocol import KernelsRequest
from arena.evaluation.server import between_requests, candidate_code

proc = CandidateProcess(send=lambda f: None, notice_fd=None, mode="cpu")
ran = []
handler = lambda signum, frame: ran.append(signum)
between_requests()                       # as the candidate process's main does
with candidate_code():                   # the candidate's code: a timer, its handler, and a thread
    signal.signal(signal.SIGALRM, handler)  # started while signals are let through (a runtime's started
    threading.Thread(target=threading.Event().wait, daemon=True).start()   # inside a call takes them too)
    signal.setitimer(signal.ITIMER_REAL, 0.002, 0.002)
def harness(seconds):                   # the harness's own code, waiting in system calls as it does (a
    start = time.monotonic()            # wait checks for signals as it ends)
    while time.monotonic() - start < seconds:
        time.sleep(0.0005)
harness(0.3)                            # what the request does after the candidate's code, before its reply
after_code = len(ran)
proc.answer(KernelsRequest())           # the request ends, its reply is made
harness(0.3)                            # until the next request
outside = len(ran)
with candidate_code():
    inside, back = len(ran), signal.getsignal(signal.SIGALRM) is handler
signal.setitimer(signal.ITIMER_REAL, 0, 0)
print(after_code, outside, inside, back)
"""


def test_a_finalizer_the_candidate_ties_to_a_calls_tensors_runs_in_its_next_call():
    """Each call gets new tensor objects over its slot's buffers; the last call's are let go
    inside the next call's code, not as they are replaced: a finalizer the candidate tied to
    them (``weakref.finalize``, a ``__del__`` of an attribute) would otherwise run in the
    harness's code just before a timed call, work done outside the time that counts."""
    assert _alone(TIED_FINALIZER) == "['tied', 'inside']"


def test_no_signal_handler_of_the_candidates_runs_in_the_harnesss_code_between_requests():
    """The main thread holds signals outside candidate code, but CPython runs a Python handler in
    the main thread whichever thread took the signal: a thread started while the candidate's
    code ran (with signals let through) takes its timer's signals, and its handler ran in the
    harness's code between requests (about 150 times in 0.3 s here), where it could launch work beside
    another side's timed calls. As its code returns (and after each request) the candidate's
    handlers are set aside for one that notes the signal; as its code next begins they are back and what came is raised
    again, so the handler runs there. In a process of its own."""
    after_code, outside, inside, back = _alone(SIGNALS_BETWEEN_REQUESTS).split()
    assert after_code == "0", f"the candidate's handler ran {after_code} times in its request's harness code"
    assert outside == "0", f"the candidate's handler ran {outside} times in the harness's code"
    assert int(inside) >= 1 and back == "True"   # the signal that came is delivered in the candidate's code


def test_every_reply_waits_for_the_device_and_a_failure_there_is_told_as_whose_it_is():
    """The candidate process synchronizes the device before each reply (work launched while a
    request was served is over before the trusted process goes on). A device error there is
    the candidate's once its code is loaded (its context lost); before that, the harness's."""
    from types import SimpleNamespace

    from arena.evaluation.candidate.process import CandidateProcess
    from arena.evaluation.protocol import AckReply, FailReply, SetupFailReply

    synced: list[int] = []
    broken = [False]

    def synchronize():
        synced.append(1)
        if broken[0]:
            raise RuntimeError("CUDA error: an illegal memory access was encountered")

    proc = CandidateProcess(send=lambda f: None, notice_fd=None, mode="cpu")
    proc.gpu = True
    proc.torch = SimpleNamespace(cuda=SimpleNamespace(is_initialized=lambda: True, synchronize=synchronize))
    assert proc.settle(AckReply()) == AckReply() and synced == [1]
    broken[0] = True
    before = proc.settle(AckReply())
    assert isinstance(before, SetupFailReply) and "illegal memory access" in before.message
    proc.side = object()           # the candidate's code loaded
    after = proc.settle(AckReply())
    assert isinstance(after, FailReply) and after.status is Status.RUNTIME_ERROR and after.context_lost
    own = proc.settle(FailReply(status=Status.INCORRECT_SHAPE, message="its own"))
    assert own.status is Status.INCORRECT_SHAPE and own.context_lost
    assert len(synced) == 4


def test_the_job_is_a_typed_frame_checked_field_by_field():
    """The parent's job crosses as a frame like every other: what the trusted process reads is
    decoded field by field, an unknown field or a wrong kind refused with its name."""
    from arena.evaluation.protocol import JobFrame, ProtocolError, decode, encode

    job = JobFrame(task_dir="/t", candidate={"language": "triton", "path": "/k.py"}, device={"kind": "cpu"},
                   splits=[{"split": "seen", "configs": []}], timeouts={"load_s": 60.0}, key="ab", seeds=[1, 2])
    back = decode(encode(job), (JobFrame,))
    assert back == job and back.replay and back.baseline is None
    raw = encode(job)
    with pytest.raises(ProtocolError, match="unknown fields"):
        decode({**raw, "gpu_locks": [1, 2]}, (JobFrame,))
    with pytest.raises(ProtocolError, match="seeds"):
        decode({**raw, "seeds": ["1"]}, (JobFrame,))
    with pytest.raises(ProtocolError, match="timing"):
        decode({**raw, "timing": "yes"}, (JobFrame,))

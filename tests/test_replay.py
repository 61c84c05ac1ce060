"""Record and replay (arena.evaluation.record): a record crosses as typed data, and the replay's checks
refuse what a record cannot mean. The kernels are compiled for an H100 from their IR on the
cpu (Triton's compiler needs no device); the replay itself runs on a GPU
(scripts/gpu_replay_smoke.sh, scripts/gpu_exploits.py)."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from arena.evaluation.protocol import (
    CANDIDATE_REPLIES,
    CalledReply,
    CallRecord,
    KernelArg,
    KernelCode,
    Place,
    ProtocolError,
    RecordedOp,
    View,
    decode,
    encode,
)
from arena.evaluation.record import kernel_id

triton = pytest.importorskip("triton")


def _kernel_code(num_warps: int = 4) -> KernelCode:
    import triton.language as tl
    from triton.backends.compiler import GPUTarget
    from triton.compiler import ASTSource

    @triton.jit
    def scale_rows(x, y, n, scale, BLOCK: tl.constexpr):
        o = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
        m = o < n
        tl.store(y + o, tl.load(x + o, mask=m) * scale, mask=m)

    src = ASTSource(scale_rows, signature={"x": "*fp32", "y": "*fp32", "n": "i32", "scale": "fp32",
                                           "BLOCK": "constexpr"}, constexprs={"BLOCK": 256})
    compiled = triton.compile(src, target=GPUTarget("cuda", 90, 32), options={"num_warps": num_warps})
    options = {"num_warps": num_warps, "num_stages": 3}
    ttir = compiled.asm["ttir"]
    return KernelCode(id=kernel_id(ttir, options), name="scale_rows", ttir=ttir, options=options)


@pytest.fixture(scope="module")
def code() -> KernelCode:
    return _kernel_code()


@pytest.fixture()
def player(tmp_path, code):
    from triton.backends.compiler import GPUTarget

    from arena.evaluation.replay.player import Player

    p = Player(tmp_path, target=GPUTarget("cuda", 90, 32))
    p.load([code])
    return p


REGIONS = [(1 << 20, 4096), (1 << 21, 4096)]        # the call's input and output: 1024 floats each


def _launch(code: KernelCode, **over) -> RecordedOp:
    op = RecordedOp(kind="launch", kernel=code.id, grid=[4, 1, 1],
                    args=[KernelArg(place=Place("buffer", 0, 0)), KernelArg(place=Place("buffer", 1, 0)),
                          KernelArg(value=1024), KernelArg(value=2.0)])
    for k, v in over.items():
        setattr(op, k, v)
    return op


def test_a_pointer_is_the_region_it_points_into_before_one_it_points_just_past():
    """``locate`` (both recorders' places): the Triton recorder took a layernorm's ``y = torch.empty_like(x)``,
    which the caching allocator put right after the output buffer, for the output's end (offset = its size), and
    the replay's kernel wrote past its output on a GPU (a quarter of a case's elements wrong, or an illegal
    address). A pointer with no extent is the region it points into; one it only ends is the fallback."""
    from arena.evaluation.record import locate

    regions = [("out", 1000, 256), ("y", 1256, 512), ("mean", 1768, 64)]
    assert locate(1256, 0, regions) == ("y", 0)
    assert locate(1768, 0, regions) == ("mean", 0)
    assert locate(1300, 16, regions) == ("y", 44)
    assert locate(1832, 0, regions) == ("mean", 64)            # the end of the last: nothing begins there
    assert locate(1760, 8, regions) == ("y", 504) and locate(1760, 9, regions) is None
    assert locate(999, 0, regions) is None


def test_a_triton_calls_pointer_into_memory_it_let_go_and_took_again_is_the_newer_allocations():
    """Torch's caching allocator gives a call's next allocation the memory of one it let go (a temporary freed,
    another made): the recorder's dispatch mode sees no frees, and took the pointer for the older allocation,
    whose replay copy is not the one the call's later copy reads. The newest allocation holding it is the one."""
    from arena.evaluation.recorder import _Call

    call = object.__new__(_Call)
    call.buffers = [(1000, 256)]
    call.scratch = [(4096, 512), (8192, 64), (4096, 1024)]      # the first let go, its memory taken by the third
    call.live, call.kept = [], {}
    assert call.place(4096) == Place(space="scratch", index=2, offset=0)
    assert call.place(4096 + 600, 16) == Place(space="scratch", index=2, offset=600)
    assert call.place(8192) == Place(space="scratch", index=1, offset=0)
    assert call.place(1256) == Place(space="buffer", index=0, offset=256)
    assert call.place(99) == Place(space="unknown", index=-1, offset=99)


def test_a_triton_calls_pointer_into_memory_the_candidate_keeps_is_kept_memory_of_that_block():
    """vLLM's ``fused_append_shared_experts`` writes into buffers it allocated in an earlier call and keeps (module
    globals): its launch was refused ("memory kept between calls is not replayed"). A pointer outside the call's
    buffers and allocations that lies in a block torch's allocator holds for a live tensor is kept memory, named by
    the block's address, with the block's size (read once a call); one in no live block stays unknown (refused)."""
    import types

    from arena.evaluation.recorder import _Call

    snapshot = [{"address": 1 << 30, "blocks": [
        {"address": 1 << 30, "size": 2048, "state": "active_allocated"},
        {"address": (1 << 30) + 2048, "size": 4096, "state": "inactive"},
        {"address": (1 << 30) + 6144, "size": 512, "state": "active_allocated"}]}]
    reads = []
    cuda = types.SimpleNamespace(memory_snapshot=lambda: reads.append(1) or snapshot)
    rec = types.SimpleNamespace(torch=types.SimpleNamespace(cuda=cuda), kept_serials={})

    def call_of() -> _Call:
        call = object.__new__(_Call)
        call.rec = rec
        call.buffers, call.scratch, call.live, call.kept = [(1000, 256)], [], None, {}
        call.ops, call.kernels, call.refused = [], [], ""
        return call

    call = call_of()
    assert call.place((1 << 30) + 100) == Place(space="kept", index=1, offset=100)
    assert call.place((1 << 30) + 6144 + 8, 8) == Place(space="kept", index=2, offset=8)
    assert call.place((1 << 30) + 3000).space == "unknown"         # a free block: no tensor holds it
    assert call.kept == {1: 2048, 2: 512} and len(reads) == 1
    assert [(k.serial, k.nbytes) for k in call.record().kept] == [(1, 2048), (2, 512)]
    # a later call: the same block is the same memory; the block let go and taken again at its address with
    # another size (the candidate's buffer made again smaller) is other memory, not the first grown or shrunk
    assert call_of().place(1 << 30) == Place(space="kept", index=1, offset=0)
    snapshot[0]["blocks"][0]["size"] = 1024
    again = call_of()
    assert again.place(1 << 30) == Place(space="kept", index=3, offset=0) and again.kept == {3: 1024}


def test_kept_memory_a_triton_record_declares_is_checked_as_a_hip_records_is(player, code):
    """The replay process holds memory for what the candidate keeps (the same check as a HIP candidate's, one
    function): a launch into declared kept memory passes; the same serial with another size, or past what a
    candidate may keep, is refused."""
    from arena.evaluation.protocol import KeptMemory
    from arena.evaluation.replay.player import Refused

    into = _launch(code, args=[KernelArg(place=Place("kept", 7, 0)), *_launch(code).args[1:]])
    player.check(CallRecord(ops=[into], kept=[KeptMemory(7, 4096)]), REGIONS)
    player.check(CallRecord(ops=[into], kept=[KeptMemory(7, 4096)]), REGIONS)
    with pytest.raises(Refused, match="kept memory 7 of 8192 bytes was 4096 before"):
        player.check(CallRecord(ops=[into], kept=[KeptMemory(7, 8192)]), REGIONS)
    with pytest.raises(Refused, match="past the"):
        player.check(CallRecord(kept=[KeptMemory(8, 2**40)]), REGIONS)
    past = _launch(code, args=[KernelArg(place=Place("kept", 7, 4097)), *_launch(code).args[1:]])
    with pytest.raises(Refused, match="bytes 4097..4097 of a kept of 4096"):
        player.check(CallRecord(ops=[past], kept=[KeptMemory(7, 4096)]), REGIONS)


def test_a_device_tensor_made_from_one_host_value_is_a_fill_and_from_several_is_refused():
    """``torch.tensor(1.0, device="cuda")`` in a launcher (vLLM's cache kernels' scales) reaches the dispatch mode
    as ``lift_fresh`` of a device tensor whose data came from the host, which a replay does not carry: one value
    throughout is recorded as memory the call allocates, filled with it; several are refused (the pointer was
    "unknown memory" before)."""
    import torch

    from arena.evaluation.recorder import _constant

    assert _constant(torch.tensor(1.0)) == 1.0 and _constant(torch.full((3, 2), 7, dtype=torch.int32)) == 7
    assert _constant(torch.tensor([1.0, 2.0])) is None and _constant(torch.empty(0)) is None


def test_a_record_crosses_as_typed_data(code):
    rec = CallRecord(
        ops=[
            RecordedOp(kind="alloc", nbytes=64),
            RecordedOp(kind="fill", dst=View(Place("scratch", 0, 0), "float32", [16], [1]), value=float("-inf")),
            _launch(code),
        ],
        kernels=[code],
    )
    back = decode(encode(CalledReply(host_us=3.0, record=rec)), CANDIDATE_REPLIES)
    assert back.record.ops[2].args[3].value == 2.0 and back.record.ops[2].args[2].value == 1024
    assert back.record.ops[1].value == float("-inf") and back.record.kernels[0].id == code.id
    bad = encode(CalledReply(record=rec))
    bad["record"]["ops"][0]["nbytes"] = "64"
    with pytest.raises(ProtocolError):
        decode(bad, CANDIDATE_REPLIES)


def test_the_recorded_kernel_compiles_here_and_a_good_record_passes(player, code):
    assert player.params(code.id) == ["*f32", "*f32", "i32", "f32"]
    player.check(CallRecord(ops=[_launch(code)]), REGIONS)


@pytest.mark.parametrize(
    "op, words",
    [
        ("foreign", "did not compile from the record's IR"),
        ("unknown_memory", "neither the call's buffers, memory the call allocated nor memory the candidate keeps"),
        ("undeclared_kept", "kept 7 does not exist"),
        ("past_buffer", "bytes 4100..4100 of a buffer of 4096"),
        ("grid", "out of bounds"),
        ("float_for_int", "not a value of type i32"),
        ("arity", "3 arguments for 4 parameters"),
        ("no_scratch", "scratch 0 does not exist"),
        ("copy_past", "its source: bytes 0..8192"),
        ("fill_dtype", "element type 'complex64'"),
        ("stream", "stream 8 (a call's work runs on 8 streams at most)"),
        ("wait_first", "waits for event 0, which no earlier operation recorded"),
        ("event", "event 256 (a call records 256 events at most)"),
    ],
)
def test_a_record_that_cannot_mean_a_call_is_refused(player, code, op, words):
    from arena.evaluation.replay.player import Refused

    ops = {
        "foreign": [_launch(code, kernel="0" * 64)],
        "unknown_memory": [
            _launch(code, args=[KernelArg(place=Place("unknown", -1, 0x7F00_0000_0000)), *_launch(code).args[1:]])
        ],
        "undeclared_kept": [_launch(code, args=[KernelArg(place=Place("kept", 7, 0)), *_launch(code).args[1:]])],
        "past_buffer": [_launch(code, args=[KernelArg(place=Place("buffer", 0, 4100)), *_launch(code).args[1:]])],
        "grid": [_launch(code, grid=[1, 70000, 1])],
        "float_for_int": [_launch(code, args=[*_launch(code).args[:2], KernelArg(value=1.5), KernelArg(value=2.0)])],
        "arity": [_launch(code, args=_launch(code).args[:3])],
        "no_scratch": [_launch(code, args=[KernelArg(place=Place("scratch", 0, 0)), *_launch(code).args[1:]])],
        "copy_past": [
            RecordedOp(
                kind="copy",
                dst=View(Place("buffer", 1, 0), "float32", [1024], [1]),
                src=View(Place("buffer", 0, 0), "float32", [2048], [1]),
            )
        ],
        "fill_dtype": [RecordedOp(kind="fill", dst=View(Place("buffer", 1, 0), "complex64", [4], [1]), value=0)],
        "stream": [_launch(code, stream=8)],
        "wait_first": [RecordedOp(kind="wait", stream=1, event=0), RecordedOp(kind="event", stream=0, event=0)],
        "event": [RecordedOp(kind="event", stream=0, event=256)],
    }[op]
    with pytest.raises(Refused, match=words.replace("(", r"\(").replace(")", r"\)").replace(".", r"\.")):
        player.check(CallRecord(ops=ops), REGIONS)


def test_work_on_several_streams_with_events_between_them_passes_the_checks(player, code):
    """A call that forks work onto another stream and joins it back: its launches on both
    streams and the events between them are a record the replay takes."""
    player.check(CallRecord(ops=[
        RecordedOp(kind="event", stream=0, event=0),
        RecordedOp(kind="wait", stream=1, event=0),
        _launch(code, stream=1),
        _launch(code, stream=0),
        RecordedOp(kind="event", stream=1, event=1),
        RecordedOp(kind="wait", stream=0, event=1),
    ]), REGIONS)


def test_a_million_launches_are_refused(player, code):
    from arena.evaluation.record import MAX_OPS
    from arena.evaluation.replay.player import Refused

    with pytest.raises(Refused, match=f"more than {MAX_OPS}"):
        player.check(CallRecord(ops=[_launch(code)] * 10**6), REGIONS)


def test_what_the_recorder_could_not_record_is_the_refusal(player):
    from arena.evaluation.replay.player import Refused

    with pytest.raises(Refused, match="the torch operator mm"):
        player.check(CallRecord(refused="the torch operator mm inside the call"), REGIONS)


@pytest.mark.parametrize(
    "change, words",
    [
        ("id", "not the hash of its code"),
        ("option", "'ir_override' is not one a record may set"),
        ("option_kind", "'num_warps' is '4'"),
        ("libpath", "links a library of its own"),
        ("name", "public functions are"),
    ],
)
def test_kernel_code_is_checked_before_it_is_compiled(tmp_path, code, change, words):
    from triton.backends.compiler import GPUTarget

    from arena.evaluation.replay.player import Player, Refused

    ttir, options, name = code.ttir, dict(code.options), code.name
    if change == "option":
        options["ir_override"] = "/tmp/other.ttgir"
    elif change == "option_kind":
        options["num_warps"] = "4"
    elif change == "libpath":
        ttir = (
            ttir.replace('libpath = ""', 'libpath = "/tmp/evil.bc"')
            if 'libpath = ""' in ttir
            else ttir + '\n// tt.extern_elementwise {libname = "x", libpath = "/tmp/evil.bc", symbol = "f"}'
        )
    elif change == "name":
        name = "cublas_gemm_kernel"
    bad = KernelCode(
        id=code.id if change == "id" else kernel_id(ttir, options),
        name=name,
        ttir=ttir + ("\n" if change == "id" else ""),
        options=options,
    )
    with pytest.raises(Refused, match=words):
        Player(tmp_path, target=GPUTarget("cuda", 90, 32)).load([bad])


def test_a_process_left_running_after_a_reply_is_found(tmp_path):
    """The candidate's process may start processes inside a request (a compiler); any still
    running after its reply is found (arena.evaluation.trusted.calls refuses the candidate for it)."""
    from arena.evaluation.sandbox.confine import strays

    code = (
        "import subprocess, sys, time; subprocess.Popen([sys.executable, '-c', 'import time; time.sleep(60)']); "
        "print('ready', flush=True); time.sleep(60)"
    )
    proc = subprocess.Popen([sys.executable, "-c", code], stdout=subprocess.PIPE, text=True)
    try:
        assert proc.stdout.readline().strip() == "ready"
        deadline = time.monotonic() + 10
        found = strays(proc.pid)
        while not found and time.monotonic() < deadline:
            time.sleep(0.05)
            found = strays(proc.pid)
        assert len(found) == 1 and "python" in found[0]
        child = int(found[0].split()[0])
        os.kill(child, 9)
        deadline = time.monotonic() + 10
        while strays(proc.pid) and time.monotonic() < deadline:
            time.sleep(0.05)
        assert strays(proc.pid) == []  # killed: a zombie until reaped, which runs nothing
    finally:
        proc.kill()
        proc.wait()


def test_a_record_is_made_on_its_sets_structure_and_on_other_values():
    """The inputs a call is recorded on: the set's own integer inputs (what launches may
    follow), every other input of another draw (so a record cannot carry the set's answer)."""
    import torch

    from arena.check.inputs import make_inputs, record_inputs
    from arena.evaluation.sides import import_file
    from arena.taskdef.loader import load_task
    from tests.exploits.catalogue import AXPY, VARLEN

    for path, structural in ((VARLEN, {"cu_seqlens"}), (AXPY, set())):
        task = load_task(path)
        env = task.env(task.configs("seen")[0])
        ref = import_file(task.reference_path, f"arena_test_reference_{task.id.replace('/', '_')}")
        mine, other = make_inputs(task, env, 11, "cpu", ref), make_inputs(task, env, 22, "cpu", ref)
        got = record_inputs(task, env, 11, 22, "cpu", ref)
        for name, t in got.items():
            want = mine[name] if name in structural else other[name]
            assert torch.equal(t, want), name
            if name not in structural:
                assert not torch.equal(t, mine[name]), name


class _Peer:
    def __init__(self):
        self.stopped = False
        self.events: list[bool] = []

    def pause(self, stop):
        self.stopped = stop
        self.events.append(stop)
        return ""


class _Handle:
    """A process's handle that answers as a sound one does (stands in for the candidate's and the
    replay's processes, which need a GPU)."""

    def __init__(self):
        self.peer = _Peer()
        self.frames: list = []
        self.stopped_at_call: list[bool] = []
        self.refused = ""          # what the records it makes say could not be recorded
        self.kept: list = []       # the memory kept between calls its records point into
        self.failure = None        # a GateFailure its requests raise

    def request(self, frame, expect):

        self.frames.append(frame)
        self.stopped_at_call.append(self.peer.stopped)
        if self.failure is not None:
            raise self.failure
        if expect is CalledReply:
            return CalledReply(host_us=1.0, record=CallRecord(ops=[], refused=self.refused, kept=self.kept))
        return expect()

    def map_set(self, shared, scalars, replayed=False):
        self.frames.append(("map", shared.id, replayed))

    def call(self, slot, **kw):
        self.frames.append(("call", slot))
        return 1.0

    def release(self, slots):
        pass


class _Ev:
    def __init__(self, structural: bool):
        import random

        from arena.evaluation.gpulock import GpuLock

        self.structural = structural
        self.config_key = "c1"
        self.gpu_lock = GpuLock(None, None)  # no lock to take: one evaluation
        self.filled: list[int] = []
        self.rng = random.Random(0)
        self.local_bytes = 0

    def working_allowance(self, measure=False):
        return 1 << 30

    def structural_inputs(self):
        return self.structural

    def fill_for_record(self, seed, ins):
        self.filled.append(seed)

    def sync(self):
        pass

    def new_slot(self, remote):
        from arena.evaluation.trusted.calls import SharedSet

        return SharedSet(999, None, [], [], remote)

    def drop_slots(self, sets):
        pass


def _replayed(structural: bool):
    from arena.evaluation.trusted.calls import ReplayedCandidate, SharedSet

    ev, cand, rep = _Ev(structural), _Handle(), _Handle()
    rc = ReplayedCandidate(ev, cand, rep)
    for slot in range(1, 5):
        rc.sets[slot] = SharedSet(slot, None, [], [], rc)
    return ev, cand, rep, rc


def _replays(rep):
    from arena.evaluation.protocol import ReplayRequest

    return [f.slot for f in rep.frames if isinstance(f, ReplayRequest)]


def test_one_record_serves_every_set_of_a_config_without_structural_inputs():
    ev, cand, rep, rc = _replayed(False)
    for seed, slot in enumerate([1, 2, 3, 4, 1, 2]):
        rc.record_for(slot, 100 + seed)
    assert len(cand.frames) == 1 and ev.filled == [100]  # one call recorded, for the whole config
    assert _replays(rep) == [1, 2, 3, 4]  # each slot given it once
    ev.config_key = "c2"  # another config: its own record
    rc.call(1, seed=7)
    assert len(cand.frames) == 2 and _replays(rep)[-1] == 1 and rep.frames[-1] == ("call", 1)


def test_a_call_is_recorded_on_buffers_mapped_with_its_own_configs_scalars():
    """Two configs of the same shapes that differ in a scalar (a sequence length of 1,048,577 and one of 1,048,580
    make the same number of blocks): the candidate's own buffers, mapped in its process with a config's scalars,
    are made again for the second config, so its call is recorded with its own scalars, not the first config's
    (whose record a replay then ran: a correct kernel failed)."""
    ev, cand, rep, rc = _replayed(False)
    made: list[str] = []
    real = ev.new_slot

    def new_slot(remote):
        made.append(ev.config_key)
        return real(remote)

    ev.new_slot = new_slot
    rc.record_for(1, 100)
    rc.record_for(2, 101)          # the same config: its buffers and record serve
    assert made == ["c1"]
    ev.config_key = "c2"           # the same shapes (the fake's sets have none), another scalar
    rc.record_for(1, 102)
    assert made == ["c1", "c2"] and len(cand.frames) == 2


def _sent(rep):
    from arena.evaluation.protocol import ReplayRequest

    return [(f.slot, f.ref, f.record is not None) for f in rep.frames if isinstance(f, ReplayRequest)]


def test_a_record_is_sent_once_and_named_by_its_number_while_a_slot_replays_it():
    ev, cand, rep, rc = _replayed(False)
    for seed, slot in enumerate([1, 2, 3]):
        rc.record_for(slot, 100 + seed)
    assert _sent(rep) == [(1, 1, True), (2, 1, False), (3, 1, False)]
    rc.release([1, 2, 3])  # no slot replays it: the replay process lets it go
    rc.record_for(4, 200)
    assert _sent(rep)[-1] == (4, 1, True)  # the same record (kept here), sent again
    ev.config_key = "c2"
    rc.record_for(4, 201)
    assert _sent(rep)[-1] == (4, 2, True)  # another record, another number


def test_the_replay_process_checks_a_record_once_per_size_and_lets_go_of_what_no_slot_replays():
    import torch

    from arena.evaluation.protocol import CallRecord, ReplayRequest
    from arena.evaluation.replay.player import Refused as RecordRefused
    from arena.evaluation.replay.process import ReplayProcess
    from arena.evaluation.server import Refused

    class Player:
        checks: list = []

        def load(self, kernels):
            pass

        def check(self, record, regions):
            self.checks.append([n for _, n in regions])
            if record.refused == "bad":
                raise RecordRefused("a launch outside the call's memory")

        def local_bytes(self, record):
            return 16528

    proc = ReplayProcess(send=lambda f: None, notice_fd=None, mode="cpu")
    proc.player = Player()
    for slot, n in ((1, 4), (2, 4), (3, 8)):
        proc.slots[slot] = ([torch.zeros(n)], [torch.zeros(n)], [], None, [])
        proc.replayed.add(slot)       # the candidate's slots
    rec = CallRecord(ops=[], kernels=[])
    # the record sent: the local memory of its kernels as compiled here said; named again: nothing new
    assert proc.take_record(ReplayRequest(slot=1, ref=1, record=rec)).local_bytes == 16528
    assert proc.take_record(ReplayRequest(slot=2, ref=1)).local_bytes == 0  # named: the same sizes, not checked again
    proc.take_record(ReplayRequest(slot=3, ref=1))  # other sizes: checked on them
    assert Player.checks == [[16, 16], [32, 32]]
    assert proc.records == {1: rec, 2: rec, 3: rec}
    with pytest.raises(RuntimeError, match="sent twice"):
        proc.take_record(ReplayRequest(slot=1, ref=1, record=rec))
    proc.release([1, 2, 3])
    assert proc.held == {}
    proc.slots[1] = ([torch.zeros(4)], [torch.zeros(4)], [], None, [])
    proc.replayed.add(1)
    with pytest.raises(RuntimeError, match="does not hold"):
        proc.take_record(ReplayRequest(slot=1, ref=1))
    with pytest.raises(Refused) as refused:
        proc.take_record(ReplayRequest(slot=1, ref=2, record=CallRecord(ops=[], kernels=[], refused="bad")))
    assert "outside the call's memory" in refused.value.message and 1 not in proc.records and proc.held == {}
    # a kernel that does not load here (more shared memory than the device has) is not read: it fails where it is
    # launched, in the replay, as the candidate's failure, not as this process's
    Player.local_bytes = lambda self, record: (_ for _ in ()).throw(RuntimeError("out of resources: shared memory"))
    assert proc.take_record(ReplayRequest(slot=1, ref=3, record=rec)).local_bytes == 0 and proc.records == {1: rec}


def test_each_set_has_its_own_record_where_the_config_has_structural_inputs():
    ev, cand, rep, rc = _replayed(True)
    for seed, slot in enumerate([1, 2, 3, 4, 1, 2]):
        rc.record_for(slot, 100 + seed)
    assert ev.filled == [100, 101, 102, 103, 104, 105] and _replays(rep) == [1, 2, 3, 4, 1, 2]
    rc.record_for(2, 105)  # the slot's record is of this set already
    assert len(cand.frames) == 6
    assert len(rc.records) <= 4  # records no slot replays are let go


def test_the_candidate_is_stopped_while_frozen_and_let_go_on_only_to_record():
    ev, cand, rep, rc = _replayed(True)
    with rc.frozen():
        assert cand.peer.stopped
        rc.record_for(1, 5)
        assert cand.peer.stopped
    assert not cand.peer.stopped
    assert cand.stopped_at_call == [False] and cand.peer.events == [True, False, True, False]


def test_a_process_is_stopped_and_let_go_on(tmp_path):
    """``CandidatePeer.pause`` on a real process: every thread of it stopped, then running again."""
    from arena.evaluation.processes import CandidatePeer

    proc = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(60)"])
    peer = object.__new__(CandidatePeer)
    peer.pid, peer.proc = proc.pid, proc

    def state() -> str:
        with open(f"/proc/{proc.pid}/stat") as f:
            return f.read().rsplit(")", 1)[1].split()[0]

    try:
        assert peer.pause(True) == ""
        deadline = time.monotonic() + 10
        while state() != "T" and time.monotonic() < deadline:
            time.sleep(0.01)
        assert state() == "T"
        assert peer.pause(False) == ""
        deadline = time.monotonic() + 10
        while state() == "T" and time.monotonic() < deadline:
            time.sleep(0.01)
        assert state() in "SR"
    finally:
        proc.kill()
        proc.wait()


def test_records_made_ahead_of_their_rounds_are_given_there_without_another_call():
    """``make_records`` makes a round's records before its exclusive section; ``record_for``
    then only gives them to the replay process. A section runs several configs' rounds, each
    made ahead in turn: one config's records made ahead are kept while the next one's are made;
    those never used are let go when that config's next ones are made."""
    ev, cand, rep, rc = _replayed(True)
    rc.make_records(1, [11, 12, 13, 14])
    assert len(cand.frames) == 4 and ev.filled == [11, 12, 13, 14]
    ev.config_key = "c2"  # the next config of the same section
    rc.make_records(1, [31, 32])
    assert len(cand.frames) == 6 and ("c1", 14) in rc.records
    ev.config_key = "c1"
    for slot, seed in zip([1, 2, 3, 4], [11, 12, 13, 14]):
        rc.record_for(slot, seed)
    ev.config_key = "c2"
    rc.record_for(1, 31)
    assert len(cand.frames) == 6 and _replays(rep) == [1, 2, 3, 4, 1]  # no call of the candidate's in the rounds
    rc.make_records(1, [41])  # c2's next batch: its unused 32 let go
    assert len(cand.frames) == 7 and ("c2", 32) not in rc.records and ("c2", 41) in rc.records


def test_a_reply_announcing_more_bytes_than_a_reply_may_have_is_refused_before_it_is_read():
    """A confined process's frame is held whole in the trusted process before it is decoded: one
    that announces more than ``MAX_REPLY_BYTES`` is a broken protocol at once (the candidate's
    INTEGRITY_VIOLATION), not memory the trusted process spends waiting for it."""
    import struct

    from arena.evaluation.processes import MAX_REPLY_BYTES, CandidatePeer

    peer = object.__new__(CandidatePeer)
    peer.rep_r, w = os.pipe()
    peer.notice_r, _ = os.pipe()
    peer.listener = None
    peer._channel()
    os.write(w, struct.pack("<I", MAX_REPLY_BYTES + 1) + b"{")
    kind, why = peer._next(2.0)
    assert kind == "garbled" and f"more than the {MAX_REPLY_BYTES}" in why


def test_the_replay_process_runs_the_baseline_beside_the_replays_and_times_a_round_in_one_request():
    """The replay process makes the baseline's calls and replays the candidate's records, each
    on the slots mapped for it; a run of timed calls of both sides is one request, each with
    its host time, one sample each in its session; a baseline that fails is told as the
    task's, a replay that fails as the candidate's."""
    from types import SimpleNamespace

    import torch

    from arena.evaluation.buffers import Mapped, plan
    from arena.evaluation.protocol import (
        EndRequest,
        FailReply,
        SampledReply,
        SampleRequest,
        SessionReply,
        TimedStep,
    )
    from arena.evaluation.replay.process import ReplayProcess
    from arena.timing.timer import HostTimer

    calls: list[str] = []

    class Baseline:
        fail = False

        def __call__(self, ins, outs, scalars, copy_out=True):
            if self.fail:
                raise ZeroDivisionError("the baseline divided by zero")
            calls.append("baseline")
            outs[0].copy_(ins[0] * 2)

    class Player:
        fail = False

        def replay(self, record, buffers, poison=False):
            if self.fail:
                raise RuntimeError("an illegal address")
            calls.append("replay")
            buffers[1].copy_(buffers[0] + 1)

    proc = ReplayProcess(send=lambda f: None, notice_fd=None, mode="cpu")
    proc.spec = SimpleNamespace(trusted=True)
    proc.baseline, proc.player = Baseline(), Player()
    layout, _, size = plan([(torch.float32, (4,)), (torch.float32, (4,))])
    for slot in (1, 2):
        mapped = Mapped(torch.zeros(size, dtype=torch.uint8), layout)     # as the candidate's side maps a slot
        ins, outs = mapped.views()[:1], mapped.views()[1:]
        ins[0].copy_(torch.arange(4.0))
        proc.slots[slot] = (ins, outs, [], mapped, [(o.shape, o.dtype, o.stride(), o.data_ptr()) for o in outs])
    proc.replayed.add(2)
    proc.records[2] = object()
    proc.timer = HostTimer()
    proc.session = proc.timer.session()
    proc.session.open()
    steps = [TimedStep(slot=1, who="baseline"), TimedStep(slot=2, who="candidate"),
             TimedStep(slot=2, who="candidate"), TimedStep(slot=1, who="baseline")]
    reply = proc.handle(SampleRequest(steps=steps))
    assert isinstance(reply, SampledReply) and len(reply.host_us) == 4
    assert calls == ["baseline", "replay", "replay", "baseline"]
    assert proc.slots[1][1][0].tolist() == [0.0, 2.0, 4.0, 6.0] and proc.slots[2][1][0].tolist() == [1.0, 2, 3, 4]
    session = proc.handle(EndRequest())
    assert isinstance(session, SessionReply) and len(session.samples) == 4
    proc.session = proc.timer.session()
    proc.baseline.fail = True
    failed = proc.handle(SampleRequest(steps=[TimedStep(slot=1, who="baseline")]))
    assert isinstance(failed, FailReply) and failed.baseline and "divided by zero" in failed.message
    proc.baseline.fail, proc.player.fail = False, True
    failed = proc.handle(SampleRequest(steps=[TimedStep(slot=2, who="candidate")]))
    assert isinstance(failed, FailReply) and not failed.baseline and "illegal address" in failed.message


def test_a_process_in_a_group_of_its_own_is_stopped_with_the_processes_it_started():
    """A confined process has a group of its own (its confinement's ``setsid``; its sandbox
    refuses ``setsid`` and ``setpgid`` after): ``pause`` stops every process of the group, so
    a child it forked does not run on while it is stopped, and lets them all go on."""
    from arena.evaluation.processes import CandidatePeer

    code = "import os, time\nif os.fork() == 0:\n    time.sleep(60)\n    os._exit(0)\ntime.sleep(60)\n"
    proc = subprocess.Popen([sys.executable, "-c", code], start_new_session=True)
    peer = object.__new__(CandidatePeer)
    peer.pid, peer.proc = proc.pid, proc

    def members() -> list[int]:
        out = []
        for d in Path("/proc").iterdir():
            if d.name.isdigit():
                try:
                    if os.getpgid(int(d.name)) == proc.pid:
                        out.append(int(d.name))
                except (ProcessLookupError, PermissionError):
                    pass
        return out

    def states() -> set[str]:
        got = set()
        for pid in members():
            try:
                with open(f"/proc/{pid}/stat") as f:
                    got.add(f.read().rsplit(")", 1)[1].split()[0])
            except OSError:
                pass
        return got

    try:
        deadline = time.monotonic() + 30
        while len(members()) < 2 and time.monotonic() < deadline:
            time.sleep(0.01)
        assert len(members()) == 2, "the child was never started"
        assert peer.pause(True) == ""
        deadline = time.monotonic() + 10
        while states() != {"T"} and time.monotonic() < deadline:
            time.sleep(0.01)
        assert states() == {"T"}, "the process it started runs on"
        assert peer.pause(False) == ""
        deadline = time.monotonic() + 10
        while "T" in states() and time.monotonic() < deadline:
            time.sleep(0.01)
        assert states() <= {"S", "R"}
    finally:
        os.killpg(proc.pid, signal.SIGKILL)
        proc.wait()


def _baseline_and_candidate(structural: bool):
    """A replayed candidate and a recorded baseline of one evaluation: the baseline's handle
    records its calls and takes its records (the replay process, as the baseline's)."""
    import itertools

    from arena.evaluation.trusted.calls import ReplayedBaseline, ReplayedCandidate

    ev, cand, rep, base = _Ev(structural), _Handle(), _Handle(), _Handle()
    numbers = itertools.count(1)
    return ev, base, rep, ReplayedCandidate(ev, cand, rep, numbers), ReplayedBaseline(ev, base, numbers)


def test_the_baseline_is_recorded_and_replayed_as_the_candidate_is_its_records_numbered_with_the_candidates():
    """The baseline's call is recorded by its own handle (the replay process, as the baseline's) on buffers of its
    own, once a config without structural inputs, and each of its slots takes that record; the records of both
    sides share one count of numbers (the replay process holds both), its slots are mapped as the baseline's (a
    slot without a record calls it), and its process is never stopped."""
    from arena.evaluation.protocol import CallRequest
    from arena.evaluation.trusted.calls import SharedSet

    ev, base, rep, rc, rb = _baseline_and_candidate(False)
    for slot in (5, 6):
        rb.map_set(SharedSet(slot, None, [], [], rb), [])
    rc.sets[1] = SharedSet(1, None, [], [], rc)
    rc.record_for(1, 100)
    rb.record_for(5, 100)
    assert rb.call(6, seed=101) == 1.0 and base.frames[-1] == ("call", 6)
    assert ("map", 5, False) in base.frames and ("map", 6, False) in base.frames
    recorded = [f for f in base.frames if isinstance(f, CallRequest)]
    assert len(recorded) == 1 and recorded[0].record and recorded[0].slot == 999   # on its own buffers
    assert _sent(rep) == [(1, 1, True)] and _sent(base) == [(5, 2, True), (6, 2, False)]
    assert base.peer.events == [] and not rb.live


def test_a_baseline_whose_call_cannot_be_recorded_is_called_as_it_runs_after_its_slots_let_go_of_their_records():
    """A record of the baseline's the recorder refused (a torch operator that computes, in its launcher), or one
    that points into memory the baseline keeps between calls: its slots are told to hold no record
    (``ReplayRequest`` of number 0), every call after is made as it runs, nothing more is recorded, and the
    config's timing says so; a failure that ends its process is not taken for one."""
    from types import SimpleNamespace

    from arena.evaluation.protocol import CallRequest
    from arena.evaluation.trusted.calls import SharedSet
    from arena.evaluation.trusted.correctness import GateFailure
    from arena.evaluation.trusted.performance import ConfigTiming
    from arena.records import Status

    ev, base, rep, rc, rb = _baseline_and_candidate(True)     # a record a set
    for slot in (5, 6):
        rb.map_set(SharedSet(slot, None, [], [], rb), [])
    rb.record_for(5, 100)
    rb.record_for(6, 101)
    base.refused = "the torch operator mm inside the call: a call's device work is replayed"
    rb.record_for(5, 102)
    assert "torch operator mm" in rb.live
    assert _sent(base) == [(5, 1, True), (6, 2, True), (5, 0, False), (6, 0, False)]
    n = len([f for f in base.frames if isinstance(f, CallRequest)])
    rb.record_for(6, 103)
    assert rb.call(5, seed=104) == 1.0 and base.frames[-1] == ("call", 5)
    assert len([f for f in base.frames if isinstance(f, CallRequest)]) == n and len(_sent(base)) == 4
    (warning,) = ConfigTiming._baseline_called(SimpleNamespace(side_handles={"baseline": rb}))
    assert warning.startswith("baseline_not_replayed") and "torch operator mm" in warning
    assert ConfigTiming._baseline_called(SimpleNamespace(side_handles={"baseline": base})) == []
    # the timing says which sides were replays: the candidate's, not this baseline's once it was called
    assert ConfigTiming._replayed_sides(SimpleNamespace(side_handles={"baseline": rb, "candidate": rc})) == \
        ["candidate"]
    rb.live = ""
    assert ConfigTiming._replayed_sides(SimpleNamespace(side_handles={"baseline": rb, "candidate": rc})) == \
        ["baseline", "candidate"]
    assert ConfigTiming._replayed_sides(SimpleNamespace(side_handles={"baseline": base, "candidate": base})) == []

    # a call that points into memory it keeps between calls: a replay would give it poisoned contents
    from arena.evaluation.protocol import KeptMemory

    ev, base, rep, rc, rb = _baseline_and_candidate(False)
    rb.map_set(SharedSet(5, None, [], [], rb), [])
    base.kept = [KeptMemory(serial=1, nbytes=4096)]
    rb.record_for(5, 100)
    assert "keeps between calls" in rb.live and _sent(base) == [(5, 0, False)]

    ev, base, rep, rc, rb = _baseline_and_candidate(False)
    rb.map_set(SharedSet(5, None, [], [], rb), [])
    base.failure = GateFailure(Status.TASK_ERROR, "the task's baseline failed: the process died", fatal=True)
    with pytest.raises(GateFailure, match="process died"):
        rb.record_for(5, 100)
    assert not rb.live


def test_the_replay_process_replays_a_baseline_slots_record_with_the_baselines_player():
    """A slot of the baseline's that holds a record replays it with the baseline's player (the
    candidate's replays the candidate's slots); told to hold none, it calls the baseline again;
    a candidate's slot without a record never calls the baseline; the baseline's replay failing
    is the task's failure; a record for a baseline whose calls are not recorded is refused."""
    from types import SimpleNamespace

    import torch

    from arena.evaluation.protocol import CallRecord, ReplayRequest
    from arena.evaluation.replay.process import ReplayProcess
    from arena.evaluation.server import Refused

    calls: list[str] = []

    class Player:
        def __init__(self, name):
            self.name, self.fail = name, False

        def load(self, kernels):
            pass

        def check(self, record, regions):
            calls.append(f"{self.name} checks")

        def local_bytes(self, record):
            return 0

        def replay(self, record, buffers, poison=False):
            if self.fail:
                raise RuntimeError("an illegal address")
            calls.append(f"{self.name} replays")

    proc = ReplayProcess(send=lambda f: None, notice_fd=None, mode="cpu")
    proc.spec = SimpleNamespace(trusted=True)
    proc.baseline = lambda ins, outs, scalars, copy_out=True: calls.append("baseline")
    proc.player, proc.base_player = Player("candidate's"), Player("baseline's")
    for slot in (1, 2):
        proc.slots[slot] = ([torch.zeros(4)], [torch.zeros(4)], [], None, [])
    proc.replayed.add(2)
    proc.take_record(ReplayRequest(slot=1, ref=1, record=CallRecord(ops=[])))
    proc.take_record(ReplayRequest(slot=2, ref=2, record=CallRecord(ops=[])))
    proc.invoke(1, True)
    proc.invoke(2, True)
    assert calls == ["baseline's checks", "candidate's checks", "baseline's replays", "candidate's replays"]
    proc.take_record(ReplayRequest(slot=1, ref=0))
    proc.invoke(1, True)
    assert calls[-1] == "baseline" and 1 not in proc.records
    proc.take_record(ReplayRequest(slot=2, ref=0))
    with pytest.raises(RuntimeError, match="no record"):
        proc.invoke(2, True)
    proc.take_record(ReplayRequest(slot=1, ref=3, record=CallRecord(ops=[])))
    proc.base_player.fail = True
    with pytest.raises(Refused) as failed:
        proc.invoke(1, True)
    assert failed.value.baseline and "baseline's call failed: RuntimeError: an illegal address" in failed.value.message
    proc.base_player = None
    with pytest.raises(RuntimeError, match="does not replay"):
        proc.take_record(ReplayRequest(slot=1, ref=4, record=CallRecord(ops=[])))

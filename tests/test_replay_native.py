"""Record and replay of HIP candidates on CUDA (arena.evaluation.native_recorder, native_player): the
recorder's log read into a record, the replay's checks against a kernel's parameters, the
bound on the memory a record may ask of the replay process, and the recorder linked into a
real build (nvcc needed; the replay itself runs on a GPU: scripts/gpu_hip_replay_validate.sh)."""

from __future__ import annotations

import ctypes
import shutil
import struct
from pathlib import Path

import pytest

from arena.evaluation.native_recorder import (
    OP_ALLOC,
    OP_COPY,
    OP_EVENT,
    OP_FILL,
    OP_FREE,
    OP_LAUNCH,
    OP_REFUSE,
    OP_WAIT,
    parse,
)
from arena.evaluation.protocol import (
    CANDIDATE_REPLIES,
    CalledReply,
    CallRecord,
    KeptMemory,
    KernelArg,
    Place,
    Pointer,
    RecordedOp,
    View,
    decode,
    encode,
)
from arena.evaluation.replay.native_player import NativeChecks
from arena.evaluation.replay.player import Refused

X, Y = 0x7F00_0000_0000, 0x7F00_0010_0000          # the call's input and output, 4096 bytes each
BUFFERS = [(X, 4096), (Y, 4096)]
STREAM = 0x5555_0000
WS = 0x7F00_0100_0000                                # memory the candidate allocated in an earlier call
KERNEL = "_Z5scalePKfPfxf"                            # scale(const float*, float*, long long, float)
PARAMS = {KERNEL: [(0, 8), (8, 8), (16, 8), (24, 4)], "_Z3sum2PSi": [(0, 16), (16, 4)]}


def _text(s: str) -> bytes:
    return struct.pack("<I", len(s)) + s.encode()


def _launch(name: str, params: list[bytes], stream: int = STREAM, grid=(4, 1, 1), block=(256, 1, 1),
            shared: int = 0) -> bytes:
    out = struct.pack("<I", OP_LAUNCH) + _text(name) + struct.pack("<Q3I3IQI", stream, *grid, *block, shared,
                                                                    len(params))
    at = 0
    for p in params:
        out += struct.pack("<II", at, len(p)) + p
        at += len(p)
    return out


def _scale(x: int = X, y: int = Y, n: int = 1024, alpha: float = 2.0, **kw) -> bytes:
    return _launch(KERNEL, [struct.pack("<Q", x), struct.pack("<Q", y), struct.pack("<q", n), struct.pack("<f", alpha)],
                   **kw)


def test_a_log_becomes_a_record_with_its_pointers_as_places():
    struct_param = struct.pack("<QI4x", Y + 64, 7)           # a struct holding a pointer, then an int
    log = (struct.pack("<IQQQ", OP_ALLOC, 9, WS + 4096, 256)   # allocated inside the call
           + struct.pack("<IQIQQ", OP_FILL, Y, 0, 4096, STREAM)
           + _scale()
           + _launch("_Z3sum2PSi", [struct_param, struct.pack("<i", 3)])
           + _scale(x=WS + 16, y=WS + 4096 + 8)
           + struct.pack("<IQQQQ", OP_COPY, Y, X, 128, 0)       # the legacy default stream orders against the call's
           + struct.pack("<IQ", OP_FREE, WS + 4096))
    rec = parse(log, False, BUFFERS, [(3, WS, 1024)], STREAM)
    assert not rec.refused
    kinds = [op.kind for op in rec.ops]
    assert kinds == ["fill", "launch", "launch", "launch", "copy"]
    fill, scale, summed, on_ws, copy = rec.ops
    assert fill.dst == View(Place("buffer", 1, 0), "uint8", [4096], [1]) and fill.value == 0
    assert scale.kernel == KERNEL and scale.grid == [4, 1, 1] and scale.block == [256, 1, 1]
    assert [a.pointers for a in scale.args[:2]] == [[Pointer(0, Place("buffer", 0, 0))],
                                                    [Pointer(0, Place("buffer", 1, 0))]]
    assert scale.args[2].pointers == [] and bytes.fromhex(scale.args[2].raw) == struct.pack("<q", 1024)
    assert summed.args[0].pointers == [Pointer(0, Place("buffer", 1, 64))]
    assert on_ws.args[0].pointers == [Pointer(0, Place("kept", 3, 16))]
    assert on_ws.args[1].pointers == [Pointer(0, Place("kept", 9, 8))]
    assert copy.src.place == Place("buffer", 0, 0) and copy.dst.sizes == [128]
    assert rec.kept == [KeptMemory(3, 1024), KeptMemory(9, 256)]
    back = decode(encode(CalledReply(host_us=1.0, record=rec)), CANDIDATE_REPLIES)
    assert back.record == rec


def test_a_pointer_at_a_buffers_end_where_an_allocation_begins_is_the_allocations():
    """An allocation the candidate makes right after a buffer (a caching allocator's next block) begins where the
    buffer ends: a kernel handed that allocation was recorded as one past the buffer's end (``locate`` took the first
    region the pointer did not pass), and the replay wrote past its own copy of the buffer. It is the allocation's;
    a pointer at a buffer's end where nothing begins is still the buffer's end (an empty view there)."""
    log = (struct.pack("<IQQQ", OP_ALLOC, 5, X + 4096, 512)
           + _scale(x=Y, y=X + 4096)
           + _scale(x=X, y=Y + 4096))
    rec = parse(log, False, BUFFERS, [], STREAM)
    assert not rec.refused
    into_alloc, at_end = rec.ops
    assert into_alloc.args[1].pointers == [Pointer(0, Place("kept", 5, 0))]
    assert at_end.args[1].pointers == [Pointer(0, Place("buffer", 1, 4096))]


@pytest.mark.parametrize("log, words", [
    (b"".join(_scale(stream=0x1000 + k) for k in range(8)), "more than 8 streams"),
    (struct.pack("<I", OP_REFUSE) + _text("cudaLaunchCooperativeKernel: cooperative launches are not replayed"),
     "cudaLaunchCooperativeKernel"),
    (_scale()[:-3], "cannot be read"),
    (struct.pack("<I", 99), "an entry of kind 99"),
])
def test_what_a_log_cannot_mean_is_the_refusal(log, words):
    assert words in parse(log, False, BUFFERS, [], STREAM).refused


def _event(event: int, stream: int) -> bytes:
    return struct.pack("<IQQ", OP_EVENT, event, stream)


def _wait(stream: int, event: int) -> bytes:
    return struct.pack("<IQQ", OP_WAIT, stream, event)


SIDE, OTHER = 0x6000_0000, 0x6000_1000          # streams the candidate created
NON_BLOCKING = [(SIDE, 1), (OTHER, 1)]


def _shape(rec: CallRecord) -> list[tuple]:
    return [(op.kind, op.stream, op.event if op.kind in ("event", "wait") else None) for op in rec.ops]


def test_a_call_s_streams_and_the_events_between_them_are_recorded():
    """Work forked onto streams the candidate made and joined back by events: each stream a
    number of its own in the order of first use (the call's stream 0), each event recorded in
    the call a number, each wait for one of them kept; a wait for an event recorded before the
    call (its work done before the call began) is left out."""
    fork, join_a, join_b, old = 0xE1, 0xE2, 0xE3, 0xE0
    log = (_event(fork, STREAM) + _wait(SIDE, fork) + _wait(OTHER, old)
           + _scale(stream=SIDE) + _scale(stream=OTHER) + _event(join_a, SIDE) + _event(join_b, OTHER)
           + _wait(STREAM, join_a) + _wait(STREAM, join_b) + _scale())
    rec = parse(log, False, BUFFERS, [], STREAM, NON_BLOCKING)
    assert not rec.refused
    assert _shape(rec) == [("event", 0, 0), ("wait", 1, 0), ("launch", 1, None), ("launch", 2, None),
                           ("event", 1, 1), ("event", 2, 2), ("wait", 0, 1), ("wait", 0, 2), ("launch", 0, None)]
    _Checks().check(rec, BUFFERS)


def test_the_legacy_default_stream_s_implicit_order_is_written_out_as_events():
    """Called on the legacy default stream: its work waits for the work before it on every
    blocking stream, and a blocking stream's work for the legacy stream's before it (CUDA's
    implicit synchronisation, which a replay on streams of its own would not have); a stream
    made non-blocking orders against nothing, and a stream the recorder did not see made is
    taken as blocking."""
    blocking, free, unseen = 0x7000_0000, 0x7000_1000, 0x7000_2000
    created = [(blocking, 0), (free, 1)]
    log = (_scale(stream=0) + _scale(stream=blocking) + _scale(stream=free)   # 0, then 1 (after 0), 2
           + _scale(stream=0)                                                  # after 1's work, not 2's
           + _scale(stream=unseen))                                            # after the legacy work
    rec = parse(log, False, BUFFERS, [], 0, created)
    assert not rec.refused
    assert _shape(rec) == [("launch", 0, None),
                           ("event", 0, 0), ("wait", 1, 0), ("launch", 1, None),
                           ("launch", 2, None),
                           ("event", 1, 1), ("wait", 0, 1), ("launch", 0, None),
                           ("event", 0, 2), ("wait", 3, 2), ("launch", 3, None)]
    _Checks().check(rec, BUFFERS)


def test_a_native_record_s_streams_and_events_are_checked():
    ok = [RecordedOp(kind="event", stream=1, event=0), RecordedOp(kind="wait", stream=0, event=0)]
    _Checks().check(CallRecord(ops=ok), BUFFERS)
    with pytest.raises(Refused, match="which no earlier operation recorded"):
        _Checks().check(CallRecord(ops=[RecordedOp(kind="wait", stream=0, event=3)]), BUFFERS)
    with pytest.raises(Refused, match="streams at most"):
        _Checks().check(CallRecord(ops=[_scale_op(stream=8)]), BUFFERS)


def test_a_log_past_the_recorders_bound_is_refused():
    assert "bound" in parse(_scale(), True, BUFFERS, [], STREAM).refused


class _Checks(NativeChecks):
    """The replay's checks with the parameters the driver reads from a build (here, a table)."""

    def __init__(self) -> None:
        super().__init__(max_shared=227 * 1024)
        self.made: list[tuple[int, int]] = []

    def params(self, name):
        if name not in PARAMS:
            raise Refused(f"a launch of {name!r}, a kernel the build of the candidate's file does not define")
        return PARAMS[name]

    def make_kept(self, serial, nbytes):
        self.made.append((serial, nbytes))


def _record(log: bytes, live=()) -> CallRecord:
    return parse(log, False, BUFFERS, list(live), STREAM)


def test_a_sound_record_passes_and_its_kept_memory_is_made_once():
    checks = _Checks()
    rec = _record(_scale() + _scale(x=WS), live=[(3, WS, 1024)])
    checks.check(rec, BUFFERS)
    checks.check(rec, BUFFERS)
    assert checks.made == [(3, 1024)]


def _scale_op(**over) -> RecordedOp:
    op = _record(_scale()).ops[0]
    for k, v in over.items():
        setattr(op, k, v)
    return op


@pytest.mark.parametrize(
    "ops, kept, words",
    [
        ([_scale_op(kernel="_Z6cublasv")], [], "a kernel the build of the candidate's file does not define"),
        (
            [
                _scale_op(
                    args=[
                        KernelArg(raw="00" * 8, pointers=[Pointer(0, Place("unknown", -1, 0x7F00_0000))]),
                        *_scale_op().args[1:],
                    ]
                )
            ],
            [],
            "neither the call's buffers",
        ),
        (
            [
                _scale_op(
                    args=[
                        KernelArg(raw="00" * 8, pointers=[Pointer(0, Place("buffer", 0, 5000))]),
                        *_scale_op().args[1:],
                    ]
                )
            ],
            [],
            "bytes 5000..5000 of a buffer of 4096",
        ),
        (
            [
                _scale_op(
                    args=[KernelArg(raw="00" * 8, pointers=[Pointer(0, Place("kept", 4, 0))]), *_scale_op().args[1:]]
                )
            ],
            [],
            "kept 4 does not exist",
        ),
        ([_scale_op(args=_scale_op().args[:3])], [], "3 arguments for 4 parameters"),
        (
            [_scale_op(args=[*_scale_op().args[:3], KernelArg(raw="00" * 8)])],
            [],
            "has 8 bytes; the kernel's parameter has 4",
        ),
        (
            [
                _scale_op(
                    args=[KernelArg(raw="00" * 8, pointers=[Pointer(4, Place("buffer", 0, 0))]), *_scale_op().args[1:]]
                )
            ],
            [],
            "a pointer at byte 4 of 8",
        ),
        (
            [_scale_op(args=[KernelArg(place=Place("buffer", 0, 0)), *_scale_op().args[1:]])],
            [],
            "not a native parameter",
        ),
        ([_scale_op(grid=[0, 1, 1])], [], "grid [0, 1, 1] out of bounds"),
        ([_scale_op(block=[1024, 2, 1])], [], "block [1024, 2, 1] out of bounds"),
        ([_scale_op(shared=1 << 20)], [], "dynamic shared memory"),
        ([RecordedOp(kind="fill", dst=View(Place("buffer", 1, 0), "uint8", [4096], [1]), value=256)], [], "a byte"),
        (
            [RecordedOp(kind="fill", dst=View(Place("buffer", 1, 0), "float32", [16], [1]), value=0)],
            [],
            "not a run of bytes",
        ),
        (
            [
                RecordedOp(
                    kind="copy",
                    dst=View(Place("buffer", 1, 0), "uint8", [4096], [1]),
                    src=View(Place("buffer", 0, 16), "uint8", [4096], [1]),
                )
            ],
            [],
            "its source: bytes 16..4112",
        ),
        ([RecordedOp(kind="alloc", nbytes=64)], [], "not an operation a native record may hold"),
        ([], [KeptMemory(1, 2**40)], "past the"),
    ],
)
def test_a_native_record_that_cannot_mean_a_call_is_refused(ops, kept, words):
    with pytest.raises(Refused, match=words.replace("(", r"\(").replace("[", r"\[").replace(".", r"\.")):
        _Checks().check(CallRecord(ops=ops, kept=kept), BUFFERS)


def test_a_million_native_launches_are_refused():
    from arena.evaluation.record import MAX_OPS

    with pytest.raises(Refused, match=f"more than {MAX_OPS}"):
        _Checks().check(CallRecord(ops=[_scale_op()] * 10**6), BUFFERS)
    assert "more than" in parse(_scale() * (MAX_OPS + 1), False, BUFFERS, [], STREAM).refused


def test_kept_memory_is_one_size_for_good():
    checks = _Checks()
    checks.check(CallRecord(kept=[KeptMemory(3, 1024)]), BUFFERS)
    with pytest.raises(Refused, match="was 1024 before"):
        checks.check(CallRecord(kept=[KeptMemory(3, 4096)]), BUFFERS)


def test_a_record_asking_the_replay_for_more_memory_than_the_candidate_may_hold_fails():
    """The trusted process holds a record's allocations and kept memory to the candidate's
    working allowance, counting kept memory once however many records name it."""
    from arena.evaluation.trusted.calls import ReplayedCandidate
    from arena.evaluation.trusted.correctness import GateFailure
    from arena.records import Status

    class _Ev:
        def working_allowance(self, measure=False):
            return 1 << 30

        def unmeasured_note(self):
            return " (the reference's working memory on this config could not be measured: out of memory)"

    rc = object.__new__(ReplayedCandidate)
    rc.ev, rc.kept = _Ev(), {}
    rc._within_allowance(CallRecord(kept=[KeptMemory(1, 600 << 20)]))
    rc._within_allowance(CallRecord(kept=[KeptMemory(1, 600 << 20)]))  # the same memory again
    with pytest.raises(GateFailure) as info:
        rc._within_allowance(CallRecord(ops=[RecordedOp(kind="alloc", nbytes=500 << 20)]))
    assert info.value.status is Status.RUNTIME_ERROR and "working allowance" in str(info.value)
    assert "could not be measured" in str(info.value)     # why the allowance is what it is, where it is
    with pytest.raises(GateFailure):
        rc._within_allowance(CallRecord(kept=[KeptMemory(2, 600 << 20)]))


_RECORDED = r"""
#include <hip/hip_runtime.h>
#include <cstdint>
__global__ void scale_kernel(const float* x, float* y, int64_t n, float a) {
    int64_t i = (int64_t)blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) y[i] = a * x[i];
}
extern "C" int scale(const float* x, float* y, int64_t n, float a, hipStream_t s) {
    (void)hipMemsetAsync(y, 7, (size_t)n * sizeof(float), s);
    (void)hipMemcpyAsync(y, x, 64, hipMemcpyDeviceToDevice, s);
    hipEvent_t e = nullptr;
    (void)hipEventRecord(e, s);
    (void)hipStreamWaitEvent(s, e, 0);
    float host[4] = {1, 2, 3, 4};
    (void)hipMemcpyAsync(y, host, sizeof host, hipMemcpyHostToDevice, s);
    return 0;
}
"""


@pytest.mark.skipif(shutil.which("nvcc") is None, reason="needs nvcc")
def test_the_recorder_linked_into_a_build_writes_what_the_parser_reads(tmp_path):
    """A real build: the candidate's runtime calls reach the linked recorder, whose log the
    parser reads (no GPU here: the runtime refuses the calls after they are recorded)."""
    from arena.toolchain.hip import build_hip

    src = tmp_path / "scale.hip"
    src.write_text(_RECORDED)
    res = build_hip(src, target="cuda", arch="sm_90", cache_dir=tmp_path / "cache")
    assert res.ok, res.log
    lib = ctypes.CDLL(str(res.library))
    begin, end = lib.arena_rec_begin, lib.arena_rec_end
    end.argtypes = [ctypes.POINTER(ctypes.c_void_p), ctypes.POINTER(ctypes.c_size_t)]
    x, y, stream = 0x7F00_0000_0000, 0x7F00_0010_0000, 0x4242
    lib.scale.argtypes = [ctypes.c_void_p, ctypes.c_void_p, ctypes.c_int64, ctypes.c_float, ctypes.c_void_p]
    begin()
    lib.scale(x, y, 1024, 2.0, stream)
    data, size = ctypes.c_void_p(), ctypes.c_size_t()
    assert end(ctypes.byref(data), ctypes.byref(size)) == 0
    log = ctypes.string_at(data.value, size.value)
    rec = parse(log, False, [(x, 4096), (y, 4096)], [], stream)
    assert "a copy from host memory" in rec.refused
    fill, copy, event, wait = rec.ops
    assert (event.kind, event.stream, wait.kind, wait.stream, wait.event) == ("event", 0, "wait", 0, event.event)
    assert fill.kind == "fill" and fill.value == 7 and fill.dst == View(Place("buffer", 1, 0), "uint8", [4096], [1])
    assert copy.kind == "copy" and copy.src.place == Place("buffer", 0, 0) and copy.dst.sizes == [64]
    begin()  # nothing recorded outside a call; each call's log its own
    end(ctypes.byref(data), ctypes.byref(size))
    assert size.value == 0
    assert Path(res.device_code).read_bytes()[:4] == bytes.fromhex("50ed55ba")

"""Record and replay for HIP built for CUDA: the recording side (the candidate's process, and
the replay process for a HIP baseline).

The build links the recorder (``record_cuda.cc``) into every HIP library it makes for CUDA (the
candidate's, the task's baseline), with the linker's ``--wrap`` for each runtime call in
``WRAPPED``: the library's object reaches the recorder first, which passes the call on and,
while a call is recorded, writes down its device work in a log (launches with their parameters'
bytes, fills, device-to-device copies, allocations, events between streams), or a refusal of
what a replay cannot do again. ``NativeRecorder`` turns the log into a ``CallRecord``
(``parse``): each pointer found in a parameter becomes a place (a buffer of the call, or memory
the candidate allocated and keeps), so that the replay process
(``arena.evaluation.replay.native_player``) can point it at its own mapping.

In the candidate's process nothing here is trusted, as with Triton's recorder: a record that does not hold the call's
work gives wrong replayed outputs, and one the replay cannot check is refused there.
"""

from __future__ import annotations

import contextlib
import ctypes
import struct
from pathlib import Path
from typing import Any, Iterator, Sequence

from arena.evaluation.protocol import CallRecord, KeptMemory, KernelArg, Place, Pointer, RecordedOp, View
from arena.evaluation.record import MAX_ARGS, MAX_EVENTS, MAX_OPS, MAX_STREAMS, locate, region

RECORDER_SOURCE = Path(__file__).with_name("record_cuda.cc")
# the runtime calls the recorder stands before (the linker's --wrap), as record_cuda.cc defines them
WRAPPED = (
    "__cudaRegisterFunction", "__cudaGetKernel", "__cudaLaunchKernel", "cudaLaunchKernel",
    "cudaMemset", "cudaMemsetAsync", "cudaMemcpy", "cudaMemcpyAsync",
    "cudaMalloc", "cudaMallocAsync", "cudaFree", "cudaFreeAsync",
    "cudaLaunchCooperativeKernel", "cudaMemcpy2D", "cudaMemcpy2DAsync", "cudaMemset2D", "cudaMemset2DAsync",
    "cudaMemcpyToSymbol", "cudaMemcpyToSymbolAsync", "cudaStreamCreate", "cudaStreamCreateWithFlags",
    "cudaStreamCreateWithPriority", "cudaStreamWaitEvent", "cudaEventRecord",
)
OP_LAUNCH, OP_FILL, OP_COPY, OP_ALLOC, OP_FREE, OP_REFUSE, OP_EVENT, OP_WAIT = 1, 2, 3, 4, 5, 6, 7, 8
MAX_NAME = 4096
MAX_LIVE = 4096          # allocations a recorder reports as live
MAX_CREATED = 256        # streams a recorder reports as created
LEGACY = (0, 1)          # the legacy default stream: 0, and cudaStreamLegacy
PER_THREAD = 2           # cudaStreamPerThread
NON_BLOCKING = 1         # cudaStreamNonBlocking: a stream that does not order against the legacy one


class _Log:
    def __init__(self, data: bytes):
        self.data, self.at = data, 0

    def take(self, fmt: str) -> tuple[Any, ...]:
        size = struct.calcsize(fmt)
        if self.at + size > len(self.data):
            raise ValueError("the log ends inside an entry")
        out = struct.unpack_from(fmt, self.data, self.at)
        self.at += size
        return out

    def u32(self) -> int:
        return self.take("<I")[0]

    def u64(self) -> int:
        return self.take("<Q")[0]

    def raw(self, n: int) -> bytes:
        if self.at + n > len(self.data):
            raise ValueError("the log ends inside an entry")
        out = self.data[self.at:self.at + n]
        self.at += n
        return out

    def text(self) -> str:
        n = self.u32()
        if n > MAX_NAME:
            raise ValueError("a name longer than the recorder writes")
        return self.raw(n).decode("utf-8", errors="replace")


class _Places:
    """The memory a recorded call's pointers may point into: its buffers and the candidate's
    live allocations (followed through the call's allocations and frees)."""

    def __init__(self, buffers: Sequence[tuple[int, int]], live: Sequence[tuple[int, int, int]]):
        self.buffers = list(buffers)
        self.live: dict[int, tuple[int, int]] = {serial: (ptr, size) for serial, ptr, size in live}
        self.kept: dict[int, int] = {}

    def find(self, addr: int, extent: int = 0) -> Place | None:
        found = locate(addr, extent, [*((("buffer", i), start, n) for i, (start, n) in enumerate(self.buffers)),
                                      *((("kept", k), start, n) for k, (start, n) in self.live.items())])
        if found is None:
            return None
        (space, index), offset = found
        if space == "kept":
            self.kept[index] = self.live[index][1]
        return Place(space=space, index=index, offset=offset)

    def view(self, addr: int, nbytes: int) -> View:
        place = self.find(addr, nbytes) or Place(space="unknown", index=-1, offset=addr)
        return View(place=place, dtype="uint8", sizes=[nbytes], strides=[1])

    def free(self, addr: int) -> None:
        for serial, (start, _) in list(self.live.items()):
            if start == addr:
                del self.live[serial]


def parse(log: bytes, full: bool, buffers: Sequence[tuple[int, int]], live: Sequence[tuple[int, int, int]],
          stream: int, created: Sequence[tuple[int, int]] = ()) -> CallRecord:
    """The record a recorder's log stands for: ``buffers`` the call's (address, bytes), ``live``
    the candidate's allocations when the call began (serial, address, bytes), ``stream`` the
    call's, ``created`` the streams the candidate made (address, flags). The call's stream, the
    legacy default stream and the per-thread one are the record's stream 0; each other stream
    a number of its own, in the order of first use (``MAX_STREAMS`` in all). An event recorded
    in the call gets a number; a wait for one recorded before the call is left out (that work
    was done before the call). What the legacy default stream orders implicitly is written
    out as events: its work waits for the work before it on every blocking stream (one created
    without ``cudaStreamNonBlocking``, or one the recorder did not see created), and a
    blocking stream's work waits for the legacy stream's work before it. A refusal the log
    holds makes the record refused."""
    ops: list[RecordedOp] = []
    places = _Places(buffers, live)
    refused = "the call's record passed the recorder's bound (64 MiB)" if full else ""
    reader = _Log(log)
    flags = dict(created)
    sides: dict[int, int] = {}          # a stream's address -> its number in the record
    pending: dict[int, bool] = {}       # a blocking stream's number -> work not yet ordered before the legacy's
    synced: dict[int, int] = {}         # a blocking stream's number -> the legacy work it has waited for
    legacy_work = 0                     # operations on the legacy stream so far
    numbered: dict[int, int] = {}       # an event's address -> its number, as last recorded
    n_events = 0

    def fresh_event() -> int | None:
        nonlocal n_events, refused
        if n_events >= MAX_EVENTS:
            refused = refused or f"the call records more than {MAX_EVENTS} events"
            return None
        n_events += 1
        return n_events - 1

    def order(s: int, what: str) -> int | None:
        """The number of stream ``s``, after the events that write out the legacy stream's
        implicit order before an operation on it; None when the call has too many streams."""
        nonlocal refused, legacy_work
        if s in LEGACY or s in (PER_THREAD, stream):
            n = 0
        elif s in sides:
            n = sides[s]
        elif len(sides) + 1 >= MAX_STREAMS:
            refused = refused or f"{what}: the call's work runs on more than {MAX_STREAMS} streams"
            return None
        else:
            n = sides[s] = len(sides) + 1
        if s in LEGACY:
            for m, waiting in pending.items():
                if waiting and (e := fresh_event()) is not None:
                    ops.append(RecordedOp(kind="event", stream=m, event=e))
                    ops.append(RecordedOp(kind="wait", stream=0, event=e))
                    pending[m] = False
            legacy_work += 1
        elif n and not flags.get(s, 0) & NON_BLOCKING:
            if synced.get(n, 0) < legacy_work and (e := fresh_event()) is not None:
                ops.append(RecordedOp(kind="event", stream=0, event=e))
                ops.append(RecordedOp(kind="wait", stream=n, event=e))
            synced[n] = legacy_work
            pending[n] = True
        return n

    try:
        while reader.at < len(log) and not refused:
            kind = reader.u32()
            if len(ops) >= MAX_OPS:
                refused = f"the call asked for more than {MAX_OPS} operations of the device"
            elif kind == OP_LAUNCH:
                name = reader.text()
                s = reader.u64()
                grid = list(reader.take("<III"))
                block = list(reader.take("<III"))
                shared = reader.u64()
                n = reader.u32()
                if n > MAX_ARGS:
                    raise ValueError(f"a launch of {name} with {n} parameters")
                args = []
                for _ in range(n):
                    offset, size = reader.take("<II")
                    raw = reader.raw(size)
                    pointers = []
                    for at in range(-offset % 8, size - 7, 8):     # the 8-byte words of the parameter
                        value = int.from_bytes(raw[at:at + 8], "little")
                        place = places.find(value) if value else None
                        if place is not None:
                            pointers.append(Pointer(at=at, place=place))
                    args.append(KernelArg(raw=raw.hex(), pointers=pointers))
                if (n := order(s, f"a launch of {name}")) is not None:
                    ops.append(RecordedOp(kind="launch", kernel=name, grid=grid, block=block, shared=shared,
                                          args=args, stream=n))
            elif kind == OP_FILL:
                dst, value, count, s = reader.take("<QIQQ")
                if (n := order(s, "a fill")) is not None:
                    ops.append(RecordedOp(kind="fill", dst=places.view(dst, count), value=value & 0xFF, stream=n))
            elif kind == OP_COPY:
                dst, src, count, s = reader.take("<QQQQ")
                if (n := order(s, "a copy")) is not None:
                    ops.append(RecordedOp(kind="copy", dst=places.view(dst, count), src=places.view(src, count),
                                          stream=n))
            elif kind == OP_EVENT:
                event, s = reader.take("<QQ")
                if (n := order(s, "an event")) is not None and (e := fresh_event()) is not None:
                    numbered[event] = e
                    ops.append(RecordedOp(kind="event", stream=n, event=e))
            elif kind == OP_WAIT:
                s, event = reader.take("<QQ")
                if (n := order(s, "a wait for an event")) is not None and event in numbered:
                    ops.append(RecordedOp(kind="wait", stream=n, event=numbered[event]))
            elif kind == OP_ALLOC:
                serial, ptr, size = reader.take("<QQQ")
                places.live[serial] = (ptr, size)
            elif kind == OP_FREE:
                places.free(reader.u64())
            elif kind == OP_REFUSE:
                refused = reader.text()
            else:
                raise ValueError(f"an entry of kind {kind}")
    except ValueError as exc:
        refused = refused or f"the recorder's log cannot be read: {exc}"
    kept = [KeptMemory(serial=k, nbytes=n) for k, n in sorted(places.kept.items())]
    return CallRecord(ops=ops, kernels=[], refused=refused, kept=kept)


class NativeRecorder:
    """The recorder linked into a HIP candidate's library (``lib``: its ctypes handle);
    ``recording(buffers)`` records one call, as ``arena.evaluation.recorder.Recorder`` does."""

    def __init__(self, lib: Any) -> None:
        import torch

        self.torch = torch
        try:
            self._begin, self._end, self._live = lib.arena_rec_begin, lib.arena_rec_end, lib.arena_rec_live
            self._streams = lib.arena_rec_streams
        except AttributeError:
            raise RuntimeError("the library was built without the recorder") from None
        self._end.argtypes = [ctypes.POINTER(ctypes.c_void_p), ctypes.POINTER(ctypes.c_size_t)]
        for fn in (self._live, self._streams):
            fn.argtypes = [ctypes.POINTER(ctypes.c_uint64), ctypes.c_size_t]
            fn.restype = ctypes.c_size_t

    def live(self) -> list[tuple[int, int, int]]:
        words = (ctypes.c_uint64 * (3 * MAX_LIVE))()
        n = int(self._live(words, MAX_LIVE))
        return [(words[3 * i], words[3 * i + 1], words[3 * i + 2]) for i in range(min(n, MAX_LIVE))]

    def created(self) -> list[tuple[int, int]]:
        """The streams the candidate has created: (address, flags)."""
        words = (ctypes.c_uint64 * (2 * MAX_CREATED))()
        n = int(self._streams(words, MAX_CREATED))
        return [(words[2 * i], words[2 * i + 1]) for i in range(min(n, MAX_CREATED))]

    @contextlib.contextmanager
    def recording(self, buffers: Sequence[Any]) -> Iterator["_NativeCall"]:
        call = _NativeCall(self, [region(t) for t in buffers], self.live(),
                           self.torch.cuda.current_stream().cuda_stream)
        self._begin()
        try:
            yield call
        finally:
            data, size = ctypes.c_void_p(), ctypes.c_size_t()
            full = self._end(ctypes.byref(data), ctypes.byref(size))
            call.log = ctypes.string_at(data.value, size.value) if data.value and size.value else b""
            call.full = bool(full)
            call.created = self.created()


class _NativeCall:
    def __init__(self, rec: NativeRecorder, buffers: list[tuple[int, int]], live: list[tuple[int, int, int]],
                 stream: int):
        self.buffers, self.live, self.stream = buffers, live, stream
        self.log, self.full = b"", False
        self.created: list[tuple[int, int]] = []

    def record(self) -> CallRecord:
        return parse(self.log, self.full, self.buffers, self.live, self.stream, self.created)

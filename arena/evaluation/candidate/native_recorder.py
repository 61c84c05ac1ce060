"""Record and replay for a HIP candidate built for CUDA: the candidate process's side.

The build links the recorder (``record_cuda.cc``) into the candidate's library, with the
linker's ``--wrap`` for each runtime call in ``WRAPPED``: the candidate's object reaches the
recorder first, which passes the call on and, while a call is recorded, writes down its
device work in a log (launches with their parameters' bytes, fills, device-to-device copies,
allocations), or a refusal of what a replay cannot do again. ``NativeRecorder`` turns the log
into a ``CallRecord`` (``parse``): each pointer found in a parameter becomes a place (a buffer
of the call, or memory the candidate allocated and keeps), so that the replay process
(``arena.evaluation.replay.native_player``) can point it at its own mapping.

Nothing here is trusted, as with Triton's recorder: a record that does not hold the call's
work gives wrong replayed outputs, and one the replay cannot check is refused there.
"""

from __future__ import annotations

import contextlib
import ctypes
import struct
from pathlib import Path
from typing import Any, Iterator, Sequence

from arena.evaluation.protocol import CallRecord, KeptMemory, KernelArg, Place, Pointer, RecordedOp, View
from arena.evaluation.record import MAX_ARGS, MAX_OPS, locate, region

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
OP_LAUNCH, OP_FILL, OP_COPY, OP_ALLOC, OP_FREE, OP_REFUSE = 1, 2, 3, 4, 5, 6
MAX_NAME = 4096
MAX_LIVE = 4096          # allocations a recorder reports as live


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
          stream: int) -> CallRecord:
    """The record a recorder's log stands for: ``buffers`` the call's (address, bytes), ``live``
    the candidate's allocations when the call began (serial, address, bytes), ``stream`` the
    call's. A launch, fill or copy on another stream than the call's (or the legacy default
    stream, which orders against it) makes the record refused, as does any refusal the log holds."""
    ops: list[RecordedOp] = []
    places = _Places(buffers, live)
    refused = "the call's record passed the recorder's bound (64 MiB)" if full else ""
    reader = _Log(log)

    def on_stream(s: int, what: str) -> bool:
        nonlocal refused
        if s not in (0, stream):
            refused = refused or f"{what} on a stream other than the call's (the calls are replayed on one stream)"
            return False
        return True

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
                if on_stream(s, f"a launch of {name}"):
                    ops.append(RecordedOp(kind="launch", kernel=name, grid=grid, block=block, shared=shared,
                                          args=args))
            elif kind == OP_FILL:
                dst, value, count, s = reader.take("<QIQQ")
                if on_stream(s, "a fill"):
                    ops.append(RecordedOp(kind="fill", dst=places.view(dst, count), value=value & 0xFF))
            elif kind == OP_COPY:
                dst, src, count, s = reader.take("<QQQQ")
                if on_stream(s, "a copy"):
                    ops.append(RecordedOp(kind="copy", dst=places.view(dst, count), src=places.view(src, count)))
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
    ``recording(buffers)`` records one call, as ``arena.evaluation.candidate.recorder.Recorder`` does."""

    def __init__(self, lib: Any) -> None:
        import torch

        self.torch = torch
        try:
            self._begin, self._end, self._live = lib.arena_rec_begin, lib.arena_rec_end, lib.arena_rec_live
        except AttributeError:
            raise RuntimeError("the candidate's library was built without the recorder") from None
        self._end.argtypes = [ctypes.POINTER(ctypes.c_void_p), ctypes.POINTER(ctypes.c_size_t)]
        self._live.argtypes = [ctypes.POINTER(ctypes.c_uint64), ctypes.c_size_t]
        self._live.restype = ctypes.c_size_t

    def live(self) -> list[tuple[int, int, int]]:
        words = (ctypes.c_uint64 * (3 * MAX_LIVE))()
        n = int(self._live(words, MAX_LIVE))
        return [(words[3 * i], words[3 * i + 1], words[3 * i + 2]) for i in range(min(n, MAX_LIVE))]

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


class _NativeCall:
    def __init__(self, rec: NativeRecorder, buffers: list[tuple[int, int]], live: list[tuple[int, int, int]],
                 stream: int):
        self.buffers, self.live, self.stream = buffers, live, stream
        self.log, self.full = b"", False

    def record(self) -> CallRecord:
        return parse(self.log, self.full, self.buffers, self.live, self.stream)

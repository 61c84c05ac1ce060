"""The recording side of record and replay: what a call asked of the device.

It records the candidate's calls in the candidate's process, and the task's baseline's in the
replay process (``arena.evaluation.replay.process``), so that both sides are timed as replays
of what they asked. Installed before any of the code it records is loaded (``Recorder``):
Triton's launcher is wrapped, so
that every launch of a kernel Triton compiled in this process is written down while a call is
recorded (the kernel's IR and options, its grid, its arguments), except the autotuner's own
timings of its variants; a torch dispatch mode writes down the allocations, fills and
copies of the call; and torch's events write down how the call's streams wait for each other
(each operation is on the stream it was asked on). Pointers become places (a buffer of the call, or memory the call
allocated, plus an offset), so that a replay can point them at its own mapping of the buffers.

In the candidate's process nothing here is trusted: the candidate can change any of it. What it gets by that is a record
that does not hold its work (its replay's outputs are then wrong) or one the replay refuses.
"""

from __future__ import annotations

import contextlib
from typing import Any, Iterator, Sequence

from arena.evaluation.protocol import CallRecord, KeptMemory, KernelArg, KernelCode, Place, RecordedOp, View
from arena.evaluation.record import MAX_EVENTS, MAX_OPS, MAX_STREAMS, OPTIONS, kernel_id, locate, region, span_bytes

# torch operators of a call, by what a replay must do for them
_ALLOC = frozenset({"empty", "empty_like", "empty_strided", "new_empty", "new_empty_strided"})
_FILLED = {"zeros": 0, "zeros_like": 0, "new_zeros": 0, "ones": 1, "ones_like": 1, "new_ones": 1}
_FULL = {"full": 1, "full_like": 1, "new_full": 2}           # where the value is among the arguments
_COPIED = frozenset({"_to_copy", "clone"})                   # a new tensor, a copy of the first argument
# operators that make views or read metadata, or read the device from the host: nothing to replay
_NOTHING = frozenset({
    "detach", "detach_", "alias", "view", "_unsafe_view", "reshape", "_reshape_alias", "as_strided", "t", "transpose",
    "permute", "expand", "expand_as", "squeeze", "unsqueeze", "flatten", "unflatten", "narrow", "slice", "select",
    "split", "split_with_sizes", "chunk", "unbind", "view_as", "is_same_size", "_local_scalar_dense",
    "item", "sym_size", "sym_stride", "sym_numel", "sym_storage_offset", "stride", "size", "numel", "dim",
    "is_contiguous", "record_stream", "_has_compatible_shallow_copy_type", "result_type", "is_pinned", "contiguous",
    "to"})


class Recorder:
    """Triton's launcher and autotuner wrapped once; ``recording(buffers)`` records one call."""

    def __init__(self) -> None:
        import torch

        self.torch = torch
        self.active: _Call | None = None
        self.tuning = 0                       # inside an autotuner's timing of its variants
        self.kernels: dict[int, Any] = {}     # a loaded kernel's function handle -> Triton's CompiledKernel
        self.codes: dict[int, KernelCode] = {}
        self.sent: set[str] = set()           # kernels a record brought already
        # kept memory (a live block of torch's allocator a call points into) by its address and size -> its serial: a
        # block let go and taken again at the same address with another size is other memory (the replay's copy of
        # the first is of the first's size)
        self.kept_serials: dict[tuple[int, int], int] = {}
        self._install()

    def _install(self) -> None:
        import triton
        from triton.compiler.compiler import CompiledKernel
        from triton.runtime.autotuner import Autotuner

        rec = self
        real_init = CompiledKernel._init_handles

        def _init_handles(kernel: Any) -> Any:
            out = real_init(kernel)
            fn = getattr(kernel, "function", None)
            if isinstance(fn, int) and fn:
                rec.kernels[fn] = kernel
            return out

        CompiledKernel._init_handles = _init_handles
        launcher = triton.runtime.driver.active.launcher_cls
        real_call = launcher.__call__

        def __call__(self: Any, gridX: int, gridY: int, gridZ: int, stream: int, function: int, *rest: Any) -> Any:
            call = rec.active
            if call is not None and not rec.tuning:
                call.launch(rec, (gridX, gridY, gridZ), stream, function, rest[4:])
            return real_call(self, gridX, gridY, gridZ, stream, function, *rest)

        launcher.__call__ = __call__
        real_bench = Autotuner._bench

        def _bench(self: Any, *args: Any, **kwargs: Any) -> Any:
            rec.tuning += 1
            try:
                return real_bench(self, *args, **kwargs)
            finally:
                rec.tuning -= 1

        Autotuner._bench = _bench
        # events between the call's streams (torch's Stream.wait_event, wait_stream and record_event come here)
        event_cls = self.torch.cuda.Event
        real_record, real_wait = event_cls.record, event_cls.wait

        def record(event: Any, stream: Any = None) -> Any:
            call = rec.active
            if call is not None and not rec.tuning:
                call.event(event, stream, wait=False)
            return real_record(event, stream)

        def wait(event: Any, stream: Any = None) -> Any:
            call = rec.active
            if call is not None and not rec.tuning:
                call.event(event, stream, wait=True)
            return real_wait(event, stream)

        event_cls.record, event_cls.wait = record, wait

    def code(self, kernel: Any) -> KernelCode:
        """A compiled kernel as code a replay compiles: its IR and its options."""
        key = id(kernel)
        if key not in self.codes:
            meta = kernel.metadata
            meta = meta._asdict() if hasattr(meta, "_asdict") else dict(vars(meta))
            options = {k: meta[k] for k in OPTIONS if k in meta}
            ttir = kernel.asm["ttir"]
            self.codes[key] = KernelCode(id=kernel_id(ttir, options), name=str(meta.get("name", "")), ttir=ttir,
                                         options=options)
        return self.codes[key]

    @contextlib.contextmanager
    def recording(self, buffers: Sequence[Any]) -> Iterator["_Call"]:
        """Record the device work of what runs inside (the call, on ``buffers``: its inputs then
        its outputs); the record is the yielded object's ``record()`` after the block."""
        call = _Call(self, buffers)
        self.active = call
        mode = _mode(call)
        try:
            with mode:
                yield call
        finally:
            self.active = None


class _Call:
    def __init__(self, rec: Recorder, buffers: Sequence[Any]):
        torch = rec.torch
        self.rec = rec
        self.stream = torch.cuda.current_stream().cuda_stream
        self.streams: dict[int, int] = {self.stream: 0}   # a stream's handle -> its number in the record
        self.events: dict[int, int] = {}                  # an event recorded in the call (its id) -> its number
        self.buffers = [region(t) for t in buffers]
        self.scratch: list[tuple[int, int]] = []
        self.live: list[tuple[int, int]] | None = None    # torch's live blocks, read at the first pointer outside
        self.kept: dict[int, int] = {}                     # a live block the call points into: serial -> bytes
        self.ops: list[RecordedOp] = []
        self.kernels: list[KernelCode] = []
        self.refused = ""

    def refuse(self, why: str) -> None:
        if not self.refused:
            self.refused = why

    def _add(self, op: RecordedOp) -> None:
        if len(self.ops) >= MAX_OPS:
            self.refuse(f"the call asked for more than {MAX_OPS} operations of the device")
            return
        self.ops.append(op)

    def place(self, addr: int, extent: int = 0) -> Place:
        # the call's allocations newest first: torch's caching allocator gives the memory of one the call let go
        # to the next it makes, and the pointer is the newer one's (live allocations do not overlap; the dispatch
        # mode sees no frees)
        newest = [(("scratch", i), start, n) for i, (start, n) in reversed(list(enumerate(self.scratch)))]
        found = locate(addr, extent, [*((("buffer", i), start, n) for i, (start, n) in enumerate(self.buffers)),
                                      *newest])
        if found is None:
            return self.kept_place(addr, extent)
        (space, i), offset = found
        return Place(space=space, index=i, offset=offset)

    def kept_place(self, addr: int, extent: int) -> Place:
        """A pointer outside the call's buffers and what it allocated: into memory the candidate keeps between
        calls (a workspace it allocated once, a cache), a live block of torch's allocator, named by a serial of its
        address and size; the replay holds memory of that size for it as long as the evaluation, as it does for a
        HIP candidate's."""
        if self.live is None:
            self.live = live_blocks(self.rec.torch)
        found = locate(addr, extent, [((start, n), start, n) for start, n in self.live])
        if found is None:
            return Place(space="unknown", index=-1, offset=addr)
        block, offset = found
        serials = self.rec.kept_serials
        serial = serials.setdefault(block, len(serials) + 1)
        self.kept[serial] = block[1]
        return Place(space="kept", index=serial, offset=offset)

    def view(self, t: Any) -> View:
        extent = span_bytes(t.shape, t.stride(), t.element_size())
        return View(place=self.place(t.data_ptr(), extent), dtype=str(t.dtype).removeprefix("torch."),
                    sizes=list(t.shape), strides=list(t.stride()))

    def stream_of(self, handle: int | None = None) -> int:
        """The record's number of a stream (the current one where ``handle`` is None)."""
        if handle is None:
            handle = self.rec.torch.cuda.current_stream().cuda_stream
        if handle not in self.streams:
            if len(self.streams) >= MAX_STREAMS:
                self.refuse(f"the call's work runs on more than {MAX_STREAMS} streams")
            self.streams[handle] = len(self.streams)
        return self.streams[handle]

    def event(self, event: Any, stream: Any, wait: bool) -> None:
        """An event recorded on a stream, or a stream made to wait for one. A wait for an event
        recorded before the call is left out: the work before a replay is done when it starts."""
        s = self.stream_of(None if stream is None else int(stream.cuda_stream))
        if wait:
            if id(event) in self.events:
                self._add(RecordedOp(kind="wait", stream=s, event=self.events[id(event)]))
            return
        if id(event) not in self.events:
            if len(self.events) >= MAX_EVENTS:
                self.refuse(f"the call records more than {MAX_EVENTS} events")
                return
            self.events[id(event)] = len(self.events)
        self._add(RecordedOp(kind="event", stream=s, event=self.events[id(event)]))

    def launch(self, rec: Recorder, grid: tuple[int, int, int], stream: int, function: int,
               args: Sequence[Any]) -> None:
        kernel = rec.kernels.get(function)
        if kernel is None:
            self.refuse("a launch of a kernel that Triton did not load in this process")
            return
        signature = list(getattr(kernel.src, "signature", {}).values())
        if len(signature) != len(args):
            self.refuse(f"a launch of {kernel.name} with {len(args)} arguments for {len(signature)} parameters")
            return
        out = []
        for ty, v in zip(signature, args):
            ty = str(ty)
            if ty == "constexpr":
                continue
            if ty.startswith("*"):
                addr = v if isinstance(v, int) else getattr(v, "data_ptr", lambda: None)()
                if not isinstance(addr, int):
                    self.refuse(f"a launch of {kernel.name} with a pointer argument of type {type(v).__name__}")
                    return
                out.append(KernelArg(place=self.place(addr)) if addr else KernelArg(value=0))
            elif ty.startswith(("i", "u", "fp", "bf")) and isinstance(v, (bool, int, float)):
                out.append(KernelArg(value=v))
            else:
                self.refuse(
                    f"a launch of {kernel.name} with an argument of type {ty} (tensor descriptors are not replayed)"
                )
                return
        code = rec.code(kernel)
        if code.id not in rec.sent:
            rec.sent.add(code.id)
            self.kernels.append(code)
        self._add(RecordedOp(kind="launch", kernel=code.id, grid=[int(g) for g in grid], args=out,
                             stream=self.stream_of(stream)))

    def torch_op(self, name: str, args: Sequence[Any], kwargs: dict[str, Any], result: Any) -> None:
        torch = self.rec.torch
        tensors = [
            a
            for a in (*args, *kwargs.values(), *(result if isinstance(result, (list, tuple)) else (result,)))
            if isinstance(a, torch.Tensor)
        ]
        if not any(t.is_cuda for t in tensors) or name in _NOTHING:
            return
        s = self.stream_of()
        if name == "lift_fresh":
            # ``torch.tensor(1.0, device="cuda")``: made from host data, which a replay does not carry; one value
            # throughout (a launcher's scale) is a fill of memory the call allocated
            value = _constant(result)
            if value is None:
                self.refuse("a device tensor made from host data inside the call (torch.tensor of values that are "
                            "not all one): a replay does not carry the host's data")
                return
            storage = result.untyped_storage()
            self._add(RecordedOp(kind="alloc", nbytes=int(storage.nbytes()), stream=s))
            self.scratch.append((storage.data_ptr(), int(storage.nbytes())))
            self._add(RecordedOp(kind="fill", dst=self.view(result), value=value, stream=s))
            return
        if name in _ALLOC or name in _FILLED or name in _FULL or name in _COPIED:
            if not (isinstance(result, torch.Tensor) and result.is_cuda):
                if name in _COPIED and isinstance(result, torch.Tensor):
                    return  # a copy to the host: a read, nothing to replay
                self.refuse(f"the torch operator {name} inside the call made no device tensor")
                return
            storage = result.untyped_storage()
            self._add(RecordedOp(kind="alloc", nbytes=int(storage.nbytes()), stream=s))
            self.scratch.append((storage.data_ptr(), int(storage.nbytes())))
            if name in _FILLED:
                self._add(RecordedOp(kind="fill", dst=self.view(result), value=_FILLED[name], stream=s))
            elif name in _FULL:
                self._add(RecordedOp(kind="fill", dst=self.view(result), value=_scalar(args[_FULL[name]]), stream=s))
            elif name in _COPIED:
                src = args[0]
                if not src.is_cuda:
                    self.refuse("a copy from host memory inside the call (make such tensors outside it)")
                    return
                self._add(RecordedOp(kind="copy", dst=self.view(result), src=self.view(src), stream=s))
            return
        if name in ("fill_", "zero_"):
            value = 0 if name == "zero_" else _scalar(args[1])
            self._add(RecordedOp(kind="fill", dst=self.view(args[0]), value=value, stream=s))
            return
        if name == "copy_":
            dst, src = args[0], args[1]
            if not dst.is_cuda:
                return  # a copy to the host: a read
            if not src.is_cuda:
                self.refuse("a copy from host memory inside the call (make such tensors outside it)")
                return
            self._add(RecordedOp(kind="copy", dst=self.view(dst), src=self.view(src), stream=s))
            return
        self.refuse(
            f"the torch operator {name} inside the call: a call's device work is replayed, and of torch's "
            f"operators only allocations, views, fills and copies are"
        )

    def record(self) -> CallRecord:
        return CallRecord(ops=self.ops, kernels=self.kernels, refused=self.refused,
                          kept=[KeptMemory(serial=k, nbytes=n) for k, n in sorted(self.kept.items())])


def live_blocks(torch: Any) -> list[tuple[int, int]]:
    """The (address, bytes) of each block torch's CUDA allocator holds for a live tensor of this process."""
    return [(int(b["address"]), int(b["size"])) for seg in torch.cuda.memory_snapshot()
            for b in seg.get("blocks", []) if b.get("state") == "active_allocated" and b.get("size")]


def _constant(t: Any) -> bool | int | float | None:
    """The one value every element of ``t`` holds, or None (none, or several)."""
    if t.numel() == 0 or t.is_complex():
        return None
    flat = t.reshape(-1)
    first = flat[0]
    return _scalar(first) if bool((flat == first).all()) else None


def _scalar(v: Any) -> bool | int | float:
    if hasattr(v, "item"):
        v = v.item()
    return v if isinstance(v, (bool, int, float)) else float(v)


def _mode(call: _Call) -> Any:
    from torch.utils._python_dispatch import TorchDispatchMode

    class _Ops(TorchDispatchMode):
        @classmethod
        def _should_skip_dynamo(cls) -> bool:
            return False

        def __torch_dispatch__(self, func, types, args=(), kwargs=None):  # noqa: ANN001
            kwargs = kwargs or {}
            out = func(*args, **kwargs)
            if not call.rec.tuning:
                name = getattr(getattr(func, "overloadpacket", None), "__name__", None) or str(func).split(".")[0]
                call.torch_op(name.removeprefix("aten::"), args, kwargs, out)
            return out

    return _Ops()

"""The replay process's side of record and replay: a record checked, its kernels compiled
here from their IR, its work done again on the call's buffers.

Nothing of the candidate's host code runs here: its kernels are compiled by Triton's compiler
in this process from the IR the record brings (so a code object is Triton's compile of Triton
IR, never bytes the candidate made), and the record's fills and copies are torch's, on views
checked to lie inside the call's buffers or the memory the call allocated. A record that names
a kernel it did not bring, points outside that memory, or passes a bound is refused
(``Refused``: the candidate's failure, saying which operation).
"""

from __future__ import annotations

import os
import re
from pathlib import Path
from typing import Any, Sequence

from arena.errors import ArenaException
from arena.evaluation.protocol import CallRecord, KernelArg, KernelCode, Place, RecordedOp, View
from arena.evaluation.record import (
    DTYPES,
    MAX_ARGS,
    MAX_DIMS,
    MAX_EVENTS,
    MAX_GRID,
    MAX_IR_CHARS,
    MAX_KERNELS,
    MAX_OPS,
    MAX_SCRATCH_BYTES,
    MAX_STREAMS,
    OPTIONS,
    kernel_id,
    region,
    span_bytes,
)

_LIBPATH = re.compile(r'libpath\s*=\s*"([^"]*)"')
_ENTRY = re.compile(r"tt\.func\s+public\s+@([A-Za-z_][\w$.]*)")
POISON_BYTE = 0xFF           # scratch before a checked replay: NaN in every float type, -1 in the integers


class Refused(ArenaException):
    """A record the replay will not run; the message says which part and why."""


_CU_FUNC_ATTRIBUTE_LOCAL_SIZE_BYTES = 3
_libcuda: Any = None


def local_size(function: int) -> int:
    """The local memory a thread of a loaded kernel takes (register spills, a stack: the driver's
    ``CU_FUNC_ATTRIBUTE_LOCAL_SIZE_BYTES``), 0 where the driver does not say. A process that launches the kernel holds
    that much for every thread the GPU can hold, for as long as it lives (on an H200, a kernel of 16,528 bytes a
    thread: 3.90 GiB held past the allocator's, against 16,528 x 132 SMs x 2,048 threads = 4.16 GiB; held still after
    a kernel of none ran: ``scripts/gpu_local_memory.py``)."""
    import ctypes

    global _libcuda
    if _libcuda is None:
        _libcuda = ctypes.CDLL("libcuda.so.1")
        _libcuda.cuFuncGetAttribute.argtypes = [ctypes.POINTER(ctypes.c_int), ctypes.c_int, ctypes.c_void_p]
    value = ctypes.c_int(0)
    got = _libcuda.cuFuncGetAttribute(ctypes.byref(value), _CU_FUNC_ATTRIBUTE_LOCAL_SIZE_BYTES,
                                      ctypes.c_void_p(int(function)))
    return max(0, int(value.value)) if got == 0 else 0


class Player:
    """The kernels of an evaluation's records, compiled here, and the replays of records."""

    def __init__(self, workdir: Path, target: Any = None, triton_cache: Path | None = None):
        import torch

        self.torch = torch
        self.dir = Path(workdir) / "replay-ir"
        self.dir.mkdir(parents=True, exist_ok=True)
        self.target = target
        # Triton's cache for the kernels compiled here: a folder of this process's own, never a cache another
        # process can write (the baseline's JIT, in the same process, keeps the trusted processes' cache)
        self.cache = Path(triton_cache) if triton_cache is not None else Path(workdir) / "replay-cache"
        self.compiled: dict[str, Any] = {}      # kernel id -> Triton's CompiledKernel
        self.names: dict[str, str] = {}         # kernel id -> its name
        self.streams = CallStreams(torch)       # the records' streams past the first, made once
        self.kept_bytes: dict[int, int] = {}    # memory the candidate keeps between calls, declared: serial -> bytes
        self.kept: dict[int, Any] = {}          # ... and this process's memory for it, made at its first replay

    def _target(self) -> Any:
        if self.target is None:
            import triton

            self.target = triton.runtime.driver.active.get_current_target()
        return self.target

    # -- kernels ----------------------------------------------------------------------------
    def load(self, codes: Sequence[KernelCode]) -> None:
        """Compile each kernel not compiled yet, from its IR, after checking it."""
        import triton

        for code in codes:
            if code.id in self.compiled:
                continue
            if len(self.compiled) >= MAX_KERNELS:
                raise Refused(f"the records bring more than {MAX_KERNELS} kernels")
            check_code(code)
            path = self.dir / f"{code.id}.ttir"
            path.write_text(code.ttir)
            before = os.environ.get("TRITON_CACHE_DIR")
            os.environ["TRITON_CACHE_DIR"] = str(self.cache)
            try:
                kernel = triton.compile(str(path), target=self._target(), options=dict(code.options))
            except Exception as exc:  # noqa: BLE001 - IR that does not compile is the record's fault
                raise Refused(f"kernel {code.name!r}: its IR does not compile: {type(exc).__name__}: "
                              f"{str(exc)[:500]}") from None
            finally:
                if before is None:
                    os.environ.pop("TRITON_CACHE_DIR", None)
                else:
                    os.environ["TRITON_CACHE_DIR"] = before
            name = getattr(kernel.metadata, "name", None) or kernel.name
            if name != code.name:
                raise Refused(f"kernel {code.name!r}: its IR defines {name!r}")
            self.compiled[code.id] = kernel
            self.names[code.id] = code.name

    def params(self, kid: str) -> list[str]:
        """The parameter types of a compiled kernel (Triton's names: *f32, i32, ...)."""
        return [str(t) for t in self.compiled[kid].src.signature.values()]

    def local_bytes(self, record: CallRecord) -> int:
        """The most local memory a thread of the kernels ``record`` launches takes, as compiled here (``local_size``;
        a checked record: each is compiled)."""
        most = 0
        for kid in sorted({op.kernel for op in record.ops if op.kind == "launch"}):
            kernel = self.compiled.get(kid)
            if kernel is not None:
                kernel._init_handles()       # loaded on the device, as its first launch would
                most = max(most, local_size(kernel.function))
        return most

    # -- records ----------------------------------------------------------------------------
    def check(self, record: CallRecord, regions: Sequence[tuple[int, int]]) -> None:
        """Every operation of ``record`` against the call's buffers (``regions``: address and
        bytes of each, inputs then outputs) and the kernels compiled here."""
        if record.refused:
            raise Refused(record.refused)
        if len(record.ops) > MAX_OPS:
            raise Refused(f"the record holds {len(record.ops)} operations, more than {MAX_OPS}")
        kept = declared_kept(record, self.kept_bytes)
        scratch: list[int] = []
        recorded: set[int] = set()
        for k, op in enumerate(record.ops):
            where = f"operation {k} ({op.kind})"
            check_stream(op, recorded, where)
            if op.kind == "alloc":
                if op.nbytes < 0 or sum(scratch) + op.nbytes > MAX_SCRATCH_BYTES:
                    raise Refused(f"{where}: {op.nbytes} bytes, past the {MAX_SCRATCH_BYTES} a call may allocate")
                scratch.append(op.nbytes)
            elif op.kind == "fill":
                check_view(op.dst, regions, scratch, f"{where}, its target", kept)
                if not isinstance(op.value, (bool, int, float)):
                    raise Refused(f"{where}: no value to fill with")
            elif op.kind == "copy":
                check_view(op.dst, regions, scratch, f"{where}, its target", kept)
                check_view(op.src, regions, scratch, f"{where}, its source", kept)
            elif op.kind == "launch":
                self._check_launch(op, regions, scratch, where, kept)
            elif op.kind not in ("event", "wait"):
                raise Refused(f"{where}: not an operation a record may hold")
        self.kept_bytes.update(kept)

    def _check_launch(self, op: RecordedOp, regions: Sequence[tuple[int, int]], scratch: list[int], where: str,
                      kept: dict[int, int]) -> None:
        if op.kernel not in self.compiled:
            raise Refused(f"{where}: a kernel this evaluation did not compile from the record's IR ({op.kernel[:16]})")
        where = f"{where} of {self.names[op.kernel]}"
        if len(op.grid) != 3 or any(not 0 <= g <= m for g, m in zip(op.grid, MAX_GRID)):
            raise Refused(f"{where}: grid {op.grid} out of bounds")
        params = self.params(op.kernel)
        if len(op.args) != len(params) or len(op.args) > MAX_ARGS:
            raise Refused(f"{where}: {len(op.args)} arguments for {len(params)} parameters")
        for j, (arg, ty) in enumerate(zip(op.args, params)):
            if ty.startswith("*"):
                if arg.place is None:
                    if arg.value != 0:
                        raise Refused(f"{where}: argument {j} is a pointer given as a number")
                    continue
                check_place(arg.place, 0, regions, scratch, f"{where}, argument {j}", kept)
            else:
                if arg.place is not None or isinstance(arg.value, bool) and ty != "i1" or \
                        not isinstance(arg.value, (bool, int, float)) or \
                        isinstance(arg.value, float) and not ty.startswith(("f", "bf")):
                    raise Refused(f"{where}: argument {j} is not a value of type {ty}")

    def replay(self, record: CallRecord, buffers: Sequence[Any], poison: bool = False) -> None:
        """The record's work on ``buffers`` (this process's mapping of the call's buffers), on
        the current stream; ``poison``: the memory the call allocates filled first with bytes
        no result is made of (a record must write what it reads)."""
        torch = self.torch
        regions = [_region_bytes(torch, t) for t in buffers]
        scratch: list[Any] = []
        for k in record.kept:       # (checked: ``check`` declared each)
            if k.serial not in self.kept:
                # bytes no result is made of: a kernel must write what it reads; then the candidate's between calls
                self.kept[k.serial] = torch.full((self.kept_bytes[k.serial],), POISON_BYTE, dtype=torch.uint8,
                                                 device="cuda")
        kept = self.kept
        main = torch.cuda.current_stream()
        streams = self.streams.open(record, main)
        events: dict[int, Any] = {}
        for op in record.ops:
            st = streams[op.stream]
            if op.kind == "launch":
                kernel = self.compiled[op.kernel]
                args = [_arg(a, regions, scratch, kept) for a in op.args]
                kernel.run(op.grid[0], op.grid[1], op.grid[2], st.cuda_stream, kernel.function, kernel.packed_metadata,
                           None, None, None, *args)
            elif op.kind in ("event", "wait"):
                self.streams.event(op, st, events)
            else:
                with torch.cuda.stream(st):   # torch's work on the stream the call asked it on
                    if op.kind == "alloc":
                        t = torch.empty(op.nbytes, dtype=torch.uint8, device="cuda")
                        if poison:
                            t.fill_(POISON_BYTE)
                        scratch.append(t)
                    elif op.kind == "fill":
                        dst = _tensor(torch, op.dst, regions, scratch, kept)
                        if dst is not None:
                            dst.fill_(op.value)
                    elif op.kind == "copy":
                        dst = _tensor(torch, op.dst, regions, scratch, kept)
                        src = _tensor(torch, op.src, regions, scratch, kept)
                        if dst is not None and src is not None:
                            dst.copy_(src)
        self.streams.join(main, streams)


class CallStreams:
    """A record's streams in a replay process (one mechanism for Triton's records and native
    ones): the current stream is the record's stream 0; its others are streams of this
    process's own, made once and kept; each starts after what came before the call (the flush,
    the gate), and the current stream waits for all of them before the call is over. Events are
    the record's own: recorded on a stream, waited for by another."""

    def __init__(self, torch: Any):
        self.torch = torch
        self.side: list[Any] = []

    def open(self, record: CallRecord, main: Any) -> list[Any]:
        """The streams of ``record`` by number, ``main`` first (None for a number it does not use)."""
        used = {op.stream for op in record.ops}
        if len(used) <= 1 and 0 in used or not used:
            return [main]
        while len(self.side) < max(used):
            self.side.append(self.torch.cuda.Stream())
        start = main.record_event()
        out: list[Any] = [main]
        for k in range(1, max(used) + 1):
            st = self.side[k - 1] if k in used else None
            if st is not None:
                st.wait_event(start)
            out.append(st)
        return out

    def event(self, op: RecordedOp, st: Any, events: dict[int, Any]) -> None:
        """An ``event`` operation recorded on ``st``, or ``st`` made to wait for one (``wait``)."""
        if op.kind == "event":
            if op.event not in events:
                events[op.event] = self.torch.cuda.Event()
            events[op.event].record(st)
        else:
            st.wait_event(events[op.event])

    @staticmethod
    def join(main: Any, streams: list[Any]) -> None:
        """The call's stream waits for every other before the call is over."""
        for st in streams[1:]:
            if st is not None:
                main.wait_event(st.record_event())


def check_stream(op: RecordedOp, recorded: set[int], where: str) -> None:
    """An operation's stream is one of a call's, and a wait is for an event an earlier
    operation recorded."""
    if not 0 <= op.stream < MAX_STREAMS:
        raise Refused(f"{where}: stream {op.stream} (a call's work runs on {MAX_STREAMS} streams at most)")
    if op.kind in ("event", "wait"):
        if not 0 <= op.event < MAX_EVENTS:
            raise Refused(f"{where}: event {op.event} (a call records {MAX_EVENTS} events at most)")
        if op.kind == "event":
            recorded.add(op.event)
        elif op.event not in recorded:
            raise Refused(f"{where}: waits for event {op.event}, which no earlier operation recorded")


def check_code(code: KernelCode) -> None:
    """A kernel's code as a record brings it: its id its own, its options known ones of their
    kinds, its IR bounded, one entry of its name, no library linked from a path of its choosing."""
    if len(code.ttir) > MAX_IR_CHARS:
        raise Refused(f"kernel {code.name!r}: {len(code.ttir)} characters of IR, more than {MAX_IR_CHARS}")
    for key, value in code.options.items():
        kind = OPTIONS.get(key)
        if kind is None:
            raise Refused(f"kernel {code.name!r}: the compile option {key!r} is not one a record may set")
        if not isinstance(value, kind) or isinstance(value, bool) and kind is int:
            raise Refused(f"kernel {code.name!r}: the compile option {key!r} is {value!r}")
    if kernel_id(code.ttir, code.options) != code.id:
        raise Refused(f"kernel {code.name!r}: its id is not the hash of its code")
    entries = _ENTRY.findall(code.ttir)
    if entries != [code.name]:
        raise Refused(f"kernel {code.name!r}: its IR's public functions are {entries}")
    for path in _LIBPATH.findall(code.ttir):
        if path:
            raise Refused(f"kernel {code.name!r}: its IR links a library of its own ({path})")


def declared_kept(record: CallRecord, made: dict[int, int]) -> dict[int, int]:
    """The memory the candidate keeps between calls that ``record`` points into (serial -> bytes), checked against
    what the records before it declared (``made``): one serial keeps its size, and all together stay within what a
    candidate may keep. For a HIP candidate's records and a Triton candidate's alike."""
    sizes = dict(made)
    for k in record.kept:
        if sizes.get(k.serial, k.nbytes) != k.nbytes:
            raise Refused(f"kept memory {k.serial} of {k.nbytes} bytes was {sizes[k.serial]} before")
        if k.serial not in sizes and (k.nbytes <= 0 or sum(sizes.values()) + k.nbytes > MAX_SCRATCH_BYTES):
            raise Refused(f"kept memory of {k.nbytes} bytes, past the {MAX_SCRATCH_BYTES} a candidate may keep")
        sizes[k.serial] = k.nbytes
    return {k.serial: k.nbytes for k in record.kept}


def _bounds(place: Place, regions: Sequence[tuple[int, int]], scratch: Sequence[int], where: str,
            kept: dict[int, int] | None = None) -> int:
    if place.space == "buffer" and 0 <= place.index < len(regions):
        return regions[place.index][1]
    if place.space == "scratch" and 0 <= place.index < len(scratch):
        return scratch[place.index]
    if place.space == "kept" and kept is not None and place.index in kept:
        return kept[place.index]
    if place.space == "unknown":
        raise Refused(f"{where}: points at memory that is neither the call's buffers, memory the call allocated nor "
                      f"memory the candidate keeps between calls")
    raise Refused(f"{where}: {place.space} {place.index} does not exist")


def check_place(place: Place, extent: int, regions: Sequence[tuple[int, int]], scratch: Sequence[int],
                 where: str, kept: dict[int, int] | None = None) -> None:
    size = _bounds(place, regions, scratch, where, kept)
    if not 0 <= place.offset <= size - extent:
        raise Refused(f"{where}: bytes {place.offset}..{place.offset + extent} of a {place.space} of {size}")


def check_view(view: View | None, regions: Sequence[tuple[int, int]], scratch: Sequence[int], where: str,
                kept: dict[int, int] | None = None) -> None:
    if view is None:
        raise Refused(f"{where}: missing")
    if view.dtype not in DTYPES:
        raise Refused(f"{where}: element type {view.dtype!r}")
    if len(view.sizes) != len(view.strides) or len(view.sizes) > MAX_DIMS or \
            any(s < 0 for s in view.sizes) or any(s < 0 for s in view.strides):
        raise Refused(f"{where}: sizes {view.sizes} and strides {view.strides}")
    size = _element_size(view.dtype)
    if view.place.offset % size:
        raise Refused(f"{where}: offset {view.place.offset} is not aligned to its elements")
    check_place(view.place, span_bytes(view.sizes, view.strides, size), regions, scratch, where, kept)


def _element_size(dtype: str) -> int:
    import torch

    return torch.empty((), dtype=getattr(torch, dtype)).element_size()


def _region_bytes(torch: Any, t: Any) -> Any:
    """A buffer as the bytes its view reaches (a uint8 tensor over the same memory)."""
    if t is None:
        return None
    _, n = region(t)
    out = torch.empty(0, dtype=torch.uint8, device=t.device)
    return out.set_(t.untyped_storage(), t.storage_offset() * t.element_size(), (n,), (1,))


def _base(place: Place, regions: Sequence[Any], scratch: Sequence[Any], kept: dict[int, Any]) -> Any:
    if place.space == "kept":
        return kept[place.index]
    return regions[place.index] if place.space == "buffer" else scratch[place.index]


def _arg(arg: KernelArg, regions: Sequence[Any], scratch: Sequence[Any], kept: dict[int, Any]) -> Any:
    if arg.place is None:
        return arg.value
    return _base(arg.place, regions, scratch, kept).data_ptr() + arg.place.offset


def _tensor(torch: Any, view: View, regions: Sequence[Any], scratch: Sequence[Any], kept: dict[int, Any]) -> Any:
    dtype = getattr(torch, view.dtype)
    n = span_bytes(view.sizes, view.strides, _element_size(view.dtype))
    if n == 0:
        return None
    base = _base(view.place, regions, scratch, kept)
    return base[view.place.offset:view.place.offset + n].view(dtype).as_strided(view.sizes, view.strides)

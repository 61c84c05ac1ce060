"""Record and replay for a HIP candidate built for CUDA: the replay process's side.

The replay process loads the device code of the candidate's build (its fatbinary, extracted
by the harness's build and named with its sha256 in the job; ``cuModuleLoadData``: no host
code of the candidate's is loaded), and replays each record on the call's buffers with the
driver's ``cuLaunchKernel``: a kernel by its name in that code, each parameter the record's
bytes with its pointers set to this process's mapping of the memory they name. Memory the
candidate allocated and keeps between calls (``kept``) gets memory of the same size here,
kept as long as the evaluation. The call's other streams and the events between them are
streams and events of this process's own (``arena.evaluation.replay.player.CallStreams``).
Every field is checked first against the kernel's parameters as the driver reads them from
the code (``cuFuncGetParamInfo``) and the bounds of ``arena.evaluation.record``; a record that
names a kernel the build does not hold, a parameter of the wrong size or a pointer outside the
call's memory is refused (``Refused``).
"""

from __future__ import annotations

import ctypes
import hashlib
from pathlib import Path
from typing import Any, Sequence

from arena.evaluation.protocol import CallRecord, KernelCode, Place, RecordedOp, View
from arena.evaluation.record import MAX_ARGS, MAX_GRID, MAX_OPS
from arena.evaluation.replay.player import (
    POISON_BYTE,
    CallStreams,
    Refused,
    check_place,
    check_stream,
    check_view,
    declared_kept,
    local_size,
)

MAX_BLOCK = (1024, 1024, 64)
MAX_THREADS = 1024
DEFAULT_SHARED = 48 * 1024                 # dynamic shared memory a kernel may take without asking
_CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES = 8
_CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_BLOCK_OPTIN = 97


class _Driver:
    """The few driver calls a replay needs, through ctypes (the replay process's own)."""

    def __init__(self) -> None:
        self.lib = ctypes.CDLL("libcuda.so.1")
        vp, u, sz = ctypes.c_void_p, ctypes.c_uint, ctypes.c_size_t
        self.lib.cuModuleLoadData.argtypes = [ctypes.POINTER(vp), ctypes.c_char_p]
        self.lib.cuModuleGetFunction.argtypes = [ctypes.POINTER(vp), vp, ctypes.c_char_p]
        self.lib.cuFuncGetParamInfo.argtypes = [vp, sz, ctypes.POINTER(sz), ctypes.POINTER(sz)]
        self.lib.cuFuncSetAttribute.argtypes = [vp, ctypes.c_int, ctypes.c_int]
        self.lib.cuLaunchKernel.argtypes = [vp, u, u, u, u, u, u, u, vp, ctypes.POINTER(vp), ctypes.POINTER(vp)]
        self.lib.cuGetErrorName.argtypes = [ctypes.c_int, ctypes.POINTER(ctypes.c_char_p)]
        self.lib.cuCtxGetDevice.argtypes = [ctypes.POINTER(ctypes.c_int)]
        self.lib.cuMemsetD8Async.argtypes = [ctypes.c_uint64, ctypes.c_ubyte, sz, vp]
        self.lib.cuMemcpyDtoDAsync_v2.argtypes = [ctypes.c_uint64, ctypes.c_uint64, sz, vp]
        self.lib.cuDeviceGetAttribute.argtypes = [ctypes.POINTER(ctypes.c_int), ctypes.c_int, ctypes.c_int]

    def error(self, code: int) -> str:
        name = ctypes.c_char_p()
        self.lib.cuGetErrorName(code, ctypes.byref(name))
        return (name.value or b"").decode() or f"CUresult {code}"

    def ok(self, code: int, what: str) -> None:
        if code != 0:
            raise RuntimeError(f"{what}: {self.error(code)}")


class NativeChecks:
    """A native record's checks: against the kernels' parameters (``params``: the driver's
    reading of the build's code, in ``NativePlayer``), the call's buffers, the kept memory the
    records declared, and the bounds of ``arena.evaluation.record``."""

    def __init__(self, max_shared: int):
        self.max_shared = max_shared
        self.kept_bytes: dict[int, int] = {}     # serial -> bytes, of the kept memory made so far

    def params(self, name: str) -> list[tuple[int, int]]:
        """The (offset, size) of each parameter of the build's kernel ``name``; ``Refused``
        when the build defines none of that name."""
        raise NotImplementedError

    def load(self, codes: Sequence[KernelCode]) -> None:
        if codes:
            raise Refused("a HIP candidate's record brings kernel code: its kernels are the build's")

    def check(self, record: CallRecord, regions: Sequence[tuple[int, int]]) -> None:
        """Every operation of ``record`` against the call's buffers (``regions``), the kept
        memory it declares, and the build's kernels; kept memory first seen is made here."""
        if record.refused:
            raise Refused(record.refused)
        if len(record.ops) > MAX_OPS:
            raise Refused(f"the record holds {len(record.ops)} operations, more than {MAX_OPS}")
        kept = declared_kept(record, self.kept_bytes)
        recorded: set[int] = set()
        for k, op in enumerate(record.ops):
            where = f"operation {k} ({op.kind})"
            check_stream(op, recorded, where)
            if op.kind in ("event", "wait"):
                continue
            if op.kind == "fill":
                _check_bytes(op.dst, regions, f"{where}, its target", kept)
                if not isinstance(op.value, int) or isinstance(op.value, bool) or not 0 <= op.value <= 255:
                    raise Refused(f"{where}: a fill of a byte with {op.value!r}")
            elif op.kind == "copy":
                _check_bytes(op.dst, regions, f"{where}, its target", kept)
                _check_bytes(op.src, regions, f"{where}, its source", kept)
                if op.dst.sizes != op.src.sizes:
                    raise Refused(f"{where}: {op.src.sizes} bytes copied to {op.dst.sizes}")
            elif op.kind == "launch":
                self._check_launch(op, regions, kept, where)
            else:
                raise Refused(f"{where}: not an operation a native record may hold")
        for serial, nbytes in kept.items():
            if serial not in self.kept_bytes:
                self.make_kept(serial, nbytes)
                self.kept_bytes[serial] = nbytes

    def make_kept(self, serial: int, nbytes: int) -> None:
        """Memory for the candidate's kept allocation ``serial``, first named by a checked record."""

    def _check_launch(self, op: RecordedOp, regions: Sequence[tuple[int, int]], kept: dict[int, int],
                      where: str) -> None:
        if not isinstance(op.kernel, str) or not op.kernel or len(op.kernel) > 4096 or "\0" in op.kernel:
            raise Refused(f"{where}: a launch names no kernel")
        params = self.params(op.kernel)
        where = f"{where} of {op.kernel}"
        if len(op.grid) != 3 or any(not 1 <= g <= m for g, m in zip(op.grid, MAX_GRID)):
            raise Refused(f"{where}: grid {op.grid} out of bounds")
        if len(op.block) != 3 or any(not 1 <= b <= m for b, m in zip(op.block, MAX_BLOCK)) or \
                op.block[0] * op.block[1] * op.block[2] > MAX_THREADS:
            raise Refused(f"{where}: block {op.block} out of bounds")
        if not 0 <= op.shared <= self.max_shared:
            raise Refused(f"{where}: {op.shared} bytes of dynamic shared memory, past the device's {self.max_shared}")
        if len(op.args) != len(params):
            raise Refused(f"{where}: {len(op.args)} arguments for {len(params)} parameters")
        for j, (arg, (_, size)) in enumerate(zip(op.args, params)):
            if arg.place is not None or arg.value is not None:
                raise Refused(f"{where}: argument {j} is not a native parameter's bytes")
            try:
                raw = bytes.fromhex(arg.raw)
            except ValueError:
                raise Refused(f"{where}: argument {j}'s bytes are not hex") from None
            if len(raw) != size:
                raise Refused(f"{where}: argument {j} has {len(raw)} bytes; the kernel's parameter has {size}")
            for p in arg.pointers:
                if not 0 <= p.at <= size - 8:
                    raise Refused(f"{where}: argument {j} has a pointer at byte {p.at} of {size}")
                check_place(p.place, 0, regions, [], f"{where}, argument {j}", kept)


class NativePlayer(NativeChecks):
    """The device code of a HIP build, loaded here, and the replays of its records; the same
    interface as ``arena.evaluation.replay.player.Player``."""

    def __init__(self, code_path: str, sha256: str):
        import torch

        self.torch = torch
        data = Path(code_path).read_bytes()
        if hashlib.sha256(data).hexdigest() != sha256:
            raise RuntimeError(f"the build's device code {code_path} is not the one the build made "
                               f"(its sha256 differs)")
        torch.cuda.init()
        torch.empty(1, device="cuda")  # torch's context current in this thread
        self.cu = _Driver()
        self.module = ctypes.c_void_p()
        self._image = ctypes.create_string_buffer(data, len(data))  # kept alive while the module is
        self.cu.ok(
            self.cu.lib.cuModuleLoadData(ctypes.byref(self.module), self._image), "loading the build's device code"
        )
        dev, optin = ctypes.c_int(), ctypes.c_int()
        self.cu.ok(self.cu.lib.cuCtxGetDevice(ctypes.byref(dev)), "cuCtxGetDevice")
        self.cu.ok(
            self.cu.lib.cuDeviceGetAttribute(
                ctypes.byref(optin), _CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_BLOCK_OPTIN, dev.value
            ),
            "cuDeviceGetAttribute",
        )
        super().__init__(int(optin.value))
        self.functions: dict[str, tuple[ctypes.c_void_p, list[tuple[int, int]]]] = {}
        self.shared_set: dict[str, int] = {}
        self.kept: dict[int, Any] = {}  # serial -> this process's memory for it
        self.streams = CallStreams(torch)
        self._packed: dict[tuple[int, int, tuple[int, ...]], list[Any]] = {}

    def function(self, name: str) -> tuple[ctypes.c_void_p, list[tuple[int, int]]]:
        """A kernel of the build's device code by its (mangled) name, and its parameters'
        (offset, size) as the driver reads them; ``Refused`` when the code has none of that name."""
        if name not in self.functions:
            fn = ctypes.c_void_p()
            if self.cu.lib.cuModuleGetFunction(ctypes.byref(fn), self.module, name.encode()) != 0:
                raise Refused(f"a launch of {name!r}, a kernel the build of the candidate's file does not define")
            params: list[tuple[int, int]] = []
            off, size = ctypes.c_size_t(), ctypes.c_size_t()
            while (
                len(params) <= MAX_ARGS
                and self.cu.lib.cuFuncGetParamInfo(fn, len(params), ctypes.byref(off), ctypes.byref(size)) == 0
            ):
                params.append((off.value, size.value))
            self.functions[name] = (fn, params)
        return self.functions[name]

    def params(self, name: str) -> list[tuple[int, int]]:
        return self.function(name)[1]

    def local_bytes(self, record: CallRecord) -> int:
        """The most local memory a thread of the build's kernels ``record`` launches takes (``local_size``)."""
        names = sorted({op.kernel for op in record.ops if op.kind == "launch"})
        return max([local_size(self.function(n)[0].value or 0) for n in names], default=0)

    def make_kept(self, serial: int, nbytes: int) -> None:
        t = self.torch.empty(nbytes, dtype=self.torch.uint8, device="cuda")
        t.fill_(POISON_BYTE)  # bytes no result is made of: a kernel must write what it reads
        self.kept[serial] = t

    def replay(self, record: CallRecord, buffers: Sequence[Any], poison: bool = False) -> None:
        """The record's work on ``buffers`` (this process's mapping of the call's buffers), on
        the current stream and the record's others (``CallStreams``). (``poison``: kept memory
        was poisoned when it was made; it is the candidate's between calls, as its own memory is.)"""
        torch = self.torch
        main = torch.cuda.current_stream()
        streams = self.streams.open(record, main)
        events: dict[int, Any] = {}
        starts = [0 if t is None else t.data_ptr() for t in buffers]
        for k, op in enumerate(record.ops):
            stream = streams[op.stream].cuda_stream
            if op.kind in ("event", "wait"):
                self.streams.event(op, streams[op.stream], events)
            elif op.kind == "launch":
                fn, _ = self.function(op.kernel)
                params = self._params(record, k, op, buffers)
                if op.shared > DEFAULT_SHARED and self.shared_set.get(op.kernel, DEFAULT_SHARED) < op.shared:
                    self.cu.ok(
                        self.cu.lib.cuFuncSetAttribute(fn, _CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES, op.shared),
                        f"setting {op.kernel}'s shared memory",
                    )
                    self.shared_set[op.kernel] = op.shared
                g, b = op.grid, op.block
                self.cu.ok(
                    self.cu.lib.cuLaunchKernel(
                        fn, g[0], g[1], g[2], b[0], b[1], b[2], op.shared, stream, params[0], None
                    ),
                    f"launching {op.kernel}",
                )
            elif op.kind == "fill" and op.dst.sizes[0]:  # as the candidate asked: the driver's fill and copy
                self.cu.ok(
                    self.cu.lib.cuMemsetD8Async(self._address(op.dst.place, starts), op.value, op.dst.sizes[0], stream),
                    "a recorded fill",
                )
            elif op.kind == "copy" and op.dst.sizes[0]:
                self.cu.ok(
                    self.cu.lib.cuMemcpyDtoDAsync_v2(
                        self._address(op.dst.place, starts),
                        self._address(op.src.place, starts),
                        op.dst.sizes[0],
                        stream,
                    ),
                    "a recorded copy",
                )
        self.streams.join(main, streams)

    def _address(self, place: Place, starts: Sequence[int]) -> int:
        """A checked place's address in this process."""
        base = starts[place.index] if place.space == "buffer" else self.kept[place.index].data_ptr()
        return base + place.offset

    def _params(self, record: CallRecord, k: int, op: RecordedOp, buffers: Sequence[Any]) -> list[Any]:
        """The launch's parameter array (kept with its buffers), its pointers set for ``buffers``."""
        key = (id(record), k, tuple(0 if t is None else t.data_ptr() for t in buffers))
        packed = self._packed.get(key)
        if packed is None:
            starts = [0 if t is None else t.data_ptr() for t in buffers]
            blobs = []
            for arg in op.args:
                raw = bytearray.fromhex(arg.raw)
                for p in arg.pointers:
                    raw[p.at : p.at + 8] = self._address(p.place, starts).to_bytes(8, "little")
                blobs.append(ctypes.create_string_buffer(bytes(raw), max(len(raw), 1)))
            array = (ctypes.c_void_p * max(len(blobs), 1))(*[ctypes.cast(b, ctypes.c_void_p) for b in blobs])
            packed = [array, blobs, record]  # the record kept alive while its id is a key
            if len(self._packed) > 4096:
                self._packed.clear()
            self._packed[key] = packed
        return packed


def _check_bytes(view: View | None, regions: Sequence[tuple[int, int]], where: str, kept: dict[int, int]) -> None:
    """A native fill's or copy's operand: a run of bytes inside the call's buffers or kept memory."""
    if view is None or view.dtype != "uint8" or len(view.sizes) != 1 or view.strides != [1]:
        raise Refused(f"{where}: not a run of bytes")
    check_view(view, regions, [], where, kept)

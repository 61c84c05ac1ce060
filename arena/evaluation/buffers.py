"""The buffers of one call, shared between the trusted process and the candidate process.

The trusted process owns every tensor: it makes the inputs, poisons the outputs and, after
the call, reads them back from its own memory. The candidate process maps only the buffers
of the calls it is asked to make (a "slot": one call's inputs and outputs), never the
reference's results, the baseline's outputs or the inputs of a call it has not reached. A
slot is one byte buffer with a layout, its tensors separated by guard bands (``Slot``); how it
crosses depends on the device (``SlotMaker``).
"""

from __future__ import annotations

import base64
import json
import mmap
import os
import pickle
import secrets
from typing import Any, Sequence

import torch

from arena.taskdef.loader import storage_elements

_ALIGN = 256
GUARD_MIN = 4096          # bytes of the smallest guard band
GUARD_MAX = 1 << 20       # and of the largest: a sixteenth of the buffer in between


def _aligned(n: int) -> int:
    return -(-n // _ALIGN) * _ALIGN


def _nbytes(dtype: torch.dtype, shape: Sequence[int], strides: Sequence[int] | None = None) -> int:
    """Bytes of the memory a tensor spans (its strides', where it has them)."""
    return storage_elements(shape, strides) * torch.empty((), dtype=dtype).element_size()


def _dtype_name(dtype: torch.dtype) -> str:
    return str(dtype).removeprefix("torch.")


def guard_bytes(nbytes: int) -> int:
    """The guard band after a buffer of ``nbytes`` (beyond the padding up to the alignment)."""
    return _aligned(min(GUARD_MAX, max(GUARD_MIN, nbytes // 16)))


TensorSpec = tuple  # (dtype, shape) or (dtype, shape, element strides); None: no tensor (an absent input)


def plan(specs: Sequence[TensorSpec | None]) -> tuple[list, list[tuple[int, int]], int]:
    """Where each tensor and each guard band of a slot lie: (layout, guards, total bytes).
    ``layout`` holds (offset, dtype name, shape, strides or None) per tensor, None for no
    tensor; ``guards`` (offset, size), the band before the first tensor first, then the band
    after each tensor there is."""
    layout: list = []
    guards = [(0, GUARD_MIN)]
    offset = GUARD_MIN
    for spec in specs:
        if spec is None:
            layout.append(None)
            continue
        dtype, shape = spec[0], spec[1]
        strides = [int(s) for s in spec[2]] if len(spec) > 2 and spec[2] is not None else None
        n = _nbytes(dtype, shape, strides)
        layout.append((offset, _dtype_name(dtype), [int(d) for d in shape], strides))
        end, offset = offset + n, offset + _aligned(max(n, 1)) + guard_bytes(n)
        guards.append((end, offset - end))      # from the buffer's last byte on: its padding too
    return layout, guards, offset


class _Viewer:
    """The tensors of a slot as views of its byte buffer ``base`` (a uint8 tensor), None where
    the layout has none; worked out once per layout, then each set of views is one
    ``as_strided`` per tensor over a view of the buffer in its dtype (a slot's offsets are
    multiples of the alignment: of every element size)."""

    def __init__(self, base: torch.Tensor, layout: Sequence[Any]):
        self._base = base
        self._typed: dict[torch.dtype, torch.Tensor] = {}
        self._plan: list[tuple[torch.dtype, tuple[int, ...], tuple[int, ...], int, bool] | None] = []
        for entry in layout:
            if entry is None:
                self._plan.append(None)
                continue
            offset, dtype, shape = int(entry[0]), getattr(torch, entry[1]), tuple(int(d) for d in entry[2])
            strides = tuple(int(s) for s in entry[3]) if len(entry) > 3 and entry[3] is not None else None
            if strides is None:
                strides = tuple(torch.empty(shape, dtype=dtype, device="meta").stride())
            if dtype not in self._typed:
                size = torch.empty((), dtype=dtype).element_size()
                self._typed[dtype] = base[: base.numel() // size * size].view(dtype)
            size = self._typed[dtype].element_size()
            empty = _nbytes(dtype, shape, strides) == 0
            self._plan.append((dtype, shape, strides, offset // size, empty))

    def views(self) -> list[torch.Tensor | None]:
        out: list[torch.Tensor | None] = []
        for p in self._plan:
            if p is None:
                out.append(None)
            elif p[4]:
                out.append(torch.empty(p[1], dtype=p[0], device=self._base.device))
            else:
                out.append(self._typed[p[0]].as_strided(p[1], p[2], p[3]))
        return out


def _views(base: torch.Tensor, layout: Sequence[Any]) -> list[torch.Tensor | None]:
    """The tensors of a slot as views of its byte buffer ``base`` (``_Viewer``)."""
    return _Viewer(base, layout).views()


class Slot:
    """One call's tensors in the trusted process, the handle the candidate maps them by (and the
    descriptor that goes with it, or -1), and the guard bands around them.

    The handle is a string that travels in a ``MapRequest``; ``open_slot`` turns it back into
    tensors in the candidate process. Every kind of slot is one byte buffer with a layout
    (offset, dtype, shape and, for a strided input, element strides of each tensor; null for an
    optional input the config leaves out, which is None on both sides): the same views are made
    on both sides. A slot handed over as a descriptor travels beside its ``MapRequest`` on the
    process's control socket (``arena.evaluation.processes.CandidatePeer.send_fd``).

    Every tensor is followed by a guard band (and the first one is preceded by one) of a random
    byte the candidate is not told: a kernel that writes past the end of a buffer it was given
    (a hard-coded size, a missing mask) changes a band, and ``overrun`` names the buffer it ran
    past. Without the bands such a write lands in the next buffer or in nothing the harness
    reads, and a kernel that corrupts memory could pass."""

    def __init__(self, base: torch.Tensor, layout: list, guards: list[tuple[int, int]], handle: str,
                 names: Sequence[str] = (), fd: int = -1, mapped: Any = None):
        self._on_close: Any = None          # the maker's count of open slots
        self.tensors = _views(base, layout)
        self.handle = handle
        self.fd = fd
        self._base = base
        self._guards = [base[o:o + n] for o, n in guards]
        names = list(names) or [f"buffer {k}" for k in range(len(layout))]
        self._names = [n for n, entry in zip(names, layout) if entry is not None]   # one a guard band follows
        self._byte = 0x11 + secrets.randbelow(0xDD)     # a byte neither zero, nor all ones, nor NaN's
        for g in self._guards:
            g.fill_(self._byte)
        self._mapped = mapped

    def overrun_flag(self) -> torch.Tensor:
        """A one-element bool tensor (on the slot's device, no wait): some guard band changed."""
        flags = torch.stack([(g != self._byte).any() for g in self._guards])
        return flags.any()

    def overrun(self) -> str | None:
        """None while every guard band is as filled; else which buffer was written past
        (waits for the device)."""
        if not self._guards or not bool(self.overrun_flag()):
            return None
        for k, g in enumerate(self._guards):
            if bool((g != self._byte).any()):
                if k == 0:
                    return f"before the start of {self._names[0]!r}"
                return f"past the end of {self._names[k - 1]!r}"
        return None

    def close(self) -> None:
        self.tensors = []
        self._guards = []
        self._base = None
        self._mapped = None                 # a device mapping goes with its last tensor
        if self._on_close is not None:
            self._on_close, done = None, self._on_close
            done()
        if self.fd >= 0:
            try:
                os.close(self.fd)
            except OSError:
                pass
            self.fd = -1


class SlotMaker:
    """Allocates slots for one evaluation: ``device`` is "cuda" (a GPU of either vendor) or
    "cpu"; ``by_fd``: slots are handed over as descriptors (``arena.evaluation.processes.shares_by_fd``).

    - On an NVIDIA GPU a slot is an allocation of its own of CUDA's virtual memory management,
      handed to the other process as a file descriptor (``arena.devices.vmm``): it needs no uid
      in common, so that process runs as a uid of its own (``arena.evaluation.sandbox.confine``).
    - On ROCm the buffers are device memory shared through the runtime's IPC handles, by torch's
      own sharing of device tensors between processes. Such a handle maps the whole allocation
      block a tensor lives in, so candidate-visible buffers come from a memory pool of their own
      (``torch.cuda.MemPool``): no block of that pool ever holds anything but slots.
    - On the cpu backend a slot is a sealed memfd (it can be neither shrunk nor grown, so no
      mapping of it faults in the trusted process), handed over as a descriptor too."""

    def __init__(self, device: str, by_fd: bool = True):
        self.device = device
        self.by_fd = by_fd
        self.pool = None
        self.isolated = device == "cpu" or by_fd    # no other data of the trusted process can share a slot's memory
        if device != "cpu" and not by_fd:
            try:
                self.pool = torch.cuda.MemPool()
                self.isolated = True
            except (AttributeError, RuntimeError, TypeError):
                self.pool = None

        self.live = 0                       # slots allocated and not yet closed
        self.live_bytes = 0                 # ... and their bytes

    def _closed(self, nbytes: int) -> None:
        self.live -= 1
        self.live_bytes -= nbytes

    def allocate(self, specs: Sequence[TensorSpec | None], names: Sequence[str] = ()) -> Slot:
        layout, guards, size = plan(specs)
        if self.device == "cpu":
            slot = self._memfd_slot(layout, guards, size, names)
        elif self.by_fd:
            slot = self._vmm_slot(layout, guards, size, names)
        else:
            slot = self._ipc_slot(layout, guards, size, names)
        self.live += 1
        self.live_bytes += size
        slot._on_close = lambda: self._closed(size)
        return slot

    def renew(self) -> bool:
        """Let the memory pool go once no slot of it is open (after a config), so that the
        allocator's next ``empty_cache`` gives its blocks back to the device: a pool keeps the
        blocks of freed tensors for itself while it lives. True if it was let go."""
        if self.pool is None or self.live:
            return False
        self.pool = torch.cuda.MemPool()
        return True

    def _memfd_slot(self, layout: list, guards: list, size: int, names: Sequence[str]) -> Slot:
        import fcntl

        fd = os.memfd_create("arena-slot", os.MFD_CLOEXEC | os.MFD_ALLOW_SEALING)
        try:
            os.ftruncate(fd, size)
            fcntl.fcntl(fd, fcntl.F_ADD_SEALS, fcntl.F_SEAL_SHRINK | fcntl.F_SEAL_GROW | fcntl.F_SEAL_SEAL)
            mapped = mmap.mmap(fd, size)
        except BaseException:
            os.close(fd)
            raise
        handle = json.dumps({"kind": "memfd", "size": size, "layout": layout})
        base = torch.frombuffer(mapped, dtype=torch.uint8, count=size)
        return Slot(base, layout, guards, handle, names, fd, mapped)

    def _vmm_slot(self, layout: list, guards: list, size: int, names: Sequence[str]) -> Slot:
        from arena.devices import vmm

        mapping, fd = vmm.allocate(size)         # the descriptor: the slot's to send, and to close
        handle = json.dumps({"kind": "vmm", "size": mapping.size, "layout": layout})
        return Slot(mapping.tensor()[:size], layout, guards, handle, names, fd)

    def _ipc_slot(self, layout: list, guards: list, size: int, names: Sequence[str]) -> Slot:
        from torch.multiprocessing.reductions import reduce_tensor

        if self.pool is not None:
            with torch.cuda.use_mem_pool(self.pool):
                base = torch.empty(size, dtype=torch.uint8, device="cuda")
        else:
            base = torch.empty(size, dtype=torch.uint8, device="cuda")
        payload = base64.b64encode(pickle.dumps(reduce_tensor(base))).decode()
        return Slot(base, layout, guards, json.dumps({"kind": "ipc", "payload": payload, "layout": layout}), names)


class Mapped:
    """A slot as the candidate's side maps it: its byte buffer, and the layout its tensors are
    views of. ``views`` makes new tensor objects over the same bytes each time it is asked:
    whatever code given the last ones did to them (``set_`` to memory of its own, as torch's
    cuDNN recurrent layers do to the weights they are handed; an in-place reshape) stays with
    those objects and does not reach the next call. Dropping it (and every view) unmaps."""

    def __init__(self, base: torch.Tensor, layout: list, keep: Any = None):
        self._viewer, self._keep = _Viewer(base, layout), keep

    def views(self) -> list[torch.Tensor | None]:
        return self._viewer.views()


def map_slot(handle: str, fd: int = -1) -> Mapped:
    """The candidate process's side of a slot: the buffer a handle (and the descriptor ``fd``
    that came with it) stands for, mapped here."""
    h = json.loads(handle)
    layout = [None if e is None else (int(e[0]), str(e[1]), [int(x) for x in e[2]],
                                      [int(x) for x in e[3]] if len(e) > 3 and e[3] is not None else None)
              for e in h["layout"]]
    if h["kind"] == "memfd":
        try:
            mapped = mmap.mmap(fd, int(h["size"]))
        finally:
            os.close(fd)
        return Mapped(torch.frombuffer(mapped, dtype=torch.uint8, count=int(h["size"])), layout, mapped)
    if h["kind"] == "vmm":
        from arena.devices import vmm

        return Mapped(vmm.open_fd(fd, int(h["size"])).tensor(), layout)
    rebuild, args = pickle.loads(base64.b64decode(h["payload"]))     # from the trusted process only
    return Mapped(rebuild(*args), layout)


def open_slot(handle: str, fd: int = -1) -> tuple[list[torch.Tensor | None], Mapped]:
    """The tensors a handle (and the descriptor ``fd`` that came with it) stands for, and an
    object that keeps their mapping alive (drop both to unmap)."""
    mapped = map_slot(handle, fd)
    return mapped.views(), mapped

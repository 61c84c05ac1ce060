"""Record and replay: the candidate's device work measured where none of its code runs.

The candidate process records each call's device work: for a Triton candidate (``recorder``)
the launches of the Triton kernels it compiled (each as Triton's IR and its options), with
their grids and arguments (a pointer as a buffer of the call or memory the call allocated, plus
an offset), and the allocations, fills and copies it asked torch for; for a HIP candidate on
CUDA (``native``) what a recorder linked into its library saw of the runtime calls: launches
with their parameters' bytes, fills, copies, and the memory it keeps. A replay process, which
runs none of the candidate's host code, compiles the Triton kernels itself from their IR
(``player``) or loads the device code of the harness's own build of the HIP file
(``native_player``), and replays the record on the call's buffers; its outputs are the ones
checked and its times the ones counted. The record is data from an untrusted process: the
players check every field against the bounds below and refuse what they cannot mean.
"""

from __future__ import annotations

import hashlib
import json
from typing import Any

MAX_OPS = 4096               # operations of one call's record
MAX_STREAMS = 8              # streams one call's work runs on (the one it was called on included)
MAX_EVENTS = 256             # events one call records
MAX_ARGS = 512               # arguments of one launch
MAX_KERNELS = 256            # kernels one evaluation's records bring
MAX_IR_CHARS = 4 * 2**20     # characters of one kernel's IR
MAX_DIMS = 8                 # of a fill's or a copy's view
MAX_SCRATCH_BYTES = 16 * 2**30   # that a call may allocate, in all
MAX_GRID = (2**31 - 1, 65535, 65535)

# the compile options a record may carry, with their kinds: the rest are the backend's own defaults
# (a path to override the IR with, or to link libraries from, is never taken from a record)
OPTIONS: dict[str, type | tuple[type, ...]] = {
    "num_warps": int, "num_stages": int, "num_ctas": int, "maxnreg": (int, type(None)), "enable_fp_fusion": bool,
    "enable_reflect_ftz": bool, "launch_cooperative_grid": bool, "launch_pdl": bool, "debug": bool,
    "sanitize_overflow": bool, "max_num_imprecise_acc_default": int, "default_dot_input_precision": str,
}

# element types a fill's or a copy's view may have (torch's names)
DTYPES = ("float64", "float32", "float16", "bfloat16", "float8_e4m3fn", "float8_e5m2", "int64", "int32", "int16",
          "int8", "uint8", "bool", "uint16", "uint32", "uint64")


def kernel_id(ttir: str, options: dict[str, Any]) -> str:
    """The id of a kernel's code: the sha256 of its IR and its options."""
    blob = json.dumps({"ttir": ttir, "options": options}, sort_keys=True, default=str)
    return hashlib.sha256(blob.encode()).hexdigest()


def span_bytes(sizes: Any, strides: Any, element_size: int) -> int:
    """The bytes a strided view reaches from its first element (0 for an empty one)."""
    sizes, strides = list(sizes), list(strides)
    if any(s == 0 for s in sizes):
        return 0
    return int((1 + sum((s - 1) * st for s, st in zip(sizes, strides))) * element_size)


def region(t: Any) -> tuple[int, int]:
    """A buffer's address and the bytes its view reaches ((0, 0) for an absent one)."""
    if t is None:
        return 0, 0
    return t.data_ptr(), span_bytes(t.shape, t.stride(), t.element_size())


def locate(addr: int, extent: int, regions: Any) -> tuple[Any, int] | None:
    """The first of ``regions`` ((key, address, bytes) each) that holds ``extent`` bytes from
    ``addr``: its key and the offset there; None where none does.

    A pointer with no extent (a kernel's argument: how far the kernel reaches from it is not known) is
    the region's it points into before one it points just past the end of: a caching allocator puts
    a call's allocation right after a buffer (the buffer's end is the allocation's start), and the
    pointer taken for the buffer's end had the replay write past its own copy of the buffer, not into
    the allocation. Only where no region holds it is it the end of one (an empty view there)."""
    past_end = None
    for key, start, n in regions:
        if n and start <= addr and addr + extent <= start + n:
            if addr + max(extent, 1) <= start + n:
                return key, addr - start
            if past_end is None:
                past_end = (key, addr - start)
    return past_end

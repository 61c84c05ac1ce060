"""PyTorch's C++ headers in a HIP source: those the HIP route builds with, those it refuses.

The route builds a kernel library without PyTorch's C++ library: nothing of libtorch or
libc10 is linked, and ``objcheck`` refuses an object that calls into them. A few of
PyTorch's GPU headers are header-only and of use in a kernel file (warp shuffles, numeric
limits, math helpers, the c10 scalar types): for those the build adds the include folder of
the PyTorch installed here (found without importing torch), and on NVIDIA the HIP names
become the CUDA ones (``hip2cuda``: ``c10/hip/*`` -> ``c10/cuda/*``, ``ATen/hip/*`` ->
``ATen/cuda/*``). Any other PyTorch header (``torch/extension.h``, ``c10/hip/HIPStream.h``,
``ATen/hip/HIPContext.h`` ...) is refused before anything compiles, in one line per include
that names the file, the line and what to use instead. Includes are found line by line,
comments aside; a conditional block around one is not evaluated.
"""

from __future__ import annotations

import functools
import re
from pathlib import Path

from arena.toolchain.hip2cuda import torch_root

# The top folders of PyTorch's C++ headers.
_TORCH_DIRS = ("torch", "ATen", "c10", "caffe2")

# Header-only headers a kernel file may include, by the name a HIP source gives them. Each was
# compiled into an object that the symbol check accepts (no PyTorch library symbol, nothing run
# at load).
HEADER_ONLY = frozenset({
    "c10/hip/HIPMathCompat.h",      # c10::hip::compat:: math for float and double
    "ATen/hip/DeviceUtils.cuh",     # WARP_SHFL, WARP_SHFL_XOR, WARP_BALLOT ...
    "ATen/hip/NumericLimits.cuh",   # at::numeric_limits<T> on the device
    "ATen/hip/AsmUtils.cuh",        # lane ids, bit fields
    "ATen/hip/ScanUtils.cuh",       # block-wide prefix scans
    "c10/util/Half.h",
    "c10/util/BFloat16.h",
    "c10/util/complex.h",
    "c10/macros/Macros.h",
})

NEEDS_LIBRARY = "this header needs PyTorch's C++ library, which the HIP route does not link"

# What to use instead, by header; the default says what an entry is.
_INSTEAD = {
    "c10/hip/HIPStream.h": "the entry is given its stream as its last argument",
    "ATen/hip/HIPContext.h": "the entry is given its stream as its last argument; hipGetDeviceProperties gives the "
                             "device's properties",
    "ATen/hip/HIPContextLight.h": "the entry is given its stream as its last argument",
    "c10/hip/HIPGuard.h": "the harness calls the entry on the right device already",
    "c10/hip/HIPFunctions.h": "hipGetDevice and hipGetDeviceCount are HIP's own",
    "c10/hip/HIPException.h": "check hipGetLastError() after a launch and return it from the entry",
    "ATen/hip/Exceptions.h": "check hipGetLastError() after a launch and return it from the entry",
    "c10/hip/HIPCachingAllocator.h": "the harness allocates every input and output; a workspace comes from hipMalloc "
                                     "in the entry",
}
_ENTRY = "the entry is an extern \"C\" function of device pointers, scalars and the stream, not of tensors"
_REASON = {
    # header-only, but it pulls in <iostream>, whose static constructor would run at load
    "ATen/hip/Atomic.cuh": "this header runs a static constructor at load (it includes <iostream>), which a kernel "
                           "library may not; atomicAdd, atomicMax and atomicCAS are HIP's own",
}

_INCLUDE_RE = re.compile(r"^[ \t]*#[ \t]*include[ \t]*[<\"]([^>\"\n]+)[>\"]", re.MULTILINE)


def torch_includes(text: str) -> list[tuple[int, str]]:
    """The (line, path) of each ``#include`` of a PyTorch header in ``text``, comments aside."""
    from arena.toolchain.hip2cuda import strip_comments_keep_lines

    clean = strip_comments_keep_lines(text)
    out = []
    for m in _INCLUDE_RE.finditer(clean):
        path = m.group(1).strip()
        if path.split("/", 1)[0] in _TORCH_DIRS and "/" in path:
            out.append((clean.count("\n", 0, m.start()) + 1, path))
    return out


def refusals(text: str, filename: str) -> list[str]:
    """One line for each PyTorch header of ``text`` the route cannot build with."""
    lines = []
    for line, path in torch_includes(text):
        if path in HEADER_ONLY:
            continue
        reason = _REASON.get(path, NEEDS_LIBRARY)
        instead = _INSTEAD.get(path) or (_ENTRY if reason is NEEDS_LIBRARY else "")
        lines.append(f"{filename}:{line}: #include <{path}>: {reason}" + (f" ({instead})" if instead else ""))
    return lines


def uses_headers(texts: list[str]) -> bool:
    """Does any of the texts include a header-only PyTorch header (the build then needs their folder)?"""
    return any(path in HEADER_ONLY for text in texts for _, path in torch_includes(text))


def include_dir() -> Path | None:
    """PyTorch's C++ include folder here, if it has one."""
    root = torch_root()
    d = root / "include" if root is not None else None
    return d if d is not None and d.is_dir() else None


@functools.lru_cache(maxsize=1)
def torch_version() -> str:
    """The installed torch's version, read from its version file (part of a build's cache key)."""
    root = torch_root()
    try:
        text = (root / "version.py").read_text() if root is not None else ""
    except OSError:
        text = ""
    m = re.search(r"""__version__\s*=\s*['"]([^'"]+)['"]""", text)
    return m.group(1) if m else "unknown"


def target_path(path: str, target: str) -> str:
    """The header's name as the build for ``target`` includes it (NVIDIA: the CUDA name)."""
    if target != "cuda":
        return path
    from arena.toolchain.hip2cuda import torch_header_to_cuda

    return torch_header_to_cuda(path) or path


def missing(texts: list[str], target: str) -> str | None:
    """Why this machine cannot build the header-only PyTorch headers of ``texts`` for
    ``target`` (its PyTorch has no such header: the CUDA names ship with every PyTorch, the
    HIP names with a ROCm build of it), or None. The machine's limit, not the candidate's."""
    used = sorted({path for text in texts for _, path in torch_includes(text) if path in HEADER_ONLY})
    if not used:
        return None
    d = include_dir()
    if d is None:
        return "PyTorch's C++ headers are not installed here"
    absent = [target_path(p, target) for p in used if not (d / target_path(p, target)).is_file()]
    if absent:
        return (f"this machine's PyTorch ({torch_version()}) has no {', '.join(absent)}"
                + (" (a ROCm build of PyTorch has the HIP headers)" if target == "rocm" else ""))
    return None

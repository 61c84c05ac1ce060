"""What we run on: detect the backend (cuda / rocm / cpu) and describe the device.

Vendor differences live here and in ``arena.toolchain``; the gates never branch on vendor.
``Device.build_targets`` says which HIP builds a device needs: one runnable library on
a GPU, compile-only checks for both vendors on the CPU.
"""

from __future__ import annotations

import functools
import os
import platform
import re
import shutil
import subprocess
from dataclasses import asdict, dataclass, field
from typing import Any

from arena.errors import ArenaError

KINDS = ("cuda", "rocm", "cpu")

# Last-level caches the device query does not report (AMD Infinity Cache sits beyond L2).
_EXTRA_LLC_BYTES = {"gfx942": 256 * 2**20, "gfx940": 256 * 2**20, "gfx941": 256 * 2**20, "gfx950": 256 * 2**20}


@dataclass(frozen=True)
class Device:
    kind: str                      # cuda | rocm | cpu
    name: str
    vendor: str                    # nvidia | amd | cpu
    arch: str                      # sm_90, gfx942, x86_64
    warp_size: int | None = None
    llc_bytes: int | None = None   # last-level cache, for the flush size
    sm_count: int | None = None
    memory_bytes: int | None = None
    toolchains: dict[str, str] = field(default_factory=dict)
    index: int | None = None       # the GPU's index on its host, where a run uses several (--gpus)
    uuid: str | None = None        # the physical GPU, whatever the visible-device masking

    @property
    def gpu_key(self) -> str | None:
        """Names the physical GPU for ``arena.evaluation.gpulock`` (None on the cpu: nothing to share)."""
        if not self.runs_kernels:
            return None
        return f"{self.kind}-{self.uuid}" if self.uuid else f"{self.kind}-{self.name}-{self.index or 0}"

    @property
    def visible_devices(self) -> dict[str, str]:
        """The environment that shows a child process only this GPU (nothing for the first
        GPU of a single-GPU run, or the cpu)."""
        if not self.runs_kernels or self.index is None:
            return {}
        return {"CUDA_VISIBLE_DEVICES": str(self.index), "HIP_VISIBLE_DEVICES": str(self.index)}

    @property
    def runs_kernels(self) -> bool:
        return self.kind in ("cuda", "rocm")

    @property
    def torch_device(self) -> str:
        return "cuda" if self.runs_kernels else "cpu"

    @property
    def build_targets(self) -> list[tuple[str, str]]:
        """(target, arch) pairs a HIP candidate is built for; the first one is run."""
        if self.kind == "cuda":
            return [("cuda", self.arch)]
        if self.kind == "rocm":
            return [("rocm", self.arch)]
        return [("cuda", "sm_90"), ("rocm", "gfx90a")]

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


def _version(cmd: list[str], pattern: str) -> str | None:
    exe = shutil.which(cmd[0])
    if exe is None:
        return None
    try:
        out = subprocess.run(cmd, capture_output=True, text=True, timeout=30,
                             env={**os.environ, "HIP_PLATFORM": "amd"}).stdout
    except (OSError, subprocess.SubprocessError):
        return None
    m = re.search(pattern, out)
    return m.group(1) if m else out.strip().splitlines()[0] if out.strip() else "unknown"


@functools.lru_cache(maxsize=None)
def toolchains() -> dict[str, str]:
    found: dict[str, str] = {"python": platform.python_version()}
    try:
        import torch

        found["torch"] = torch.__version__
    except ImportError:
        pass
    try:
        import triton

        found["triton"] = triton.__version__
    except ImportError:
        pass
    nvcc = _version(["nvcc", "--version"], r"release ([\d.]+)")
    if nvcc:
        found["nvcc"] = nvcc
    hipcc = _version(["hipcc", "--version"], r"HIP version: ([\w.\-]+)")
    if hipcc:
        found["hipcc"] = hipcc
    return found


def detect(requested: str | None = None, index: int | None = None) -> Device:
    """The device to run on: ``requested`` (cuda / rocm / cpu) or the best available;
    ``index`` picks one GPU of several (its children see only it)."""
    if requested is not None and requested not in KINDS:
        raise ArenaError(f"unknown device {requested!r}; choose one of {', '.join(KINDS)}", key="--device")
    import torch

    gpu_kind = None
    if torch.cuda.is_available():
        gpu_kind = "rocm" if getattr(torch.version, "hip", None) else "cuda"
    kind = requested or gpu_kind or "cpu"
    if kind != "cpu" and kind != gpu_kind:
        raise ArenaError(f"device {kind!r} requested but not available here "
                         f"({'no GPU' if gpu_kind is None else 'this machine has ' + gpu_kind})", key="--device")
    if kind == "cpu":
        return Device(kind="cpu", name=platform.processor() or platform.machine(), vendor="cpu",
                      arch=platform.machine(), toolchains=toolchains())
    if index is not None and not 0 <= index < torch.cuda.device_count():
        raise ArenaError(f"GPU {index} does not exist here ({torch.cuda.device_count()} GPUs)", key="--gpus")
    props = torch.cuda.get_device_properties(torch.cuda.current_device() if index is None else index)
    if kind == "cuda":
        arch = f"sm_{props.major}{props.minor}"
        warp = int(getattr(props, "warp_size", 32) or 32)
        vendor = "nvidia"
    else:
        arch = str(getattr(props, "gcnArchName", "gfx000")).split(":")[0]
        warp = int(getattr(props, "warp_size", 64) or 64)
        vendor = "amd"
    l2 = int(getattr(props, "L2_cache_size", 0) or 0)
    llc = max(l2, _EXTRA_LLC_BYTES.get(arch, 0)) or 64 * 2**20
    uuid = str(getattr(props, "uuid", "") or "") or None
    return Device(kind=kind, name=props.name, vendor=vendor, arch=arch, warp_size=warp, llc_bytes=llc,
                  sm_count=int(props.multi_processor_count), memory_bytes=int(props.total_memory),
                  toolchains=toolchains(), index=index, uuid=uuid)

"""What each process holds on a GPU, as the driver counts it: NVML's per-process used memory
on NVIDIA (``nvidia-ml-py``). The trusted process reads it for the processes of its
evaluation (the candidate's is held to an allowance: ``arena.evaluation.memory.allowance``) and, when it
runs out of device memory, for every process on the GPU, so that a process over its allowance,
its own candidate's or a neighbour's, is found out instead of the shortage counting as the
harness's. The pids are the machine's (the confined processes' as their starter sees them).
Not read on ROCm yet (amd-smi): there ``DeviceUsage.why`` says so and nothing is checked.
"""

from __future__ import annotations

import functools
from typing import Any


@functools.lru_cache(maxsize=1)
def _nvml() -> Any:
    import pynvml

    pynvml.nvmlInit()
    return pynvml


class DeviceUsage:
    """Per-process device memory on one GPU (``uuid`` as torch reports it, else ``index``)."""

    def __init__(self, kind: str, uuid: str | None = None, index: int | None = None):
        self.handle: Any = None
        self.why: str | None = None
        if kind != "cuda":
            self.why = "per-process device memory is read on NVIDIA GPUs only (NVML)"
            return
        try:
            nvml = _nvml()
            want = (uuid or "").lower().removeprefix("gpu-")
            for k in range(nvml.nvmlDeviceGetCount()):
                h = nvml.nvmlDeviceGetHandleByIndex(k)
                got = nvml.nvmlDeviceGetUUID(h)
                got = (got.decode() if isinstance(got, bytes) else str(got)).lower().removeprefix("gpu-")
                if (want and got == want) or (not want and k == (index or 0)):
                    self.handle = h
                    break
            if self.handle is None:
                self.why = f"NVML has no GPU {uuid or index or 0}"
        except Exception as exc:  # noqa: BLE001 - no NVML here: nothing is checked, and the record says so
            self.why = f"NVML is not usable here ({type(exc).__name__}: {exc})"

    def by_pid(self) -> dict[int, int]:
        """Bytes each process on the GPU holds now (empty where nothing can be read)."""
        if self.handle is None:
            return {}
        nvml = _nvml()
        try:
            procs = nvml.nvmlDeviceGetComputeRunningProcesses(self.handle)
        except Exception:  # noqa: BLE001 - a failed read checks nothing
            return {}
        out: dict[int, int] = {}
        for p in procs:
            used = getattr(p, "usedGpuMemory", None)
            if isinstance(used, int) and used >= 0:
                out[int(p.pid)] = out.get(int(p.pid), 0) + used
        return out

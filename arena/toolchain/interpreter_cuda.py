"""``with torch.cuda.device(x.device.index):`` where ``x`` is on the CPU, and a GPU's properties asked of torch.cuda,
in a process of the cpu backend.

Launchers written for a GPU select the device of their input before launching (vLLM's and FLA's do:
``with torch.cuda.device(dt.device.index)``). A CPU tensor's ``device.index`` is None, and a CPU build of torch
raises for ``torch.cuda.device(None)`` (it compares None with 0), where a GPU build selects the current device:
on the cpu backend the launcher stops before its kernel is traced. ``install`` makes ``torch.cuda.device`` of
None, of -1 and of a CPU device select nothing where torch has no CUDA, and leaves every other call as torch has
it (``torch.cuda.device(0)`` still raises "Torch not compiled with CUDA enabled": there is no device 0 here).

Launchers also size their grids by the GPU they run on (``torch.cuda.get_device_properties(x.device)
.multi_processor_count``: a persistent kernel's one program per SM) or choose a path by its compute capability; a
CPU build of torch raises for each. ``install`` answers those questions (``get_device_properties``,
``get_device_capability``, ``get_device_name``, ``current_device``) for a nominal GPU, the H100 of FACTS.md (132
SMs, compute capability 9.0, 80 GB, 50 MB of L2), so that the interpreter traces and runs the kernel as it would be
launched there; ``torch.cuda.is_available()`` stays False and no tensor can be put on it. Where Triton finds no GPU
driver, its active driver is that GPU's too (``triton.runtime.driver.active.get_current_target()``, which a file may
ask where it loads to choose its autotuning configs, and ``.utils.get_device_properties``)."""

from __future__ import annotations

import contextlib
import types
from typing import Any, Callable


class _NoDevice(contextlib.nullcontext):
    """The device a CPU tensor is on, selected: nothing to select."""


# the nominal GPU's properties, as torch.cuda names them (an H100 80GB HBM3: FACTS.md, NVIDIA's H100 datasheet)
NOMINAL = types.SimpleNamespace(
    name="NVIDIA H100 80GB HBM3 (nominal: the cpu backend has no GPU)",
    major=9, minor=0, multi_processor_count=132, total_memory=80 * 2**30, L2_cache_size=50 * 2**20,
    warp_size=32, max_threads_per_multi_processor=2048, max_threads_per_block=1024,
    regs_per_multiprocessor=65536, shared_memory_per_block=48 * 2**10,
    shared_memory_per_block_optin=227 * 2**10, shared_memory_per_multiprocessor=228 * 2**10,
    is_integrated=False, is_multi_gpu_board=False, gcnArchName="", uuid="nominal", pci_bus_id=0,
    pci_device_id=0, pci_domain_id=0)


class NominalDriver:
    """``triton.runtime.driver.active`` where Triton finds no GPU driver: the nominal GPU's target and properties
    (as Triton's CUDA driver names them). It launches nothing: the interpreter runs the kernels."""

    def __init__(self) -> None:
        from triton.backends.compiler import GPUTarget

        self.target = GPUTarget("cuda", NOMINAL.major * 10 + NOMINAL.minor, NOMINAL.warp_size)
        props = {"max_shared_mem": NOMINAL.shared_memory_per_block_optin,
                 "max_num_regs": NOMINAL.regs_per_multiprocessor,
                 "multiprocessor_count": NOMINAL.multi_processor_count, "warpSize": NOMINAL.warp_size}
        self.utils = types.SimpleNamespace(get_device_properties=lambda device=0: dict(props))

    @staticmethod
    def is_active() -> bool:
        return True

    def get_current_target(self) -> Any:
        return self.target

    @staticmethod
    def get_current_device() -> int:
        return 0

    @staticmethod
    def get_current_stream(device: Any = None) -> int:
        return 0

    @staticmethod
    def get_active_torch_device() -> Any:
        import torch

        return torch.device("cpu")


def install() -> bool:
    """Returns whether torch.cuda was changed (torch has no CUDA here)."""
    import torch

    if torch.cuda.is_available() or getattr(torch.cuda.device, "_arena_cpu", False):
        return False
    original = torch.cuda.device

    def nominal(fn: Any, answer: Callable[[], Any]) -> Any:
        def asked(*args: Any, **kwargs: Any) -> Any:
            return answer()
        asked.__doc__ = fn.__doc__
        return asked

    torch.cuda.get_device_properties = nominal(torch.cuda.get_device_properties, lambda: NOMINAL)
    torch.cuda.get_device_capability = nominal(torch.cuda.get_device_capability, lambda: (NOMINAL.major,
                                                                                          NOMINAL.minor))
    torch.cuda.get_device_name = nominal(torch.cuda.get_device_name, lambda: NOMINAL.name)
    torch.cuda.current_device = nominal(torch.cuda.current_device, lambda: 0)
    from triton.runtime import driver as triton_driver

    try:
        triton_driver.active  # noqa: B018 - the property finds the driver, or raises where there is none
    except RuntimeError:   # "0 active drivers": no GPU's driver here
        triton_driver.set_active(NominalDriver())

    def device(index: Any) -> Any:
        if index is None or (isinstance(index, int) and index < 0) or (
                isinstance(index, (str, torch.device)) and torch.device(index).type == "cpu"):
            return _NoDevice()
        return original(index)

    device._arena_cpu = True  # type: ignore[attr-defined]
    torch.cuda.device = device  # type: ignore[assignment,misc]
    return True

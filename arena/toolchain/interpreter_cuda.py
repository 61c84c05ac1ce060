"""``with torch.cuda.device(x.device.index):`` where ``x`` is on the CPU, in a process of the cpu backend.

Launchers written for a GPU select the device of their input before launching (vLLM's and FLA's do:
``with torch.cuda.device(dt.device.index)``). A CPU tensor's ``device.index`` is None, and a CPU build of torch
raises for ``torch.cuda.device(None)`` (it compares None with 0), where a GPU build selects the current device:
on the cpu backend the launcher stops before its kernel is traced. ``install`` makes ``torch.cuda.device`` of
None, of -1 and of a CPU device select nothing where torch has no CUDA, and leaves every other call as torch has
it (``torch.cuda.device(0)`` still raises "Torch not compiled with CUDA enabled": there is no device 0 here)."""

from __future__ import annotations

import contextlib
from typing import Any


class _NoDevice(contextlib.nullcontext):
    """The device a CPU tensor is on, selected: nothing to select."""


def install() -> bool:
    """Returns whether ``torch.cuda.device`` was changed (torch has no CUDA here)."""
    import torch

    if torch.cuda.is_available() or getattr(torch.cuda.device, "_arena_cpu", False):
        return False
    original = torch.cuda.device

    def device(index: Any) -> Any:
        if index is None or (isinstance(index, int) and index < 0) or (
                isinstance(index, (str, torch.device)) and torch.device(index).type == "cpu"):
            return _NoDevice()
        return original(index)

    device._arena_cpu = True  # type: ignore[attr-defined]
    torch.cuda.device = device  # type: ignore[assignment,misc]
    return True

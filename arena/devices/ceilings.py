"""Device ceilings for the roofline: memory bandwidth (bytes/s) and peak FLOP/s per dtype.

Datasheet peaks (dense, no sparsity) are the fallback; a measured ceiling, where one was
stored for the device, takes precedence. Sources: NVIDIA H100 / H200 SXM and AMD MI300X
product datasheets; A100 SXM datasheet.
"""

from __future__ import annotations

from typing import Mapping

_DATASHEET: dict[str, dict[str, float]] = {
    "H200": {"bytes_per_s": 4.8e12, "float16": 989e12, "bfloat16": 989e12, "tf32": 494e12,
             "float32": 67e12, "float8": 1979e12, "int8": 1979e12},
    "H100": {"bytes_per_s": 3.35e12, "float16": 989e12, "bfloat16": 989e12, "tf32": 494e12,
             "float32": 67e12, "float8": 1979e12, "int8": 1979e12},
    "A100": {"bytes_per_s": 2.04e12, "float16": 312e12, "bfloat16": 312e12, "tf32": 156e12,
             "float32": 19.5e12, "int8": 624e12},
    "MI300X": {"bytes_per_s": 5.3e12, "float16": 1307e12, "bfloat16": 1307e12, "tf32": 654e12,
               "float32": 163e12, "float8": 2615e12, "int8": 2615e12},
}


def datasheet(device_name: str) -> dict[str, float] | None:
    upper = device_name.upper()
    for key, peaks in _DATASHEET.items():
        if key in upper:
            return peaks
    return None


def roofline_fraction(bound: str, dtype: str, flops: float, nbytes: float, seconds: float,
                      ceilings: Mapping[str, float] | None) -> float | None:
    """Achieved rate over the ceiling of the bound the task declares."""
    if not ceilings or seconds <= 0:
        return None
    if bound == "memory":
        peak = ceilings.get("bytes_per_s")
        return nbytes / seconds / peak if peak else None
    peak = ceilings.get(dtype) or ceilings.get("float32")
    return flops / seconds / peak if peak else None

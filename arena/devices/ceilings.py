"""Device ceilings for the roofline: memory bandwidth (bytes/s) and peak FLOP/s per dtype.

A measured ceiling, where ``arena device --measure`` stored one for the device, takes
precedence: the best memory rate of a device-to-device copy, a read-only reduction and a
write-only fill, and a large matrix multiply's throughput per dtype, the best of several runs
(``measure``). Datasheet peaks (dense, no sparsity) are the fallback; they sit above what any
kernel reaches (an H100's 3.35 TB/s against about 3.0 TB/s measured for a copy), so a roofline
on them reads low. Sources: NVIDIA H100 / H200 SXM and AMD MI300X product datasheets; A100
SXM datasheet.

A measured ceiling is what the harness's own kernels reach, not what the device can do: a
well-made kernel passes it (on an H100, shipped read-heavy solutions ran at 1.01-1.09 of a
copy's rate). So the roofline fraction and the speed-of-light score use the measured
ceilings, while a time is flagged as impossible (``above_roofline``) only past the physical
bound, the larger of the measured and the datasheet figure for each key (``upper_bounds``).

The roofline time of a config is the larger of its compute time and its memory time at the
ceilings (``roofline_seconds``): the true roofline, whatever bound the task names.
"""

from __future__ import annotations

import json
import math
import os
import time
from pathlib import Path
from typing import Any, Mapping

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


def roofline_seconds(dtype: str, flops: float, nbytes: float, ceilings: Mapping[str, float] | None) -> float | None:
    """The least time the work can take at the ceilings: the larger of its memory time
    (bytes / bandwidth) and its compute time (FLOPs / the dtype's peak; float32's where the
    dtype has none). None without ceilings or work."""
    if not ceilings:
        return None
    bw = ceilings.get("bytes_per_s")
    peak = ceilings.get(dtype) or ceilings.get("float32")
    times = [nbytes / bw if bw and nbytes > 0 else 0.0, flops / peak if peak and flops > 0 else 0.0]
    t = max(times)
    return t if t > 0 else None


def roofline_fraction(dtype: str, flops: float, nbytes: float, seconds: float,
                      ceilings: Mapping[str, float] | None) -> float | None:
    """The roofline time over the time taken: 1.0 is the roofline itself."""
    t = roofline_seconds(dtype, flops, nbytes, ceilings)
    return t / seconds if t is not None and seconds > 0 else None


# the baseline must take at least this many times the roofline time for a speed-of-light score: the roofline is
# an estimate (datasheet or measured ceilings, the task's byte and FLOP formulas), and a gap smaller than its own
# error, divided by, magnifies noise into shares far past 1 (or, below the roofline, negative ones)
SOL_MARGIN = 1.25


def sol_absent(baseline_s: float, roofline_s: float | None) -> str:
    """Why a config has no speed-of-light score ('' where it has one)."""
    if roofline_s is None:
        return "no roofline time for this config (no ceilings, or no bytes or FLOPs)"
    if baseline_s <= roofline_s:
        return (f"the baseline ({baseline_s * 1e6:.1f} us) already runs at or past the roofline time "
                f"({roofline_s * 1e6:.1f} us): the task's byte or FLOP formula overcounts this config")
    if baseline_s < SOL_MARGIN * roofline_s:
        return (f"the baseline ({baseline_s * 1e6:.1f} us) is within {SOL_MARGIN:g}x of the roofline time "
                f"({roofline_s * 1e6:.1f} us): too small a gap to score against")
    return ""


def sol_score(baseline_s: float, candidate_s: float, roofline_s: float | None) -> float | None:
    """The share of the gap between the baseline's time and the roofline time that the
    candidate closes: 0 at the baseline's time, 1 at the roofline, negative when slower than the
    baseline. None where there is no gap worth scoring against (``sol_absent``)."""
    if sol_absent(baseline_s, roofline_s) or candidate_s <= 0 or roofline_s is None:
        return None
    return (baseline_s - candidate_s) / (baseline_s - roofline_s)


# -- measured ceilings ---------------------------------------------------------------------------

MEASURE_DTYPES = ("float16", "bfloat16", "float32", "tf32")


def _store() -> Path:
    from arena.toolchain.hip import cache_root

    return cache_root() / "ceilings.json"


def _device_key(device: Any) -> str:
    return f"{device.kind}:{device.name}"


def stored(device: Any, path: Path | None = None) -> dict[str, Any] | None:
    """What ``measure`` kept for a device of this kind and name, or None."""
    path = path or _store()
    try:
        entry = json.loads(path.read_text()).get(_device_key(device))
    except (OSError, ValueError, AttributeError):
        return None
    return entry if isinstance(entry, dict) and isinstance(entry.get("ceilings"), dict) else None


def ceilings_for(device: Any, path: Path | None = None) -> tuple[dict[str, float] | None, str]:
    """The ceilings the roofline uses for a device, and which they are: ``measured`` (what
    ``arena device --measure`` kept), ``datasheet``, or ``none``. A measured figure stands
    for its own key; the datasheet fills the keys it did not measure (int8, float8)."""
    sheet = datasheet(device.name) if device.runs_kernels else None
    kept = stored(device, path) if device.runs_kernels else None
    if kept:
        merged = {**(sheet or {}), **{k: float(v) for k, v in kept["ceilings"].items()}}
        return merged, "measured"
    if sheet:
        return dict(sheet), "datasheet"
    return None, "none"


def upper_bounds(device: Any, path: Path | None = None) -> dict[str, float] | None:
    """What no kernel can pass on this device: per key, the larger of the measured ceiling and
    the datasheet's peak (the measured one alone where the datasheet does not know the device)."""
    sheet = datasheet(device.name) if device.runs_kernels else None
    kept = stored(device, path) if device.runs_kernels else None
    if not kept:
        return dict(sheet) if sheet else None
    out = dict(sheet or {})
    for k, v in kept["ceilings"].items():
        out[k] = max(float(v), out.get(k, 0.0))
    return out


def measure(device: Any, *, repeats: int = 20, path: Path | None = None) -> dict[str, Any]:
    """Measure the device's copy bandwidth and matrix-multiply throughput per dtype (the best
    of ``repeats`` timed runs each, CUDA/HIP events around the work) and keep them for later
    evaluations; returns what was kept."""
    import torch

    if not device.runs_kernels:
        raise ValueError("ceilings are measured on a GPU; the cpu backend has no roofline")
    dev = torch.device("cuda", 0)

    def best_seconds(fn) -> float:
        for _ in range(3):
            fn()
        torch.cuda.synchronize(dev)
        best = math.inf
        for _ in range(repeats):
            start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
            start.record()
            fn()
            end.record()
            end.synchronize()
            best = min(best, start.elapsed_time(end) / 1e3)
        return best

    def copy_rate() -> float:
        src = torch.ones(1 << 28, dtype=torch.float32, device=dev)   # 1 GiB, well beyond any last-level cache
        dst = torch.empty_like(src)
        return 2 * src.numel() * src.element_size() / best_seconds(lambda: dst.copy_(src))

    def matmul_rate(name: str, m: int = 8192) -> float:
        dt = torch.float32 if name in ("float32", "tf32") else getattr(torch, name)
        a, b = torch.randn(m, m, device=dev).to(dt), torch.randn(m, m, device=dev).to(dt)
        c = torch.empty(m, m, device=dev, dtype=dt)
        return 2 * m ** 3 / best_seconds(lambda: torch.matmul(a, b, out=c))

    def read_rate() -> float:
        src = torch.ones(1 << 28, dtype=torch.float32, device=dev)
        return src.numel() * src.element_size() / best_seconds(lambda: src.sum())

    def write_rate() -> float:
        dst = torch.empty(1 << 28, dtype=torch.float32, device=dev)
        return dst.numel() * dst.element_size() / best_seconds(lambda: dst.fill_(1.0))

    memory = {"copy": copy_rate(), "read": read_rate(), "write": write_rate()}
    out: dict[str, float] = {"bytes_per_s": max(memory.values())}
    allow_tf32 = torch.backends.cuda.matmul.allow_tf32
    try:
        for name in MEASURE_DTYPES:
            torch.backends.cuda.matmul.allow_tf32 = name == "tf32"
            out[name] = matmul_rate(name)
    finally:
        torch.backends.cuda.matmul.allow_tf32 = allow_tf32
    torch.cuda.empty_cache()
    entry = {"ceilings": {k: float(f"{v:.4g}") for k, v in out.items()},
             "memory_bytes_per_s": {k: float(f"{v:.4g}") for k, v in memory.items()},
             "measured_at": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
             "torch": torch.__version__,
             "how": f"best of {repeats}: of a 1 GiB copy, sum and fill the best rate; an 8192x8192 matmul per dtype"}
    path = path or _store()
    path.parent.mkdir(parents=True, exist_ok=True)
    try:
        kept = json.loads(path.read_text())
        kept = kept if isinstance(kept, dict) else {}
    except (OSError, ValueError):
        kept = {}
    kept[_device_key(device)] = entry
    tmp = path.with_suffix(f".{os.getpid()}.tmp")
    tmp.write_text(json.dumps(kept, indent=1))
    tmp.replace(path)
    return entry

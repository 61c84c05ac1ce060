"""fp8 conversions on Triton's interpreter (the cpu backend), done as a GPU does them.

The interpreter converts between fp8 and wider floats with a bit-level routine of its own
that is wrong for these types: from fp32 to e4m3 it rounds ties up (1.0625 -> 1.125, not
1.0), flushes subnormals (0.0019 -> 0), wraps values past the largest one (500 -> 256,
-1e9 -> NaN) and turns NaN into 384; from e4m3 it reads NaN as 480 (triton 3.7.1). A kernel
that quantises with a plain ``.to(tl.float8e4nv)`` then fails on the cpu backend though it
is right on a GPU: a failure that would be scored as the candidate's.

``install`` replaces the interpreter's float-to-float conversion for the fp8 types torch
has, by tables of their values made with torch: to nearest, ties to even, subnormals kept,
finite and infinite values saturated to the type's largest magnitude as NVIDIA's conversion
does (``cvt.rn.satfinite``: Triton's own lowering tests expect it for fp32 and fp16 to e4m3
and e5m2 on sm_90), NaN kept. Numpy only runs in a kernel's call (the candidate's calls are
traced for torch operators). Other conversions, and a rounding mode other than to-nearest,
are the interpreter's own.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import torch

# Triton's fp8 types -> torch's
_TORCH = {"fp8e4nv": torch.float8_e4m3fn, "fp8e5": torch.float8_e5m2, "fp8e4b8": torch.float8_e4m3fnuz,
          "fp8e5b16": torch.float8_e5m2fnuz}
_WIDE = ("fp64", "fp32", "fp16", "bf16")


class _Table:
    """An fp8 type's 256 codes: their values, and its finite non-negative values sorted with
    their codes (made with torch once, at ``install``: no torch operator runs in a kernel's
    call, where the candidate's calls are traced)."""

    def __init__(self, dtype: torch.dtype):
        codes = torch.arange(256, dtype=torch.int32).to(torch.uint8)
        self.values = codes.view(dtype).to(torch.float64).numpy()
        keep = np.isfinite(self.values) & ~np.signbit(self.values)
        order = np.argsort(self.values[keep], kind="stable")
        self.mags = self.values[keep][order]
        self.codes = np.arange(256, dtype=np.uint8)[keep][order]
        self.top = float(self.mags[-1])
        self.nan = np.uint8(np.flatnonzero(np.isnan(self.values))[0])
        self.signed_zero = not np.isnan(self.values[0x80])      # the fnuz types have no -0: 0x80 is NaN

    def encode(self, x: np.ndarray) -> np.ndarray:
        """float64 -> codes: to nearest, ties to the even code, saturating at the largest
        magnitude (infinities too), NaN kept."""
        m = np.minimum(np.abs(x), self.top)
        hi = np.clip(np.searchsorted(self.mags, m), 1, len(self.mags) - 1)
        lo = hi - 1
        d_lo, d_hi = m - self.mags[lo], self.mags[hi] - m
        pick = np.where((d_hi < d_lo) | ((d_hi == d_lo) & (self.codes[hi] % 2 == 0)), hi, lo)
        pick = np.where(m <= self.mags[0], 0, pick)
        out = self.codes[pick]
        negative = np.signbit(x) & ((out != 0) | self.signed_zero)
        out = np.where(negative, out | np.uint8(0x80), out)
        return np.where(np.isnan(x), self.nan, out).astype(np.uint8)


_TABLES: dict[str, _Table] = {}


def _name(t: Any) -> str:
    return getattr(t, "name", str(t))


def _wide_to_f64(data: np.ndarray, src: str) -> np.ndarray:
    if src == "bf16":                        # stored as its 16 bits: the high half of an fp32
        return (np.ascontiguousarray(data).view(np.uint16).astype(np.uint32) << 16).view(np.float32) \
            .astype(np.float64)
    return np.asarray(data).astype(np.float64)


def _f64_to_wide(x: np.ndarray, dst: str, out_dtype: np.dtype) -> np.ndarray:
    if dst == "bf16":                        # every fp8 value is exact in bf16: its fp32's high half
        return (x.astype(np.float32).view(np.uint32) >> 16).astype(np.uint16).view(out_dtype)
    return x.astype(out_dtype)


def convert(data: np.ndarray, src: str, dst: str, out_dtype: np.dtype) -> np.ndarray | None:
    """``data`` (an interpreter array of type ``src``) as ``dst``, or None where this module
    does not convert that pair (or ``install`` has not run)."""
    if src in _TABLES and dst in _WIDE:
        codes = np.ascontiguousarray(data).view(np.uint8)
        return _f64_to_wide(_TABLES[src].values[codes], dst, out_dtype)
    if src in _WIDE and dst in _TABLES:
        return _TABLES[dst].encode(_wide_to_f64(data, src)).view(out_dtype)
    return None


def install() -> None:
    from triton._C.libtriton import ir
    from triton.runtime import interpreter

    for name, dtype in _TORCH.items():
        _TABLES.setdefault(name, _Table(dtype))
    builder = interpreter.InterpreterBuilder
    real = builder.create_fp_to_fp
    if getattr(real, "_arena_fp8", False):
        return
    nearest = {None, getattr(ir.ROUNDING_MODE, "RTNE", None)}

    def create_fp_to_fp(self: Any, src: Any, dst_type: Any, rounding_mode: Any) -> Any:
        if rounding_mode in nearest:
            out = convert(src.data, _name(src.dtype.scalar), _name(dst_type.scalar),
                          interpreter._get_np_dtype(dst_type))
            if out is not None:
                return interpreter.TensorHandle(out, dst_type.scalar)
        return real(self, src, dst_type, rounding_mode)

    create_fp_to_fp._arena_fp8 = True  # type: ignore[attr-defined]
    builder.create_fp_to_fp = create_fp_to_fp

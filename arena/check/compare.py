"""Poisoned outputs and the comparison of a candidate's output with the reference.

Outputs are filled with a NaN bit pattern of our own (a sentinel for integers) before
every call, so an element left unwritten is told apart from a computed NaN. The
comparison is elementwise (atol + rtol * |ref|) AND normwise (||out - ref|| / ||ref||).
``check_tensors`` keeps everything on the device (no host sync), so the timing loop can
re-check every timed output; ``compare_output`` turns it into a verdict. An input updated in
place (``inout``) is compared the same way, without the poison: it was given with values.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Mapping, Sequence

import torch

from arena.records import Status

# Bit patterns written into outputs before each call (NaNs with a payload of ours).
_POISON_BITS: dict[torch.dtype, tuple[torch.dtype, int]] = {
    torch.float32: (torch.int32, 0x7FA5A5A5),
    torch.float16: (torch.int16, 0x7E5A),
    torch.bfloat16: (torch.int16, 0x7FA5),
    torch.float8_e4m3fn: (torch.int8, 0x7F),
    torch.float8_e5m2: (torch.int8, 0x7E),
    torch.int8: (torch.int8, 0x5A),
    torch.uint8: (torch.uint8, 0xA5),
    torch.int16: (torch.int16, 0x5A5A),
    torch.int32: (torch.int32, 0x5A5A5A5A),
    torch.int64: (torch.int64, 0x5A5A5A5A5A5A5A5A),
}


def poison_(t: torch.Tensor) -> torch.Tensor:
    view_dtype, bits = _POISON_BITS[t.dtype]
    t.view(view_dtype).fill_(bits)
    return t


def is_poison(t: torch.Tensor) -> torch.Tensor:
    view_dtype, bits = _POISON_BITS[t.dtype]
    return t.view(view_dtype) == bits


def byte_view(t: torch.Tensor) -> torch.Tensor:
    return t.contiguous().view(torch.uint8) if t.dtype != torch.bool else t.contiguous().view(torch.uint8)


def same_bytes(a: torch.Tensor, b: torch.Tensor) -> bool:
    return a.shape == b.shape and a.dtype == b.dtype and torch.equal(byte_view(a), byte_view(b))


def compare_dtype(dtype: torch.dtype) -> torch.dtype:
    return torch.float64 if dtype in (torch.float32, torch.float64) else torch.float32


def check_tensors(out: torch.Tensor, ref: torch.Tensor, tol: Mapping[str, float] | None,
                  poisoned: bool = True) -> dict[str, torch.Tensor]:
    """Device-side pieces of the comparison (0-d tensors): no host synchronisation.
    ``poisoned``: ``out`` was poisoned before the call (an output; not an inout input)."""
    unwritten = is_poison(out) if poisoned else torch.zeros(out.shape, dtype=torch.bool, device=out.device)
    if tol is None:  # integers: exact
        unwritten = unwritten & (ref.to(out.dtype) != out)
        bad = (out.to(torch.int64) != ref.to(torch.int64)) & ~unwritten
        return {"unwritten": unwritten.sum(), "nonfinite": torch.zeros((), dtype=torch.int64, device=out.device),
                "mismatch": bad.sum(), "norm_ok": torch.ones((), dtype=torch.bool, device=out.device),
                "bad_mask": bad, "unwritten_mask": unwritten}
    cd = compare_dtype(out.dtype)
    o = out.to(cd)
    r = ref.to(cd)
    ref_finite = torch.isfinite(r)
    nonfinite = ~torch.isfinite(o) & ref_finite & ~unwritten
    both = ref_finite & torch.isfinite(o)
    diff = torch.where(both, (o - r).abs(), torch.zeros((), dtype=cd, device=o.device))
    allowed = tol["atol"] + tol["rtol"] * r.abs()
    # where the reference is not finite the candidate must match it exactly (nan with nan, inf with inf)
    special_bad = ~ref_finite & ~((torch.isnan(r) & torch.isnan(o)) | (r == o))
    bad = ((diff > allowed) & both) | special_bad
    ref_norm = torch.linalg.vector_norm(torch.where(ref_finite, r, torch.zeros((), dtype=cd, device=o.device)))
    diff_norm = torch.linalg.vector_norm(diff)
    norm_ok = diff_norm <= tol["norm"] * torch.clamp(ref_norm, min=torch.finfo(torch.float32).tiny)
    return {"unwritten": unwritten.sum(), "nonfinite": nonfinite.sum(), "mismatch": bad.sum(),
            "norm_ok": norm_ok, "diff": diff, "r": r, "o": o, "diff_norm": diff_norm, "ref_norm": ref_norm,
            "bad_mask": bad, "unwritten_mask": unwritten, "nonfinite_mask": nonfinite}


def all_ok(pieces: Mapping[str, torch.Tensor]) -> torch.Tensor:
    """A 0-d bool tensor: the output passes (still on the device)."""
    return (pieces["unwritten"] == 0) & (pieces["nonfinite"] == 0) & (pieces["mismatch"] == 0) & pieces["norm_ok"]


@dataclass
class OutputCheck:
    status: Status
    message: str = ""
    max_abs_err: float | None = None
    max_rel_err: float | None = None
    norm_err: float | None = None
    mismatch_fraction: float | None = None
    where: dict[str, Any] | None = None


def unravel(flat: int, shape: Sequence[int]) -> list[int]:
    """The index of element ``flat`` of a contiguous tensor of ``shape`` (torch.unravel_index
    imports sympy on its first call: a second a process)."""
    idx = []
    for d in reversed([int(d) for d in shape]):
        flat, i = divmod(flat, d) if d else (flat, 0)
        idx.append(i)
    return idx[::-1]


def _first_index(mask: torch.Tensor) -> list[int]:
    flat = int(torch.nonzero(mask.reshape(-1))[0].item())
    return unravel(flat, mask.shape) if mask.dim() else []


def _value(t: torch.Tensor, idx: list[int]) -> float | int | str:
    v = t[tuple(idx)].item() if idx else t.item()
    if isinstance(v, float) and v != v:
        return "nan"
    if isinstance(v, float) and v in (float("inf"), float("-inf")):
        return str(v)
    return v


def compare_output(name: str, out: torch.Tensor, ref: torch.Tensor,
                   tol: Mapping[str, float] | None, poisoned: bool = True) -> OutputCheck:
    """Status of one output (or inout input, ``poisoned=False``) against the reference, with
    the error statistics."""
    p = check_tensors(out, ref, tol, poisoned)
    n = max(out.numel(), 1)
    if int(p["unwritten"]) > 0:
        idx = _first_index(p["unwritten_mask"])
        return OutputCheck(Status.OUTPUT_UNWRITTEN,
                           f"{name}: {int(p['unwritten'])} of {n} elements never written (first at {idx})",
                           mismatch_fraction=int(p["unwritten"]) / n,
                           where={"output": name, "index": idx, "reference": _value(ref, idx)})
    if tol is None:
        bad = int(p["mismatch"])
        if bad:
            idx = _first_index(p["bad_mask"])
            return OutputCheck(Status.INCORRECT_NUMERICAL, f"{name}: {bad} of {n} elements differ (exact compare)",
                               mismatch_fraction=bad / n,
                               where={"output": name, "index": idx, "candidate": _value(out, idx),
                                      "reference": _value(ref, idx)})
        return OutputCheck(Status.PASSED, max_abs_err=0.0, max_rel_err=0.0, norm_err=0.0, mismatch_fraction=0.0)
    if int(p["nonfinite"]) > 0:
        idx = _first_index(p["nonfinite_mask"])
        return OutputCheck(Status.NAN_INF, f"{name}: {int(p['nonfinite'])} NaN/Inf where the reference is finite",
                           mismatch_fraction=int(p["nonfinite"]) / n,
                           where={"output": name, "index": idx, "candidate": _value(out, idx),
                                  "reference": _value(ref, idx)})
    diff, r = p["diff"], p["r"]
    max_abs = float(diff.max()) if diff.numel() else 0.0
    rel = diff / torch.clamp(r.abs(), min=torch.finfo(torch.float32).tiny)
    max_rel = float(rel.max()) if rel.numel() else 0.0
    norm_err = float(p["diff_norm"] / torch.clamp(p["ref_norm"], min=torch.finfo(torch.float32).tiny))
    bad = int(p["mismatch"])
    worst = unravel(int(torch.argmax(diff.reshape(-1))), diff.shape) if diff.dim() and diff.numel() else []
    where = {"output": name, "index": worst, "candidate": _value(out, worst), "reference": _value(r, worst)} \
        if diff.numel() else None
    stats = dict(max_abs_err=max_abs, max_rel_err=max_rel, norm_err=norm_err, mismatch_fraction=bad / n, where=where)
    if bad or not bool(p["norm_ok"]):
        what = []
        if bad:
            what.append(f"{bad} of {n} elements outside atol={tol['atol']:g} rtol={tol['rtol']:g}")
            # the element furthest past what it is allowed, not the largest error (which may be allowed: a
            # large value's rounding, or 0 where both are -inf): the one that fails is what the author reads
            idx = _worst_failing(p, tol)
            off = "where the reference is not finite" if not torch.isfinite(r[tuple(idx)] if idx else r) else \
                f"off by {float(diff[tuple(idx)] if idx else diff):.3g}, " \
                f"{tol['atol'] + tol['rtol'] * abs(float(r[tuple(idx)] if idx else r)):.3g} allowed"
            what.append(f"the worst at {idx}: {_value(out, idx)} for {_value(r, idx)} ({off})")
            stats["where"] = {"output": name, "index": idx, "candidate": _value(out, idx), "reference": _value(r, idx)}
        if not bool(p["norm_ok"]):
            what.append(f"norm error {norm_err:.3g} > {tol['norm']:g}")
        return OutputCheck(Status.INCORRECT_NUMERICAL, f"{name}: " + "; ".join(what) +
                           f"; max abs error {max_abs:.3g} at {worst}", **stats)
    return OutputCheck(Status.PASSED, **stats)


def _worst_failing(p: Mapping[str, torch.Tensor], tol: Mapping[str, float]) -> list[int]:
    """The index of the failing element whose error is furthest past its allowance (an element where the
    reference is not finite and the candidate differs, first)."""
    r, diff, bad = p["r"], p["diff"], p["bad_mask"]
    excess = torch.where(torch.isfinite(r), diff / (tol["atol"] + tol["rtol"] * r.abs()),
                         torch.full((), float("inf"), dtype=diff.dtype, device=diff.device))
    excess = torch.where(bad, excess, torch.full((), -1.0, dtype=diff.dtype, device=diff.device))
    return unravel(int(torch.argmax(excess.reshape(-1))), bad.shape) if bad.dim() else []

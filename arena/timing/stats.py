"""Statistics of timing samples: median, IQR, the relative standard error of a median,
geometric means and a paired bootstrap confidence interval for a ratio of medians."""

from __future__ import annotations

import math
from typing import Sequence

import numpy as np


def median(xs: Sequence[float]) -> float:
    return float(np.median(np.asarray(xs, dtype=float)))


def quantile(xs: Sequence[float], q: float) -> float:
    """The sample at rank ``q`` of the sorted samples (nearest rank, the lower one): for the
    tables of scripts, which quote samples as taken. NaN for none."""
    ys = sorted(xs)
    return float(ys[min(len(ys) - 1, int(q * len(ys)))]) if ys else math.nan


def iqr(xs: Sequence[float]) -> float:
    q75, q25 = np.percentile(np.asarray(xs, dtype=float), [75, 25])
    return float(q75 - q25)


def rse_of_median(xs: Sequence[float]) -> float:
    """Relative standard error of the median: 1.2533 * sigma / sqrt(n) / median, with the
    robust sigma IQR / 1.349. Infinite for fewer than 3 samples."""
    n = len(xs)
    if n < 3:
        return math.inf
    m = median(xs)
    if m <= 0:
        return math.inf
    return 1.2533 * (iqr(xs) / 1.349) / math.sqrt(n) / m


def geomean(xs: Sequence[float | None]) -> float | None:
    vals = [x for x in xs if x is not None and x > 0 and math.isfinite(x)]
    if not vals or len(vals) != len([x for x in xs if x is not None]):
        return None
    return float(math.exp(sum(math.log(x) for x in vals) / len(vals)))


def bootstrap_ratio_ci(baseline: Sequence[float], candidate: Sequence[float], *, n_boot: int = 2000,
                       seed: int = 0, level: float = 0.95, paired: bool = True) -> tuple[float, float]:
    """CI of median(baseline) / median(candidate), resampling the pairs together; or, for
    samples not taken in pairs (``paired=False``: the sides were timed apart), each side on
    its own."""
    a = np.asarray(baseline, dtype=float)
    b = np.asarray(candidate, dtype=float)
    rng = np.random.default_rng(seed)
    if paired:
        n = min(len(a), len(b))
        a, b = a[:n], b[:n]
        idx = rng.integers(0, n, size=(n_boot, n))
        ratios = np.median(a[idx], axis=1) / np.median(b[idx], axis=1)
    else:
        ia = rng.integers(0, len(a), size=(n_boot, len(a)))
        ib = rng.integers(0, len(b), size=(n_boot, len(b)))
        ratios = np.median(a[ia], axis=1) / np.median(b[ib], axis=1)
    lo, hi = np.percentile(ratios, [(1 - level) / 2 * 100, (1 + level) / 2 * 100])
    return float(lo), float(hi)


def geomean_ci(cis: Sequence[tuple[float, float]]) -> tuple[float, float] | None:
    """A conservative interval for a geometric mean of ratios: the geomean of the bounds."""
    if not cis:
        return None
    lo = geomean([c[0] for c in cis])
    hi = geomean([c[1] for c in cis])
    return (lo, hi) if lo is not None and hi is not None else None

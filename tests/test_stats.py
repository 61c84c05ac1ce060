"""Statistics of timing samples (arena/timing/stats.py)."""

from __future__ import annotations

import math

import numpy as np
import pytest

from arena.timing.stats import bootstrap_ratio_ci, geomean, geomean_ci, iqr, median, rse_of_median


def lognormal(median_value: float, sigma: float, n: int, seed: int) -> np.ndarray:
    return np.random.default_rng(seed).lognormal(math.log(median_value), sigma, n)


def test_median():
    assert median([3, 1, 2]) == 2.0
    assert median([4, 1, 3, 2]) == 2.5
    assert median([5.5]) == 5.5
    assert isinstance(median([1, 2]), float)


def test_iqr():
    assert iqr(list(range(1, 102))) == pytest.approx(50.0)     # q75 = 76, q25 = 26
    assert iqr([7, 7, 7, 7]) == 0.0
    assert iqr([1, 2, 3, 4, 5]) == pytest.approx(2.0)


def test_rse_of_median_formula():
    xs = list(range(1, 102))
    expected = 1.2533 * (50.0 / 1.349) / math.sqrt(101) / 51.0
    assert rse_of_median(xs) == pytest.approx(expected)


def test_rse_of_median_shrinks_with_n():
    values = [rse_of_median(lognormal(100.0, 0.1, n, seed=1)) for n in (25, 400, 6400)]
    assert values == sorted(values, reverse=True)
    assert values[-1] < values[0] / 8               # ~1/sqrt(n)
    assert values[-1] == pytest.approx(1.2533 * 0.1 / math.sqrt(6400), rel=0.1)


@pytest.mark.parametrize("xs", [[], [1.0], [1.0, 2.0]])
def test_rse_of_median_is_inf_below_3_samples(xs):
    assert rse_of_median(xs) == math.inf


def test_rse_of_median_inf_for_non_positive_median():
    assert rse_of_median([0.0, 0.0, 0.0, 1.0]) == math.inf
    assert rse_of_median([5.0, 5.0, 5.0]) == 0.0


def test_geomean():
    assert geomean([1.0, 4.0]) == pytest.approx(2.0)
    assert geomean([2.0, 8.0, 4.0]) == pytest.approx(4.0)
    assert geomean([3.0]) == pytest.approx(3.0)
    assert geomean([1.0, None, 4.0]) == pytest.approx(2.0)        # missing values are skipped


@pytest.mark.parametrize("xs", [[], [None], [1.0, 0.0], [2.0, -1.0], [1.0, math.inf], [1.0, math.nan]])
def test_geomean_none(xs):
    assert geomean(xs) is None


def test_bootstrap_ci_contains_the_true_ratio():
    true_ratio = 2.0
    hits = 0
    for seed in range(40):
        b = lognormal(100.0, 0.1, 60, seed=2 * seed)
        c = lognormal(100.0 / true_ratio, 0.1, 60, seed=2 * seed + 1)
        lo, hi = bootstrap_ratio_ci(b, c)
        assert lo <= median(b) / median(c) <= hi
        hits += lo <= true_ratio <= hi
    assert hits >= 34                  # a 95% interval: ~38 of 40 expected


def test_bootstrap_ci_narrows_with_more_samples():
    widths = []
    for n in (20, 200, 2000):
        lo, hi = bootstrap_ratio_ci(lognormal(100.0, 0.1, n, seed=3), lognormal(40.0, 0.1, n, seed=4))
        assert lo < 2.5 < hi
        widths.append(hi - lo)
    assert widths[0] > widths[1] > widths[2]
    assert widths[2] < widths[0] / 4


def test_bootstrap_ci_is_deterministic_and_uses_the_pairs():
    b, c = lognormal(10.0, 0.2, 50, seed=5), lognormal(5.0, 0.2, 80, seed=6)
    assert bootstrap_ratio_ci(b, c) == bootstrap_ratio_ci(b, c)
    assert bootstrap_ratio_ci(b, c) == bootstrap_ratio_ci(b, c[:50])        # the pairs: min length
    assert bootstrap_ratio_ci(b, c, seed=1) != bootstrap_ratio_ci(b, c, seed=2)
    lo95, hi95 = bootstrap_ratio_ci(b, c)
    lo50, hi50 = bootstrap_ratio_ci(b, c, level=0.5)
    assert lo95 < lo50 < hi50 < hi95


def test_bootstrap_ci_of_constant_samples():
    assert bootstrap_ratio_ci([10.0] * 10, [4.0] * 10) == pytest.approx((2.5, 2.5))


def test_geomean_ci():
    assert geomean_ci([(1.0, 2.0), (4.0, 8.0)]) == pytest.approx((2.0, 4.0))
    assert geomean_ci([(1.5, 3.0)]) == pytest.approx((1.5, 3.0))
    assert geomean_ci([]) is None
    assert geomean_ci([(0.0, 2.0), (1.0, 2.0)]) is None


def test_quantile_is_a_sample_taken_at_its_rank():
    from arena.timing.stats import quantile

    xs = [5.0, 1.0, 4.0, 2.0, 3.0, 10.0, 7.0, 6.0, 9.0, 8.0]
    assert [quantile(xs, q) for q in (0.0, 0.1, 0.5, 0.9, 1.0)] == [1.0, 2.0, 6.0, 10.0, 10.0]
    assert quantile([3.5], 0.9) == 3.5
    assert quantile([], 0.5) != quantile([], 0.5)        # NaN for no samples

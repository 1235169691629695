"""Algorithm 1's budget, trimming and noise wiring; the baselines' formulas."""

from __future__ import annotations

import math

import numpy as np
import pytest
from scipy import stats

from ppknn.protocols.dp_nb.schema import FeatureSchema
from ppknn.protocols.dp_nb.sensitivity import trimmed_statistics
from ppknn.protocols.dp_nb.training import (
    AUTO_FRACTION,
    AUTO_RATIO,
    NBConfig,
    budget_split,
    train,
)

ALPHA = 1e-6
SCHEMA = FeatureSchema.build(1, bounds=([0.0], [10.0]))
NO_CAT = np.empty((0, 0), dtype=np.int64)


def _fit(X, y, n_classes, **config):
    cat = np.empty((len(X), 0), dtype=np.int64)
    return train(np.asarray(X, dtype=float).reshape(len(X), -1), cat, np.asarray(y),
                 n_classes=n_classes, schema=SCHEMA, config=NBConfig(**config),
                 rng=np.random.default_rng(11))


def test_budget_split_of_algorithm_1():
    split = budget_split(NBConfig(epsilon=2.1, noise="gaussian", delta=1.2e-5), 6, 8)
    assert split.releases == 21 and split.per_release == pytest.approx(0.1, rel=1e-15)
    assert split.smooth_delta == pytest.approx(1e-6, rel=1e-15)
    assert (split.total.epsilon, split.total.delta) == (2.1, 1.2e-5)
    free = budget_split(NBConfig(method="non-private"), 6, 8)
    assert free.total.epsilon == 0.0 and math.isinf(free.per_release)


def test_releases_sum_to_the_budget():
    res = _fit(np.linspace(0, 10, 40), np.repeat([0, 1], 20), 2, epsilon=0.9)
    assert [(r.label, r.composition) for r in res.releases] == [
        ("class counts", "histogram"), ("mean 0", "parallel over classes"),
        ("variance 0", "parallel over classes")]
    assert sum(r.epsilon for r in res.releases) == pytest.approx(0.9, rel=1e-15)


@pytest.mark.parametrize("epsilon,trim,expected", [
    (1.0, "auto", min(math.ceil(math.log(AUTO_RATIO) / (2 * (1 / 3) / 10)),
                      math.floor(AUTO_FRACTION * 500))),
    (30.0, "auto", math.ceil(math.log(AUTO_RATIO) / 2.0)),  # ε' = 10, β = 1
    (math.inf, "auto", 0),
    (1.0, 0.2, 100),
    (1.0, 7, 7),
])
def test_trimming_rule_under_the_replace_model(epsilon, trim, expected):
    x = np.random.default_rng(0).uniform(0, 10, 500)
    res = _fit(x, np.zeros(500, dtype=int), 1, epsilon=epsilon, trim=trim,
               neighbours="replace")
    assert res.trim.tolist() == [expected]


def test_add_remove_trimming_uses_the_noisy_count():
    x = np.random.default_rng(0).uniform(0, 10, 500)
    res = _fit(x, np.zeros(500, dtype=int), 1, epsilon=1.0, trim=0.2)
    noisy = res.params.class_count[0]
    assert noisy != 500 and res.trim.tolist() == [math.floor(0.2 * noisy)]


def _chi2_pvalue(values, lo, hi, cdf):
    """Chi-square of clip(values) against a clipped continuous law: two atoms + 20 bins."""
    p_lo, p_hi = cdf(lo), 1 - cdf(hi)
    inner = np.linspace(cdf(lo), cdf(hi), 21)
    expected = np.concatenate([[p_lo], np.diff(inner), [p_hi]]) * len(values)
    interior = values[(values > lo) & (values < hi)]
    # bin the interior by its CDF value
    u = cdf(interior)
    counts = np.histogram(u, bins=inner)[0]
    observed = np.concatenate([[np.sum(values <= lo)], counts, [np.sum(values >= hi)]])
    keep = expected > 0
    return stats.chisquare(observed[keep], expected[keep] * observed.sum()
                           / expected[keep].sum()).pvalue


def _many_classes(n_classes=3000, per=60):
    base = np.random.default_rng(4).uniform(2, 8, per)
    return np.tile(base, n_classes), np.repeat(np.arange(n_classes), per), base


@pytest.mark.parametrize("neighbours", ["replace", "add-remove"])
def test_released_means_follow_the_calibrated_noise(neighbours):
    """Many classes with identical data: their released means are i.i.d. T + (S/α) Z."""
    n = 3000 if neighbours == "replace" else 1500
    X, y, base = _many_classes(n)
    res = _fit(X, y, n, epsilon=3.0, trim=2, neighbours=neighbours, global_fallback=False)
    t = trimmed_statistics(base, trim=2, lower=0.0, upper=10.0).mean
    s = res.sensitivity[:, 0, 0]
    assert np.all(s == s[0])
    cal = NBConfig(epsilon=3.0, trim=2).calibration(1.0, 0.0)  # ε' = 3 / 3
    scale = s[0] / cal.alpha
    law = stats.beta  # |Z|^4 / (1 + |Z|^4) ~ Beta(1/4, 3/4), symmetric sign

    def cdf(v, k=1.0):
        z = (np.asarray(v) - t) / (k * scale)
        b = np.abs(z) ** 4 / (1 + np.abs(z) ** 4)
        return 0.5 + np.sign(z) * 0.5 * law.cdf(b, 0.25, 0.75)

    theta = res.params.theta[:, 0]
    assert _chi2_pvalue(theta, 0.0, 10.0, cdf) > ALPHA
    assert _chi2_pvalue(theta, 0.0, 10.0, lambda v: cdf(v, 1.3)) < ALPHA


def test_vaidya_means_have_laplace_noise_at_the_global_sensitivity():
    X, y, base = _many_classes()
    res = _fit(X, y, 3000, method="vaidya", epsilon=3.0)
    scale = 10.0 / 61 / 1.0  # (U - L) / (n + 1) / ε'
    assert res.sensitivity[0, 0].tolist() == pytest.approx([10.0 / 61, math.sqrt(60) * 10 / 61])
    theta = res.params.theta[:, 0]
    assert _chi2_pvalue(theta, 0.0, 10.0, lambda v: stats.laplace.cdf(v, base.mean(), scale)) \
        > ALPHA
    assert _chi2_pvalue(theta, 0.0, 10.0,
                        lambda v: stats.laplace.cdf(v, base.mean(), 1.3 * scale)) < ALPHA


def test_class_counts_get_laplace_noise():
    X, y, _ = _many_classes()
    counts = _fit(X, y, 3000, method="vaidya", epsilon=3.0).params.class_count
    assert stats.kstest(counts, stats.laplace(60, 1.0).cdf).pvalue > ALPHA
    assert stats.kstest(counts, stats.laplace(60, 1.3).cdf).pvalue < ALPHA


def test_replace_model_releases_an_empty_class_exactly():
    res = _fit([1.0, 2.0, 3.0, 9.0], [0, 0, 1, 1], 3, epsilon=1.0, neighbours="replace")
    assert res.params.theta[2, 0] == 5.0  # the midpoint, no noise: a constant
    floor = 1e-3 * 100 + 1e-9 * 100
    assert res.params.var[2, 0] == pytest.approx(floor, rel=1e-12)


def test_replace_model_noises_the_mean_of_a_one_row_class():
    """A class of one row under replace: its variance is the constant 0, but its mean is the
    row's value, released with Laplace noise at (U - L) / 1 (global fallback), never as is."""
    n = 3000
    X = np.full(n, 3.14159)
    res = _fit(X, np.arange(n), n, epsilon=30.0, neighbours="replace")  # ε' = 10
    assert np.all(res.sensitivity[:, 0, 0] == 10.0)  # (U - L) / 1: the global fallback
    theta = res.params.theta[:, 0]
    assert np.mean(theta == 3.14159) < 0.01
    law = stats.laplace(3.14159, 10.0 / 10.0)
    assert _chi2_pvalue(theta, 0.0, 10.0, law.cdf) > ALPHA
    assert _chi2_pvalue(theta, 0.0, 10.0, stats.laplace(3.14159, 1.3).cdf) < ALPHA
    floor = 1e-3 * 100 + 1e-9 * 100  # the variance: the constant 0, floored
    assert res.params.var[:, 0] == pytest.approx(np.full(n, floor), rel=1e-12)


def test_bun_steinke_variance_is_the_second_moment_minus_the_squared_mean():
    x = np.random.default_rng(2).uniform(1, 9, 200)
    res = _fit(x, np.zeros(200, dtype=int), 1, method="bun-steinke", epsilon=math.inf)
    assert res.params.var[0, 0] == pytest.approx(np.mean(x**2) - np.mean(x) ** 2 + 1e-7,
                                                 rel=1e-9)


def test_private_variances_are_floored():
    x = np.full(100, 5.0)
    res = _fit(x, np.zeros(100, dtype=int), 1, epsilon=50.0, neighbours="replace")
    assert res.params.var[0, 0] >= 1e-3 * 100


def test_truncated_density_integrates_to_one_inside_the_bounds():
    x = np.random.default_rng(3).uniform(0, 10, 300)
    res = _fit(x, np.zeros(300, dtype=int), 1, method="non-private", density="truncated")
    grid = np.linspace(0, 10, 20_001)[:, None]
    dens = np.exp(res.params.joint_log_likelihood(grid, np.empty((len(grid), 0), int))[:, 0])
    assert np.trapezoid(dens, grid[:, 0]) == pytest.approx(1.0, rel=1e-6)

"""Smooth sensitivity of the trimmed mean and variance: exact values, brute force, properties."""

from __future__ import annotations

import math

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from ppknn.core.errors import ConfigError
from ppknn.protocols.dp_nb.sensitivity import (
    smooth_sensitivity,
    smooth_sensitivity_direct,
    trimmed_statistics,
)
from tests.dpnb.reference import (
    smooth_by_distance,
    smooth_by_distance_replace,
    smooth_by_enumeration,
    smooth_by_enumeration_replace,
    trimmed,
    true_local_sensitivity,
    true_local_sensitivity_replace,
)

STATS = ("mean", "variance")
BETAS = (0.02, 0.1, 0.5, 2.0)


@st.composite
def samples(draw, max_n=7, max_trim=3):
    upper = draw(st.sampled_from([1.0, 4.0, 10.0]))
    grid = np.linspace(0.0, upper, 9)  # ties and the bounds themselves are likely
    n = draw(st.integers(0, max_n))
    x = [float(v) for v in draw(st.lists(st.sampled_from(list(grid)), min_size=n,
                                         max_size=n))]
    m = draw(st.integers(0, max_trim))
    beta = draw(st.sampled_from(BETAS))
    return x, m, 0.0, upper, beta


# ---------------------------------------------------------------- exact values
def test_trimmed_statistics_exact():
    s = trimmed_statistics([9.0, 2.0, 4.0, 3.5, 5.0, 3.0, 4.5], trim=1, lower=0.0, upper=10.0)
    assert (s.mean, s.variance, s.window) == (4.0, 0.5, 5)
    assert s.bottom.tolist() == [2.0, 0.0] and s.top.tolist() == [9.0, 10.0]


def test_smooth_equals_local_bound_when_beta_is_large():
    # x = 1..10 in [0, 20], m = 1: D = x_(10) - x_(1) = 9, w = 8 -> 9 / 7
    s = smooth_sensitivity(np.arange(1.0, 11.0), trim=1, lower=0.0, upper=20.0, beta=1.0)
    assert s.mean == pytest.approx(9.0 / 7.0, rel=1e-15)
    assert s.local_mean == pytest.approx(9.0 / 7.0, rel=1e-15)


def test_smooth_is_reached_at_distance_one():
    # 100 values in [1, 10], m = 1, w = 98: D = 9 gives 9/97, but one value added at
    # U = 20 gives D = 19 in a window of 99: e^-0.1 * 19/98 is larger (and two, D = 20:
    # e^-0.2 * 20/99, is not); shrinking the window to one value costs e^-9.7 * 20
    s = smooth_sensitivity(np.linspace(1.0, 10.0, 100), trim=1, lower=0.0, upper=20.0, beta=0.1)
    assert s.local_mean == pytest.approx(9.0 / 97.0, rel=1e-15)
    assert s.mean == pytest.approx(math.exp(-0.1) * 19.0 / 98.0, rel=1e-15)


def test_shrinking_the_window_dominates_small_samples():
    # x = 1..10, m = 1, w = 8: removing 7 window values leaves one -> the cap U - L = 20
    s = smooth_sensitivity(np.arange(1.0, 11.0), trim=1, lower=0.0, upper=20.0, beta=0.1)
    assert s.mean == pytest.approx(20.0 * math.exp(-0.7), rel=1e-15)


def test_small_window_reaches_the_cap():
    # four equal values, m = 1: w = 2; one removal leaves a single value -> cap * e^-beta
    s = smooth_sensitivity([5.0] * 4, trim=1, lower=0.0, upper=10.0, beta=0.1)
    assert s.mean == pytest.approx(10.0 * math.exp(-0.1), rel=1e-15)
    assert s.variance == pytest.approx(25.0 * math.exp(-0.1), rel=1e-15)


@pytest.mark.parametrize("n,m", [(0, 0), (1, 0), (3, 2), (4, 2)])
def test_tiny_samples_get_the_cap(n, m):
    s = smooth_sensitivity([1.0] * n, trim=m, lower=0.0, upper=2.0, beta=0.3)
    assert (s.mean, s.variance) == (2.0, 1.0)


def test_no_trimming_gives_almost_the_global_sensitivity():
    # m = 0: the extended spread is always U - L, so S = (U - L) / (n - 1) when beta is
    # large enough for the window-shrinking term (U - L) e^{-(n-1) beta} not to matter
    x = np.random.default_rng(0).uniform(4.0, 6.0, 50)
    s = smooth_sensitivity(x, trim=0, lower=0.0, upper=10.0, beta=1.0)
    assert s.mean == pytest.approx(10.0 / 49.0, rel=1e-12)


# ------------------------------------------------------------ brute force
@settings(max_examples=120, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(samples(max_n=6, max_trim=2))
def test_fast_equals_enumeration_of_datasets(case):
    x, m, lo, hi, beta = case
    fast = smooth_sensitivity(x, trim=m, lower=lo, upper=hi, beta=beta)
    for stat in STATS:
        ref = smooth_by_enumeration(x, m, lo, hi, beta, stat)
        assert fast.of(stat) == pytest.approx(ref, rel=1e-9, abs=1e-300)


@settings(max_examples=300, deadline=None)
@given(samples(max_n=12, max_trim=4))
def test_fast_equals_the_papers_procedure(case):
    x, m, lo, hi, beta = case
    fast = smooth_sensitivity(x, trim=m, lower=lo, upper=hi, beta=beta)
    direct = smooth_sensitivity_direct(x, trim=m, lower=lo, upper=hi, beta=beta)
    for stat in STATS:
        ref = smooth_by_distance(x, m, lo, hi, beta, stat)
        assert fast.of(stat) == pytest.approx(ref, rel=1e-9)
        assert direct.of(stat) == pytest.approx(ref, rel=1e-9)


@settings(max_examples=60, deadline=None)
@given(st.integers(20, 400), st.floats(0.0, 0.45), st.sampled_from([1e-3, 1e-2, 0.1, 1.0]),
       st.integers(0, 2**31 - 1))
def test_fast_equals_direct_on_larger_samples(n, frac, beta, seed):
    rng = np.random.default_rng(seed)
    x = np.round(np.clip(rng.standard_normal(n) * rng.choice([0.1, 1.0, 3.0]), -5, 5),
                 int(rng.integers(0, 3)))
    m = int(frac * n)
    fast = smooth_sensitivity(x, trim=m, lower=-5.0, upper=5.0, beta=beta)
    direct = smooth_sensitivity_direct(x, trim=m, lower=-5.0, upper=5.0, beta=beta)
    for stat in STATS:
        assert fast.of(stat) == pytest.approx(direct.of(stat), rel=1e-9)


# ---------------------------------------------------------------- properties
@settings(max_examples=150, deadline=None)
@given(samples(max_n=7, max_trim=2))
def test_smooth_bounds_the_true_local_sensitivity(case):
    x, m, lo, hi, beta = case
    fast = smooth_sensitivity(x, trim=m, lower=lo, upper=hi, beta=beta)
    for stat in STATS:
        ls = true_local_sensitivity(x, m, lo, hi, stat)
        assert ls <= fast.of(stat) * (1 + 1e-12) + 1e-15
        assert fast.of(stat) >= getattr(fast, f"local_{stat}") * (1 - 1e-12)


@settings(max_examples=300, deadline=None)
@given(st.integers(0, 40), st.integers(0, 8), st.sampled_from(BETAS), st.integers(0, 2**31 - 1),
       st.sampled_from(["add-low", "add-high", "add-random", "remove"]))
def test_smooth_sensitivity_is_beta_smooth(n, m, beta, seed, how):
    rng = np.random.default_rng(seed)
    x = list(np.round(rng.beta(2, 5, n) * 10, 1))
    if how == "remove":
        if not x:
            return
        i = int(rng.integers(len(x)))
        y = x[:i] + x[i + 1:]
    else:
        v = {"add-low": 0.0, "add-high": 10.0}.get(how, float(rng.uniform(0, 10)))
        y = x + [v]
    sx = smooth_sensitivity(x, trim=m, lower=0.0, upper=10.0, beta=beta)
    sy = smooth_sensitivity(y, trim=m, lower=0.0, upper=10.0, beta=beta)
    for stat in STATS:
        assert sx.of(stat) <= math.exp(beta) * sy.of(stat) * (1 + 1e-12)
        assert sy.of(stat) <= math.exp(beta) * sx.of(stat) * (1 + 1e-12)


def test_trimmed_statistics_match_a_direct_computation():
    rng = np.random.default_rng(3)
    for n, m in [(1, 0), (10, 3), (11, 5), (200, 17), (5, 4)]:
        x = rng.uniform(-1, 1, n)
        got = trimmed_statistics(x, trim=m, lower=-1.0, upper=1.0)
        mu, var = trimmed(list(x), m, -1.0, 1.0)
        assert (got.mean, got.variance) == (pytest.approx(mu, abs=1e-15),
                                            pytest.approx(var, abs=1e-15))


def test_early_stop_and_pruning_evaluate_few_pairs_on_a_large_sample():
    """200,000 values, m = 3000 trimmed: the pruned search looks at far fewer than m^2 pairs."""
    x = np.random.default_rng(11).beta(2, 5, 200_000) * 100
    s = smooth_sensitivity(x, trim=3000, lower=0.0, upper=100.0, beta=1e-3)
    assert s.stop_mean < 3000 and s.pairs < 20_000
    assert s.mean >= s.local_mean and s.variance >= s.local_variance


def test_sensitivity_shrinks_with_more_data():
    rng = np.random.default_rng(5)
    small = smooth_sensitivity(rng.normal(50, 5, 1_000).clip(0, 100), trim=50, lower=0.0,
                               upper=100.0, beta=0.05)
    large = smooth_sensitivity(rng.normal(50, 5, 100_000).clip(0, 100), trim=50, lower=0.0,
                               upper=100.0, beta=0.05)
    assert large.mean < small.mean / 20 and large.variance < small.variance / 20


@pytest.mark.parametrize("kwargs,match", [
    (dict(values=[1.0, 11.0], trim=0, lower=0.0, upper=10.0, beta=0.1), "inside"),
    (dict(values=[1.0, float("nan")], trim=0, lower=0.0, upper=10.0, beta=0.1), "finite"),
    (dict(values=[1.0], trim=-1, lower=0.0, upper=10.0, beta=0.1), "trim"),
    (dict(values=[1.0], trim=1.5, lower=0.0, upper=10.0, beta=0.1), "trim"),
    (dict(values=[1.0], trim=0, lower=5.0, upper=5.0, beta=0.1), "lower < upper"),
    (dict(values=[1.0], trim=0, lower=0.0, upper=10.0, beta=0.0), "beta"),
    (dict(values=[1.0], trim=0, lower=0.0, upper=10.0, beta=float("nan")), "beta"),
    (dict(values=[1.0], trim=0, lower=0.0, upper=10.0, beta=0.1, neighbours="swap"),
     "neighbours"),
    (dict(values=[1.0, 2.0], trim=1, lower=0.0, upper=10.0, beta=0.1, neighbours="replace"),
     "non-empty window"),
])
def test_bad_inputs_are_rejected(kwargs, match):
    with pytest.raises(ConfigError, match=match):
        smooth_sensitivity(**kwargs)


# ------------------------------------------------------------- replace model
def test_replace_model_exact_value():
    # x = 1..10 in [0, 20], m = 1, w = 8 fixed: D = 9 -> 9/8; one value moved to U: e^-b 19/8
    x = np.arange(1.0, 11.0)
    kw = dict(trim=1, lower=0.0, upper=20.0, neighbours="replace", method="bound")
    s = smooth_sensitivity(x, beta=1.0, **kw)
    assert s.mean == pytest.approx(9.0 / 8.0, rel=1e-15)
    s = smooth_sensitivity(x, beta=0.1, **kw)
    assert s.mean == pytest.approx(math.exp(-0.1) * 19.0 / 8.0, rel=1e-15)
    # variance D^2 (w+1)/w^2: D = 19 at distance 1 gives e^-0.1 * 361 * 9/64 = 45.94,
    # D = 20 at distance 2 gives e^-0.2 * 400 * 9/64 = 46.05 (below the cap 100)
    assert s.variance == pytest.approx(math.exp(-0.2) * 400 * 9 / 64, rel=1e-15)


def test_replace_model_never_exceeds_the_cap_over_the_window():
    # fixed class size: S <= (U - L) / w, unlike add/remove where the window can shrink
    x = np.random.default_rng(1).uniform(4, 6, 30)
    s = smooth_sensitivity(x, trim=2, lower=0.0, upper=10.0, beta=1e-3, neighbours="replace",
                           method="bound")
    a = smooth_sensitivity(x, trim=2, lower=0.0, upper=10.0, beta=1e-3)
    assert s.mean <= 10.0 / 26 * (1 + 1e-12) and a.mean > 5.0


@settings(max_examples=120, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(samples(max_n=6, max_trim=2))
def test_replace_fast_equals_enumeration_and_bounds_local_sensitivity(case):
    x, m, lo, hi, beta = case
    if len(x) - 2 * m <= 0:
        return
    fast = smooth_sensitivity(x, trim=m, lower=lo, upper=hi, beta=beta, neighbours="replace",
                              method="bound")
    direct = smooth_sensitivity_direct(x, trim=m, lower=lo, upper=hi, beta=beta,
                                       neighbours="replace")
    for stat in STATS:
        assert fast.of(stat) == pytest.approx(
            smooth_by_enumeration_replace(x, m, lo, hi, beta, stat), rel=1e-9)
        assert fast.of(stat) == pytest.approx(
            smooth_by_distance_replace(x, m, lo, hi, beta, stat), rel=1e-9)
        assert direct.of(stat) == pytest.approx(fast.of(stat), rel=1e-9)
        assert true_local_sensitivity_replace(x, m, lo, hi, stat) <= fast.of(stat) * (1 + 1e-12)


@pytest.mark.parametrize("method", ["exact", "bound"])
@settings(max_examples=200, deadline=None)
@given(st.integers(1, 40), st.integers(0, 8), st.sampled_from(BETAS), st.integers(0, 2**31 - 1))
def test_replace_model_is_beta_smooth(method, n, m, beta, seed):
    if n - 2 * m <= 0:
        return
    rng = np.random.default_rng(seed)
    x = list(np.round(rng.beta(2, 5, n) * 10, 1))
    i = int(rng.integers(n))
    y = x[:i] + [float(rng.choice([0.0, 10.0, rng.uniform(0, 10)]))] + x[i + 1:]
    kw = dict(trim=m, lower=0.0, upper=10.0, beta=beta, neighbours="replace", method=method)
    sx, sy = smooth_sensitivity(x, **kw), smooth_sensitivity(y, **kw)
    for stat in STATS:
        assert sx.of(stat) <= math.exp(beta) * sy.of(stat) * (1 + 1e-12)
        assert sy.of(stat) <= math.exp(beta) * sx.of(stat) * (1 + 1e-12)

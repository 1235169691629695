"""Exact smooth sensitivity (replace model) against brute force, and its consequences."""

from __future__ import annotations

import math

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from ppknn.core.errors import ConfigError
from ppknn.protocols.dp_nb import sensitivity as sens
from ppknn.protocols.dp_nb.schema import FeatureSchema
from ppknn.protocols.dp_nb.sensitivity import (
    exact_spread,
    smooth_sensitivity,
    spread_variance_bound,
    trimmed_statistics,
)
from ppknn.protocols.dp_nb.training import NBConfig, train
from tests.dpnb.reference import (
    exact_local_variance_replace,
    exact_smooth_replace,
    exact_smooth_variance_replace,
)

BETAS = (0.05, 0.3, 1.0, 3.0)


@st.composite
def small(draw, max_n=4, max_trim=1):
    upper = draw(st.sampled_from([1.0, 10.0]))
    grid = list(np.linspace(0.0, upper, 6))  # ties and the bounds are likely
    n = draw(st.integers(1, max_n))
    x = [float(v) for v in draw(st.lists(st.sampled_from(grid), min_size=n, max_size=n))]
    m = draw(st.integers(0, max_trim))
    return x, m, 0.0, upper, draw(st.sampled_from(BETAS))


def literal_theorem(x, m, lo, hi, beta):
    """``max_k e^{-kβ} max_{t<=k+1} (x_(n-m+1+k-t) - x_(m+1-t)) / w``, every k and t."""
    xs = sorted(x)
    n = len(xs)

    def order(i):
        return lo if i <= 0 else hi if i > n else xs[i - 1]

    best_m = best_v = 0.0
    for k in range(2 * m + 3):
        g = max(order(n - m + 1 + k - t) - order(m + 1 - t) for t in range(k + 2))
        best_m = max(best_m, math.exp(-beta * k) * g)
        best_v = max(best_v, math.exp(-beta * k) * g * g)
    w = n - 2 * m
    return best_m / w, best_v * (w - 1) / w**2


@settings(max_examples=80, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(small())
def test_exact_mean_and_variance_equal_brute_force(case):
    x, m, lo, hi, beta = case
    if len(x) - 2 * m <= 0:
        return
    exact = smooth_sensitivity(x, trim=m, lower=lo, upper=hi, beta=beta, neighbours="replace")
    bound = smooth_sensitivity(x, trim=m, lower=lo, upper=hi, beta=beta, neighbours="replace",
                               method="bound")
    brute_mean, brute_var = exact_smooth_replace(x, m, lo, hi, beta)
    assert exact.method == "exact"
    assert exact.mean == pytest.approx(brute_mean, rel=1e-9, abs=1e-300)
    # the variance: exact, equal to the exhaustive search (floored at the smallest float
    # when the window is a single value), never above the spread bound or the pair bound
    brute_v = exact_smooth_variance_replace(x, m, lo, hi, beta)
    assert exact.variance == pytest.approx(max(brute_v, sens._TINY), rel=1e-9, abs=1e-300)
    assert brute_var <= exact.variance * (1 + 1e-9)  # the grid search with v on the grid
    st_ = trimmed_statistics(x, trim=m, lower=lo, upper=hi)
    assert exact.variance <= max(spread_variance_bound(st_, beta), sens._TINY) * (1 + 1e-9)
    assert exact.variance <= bound.variance * (1 + 1e-9)
    assert exact.mean <= bound.mean * (1 + 1e-9)


@st.composite
def clustered(draw, max_n=5, max_trim=2):
    """Samples with continuous values, clusters and ties (the inner values matter)."""
    n = draw(st.integers(2, max_n))
    base = draw(st.lists(st.floats(0.0, 10.0, allow_nan=False), min_size=1, max_size=3))
    x = [round(draw(st.sampled_from(base)) + draw(st.sampled_from([0.0, 0.3, -0.3, 1.7])), 3)
         for _ in range(n)]
    x = [min(max(v, 0.0), 10.0) for v in x]
    return x, draw(st.integers(0, max_trim)), 0.0, 10.0, draw(st.sampled_from(BETAS))


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(clustered())
def test_exact_variance_equals_brute_force_on_continuous_samples(case):
    x, m, lo, hi, beta = case
    if len(x) - 2 * m <= 1:
        return
    exact = smooth_sensitivity(x, trim=m, lower=lo, upper=hi, beta=beta, neighbours="replace")
    assert exact.variance == pytest.approx(exact_smooth_variance_replace(x, m, lo, hi, beta),
                                           rel=1e-9)
    assert exact.local_variance == pytest.approx(exact_local_variance_replace(x, m, lo, hi),
                                                 rel=1e-9)


def _broken(monkeypatch, how):
    """Plant one fault in the exact variance search."""
    real = sens._variance_scores
    if how == "off-by-one":  # the scores of distance k - 1 reported at distance k
        def fake(ext, m, w, k):
            return real(ext, m, w, np.maximum(np.asarray(k) - 1, 0))
    else:  # the moved block only at the ends of the range (no offsets 1 and w - 1)
        def fake(ext, m, w, k):
            saved = sens._BLOCK_OFFSETS
            sens._BLOCK_OFFSETS = lambda w_: [q for q in saved(w_) if q in (0, w_)]
            try:
                return real(ext, m, w, k)
            finally:
                sens._BLOCK_OFFSETS = saved
    monkeypatch.setattr(sens, "_variance_scores", fake)


@pytest.mark.parametrize("how", ["off-by-one", "ends-only"])
def test_the_brute_force_comparison_catches_a_broken_search(monkeypatch, how):
    cases = [([2.0, 3.5, 10.0], 0, 0.3), ([3.5, 9.0, 10.0, 2.0, 2.0], 0, 0.3),
             ([1.0, 2.0, 2.0, 8.0, 9.0], 1, 0.05)]
    before = [smooth_sensitivity(x, trim=m, lower=0.0, upper=10.0, beta=b,
                                 neighbours="replace").variance for x, m, b in cases]
    brute = [exact_smooth_variance_replace(x, m, 0.0, 10.0, b) for x, m, b in cases]
    assert before == pytest.approx(brute, rel=1e-9)
    _broken(monkeypatch, how)
    after = [smooth_sensitivity(x, trim=m, lower=0.0, upper=10.0, beta=b,
                                neighbours="replace").variance for x, m, b in cases]
    assert after != pytest.approx(brute, rel=1e-9)


@settings(max_examples=150, deadline=None)
@given(st.integers(1, 60), st.integers(0, 12), st.sampled_from((1e-3, 0.02, 0.3, 2.0)),
       st.integers(0, 2**31 - 1))
def test_near_linear_search_equals_the_literal_theorem(n, m, beta, seed):
    if n - 2 * m <= 0:
        return
    rng = np.random.default_rng(seed)
    x = list(np.round(rng.beta(2, 5, n) * 10, 1))
    s = smooth_sensitivity(x, trim=m, lower=0.0, upper=10.0, beta=beta, neighbours="replace")
    mean, var = literal_theorem(x, m, 0.0, 10.0, beta)
    assert s.mean == pytest.approx(mean, rel=1e-12)
    spread = spread_variance_bound(trimmed_statistics(x, trim=m, lower=0.0, upper=10.0), beta)
    assert spread == pytest.approx(var, rel=1e-12, abs=1e-300)
    assert s.variance <= max(spread, sens._TINY) * (1 + 1e-12)


def test_exact_value_by_hand():
    # x = 1..10 in [0, 20], m = 1, w = 8: D* = max(x(10) - x(2), x(9) - x(1)) = 8 at k = 0;
    # k = 1: x(11) - x(2) = 18 -> e^-β 18/8, which wins at β = 0.1
    x = np.arange(1.0, 11.0)
    s = smooth_sensitivity(x, trim=1, lower=0.0, upper=20.0, beta=1.0, neighbours="replace")
    assert s.mean == pytest.approx(1.0, rel=1e-15) and s.local_mean == pytest.approx(1.0)
    s = smooth_sensitivity(x, trim=1, lower=0.0, upper=20.0, beta=0.1, neighbours="replace")
    assert s.mean == pytest.approx(math.exp(-0.1) * 18 / 8, rel=1e-15)
    # the spread bound (w-1)/w² max_k e^{-kβ} G_k²: G = 8, 18, 19, 20 at k = 0..3; k = 3
    # wins (e^-0.3 * 400 = 296.3 > e^-0.2 * 361 = 295.6 > e^-0.1 * 324 = 293.2)
    st_ = trimmed_statistics(x, trim=1, lower=0.0, upper=20.0)
    assert spread_variance_bound(st_, 0.1) == pytest.approx(7 / 64 * math.exp(-0.3) * 400,
                                                            rel=1e-15)
    # the exact variance lies below it; its local value equals the reference's
    assert s.variance <= spread_variance_bound(st_, 0.1)
    assert s.local_variance == pytest.approx(exact_local_variance_replace(x, 1, 0.0, 20.0),
                                             rel=1e-12)


def test_the_search_is_near_linear_on_a_large_trim():
    x = np.random.default_rng(3).beta(2, 5, 40_000) * 10
    st_ = trimmed_statistics(x, trim=4_000, lower=0.0, upper=10.0)
    _, _, pairs = exact_spread(st_, 1e-4)
    assert pairs < 30 * 4_000  # (A + B) log B, not A * B = 1.6e7


def test_exact_needs_the_replace_model():
    with pytest.raises(ConfigError, match="sensitivity = 'exact'.*neighbours = 'replace'"):
        smooth_sensitivity([1.0, 2.0], trim=0, lower=0.0, upper=5.0, beta=0.1, method="exact")
    with pytest.raises(ConfigError, match="sensitivity must be one of"):
        NBConfig(sensitivity="tight", neighbours="replace")
    assert NBConfig(neighbours="replace").sensitivity == "exact"
    assert NBConfig().sensitivity == "bound"


@pytest.mark.parametrize("neighbours", ["replace", "add-remove"])
def test_huge_epsilon_on_a_constant_window_releases_instead_of_failing(neighbours):
    # ε = 1e5 with the paper's noise: β = ε' ~ 5e4, every e^{-kβ} term underflows and a
    # constant class window has spread 0; the sensitivity is floored at the smallest float
    x = np.array([[0.0], [0.0], [0.0], [0.0], [0.0], [0.0], [1.0], [2.0], [3.0], [4.0]])
    y = np.array([0] * 6 + [1] * 4)
    schema = FeatureSchema.build(1, bounds=([0.0], [4.0]))
    res = train(x, np.empty((10, 0), int), y, n_classes=2, schema=schema,
                config=NBConfig(epsilon=1e5, noise="paper", neighbours=neighbours, trim=1,
                                global_fallback=False), rng=np.random.default_rng(0))
    assert res.params.theta[0, 0] == pytest.approx(0.0, abs=1e-9)
    assert np.all(res.sensitivity > 0)


@pytest.mark.parametrize("seed", range(6))
def test_branch_and_bound_over_distances_equals_every_distance(monkeypatch, seed):
    # large samples take the branch and bound (intervals of distances bounded by
    # e^{-k1 β} A_{k2}); every distance evaluated must give the same value
    rng = np.random.default_rng(seed)
    n = int(rng.integers(300, 900))
    x = np.clip(np.where(rng.random(n) < 0.7, rng.beta(2, 5, n) * 10, rng.uniform(0, 10, n)),
                0.0, 10.0)
    m = int(rng.integers(0, n // 8))
    beta = float(rng.choice([1e-3, 1e-2, 0.1]))
    st_ = trimmed_statistics(x, trim=m, lower=0.0, upper=10.0)
    monkeypatch.setattr(sens, "_DENSE_ROWS", 0)
    fast, local, _ = sens.exact_variance(st_, beta)
    monkeypatch.setattr(sens, "_DENSE_ROWS", 10**12)
    every, local2, _ = sens.exact_variance(st_, beta)
    assert fast == pytest.approx(every, rel=1e-12) and local == pytest.approx(local2, rel=1e-12)


def _tied_sample(seed):
    """A large sample with many ties (few distinct values), its trim and a small β."""
    rng = np.random.default_rng(seed)
    n = int(rng.integers(300, 1500))
    m = int(rng.integers(0, n // 4))
    kind = seed % 3
    x = (rng.integers(0, int(rng.integers(2, 20)), n).astype(float) if kind == 0
         else np.round(rng.exponential(2, n)) if kind == 1
         else np.where(rng.random(n) < 0.8, 0.0, rng.integers(1, 50, n)).astype(float))
    upper = float(max(x.max(), 1.0) + rng.integers(0, 5))
    beta = float(rng.choice([3e-5, 1e-3, 3e-2]))
    return trimmed_statistics(x, trim=m, lower=0.0, upper=upper), beta


def _split_rows(monkeypatch, st_, beta, tie_splits):
    monkeypatch.setattr(sens, "_TIE_SPLITS", tie_splits)
    sens._A_MEMO.clear()
    rows = 0
    real = sens._splits

    def counting(*args):
        nonlocal rows
        out = real(*args)
        rows += out[0].size
        return out

    monkeypatch.setattr(sens, "_splits", counting)
    value = sens.exact_variance(st_, beta)
    monkeypatch.setattr(sens, "_splits", real)
    return value, rows


def test_tie_segment_splits_equal_every_split_on_tied_samples(monkeypatch):
    # only the ends of the tie segments are evaluated (the score is convex in the split
    # inside one): the value must be the one every split gives, bit for bit; the seeds
    # include samples where a search without the segment ends (only the range ends)
    # gives a smaller value (0, 45, 63, 117, 135 and 138 of these)
    fewer = 0
    for seed in range(150):
        st_, beta = _tied_sample(seed)
        (fast, local, _), rows = _split_rows(monkeypatch, st_, beta, True)
        (every, local2, _), all_rows = _split_rows(monkeypatch, st_, beta, False)
        assert fast == every and local == local2, f"seed {seed}"
        fewer += rows < all_rows
    assert fewer >= 40  # the segment path was taken, not every split


def test_a_search_without_the_tie_segment_ends_is_caught(monkeypatch):
    import inspect

    src = inspect.getsource(sens._splits)
    broken_src = src.replace("ts = np.concatenate([edge, edge + 1,", "ts = np.concatenate([")
    assert broken_src != src
    ns: dict = {}
    exec(broken_src, sens.__dict__, ns)
    missed = 0
    for seed in (0, 45, 63, 117, 135, 138):
        st_, beta = _tied_sample(seed)
        sens._A_MEMO.clear()
        good = sens.exact_variance(st_, beta)[0]
        monkeypatch.setattr(sens, "_splits", ns["_splits"])
        sens._A_MEMO.clear()
        missed += sens.exact_variance(st_, beta)[0] != good
        monkeypatch.undo()
    sens._A_MEMO.clear()
    assert missed == 6


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(clustered(max_n=6, max_trim=2))
def test_tie_segment_path_equals_brute_force_on_small_samples(case):
    x, m, lo, hi, beta = case
    if len(x) - 2 * m <= 1:
        return
    with pytest.MonkeyPatch.context() as mp:
        mp.setattr(sens, "_TIE_FACTOR", 0)  # the segment path even on a small sample
        sens._A_MEMO.clear()
        exact = smooth_sensitivity(x, trim=m, lower=lo, upper=hi, beta=beta,
                                   neighbours="replace")
    assert exact.variance == pytest.approx(
        max(exact_smooth_variance_replace(x, m, lo, hi, beta), sens._TINY), rel=1e-9)


def test_the_memo_of_a_sample_gives_what_a_fresh_search_gives():
    # A_k is memoised per (sample, trim, bounds) across β: a search after others on the
    # same values (other β, other trim, other bounds) equals a search on an empty memo
    rng = np.random.default_rng(7)
    x = np.round(rng.exponential(3, 2000))
    upper = float(x.max() + 1)
    settings_ = [(200, 3e-5, upper), (200, 1e-3, upper), (150, 1e-3, upper),
                 (200, 1e-3, upper + 5), (200, 3e-2, upper), (150, 3e-5, upper + 5)]
    fresh = []
    for m, beta, up in settings_:
        sens._A_MEMO.clear()
        fresh.append(sens.exact_variance(trimmed_statistics(x, trim=m, lower=0.0, upper=up),
                                         beta))
    sens._A_MEMO.clear()
    for _ in range(2):  # in order, then again on the full memo
        for (m, beta, up), want in zip(settings_, fresh, strict=True):
            got = sens.exact_variance(trimmed_statistics(x, trim=m, lower=0.0, upper=up),
                                      beta)
            assert got == want
    assert len(sens._A_MEMO) == 4  # (trim, upper) pairs: one entry each
    sens._A_MEMO.clear()

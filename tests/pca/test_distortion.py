"""Eqs. (12)-(13) against Monte Carlo, at alpha = 1e-6, with power against broken formulas.

The distortion is ``D = |x_S + noise - y_S|^2 - |x - y|^2`` for a training row
x (noised on the kept components S) and a clean test row y, both drawn
independently from the data. Under the empirical distribution of PCA
scores the mean is exact for any data, and so is the variance when no
component is dropped; with dropped components the variance formula assumes
they are independent normals, which the last test simulates.
"""

from __future__ import annotations

import math

import numpy as np
import pytest

from ppknn.protocols.pca_perturbation.datasets import load_paper_dataset
from ppknn.protocols.pca_perturbation.sanitize import (
    distortion_statistics,
    fit_pca,
    laplace_mechanisms,
    normalise,
    perturb,
)

Z_CRIT = 4.89  # two-sided alpha = 1e-6
N_MC = 400_000


def z_mean(d, expected):
    return (d.mean() - expected) / (d.std() / math.sqrt(len(d)))


def z_var(d, expected):
    c = d - d.mean()
    v = np.mean(c**2)
    se = math.sqrt((np.mean(c**4) - v**2) / len(d))
    return (v - expected) / se


def empirical_draws(scores, s, scales, rng, n=N_MC):
    """D for n (noisy training, clean test) pairs drawn from the rows of ``scores``."""
    i = rng.integers(0, len(scores), n)
    j = rng.integers(0, len(scores), n)
    X, Y = scores[i], scores[j]
    mechs = laplace_mechanisms(scales / 0.3, 0.3)  # scale_i = 0.3 * range_i = scales
    noise = perturb(np.zeros((n, s)), mechs, rng)
    return ((X[:, :s] + noise - Y[:, :s]) ** 2).sum(axis=1) - ((X - Y) ** 2).sum(axis=1)


@pytest.fixture(scope="module")
def wine_scores():
    ds = load_paper_dataset("wine", rng=np.random.default_rng(0))
    Z = normalise(ds.X, ds.X.min(axis=0), ds.X.max(axis=0))
    fit = fit_pca(Z)
    return fit, fit.scores(Z)


@pytest.mark.parametrize("s", [3, 6, 13])
def test_mean_matches_monte_carlo_for_any_data(wine_scores, s):
    fit, scores = wine_scores
    ranges = np.ptp(scores[:, :s], axis=0)
    scales = 0.3 * ranges
    d = empirical_draws(scores, s, scales, np.random.default_rng(s))
    stats = distortion_statistics(kept_variances=fit.variances[:s], scales=scales,
                                  dropped_variances=fit.variances[s:])
    assert abs(z_mean(d, stats.mean)) < Z_CRIT
    # power: the expectation with E(delta^2) = b^2 (not 2 b^2) is rejected
    broken = np.sum(scales**2) - 2 * np.sum(fit.variances[s:])
    assert abs(z_mean(d, broken)) > Z_CRIT


def test_mean_power_against_a_wrong_dropped_term(wine_scores):
    fit, scores = wine_scores
    s = 3
    scales = 0.1 * np.ptp(scores[:, :s], axis=0)
    d = empirical_draws(scores, s, scales, np.random.default_rng(1))
    broken = 2 * np.sum(scales**2) - np.sum(fit.variances[s:])  # E(X-Y)^2 = sigma^2: wrong
    assert abs(z_mean(d, broken)) > Z_CRIT


def test_variance_matches_monte_carlo_when_nothing_is_dropped(wine_scores):
    fit, scores = wine_scores
    m = scores.shape[1]
    scales = 0.3 * np.ptp(scores, axis=0)
    d = empirical_draws(scores, m, scales, np.random.default_rng(2))
    stats = distortion_statistics(kept_variances=fit.variances, scales=scales,
                                  dropped_variances=np.zeros(0))
    assert abs(z_var(d, stats.variance)) < Z_CRIT
    b2, v = scales**2, fit.variances
    for broken in (16 * np.sum(b2 * v) + 24 * np.sum(b2**2),   # Var(delta^2) taken as E(delta^4)
                   8 * np.sum(b2 * v) + 20 * np.sum(b2**2)):   # cross term counted once
        assert abs(z_var(d, broken)) > Z_CRIT


def test_variance_with_independent_normal_dropped_components():
    rng = np.random.default_rng(3)
    lam = np.array([0.30, 0.20, 0.12, 0.10, 0.08, 0.06])
    s = 2
    scales = np.array([0.25, 0.2])
    n = N_MC
    X = rng.normal(size=(n, 6)) * np.sqrt(lam)
    Y = rng.normal(size=(n, 6)) * np.sqrt(lam)
    noise = perturb(np.zeros((n, s)), laplace_mechanisms(scales / 0.5, 0.5), rng)
    d = ((X[:, :s] + noise - Y[:, :s]) ** 2).sum(axis=1) - ((X - Y) ** 2).sum(axis=1)
    stats = distortion_statistics(kept_variances=lam[:s], scales=scales,
                                  dropped_variances=lam[s:])
    assert abs(z_mean(d, stats.mean)) < Z_CRIT
    assert abs(z_var(d, stats.variance)) < Z_CRIT
    b2 = scales**2
    broken = 16 * np.sum(b2 * lam[:s]) + 20 * np.sum(b2**2) + 4 * np.sum(lam[s:] ** 2)
    assert abs(z_var(d, broken)) > Z_CRIT

"""Mechanism behaviour: guarantees, noise figures, releases, modes, randomness handling."""

from __future__ import annotations

import math

import numpy as np
import pytest
from scipy import optimize, stats

from ppknn.core.dp.calibration import (
    analytic_gaussian_sigma,
    classic_gaussian_sigma,
    gaussian_delta,
    zcdp_to_delta,
)
from ppknn.core.dp.exact import SeededEntropy
from ppknn.core.dp.mechanisms import Gaussian, Geometric, Laplace, Release
from ppknn.core.dp.planar import PlanarLaplace, planar_radius
from ppknn.core.dp.samplers import GRID_BITS, grid_exponent
from ppknn.core.dp.selection import ExponentialMechanism, ReportNoisyMax
from ppknn.core.dp.smooth import Cauchy, PolynomialTail, StudentT
from ppknn.core.errors import ConfigError
from ppknn.core.rng import RandomnessMode, SeedPolicy

ALPHA = 1e-6


def rng(seed=0):
    return np.random.default_rng(seed)


# ------------------------------------------------------------------ Laplace
def test_laplace_reports_its_guarantee_and_noise():
    mech = Laplace(epsilon=0.5, sensitivity=2.0)
    assert (mech.epsilon, mech.delta, mech.scale, mech.variance) == (0.5, 0.0, 4.0, 32.0)
    assert mech.cost.epsilon == 0.5
    assert mech.error_bound(0.05) == pytest.approx(4.0 * math.log(20))


def test_laplace_error_bound_holds_empirically():
    mech = Laplace(epsilon=1.0)
    noise = mech.randomise(np.zeros(50_000), rng(1)).value
    exceed = int(np.sum(np.abs(noise) > mech.error_bound(0.1)))
    assert stats.binomtest(exceed, noise.size, 0.1).pvalue > ALPHA


def test_release_records_mechanism_guarantee_and_mode():
    r = Laplace(epsilon=0.3).randomise(np.ones((2, 3)), rng())
    assert isinstance(r, Release)
    assert (r.mechanism, r.epsilon, r.delta, r.mode) == (
        "laplace",
        0.3,
        0.0,
        RandomnessMode.REPRODUCIBLE,
    )
    assert r.value.shape == (2, 3)
    assert r.cost.epsilon == 0.3


def test_scalar_input_gives_scalar_output():
    assert isinstance(Laplace(epsilon=1.0).randomise(5.0, rng()).value, float)
    assert isinstance(Laplace(epsilon=1.0, mode="secure").randomise(5.0).value, float)


def test_seeded_runs_repeat_and_different_seeds_differ():
    mech = Laplace(epsilon=1.0)
    a = mech.randomise(np.zeros(5), rng(7)).value
    b = mech.randomise(np.zeros(5), rng(7)).value
    c = mech.randomise(np.zeros(5), rng(8)).value
    assert np.array_equal(a, b) and not np.array_equal(a, c)


def test_secure_runs_do_not_repeat():
    mech = Laplace(epsilon=1.0, mode="secure")
    a = mech.randomise(np.zeros(5), rng(7)).value
    b = mech.randomise(np.zeros(5), rng(7)).value  # the seed is not used in secure mode
    assert not np.array_equal(a, b)


def test_secure_laplace_outputs_lie_on_the_power_of_two_grid():
    """Floating-point safety: outputs are multiples of 2**k whatever the input's low bits."""
    mech = Laplace(epsilon=0.7, sensitivity=1.0, mode="secure")
    k = grid_exponent(1.0)
    for x in (0.0, 0.1, 1.0 / 3.0, 12345.678):
        out = mech.randomise(np.full(200, x), SeededEntropy(3)).value
        steps = np.ldexp(out, -k)
        assert np.array_equal(steps, np.round(steps))


def test_secure_laplace_scale_pays_at_most_one_grid_step():
    mech = Laplace(epsilon=0.7, sensitivity=0.3, mode="secure")
    nominal = 0.3 / 0.7
    assert nominal <= mech.scale <= nominal * (1 + 2.0**-GRID_BITS)


def test_random_source_is_accepted_in_reproducible_mode():
    src = SeedPolicy(root=3).source("dp")
    a = Laplace(epsilon=1.0).randomise(np.zeros(3), src).value
    b = Laplace(epsilon=1.0).randomise(np.zeros(3), SeedPolicy(root=3).generator("dp")).value
    assert np.array_equal(a, b)


def test_secure_random_source_refused_by_reproducible_mechanism():
    src = SeedPolicy(root=3, mode="secure").source("dp")
    with pytest.raises(ConfigError, match="mode='secure'"):
        Laplace(epsilon=1.0).randomise(0.0, src)


def test_reproducible_mode_needs_an_explicit_generator():
    with pytest.raises(ConfigError, match="explicit numpy Generator"):
        Laplace(epsilon=1.0).randomise(0.0, None)
    with pytest.raises(TypeError, match="Generator"):
        Laplace(epsilon=1.0).randomise(0.0, 42)


def test_mechanisms_are_frozen_and_keyword_only():
    mech = Laplace(epsilon=1.0)
    with pytest.raises(AttributeError):
        mech.epsilon = 2.0
    with pytest.raises(TypeError):
        Laplace(1.0)


# ---------------------------------------------------------------- Geometric
def test_geometric_returns_integers_and_its_variance():
    mech = Geometric(epsilon=0.5, sensitivity=2)
    out = mech.randomise(np.full(60_000, 10), rng(2)).value
    assert out.dtype == np.int64
    assert np.var(out - 10) == pytest.approx(mech.variance, rel=0.05)


@pytest.mark.parametrize("mode", ["reproducible", "secure"])
def test_geometric_error_bound(mode):
    mech = Geometric(epsilon=1.0, sensitivity=1, mode=mode)
    t = mech.error_bound(0.05)
    a = math.exp(-1.0)
    assert 2 * a ** (t + 1) / (1 + a) <= 0.05 < 2 * a**t / (1 + a)


def test_geometric_refuses_fractional_values():
    with pytest.raises(ConfigError, match="integer values"):
        Geometric(epsilon=1.0).randomise(2.5, rng())


# ----------------------------------------------------------------- Gaussian
def test_analytic_gaussian_is_tight_and_beats_classic():
    sigma = analytic_gaussian_sigma(0.5, 1e-5, 1.0)
    assert gaussian_delta(sigma, 0.5, 1.0) <= 1e-5 < gaussian_delta(0.999 * sigma, 0.5, 1.0)
    assert sigma < classic_gaussian_sigma(0.5, 1e-5, 1.0)


def test_analytic_gaussian_scales_with_sensitivity():
    assert analytic_gaussian_sigma(1.0, 1e-6, 3.0) == pytest.approx(
        3.0 * analytic_gaussian_sigma(1.0, 1e-6, 1.0), rel=1e-12
    )


def test_zcdp_conversion_upper_bounds_the_exact_gaussian_profile():
    for sigma, eps in [(1.0, 0.5), (3.0, 1.0), (10.0, 0.1)]:
        assert gaussian_delta(sigma, eps, 1.0) <= zcdp_to_delta(1 / (2 * sigma**2), eps)


def test_secure_gaussian_sigma_meets_delta_through_zcdp():
    g = Gaussian(epsilon=1.0, delta=1e-5, mode="secure")
    rho = (1 + 2.0**-GRID_BITS) ** 2 / (2 * g.scale**2)
    assert zcdp_to_delta(rho, 1.0) <= 1e-5 * (1 + 1e-9)


def test_secure_gaussian_vector_release():
    r = Gaussian(epsilon=1.0, delta=1e-5, mode="secure").randomise(np.zeros(4), SeededEntropy(1))
    assert r.value.shape == (4,) and r.delta == 1e-5 and r.mode is RandomnessMode.SECURE


def test_gaussian_error_bound_holds_empirically():
    g = Gaussian(epsilon=1.0, delta=1e-5)
    noise = g.randomise(np.zeros(50_000), rng(4)).value
    exceed = int(np.sum(np.abs(noise) > g.error_bound(0.1)))
    assert stats.binomtest(exceed, noise.size, 0.1).pvalue > ALPHA


# ---------------------------------------------------------------- selection
def test_exponential_mechanism_batches_queries():
    em = ExponentialMechanism(epsilon=1.0)
    util = rng(1).normal(size=(7, 4))
    r = em.randomise(util, rng(2))
    assert r.value.shape == (7,) and r.value.dtype == np.int64
    assert r.epsilon == pytest.approx(7.0)  # seven releases on the same data
    assert isinstance(em.randomise(util[0], rng(2)).value, int)
    assert np.allclose(em.probabilities(util).sum(axis=1), 1.0)


def test_monotonic_utilities_double_eta():
    assert (
        ExponentialMechanism(epsilon=1.0, monotonic=True).eta
        == 2 * ExponentialMechanism(epsilon=1.0).eta
    )


@pytest.mark.parametrize("mode", ["reproducible", "secure"])
def test_exponential_mechanism_utility_bound(mode):
    em = ExponentialMechanism(epsilon=2.0, mode=mode)
    util = np.tile(np.arange(20.0), (2000, 1))
    src = SeededEntropy(5) if mode == "secure" else rng(5)
    chosen = em.randomise(util, src).value
    loss = 19.0 - chosen
    assert np.mean(loss > em.utility_loss_bound(20, 0.05)) <= 0.05


def test_report_noisy_max_picks_clear_winner():
    rnm = ReportNoisyMax(epsilon=5.0, monotonic=True)
    assert np.all(rnm.randomise(np.tile([0.0, 100.0, 1.0], (50, 1)), rng()).value == 1)


def test_report_noisy_max_laplace_refused_in_secure_mode():
    with pytest.raises(ConfigError, match="permute-and-flip"):
        ReportNoisyMax(epsilon=1.0, noise="laplace", mode="secure")


def test_selection_rejects_bad_utility_shapes():
    with pytest.raises(ConfigError, match="shape"):
        ExponentialMechanism(epsilon=1.0).randomise(np.zeros((2, 2, 2)), rng())


# ------------------------------------------------------- smooth sensitivity
def _log_h(kind, z):
    if kind == "cauchy":
        return -np.log1p(z**2)
    if kind == "poly":
        return -np.log1p(np.abs(z) ** 4.0)
    return -(3.0 + 1) / 2 * np.log1p(z**2 / 3.0)  # Student-t, dof 3


@pytest.mark.parametrize(
    ("kind", "mech"),
    [
        ("cauchy", Cauchy(epsilon=1.0)),
        ("poly", PolynomialTail(epsilon=1.0, gamma=4.0)),
        ("student", StudentT(epsilon=1.0, dof=3.0)),
    ],
)
def test_noise_is_admissible_with_its_alpha_and_beta(kind, mech):
    """Sliding by <= alpha and dilating by e^lambda, |lambda| <= beta, cost <= epsilon/2."""
    z = np.concatenate([np.linspace(-50, 50, 200_001), np.geomspace(50, 1e6, 2000)])
    z = np.concatenate([z, -z])
    half = mech.epsilon / 2 + 1e-12
    for shift in np.linspace(-mech.alpha, mech.alpha, 9):
        assert np.max(np.abs(_log_h(kind, z + shift) - _log_h(kind, z))) <= half
    for lam in np.linspace(-mech.beta, mech.beta, 9):
        assert np.max(np.abs(lam + _log_h(kind, np.exp(lam) * z) - _log_h(kind, z))) <= half


def test_smooth_noise_scale_and_release():
    c = Cauchy(epsilon=0.6)
    assert c.scale_for(0.5) == pytest.approx(5.0)
    r = c.randomise(np.zeros(3), 0.5, rng())
    assert r.epsilon == pytest.approx(3 * 0.6)  # three scalar releases
    assert r.mechanism == "cauchy"


def test_student_t_and_polynomial_variances():
    assert StudentT(epsilon=1.0, dof=4.0).variance_factor == 2.0
    assert PolynomialTail(epsilon=1.0, gamma=2.5).variance_factor == math.inf
    poly = PolynomialTail(epsilon=1.0, gamma=6.0)
    draws = poly.randomise(np.zeros(200_000), poly.alpha, rng(3)).value  # scale 1
    assert np.var(draws) == pytest.approx(poly.variance_factor, rel=0.05)


def test_cauchy_error_bound_holds_empirically():
    c = Cauchy(epsilon=1.0)
    noise = c.randomise(np.zeros(50_000), 1.0, rng(6)).value
    exceed = int(np.sum(np.abs(noise) > c.error_bound(1.0, 0.1)))
    assert stats.binomtest(exceed, noise.size, 0.1).pvalue > ALPHA


# ------------------------------------------------------------ planar Laplace
@pytest.mark.parametrize("p", [0.01, 0.25, 0.5, 0.9, 0.999])
def test_planar_radius_inverts_the_gamma_cdf(p):
    eps = 0.8
    r = float(planar_radius(p, eps))
    assert 1 - (1 + eps * r) * math.exp(-eps * r) == pytest.approx(p, abs=1e-12)


def test_planar_median_of_eps_r():
    assert PlanarLaplace(epsilon=1.0).radius_quantile(0.5) == pytest.approx(1.6783, abs=5e-5)
    root = optimize.brentq(lambda x: 1 - (1 + x) * math.exp(-x) - 0.5, 0.1, 10)
    assert round(root, 4) == 1.6783


@pytest.mark.parametrize("mode", ["reproducible", "secure"])
def test_planar_mean_radius_median_and_centre(mode):
    eps, n = 0.5, 100_000
    centre = np.array([3.0, -7.0])
    src = SeededEntropy(11) if mode == "secure" else rng(11)
    out = PlanarLaplace(epsilon=eps, mode=mode).randomise(np.tile(centre, (n, 1)), src).value
    noise = out - centre
    r = np.hypot(noise[:, 0], noise[:, 1])
    se_mean = math.sqrt(2) / eps / math.sqrt(n)  # sd of Gamma(2, 1/eps) is sqrt(2)/eps
    assert abs(r.mean() - 2 / eps) < 5 * se_mean  # E[r] = 2/eps
    assert np.median(eps * r) == pytest.approx(1.6783, abs=0.02)
    for axis in (0, 1):  # centred on the true point in both coordinates
        assert stats.ttest_1samp(noise[:, axis], 0.0).pvalue > ALPHA
    angle = np.mod(np.arctan2(noise[:, 1], noise[:, 0]), 2 * np.pi)
    assert stats.kstest(angle, stats.uniform(0, 2 * np.pi).cdf).pvalue > ALPHA


def test_planar_reports_its_figures():
    pl = PlanarLaplace(epsilon=0.25)
    assert pl.expected_radius == 8.0 and pl.variance == 48.0
    assert pl.error_bound(0.5) == pytest.approx(pl.radius_quantile(0.5))
    with pytest.raises(ConfigError, match="shape"):
        pl.randomise(np.zeros(3), rng())

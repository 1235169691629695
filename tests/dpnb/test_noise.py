"""Calibrations: exact constants, admissibility of the (ε, δ) families, sampled scales."""

from __future__ import annotations

import math

import numpy as np
import pytest
from scipy import special, stats

from ppknn.core.errors import ConfigError
from ppknn.protocols.dp_nb.noise import SmoothCalibration, admissible_delta

ALPHA = 1e-6


def test_proven_constants():
    cal = SmoothCalibration(noise="polynomial", epsilon=0.6, gamma=4.0)
    assert (cal.alpha, cal.beta) == (pytest.approx(0.06), pytest.approx(0.06))
    assert cal.scale(0.3) == pytest.approx(5.0)  # 2(γ+1) S / ε = 10 * 0.3 / 0.6
    cauchy = SmoothCalibration(noise="cauchy", epsilon=0.6)
    assert (cauchy.alpha, cauchy.beta) == (pytest.approx(0.1), pytest.approx(0.1))
    assert cal.proven and cauchy.proven


def test_paper_constant_is_labelled_and_exact():
    cal = SmoothCalibration(noise="paper", epsilon=0.5)
    assert not cal.proven
    assert cal.beta == 0.5  # S computed with e^{-kε'}
    assert cal.scale(1.0) == pytest.approx(math.sqrt(2) / 0.5, rel=1e-15)


def test_approximate_constants():
    eps, delta = 0.8, 1e-6
    d0 = admissible_delta(eps, delta)
    assert d0 == pytest.approx(2 * delta / (1 + math.exp(0.4)), rel=1e-15)
    lap = SmoothCalibration(noise="laplace", epsilon=eps, delta=delta)
    assert lap.alpha == pytest.approx(eps / 2)
    assert lap.beta == pytest.approx(eps / (2 * math.log(2 / d0)), rel=1e-15)
    gau = SmoothCalibration(noise="gaussian", epsilon=eps, delta=delta)
    assert gau.alpha == pytest.approx(eps / (5 * math.sqrt(2 * math.log(2 / d0))), rel=1e-15)
    assert gau.beta == pytest.approx(eps / (4 * (1 + math.log(2 / d0))), rel=1e-15)


# ------------------------------------------------------ admissibility, numerically
_U = np.linspace(-40.0, 40.0, 400_001)


def _slide(h, shift, eps):
    return np.trapezoid(np.maximum(0.0, h(_U) - math.exp(eps / 2) * h(_U + shift)), _U)


def _dilate(h, lam, eps):
    return np.trapezoid(np.maximum(0.0, h(_U) - math.exp(eps / 2) * math.exp(lam)
                                   * h(math.exp(lam) * _U)), _U)


DENSITY = {"laplace": lambda z: 0.5 * np.exp(-np.abs(z)), "gaussian": stats.norm.pdf}


@pytest.mark.parametrize("kind", ["laplace", "gaussian"])
@pytest.mark.parametrize("eps,delta", [(0.1, 1e-5), (1.0, 1e-6), (0.5, 1e-3)])
def test_sliding_and_dilation_hold_with_half_the_delta(kind, eps, delta):
    """(α, β)-admissibility (NRS Def. 2.5): each property costs at most e^{ε/2} and δ₀/2."""
    cal = SmoothCalibration(noise=kind, epsilon=eps, delta=delta)
    h, budget = DENSITY[kind], admissible_delta(eps, delta) / 2
    for f in (1.0, 0.5, -0.5, -1.0):
        assert _slide(h, f * cal.alpha, eps) <= budget
        assert _dilate(h, f * cal.beta, eps) <= budget


@pytest.mark.parametrize("kind", ["laplace", "gaussian"])
def test_the_admissibility_check_rejects_too_large_a_dilation(kind):
    eps, delta = 1.0, 1e-6
    cal = SmoothCalibration(noise=kind, epsilon=eps, delta=delta)
    assert _dilate(DENSITY[kind], 3 * cal.beta, eps) > admissible_delta(eps, delta) / 2


def test_the_admissibility_check_rejects_too_large_a_laplace_shift():
    eps, delta = 1.0, 1e-6
    cal = SmoothCalibration(noise="laplace", epsilon=eps, delta=delta)
    assert _slide(DENSITY["laplace"], 1.3 * cal.alpha, eps) > admissible_delta(eps, delta) / 2


# ----------------------------------------------------------- sampled noise scales
def _poly_cdf(z, gamma):
    b = np.abs(z) ** gamma / (1 + np.abs(z) ** gamma)
    half = 0.5 * special.betainc(1 / gamma, 1 - 1 / gamma, b)
    return 0.5 + np.sign(z) * half


CDF = {
    "polynomial": lambda z: _poly_cdf(z, 4.0),
    "cauchy": stats.cauchy.cdf,
    "paper": stats.cauchy.cdf,
    "laplace": stats.laplace.cdf,
    "gaussian": stats.norm.cdf,
}


@pytest.mark.parametrize("kind", list(CDF))
def test_released_noise_has_the_calibrated_scale(kind):
    """KS at α = 1e-6; the same sample must reject a 30% wrong scale (power)."""
    delta = 1e-6 if kind in ("laplace", "gaussian") else 0.0
    cal = SmoothCalibration(noise=kind, epsilon=0.7, delta=delta)
    s = np.linspace(0.5, 2.0, 20_000)  # one smooth sensitivity per element
    out = cal.randomise(np.full(s.size, 3.0), s, np.random.default_rng(42)).value
    z = (out - 3.0) / cal.scale(s)
    assert stats.kstest(z, CDF[kind]).pvalue > ALPHA
    assert stats.kstest(z / 1.3, CDF[kind]).pvalue < ALPHA


def test_release_reports_the_calibration():
    cal = SmoothCalibration(noise="gaussian", epsilon=0.5, delta=1e-5)
    r = cal.randomise(np.zeros(3), 1.0, np.random.default_rng(0))
    assert (r.mechanism, r.epsilon, r.delta) == ("smooth-gaussian", 1.5, pytest.approx(3e-5))


def test_seeded_draws_repeat():
    cal = SmoothCalibration(epsilon=1.0)
    a = cal.randomise(np.zeros(5), 1.0, np.random.default_rng(9)).value
    b = cal.randomise(np.zeros(5), 1.0, np.random.default_rng(9)).value
    assert np.array_equal(a, b)


@pytest.mark.parametrize("kwargs,error,match", [
    (dict(noise="student", epsilon=1.0), ConfigError, "noise must be one of"),
    (dict(noise="polynomial", epsilon=0.0), ConfigError, "epsilon"),
    (dict(noise="polynomial", epsilon=float("inf")), ConfigError, "epsilon"),
    (dict(noise="polynomial", epsilon="1"), TypeError, "epsilon"),
    (dict(noise="polynomial", epsilon=1.0, gamma=1.0), ConfigError, "gamma"),
    (dict(noise="polynomial", epsilon=1.0, delta=1e-5), ConfigError, "pure"),
    (dict(noise="laplace", epsilon=1.0), ConfigError, "needs delta > 0"),
    (dict(noise="gaussian", epsilon=1.0, delta=1e-5, mode="secure"), ConfigError, "secure"),
    (dict(noise="gaussian", epsilon=1.0, delta=1.5), ConfigError, "delta"),
])
def test_bad_calibrations_are_rejected(kwargs, error, match):
    with pytest.raises(error, match=match):
        SmoothCalibration(**kwargs)


def test_non_positive_sensitivity_is_rejected():
    with pytest.raises(ConfigError, match="> 0"):
        SmoothCalibration(epsilon=1.0).randomise([1.0], [0.0], np.random.default_rng(0))

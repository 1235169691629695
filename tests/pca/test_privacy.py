"""Worst-case and average privacy measures."""

from __future__ import annotations

import math

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from ppknn.core.errors import ConfigError
from ppknn.protocols.pca_perturbation.parties.sanitizer import Sanitizer
from ppknn.protocols.pca_perturbation.privacy import (
    audit_column,
    average_privacy,
    breach_excluded,
    domain_amplification,
    interval_widths,
    rho2_bound,
)
from tests.pca.conftest import unit_bounds

CONFIDENCE = 1 - 1e-6
N_AUDIT = 200_000


def test_rho2_bound_pinned_values():
    # the paper's worked example: gamma = 20, rho1 = 0.1%  ->  "rho2 >= 0.02"
    assert rho2_bound(20.0, 0.001) == pytest.approx(0.02 / 1.019, rel=1e-15)
    # Laplace with b = 0.5 on {0, 1} with P(1) = 1%: P(X=1|Y) = gamma / (99 + gamma) = 0.069
    gamma = math.exp(2.0)
    assert rho2_bound(gamma, 0.01) == pytest.approx(gamma / (99 + gamma), rel=1e-14)
    assert round(rho2_bound(gamma, 0.01), 3) == 0.069
    # b = 0.3 and rho1 = 0.1%: eq. (2) gives 2.73% (the paper prints gamma * rho1 = 2.8%)
    assert rho2_bound(math.exp(1 / 0.3), 0.001) == pytest.approx(0.0272938, abs=1e-7)


@settings(max_examples=200, deadline=None)
@given(gamma=st.floats(1.01, 1e4), rho1=st.floats(1e-6, 0.5))
def test_rho2_bound_is_where_eq_1_becomes_an_equality(gamma, rho1):
    rho2 = rho2_bound(gamma, rho1)
    assert rho1 < rho2 < 1
    assert rho2 * (1 - rho1) / (rho1 * (1 - rho2)) == pytest.approx(gamma, rel=1e-9)
    above = rho2 + 1e-6 * (1 - rho2)
    if above < 1:
        assert breach_excluded(rho1, above, gamma)
    assert not breach_excluded(rho1, rho2 - 1e-6 * (rho2 - rho1), gamma)


@pytest.mark.parametrize("name", ["iris", "wine", "ionosphere"])
@pytest.mark.parametrize("b", [0.2, 0.3])
def test_audited_amplification_never_exceeds_e_to_the_one_over_b(paper_sets, name, b):
    ds = paper_sets[name]
    san = Sanitizer(party_id="sanitizer", index=0, X=ds.X, y=ds.y, n_classes=ds.n_classes,
                    run_id="t", bounds=unit_bounds(ds.X))
    first = san.fit.scores(san.Z, 1)[:, 0]
    res = audit_column(low=float(first.min()), high=float(first.max()), noise="laplace",
                       scale=b, n_samples=N_AUDIT, rng=np.random.default_rng(7),
                       confidence=CONFIDENCE)
    assert res.eps_lower <= 1 / b


def test_audit_rejects_noise_30_percent_too_small():
    # a sanitizer using b_i = b * range / 1.3 has amplification e^(1.3/b) > e^(1/b)
    res = audit_column(low=0.0, high=1.0, noise="laplace", scale=0.3 / 1.3,
                       n_samples=N_AUDIT, rng=np.random.default_rng(8), confidence=CONFIDENCE)
    assert res.eps_lower > 1 / 0.3


@pytest.mark.parametrize("noise", ["uniform", "normal"])
def test_audit_finds_additive_noise_unbounded(noise):
    # same standard deviation as Laplace with b = 0.3 on a unit range
    res = audit_column(low=0.0, high=1.0, noise=noise, scale=0.3 * math.sqrt(2),
                       n_samples=N_AUDIT, rng=np.random.default_rng(9), confidence=CONFIDENCE)
    assert res.eps_lower > 1 / 0.3


def test_average_privacy_exact_values():
    truth = np.zeros((2001, 2))
    errors = np.linspace(-1.0, 1.0, 2001)
    estimate = np.column_stack([errors, 0.5 * errors])
    # central 95% of a uniform grid on [-1, 1] is [-0.95, 0.95]
    np.testing.assert_allclose(interval_widths(estimate, truth), [1.9, 0.95], rtol=1e-12)
    assert average_privacy(estimate, truth) == pytest.approx((1.9 + 0.95) / 2, rel=1e-12)
    assert average_privacy(estimate, truth, ranges=np.array([2.0, 0.5])) == pytest.approx(
        (0.95 + 1.9) / 2, rel=1e-12)
    assert average_privacy(truth, truth) == 0.0


@pytest.mark.parametrize("n", [1, 2, 7, 40, 1001])
def test_interval_widths_equal_numpy_quantiles(n):
    rng = np.random.default_rng(n)
    est, tru = rng.laplace(size=(n, 3)), rng.random((n, 3))
    lo, hi = np.quantile(est - tru, [0.025, 0.975], axis=0)
    np.testing.assert_allclose(interval_widths(est, tru), hi - lo, rtol=1e-12, atol=1e-15)


def test_average_privacy_is_shift_invariant_and_scales():
    rng = np.random.default_rng(1)
    truth = rng.random((500, 3))
    noisy = truth + rng.laplace(0, 0.1, truth.shape)
    base = average_privacy(noisy, truth)
    assert average_privacy(noisy + 0.7, truth) == pytest.approx(base, rel=1e-12)
    assert average_privacy(truth + 2 * (noisy - truth), truth) == pytest.approx(2 * base,
                                                                                 rel=1e-12)


def test_domain_amplification_uses_the_l1_norm_of_each_component():
    comps = np.array([[0.6, 0.8], [0.8, -0.6]])
    np.testing.assert_allclose(domain_amplification(comps, np.array([0.7, 0.14])),
                               [math.exp(1.4 / 0.7), math.exp(1.4 / 0.14)], rtol=1e-15)


@pytest.mark.parametrize("call, message", [
    (lambda: rho2_bound(0.5, 0.1), "gamma must be a finite amplification >= 1, got 0.5"),
    (lambda: rho2_bound(2.0, 1.0), "rho1 must be a probability in (0, 1), got 1.0"),
    (lambda: breach_excluded(0.3, 0.2, 2.0), "a breach needs rho1 < rho2"),
    (lambda: interval_widths(np.zeros((3, 2)), np.zeros((3, 3))), "must be equal 2-D shapes"),
    (lambda: average_privacy(np.zeros((3, 2)), np.zeros((3, 2)), ranges=0.0),
     "ranges must be > 0"),
    (lambda: audit_column(low=0, high=1, noise="cauchy", scale=1, n_samples=100,
                          rng=np.random.default_rng(0)), "noise must be one of"),
    (lambda: audit_column(low=1, high=1, noise="normal", scale=1, n_samples=100,
                          rng=np.random.default_rng(0)), "need high > low"),
])
def test_bad_privacy_arguments(call, message):
    with pytest.raises(ConfigError) as err:
        call()
    assert message in str(err.value)

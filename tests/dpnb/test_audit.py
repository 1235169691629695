"""One released mean: the DP core's auditor, the exact loss, and the paper's constant."""

from __future__ import annotations

import numpy as np
import pytest

from ppknn.core.dp import audit
from ppknn.protocols.dp_nb.audit import audit_mean, exact_loss, mean_mechanism, worst_pair
from ppknn.protocols.dp_nb.noise import SmoothCalibration

# neighbours under the replace model (one value changed), trim m = 2, values in [0, 10]
X = [8.6, 0.12, 0.15, 0.23, 5.21, 0.13]
Y = [8.6, 0.12, 10.0, 0.23, 5.21, 0.13]
KW = dict(trim=2, lower=0.0, upper=10.0, neighbours="replace")


def test_auditor_bounds_the_default_calibration_below_epsilon():
    cal = SmoothCalibration(noise="polynomial", epsilon=0.5)
    res = audit_mean(X, Y, cal, n_samples=400_000, rng=np.random.default_rng(3), **KW)
    assert res.audited.eps_lower < 0.5
    assert res.exact < 0.5 and res.audited.eps_lower <= res.exact + 1e-9


def test_auditor_bounds_the_default_calibration_under_add_remove():
    cal = SmoothCalibration(noise="polynomial", epsilon=1.0)
    x = list(np.linspace(0.5, 3.0, 12))
    y = x + [10.0]
    res = audit_mean(x, y, cal, n_samples=400_000, rng=np.random.default_rng(4), trim=2,
                     lower=0.0, upper=10.0)
    assert res.audited.eps_lower < 1.0 and res.exact < 1.0


def test_the_auditor_has_power_against_a_ten_times_too_small_noise():
    cal = SmoothCalibration(noise="polynomial", epsilon=0.5)
    honest = mean_mechanism(cal, **KW)

    def broken(values, rng, n):
        centre = float(np.median(honest(values, np.random.default_rng(0), 2001)))
        return centre + (honest(values, rng, n) - centre) / 10

    res = audit(broken, X, Y, n_samples=400_000, rng=np.random.default_rng(5), vectorized=True)
    assert res.eps_lower > 0.5


def test_the_papers_constant_leaks_more_than_it_claims():
    """Cauchy at √2·S/ε' with β = ε': exactly 1.13 ε here, and the auditor certifies > ε."""
    cal = SmoothCalibration(noise="paper", epsilon=0.5)
    assert exact_loss(X, Y, cal, **KW) > 1.1 * 0.5
    res = audit_mean(X, Y, cal, n_samples=1_000_000, rng=np.random.default_rng(3), **KW)
    assert res.audited.eps_lower > 0.5 and not res.proven


def test_exact_loss_is_symmetric_and_zero_on_equal_inputs():
    cal = SmoothCalibration(noise="cauchy", epsilon=1.0)
    assert exact_loss(X, X, cal, **KW) == 0.0
    assert exact_loss(X, Y, cal, **KW) == pytest.approx(exact_loss(Y, X, cal, **KW), rel=1e-9)


def test_worst_pair_search_is_seeded_and_finds_neighbours():
    cal = SmoothCalibration(noise="polynomial", epsilon=0.5)
    a = worst_pair(cal, rng=np.random.default_rng(1), trials=20, trim=1, max_n=6)
    b = worst_pair(cal, rng=np.random.default_rng(1), trials=20, trim=1, max_n=6)
    assert a == b and abs(len(a[0]) - len(a[1])) == 1 and 0 < a[2] < 0.5

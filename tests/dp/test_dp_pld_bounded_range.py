"""The bounded-range loss law: exact values, DDR's extreme pairs, dp-accounting, a broken variant.

The exact reference composes the law analytically: k losses with density
``e^(ε/2) e^(l/2) / (2 (e^ε - 1))`` on ``[-ε, ε]`` sum to the density
``c^k e^(s/2) g_k(s)`` with ``g_k`` the k-fold convolution of the indicator of
``[-ε, ε]`` (an Irwin-Hall density), so ``δ(ε') = ∫ (1 - e^(ε' - s))_+`` of it is
integrated piecewise in 40-digit arithmetic (mpmath) -- no grid, nothing shared
with :mod:`core.dp.pld`.
"""

from __future__ import annotations

import functools
import math

import numpy as np
import pytest
from dp_br_reference import pair, worst_pair_epsilon, worst_pair_max_epsilon

from ppknn.core.dp import pld
from ppknn.core.dp.accounting import bounded_range_epsilon
from ppknn.core.dp.ledger import PrivacyLedger
from ppknn.core.dp.pld import (
    BoundedRangeLoss,
    RandomisedResponseLoss,
    compose_epsilon,
    loss_model,
)
from ppknn.core.dp.selection import ExponentialMechanism, ReportNoisyMax
from ppknn.core.errors import ConfigError

mp = pytest.importorskip("mpmath")


@functools.cache
def _exact_delta(eps: float, k: int, eps_g: float) -> float:
    with mp.workdps(40):
        e, g = mp.mpf(eps), mp.mpf(eps_g)
        if g >= k * e:
            return 0.0
        a, c = 2 * e, mp.exp(e / 2) / (2 * mp.expm1(e))
        coef = [(-1) ** j * mp.binomial(k, j) / mp.factorial(k - 1) for j in range(k + 1)]

        def f(x):  # x = (s + kε) / 2ε in [0, k]; Irwin-Hall density times the weights
            ih = mp.fsum(coef[j] * (x - j) ** (k - 1) for j in range(int(mp.floor(x)) + 1))
            return mp.exp((a * x - k * e) / 2) * ih * (1 - mp.exp(g + k * e - a * x))

        x0 = (g + k * e) / a
        cuts = [x0] + [mp.mpf(j) for j in range(int(mp.floor(x0)) + 1, k)] + [mp.mpf(k)]
        total = mp.fsum(mp.quad(f, [lo, hi]) for lo, hi in zip(cuts, cuts[1:]) if hi > lo)
        return float((c * a) ** k * total)


def _exact_epsilon(eps: float, k: int, delta: float) -> float:
    lo, hi = 0.0, k * eps
    while hi - lo > 1e-8:
        mid = (lo + hi) / 2
        lo, hi = (lo, mid) if _exact_delta(eps, k, mid) <= delta else (mid, hi)
    return hi


# (ε, k, δ) -> exact ε of k ε-BR releases at δ (by _exact_epsilon, to 1e-8)
EXACT = {
    (1.0, 16, 1e-5): 10.68999083,
    (2.0, 5, 1e-5): 9.26272888,
    (0.5, 12, 1e-6): 4.32636664,
}


def test_one_release_profile_is_the_largest_over_ddr_pairs() -> None:
    for eps in (0.3, 1.0, 3.0):
        law = BoundedRangeLoss(eps)
        assert law.delta(0.0) == pytest.approx(math.tanh(eps / 4), rel=1e-12)
        for eg in np.linspace(0.0, eps, 7):
            ts = np.linspace(0.0, eps, 401)
            p = (math.exp(eps) - np.exp(ts)) / math.expm1(eps)
            pairs = p * np.maximum(-np.expm1(eg - ts), 0.0)  # δ of the pair t at ε' = eg
            assert law.delta(eg) >= pairs.max() - 1e-15
            t_star = (eps + eg) / 2  # the largest pair, in closed form
            P, Q = pair(eps, t_star)
            assert law.delta(eg) == pytest.approx(max(P[0] - math.exp(eg) * Q[0], 0.0),
                                                  rel=1e-9, abs=1e-15)
            assert _exact_delta(eps, 1, float(eg)) == pytest.approx(law.delta(eg), rel=1e-9,
                                                                   abs=1e-15)


def test_exact_reference_reproduces_a_pinned_value() -> None:
    assert _exact_epsilon(2.0, 5, 1e-5) == pytest.approx(EXACT[(2.0, 5, 1e-5)], abs=2e-8)


@pytest.mark.parametrize("case", list(EXACT))
def test_composition_is_never_below_the_exact_value_and_within_the_grid(case) -> None:
    eps, k, delta = case
    ours = compose_epsilon([BoundedRangeLoss(eps)] * k, delta)
    assert EXACT[case] - 1e-8 <= ours <= EXACT[case] + k * pld.INTERVAL


@pytest.mark.parametrize("case", list(EXACT))
def test_between_ddr_worst_pair_and_ddr_closed_form(case) -> None:
    eps, k, delta = case
    ours = compose_epsilon([BoundedRangeLoss(eps)] * k, delta)
    lower, _ = worst_pair_max_epsilon(eps, k, delta)  # exact, one extreme mechanism
    assert lower <= ours < bounded_range_epsilon([eps] * k, delta) <= k * eps
    assert ours < compose_epsilon([RandomisedResponseLoss(eps)] * k, delta)


def test_sixteen_exponential_mechanisms_at_one() -> None:
    """At δ = 1e-5: 10.69 (exact 10.68999), against DDR's 11.57, RR's 16.0, the pair's 9.56."""
    ours = compose_epsilon([ExponentialMechanism(epsilon=1.0)] * 16, 1e-5)
    assert round(ours, 4) == 10.6908
    assert round(bounded_range_epsilon([1.0] * 16, 1e-5), 2) == 11.57
    assert round(worst_pair_max_epsilon(1.0, 16, 1e-5)[0], 2) == 9.56


def test_dominates_dp_accountings_pld_of_every_ddr_pair() -> None:
    ref = pytest.importorskip("dp_accounting.pld.privacy_loss_distribution")
    eps, k, delta = 1.0, 16, 1e-5
    ours = compose_epsilon([BoundedRangeLoss(eps)] * k, delta)
    _, t_worst = worst_pair_max_epsilon(eps, k, delta)
    for t in [*np.linspace(0.05, 0.95, 10), t_worst]:
        P, Q = pair(eps, float(t))
        theirs = ref.from_two_probability_mass_functions(
            {0: math.log(Q[0]), 1: math.log(Q[1])}, {0: math.log(P[0]), 1: math.log(P[1])},
            value_discretization_interval=1e-4, symmetric=True)
        value = theirs.self_compose(k).get_epsilon_for_delta(delta)
        assert worst_pair_epsilon(eps, k, delta, float(t)) - 1e-6 <= value <= ours


def test_an_optimistic_discretisation_is_caught(monkeypatch: pytest.MonkeyPatch) -> None:
    """Every loss one grid step lower (rounded down): lands below the exact value."""
    rounded_up = BoundedRangeLoss.pld

    def rounded_down(self: BoundedRangeLoss, interval: float = pld.INTERVAL) -> pld.PLD:
        up = rounded_up(self, interval)
        return pld.PLD(up.interval, up.offset - 1, up.masses, up.infinity, up.error)

    monkeypatch.setattr(BoundedRangeLoss, "pld", rounded_down)
    assert compose_epsilon([BoundedRangeLoss(1.0)] * 16, 1e-5) < EXACT[(1.0, 16, 1e-5)]


def test_a_law_for_one_t_only_is_caught() -> None:
    """DDR's pair at t = ε/2 alone (not every t) lands below the worst pair's exact value."""
    lower, _ = worst_pair_max_epsilon(1.0, 16, 1e-5)
    assert worst_pair_epsilon(1.0, 16, 1e-5, 0.5) < lower - 0.01


def test_loss_models_and_the_ledger() -> None:
    assert loss_model(ExponentialMechanism(epsilon=0.7)).law == BoundedRangeLoss(0.7)
    assert loss_model(ExponentialMechanism(epsilon=0.7, monotonic=True)).law == \
        BoundedRangeLoss(0.7)
    assert loss_model(ReportNoisyMax(epsilon=0.7)).law == RandomisedResponseLoss(0.7)
    em = ExponentialMechanism(epsilon=1.0)
    pld_ledger = PrivacyLedger(owner="o", epsilon=11.0, delta=1e-5)
    basic = PrivacyLedger(owner="o", epsilon=11.0, delta=1e-5, accountant="basic")
    assert pld_ledger.can_afford(em, repeat=16) and not basic.can_afford(em, repeat=16)
    for _ in range(16):
        pld_ledger.charge(em)
    assert round(pld_ledger.spent().epsilon, 4) == 10.6908
    assert pld_ledger.spent().delta == 1e-5


def test_bad_input_names_the_value() -> None:
    with pytest.raises(ConfigError, match="epsilon"):
        BoundedRangeLoss(0.0)
    with pytest.raises(ConfigError, match=">= 0"):
        BoundedRangeLoss(1.0).delta(-0.5)

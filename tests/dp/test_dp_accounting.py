"""Composition theorems: pinned values and independent cross-checks."""

from __future__ import annotations

import math

import pytest
from dp_br_reference import kl_route_epsilon, pair, worst_pair_epsilon, worst_pair_max_epsilon

from ppknn.core.dp.accounting import (
    PrivacyCost,
    advanced_composition,
    advanced_composition_epsilon,
    bounded_range_composition,
    bounded_range_epsilon,
    bounded_range_kl,
    parallel_composition,
    sequential_composition,
)

# (k, epsilon, delta) -> epsilon of the composition, to four decimals (issue 4).
PINNED_BR = [
    (10, 0.1, 1e-5, 0.7712),
    (16, 1.0, 1e-5, 11.5699),
    (17, 0.5, 1e-5, 5.4756),
    (50, 0.1, 1e-6, 1.9210),
    (12, 3.5, 1e-5, 42.0),
]


@pytest.mark.parametrize(("k", "eps", "delta", "expected"), PINNED_BR)
def test_bounded_range_pinned_values(k, eps, delta, expected):
    assert round(bounded_range_epsilon([eps] * k, delta), 4) == expected


def test_bounded_range_takes_plain_sum_when_smaller():
    cost = bounded_range_composition(3.5, 12, 1e-5)
    assert cost == PrivacyCost(42.0, 0.0)  # summation needs no delta


def test_bounded_range_with_zero_delta_is_summation():
    assert bounded_range_epsilon([0.1, 0.2], 0.0) == pytest.approx(0.3)


def test_bounded_range_heterogeneous_matches_homogeneous():
    assert bounded_range_epsilon([0.5] * 17, 1e-5) == pytest.approx(
        bounded_range_composition(0.5, 17, 1e-5).epsilon
    )


@pytest.mark.parametrize(("k", "eps", "delta", "expected"), PINNED_BR)
def test_bounded_range_equals_kl_route(k, eps, delta, expected):
    """Independent recomputation: numeric sup-KL over BR pairs + Azuma-Hoeffding."""
    assert bounded_range_epsilon([eps] * k, delta) == pytest.approx(
        kl_route_epsilon(eps, k, delta), rel=1e-9
    )


@pytest.mark.parametrize("eps", [1e-3, 0.1, 1.0, 3.5, 20.0])
def test_bounded_range_kl_is_the_sup_over_binary_pairs(eps):
    from dp_br_reference import max_kl

    assert bounded_range_kl(eps) == pytest.approx(max_kl(eps), rel=1e-7)


@pytest.mark.parametrize("eps", [1e-9, 1e-6])
def test_bounded_range_kl_small_epsilon_limit(eps):
    assert bounded_range_kl(eps) == pytest.approx(eps * eps / 8, rel=1e-6)


@pytest.mark.parametrize(("k", "eps", "delta", "expected"), PINNED_BR)
def test_bounded_range_dominates_exact_worst_pair(k, eps, delta, expected):
    """A valid BR bound must cover the exact composition of the extreme BR pair."""
    lower, _ = worst_pair_max_epsilon(eps, k, delta)
    bound = bounded_range_epsilon([eps] * k, delta)
    assert lower <= bound <= k * eps + 1e-12
    assert lower > 0.6 * bound  # and it is not vacuous


@pytest.mark.parametrize(("k", "eps", "delta", "expected"), PINNED_BR)
def test_worst_pair_matches_google_dp_accounting_pld(k, eps, delta, expected):
    """Cross-check of the exact reference with Google's PLD accountant (if installed)."""
    pld_module = pytest.importorskip("dp_accounting.pld.privacy_loss_distribution")
    _, t = worst_pair_max_epsilon(eps, k, delta)
    P, Q = pair(eps, t)
    interval = 1e-4
    pld = pld_module.from_two_probability_mass_functions(
        {0: math.log(Q[0]), 1: math.log(Q[1])},
        {0: math.log(P[0]), 1: math.log(P[1])},
        value_discretization_interval=interval,
        symmetric=True,
    )
    eps_pld = pld.self_compose(k).get_epsilon_for_delta(delta)
    exact = worst_pair_epsilon(eps, k, delta, t)
    assert exact - 1e-6 <= eps_pld <= exact + k * interval + 1e-6  # PLD rounds pessimistically
    assert eps_pld <= bounded_range_epsilon([eps] * k, delta)


def test_advanced_composition_formula():
    eps, k, dp = 0.1, 100, 1e-6
    expected = math.sqrt(2 * k * math.log(1 / dp)) * eps + k * eps * (math.exp(eps) - 1)
    assert advanced_composition_epsilon(eps, k, dp) == pytest.approx(expected, rel=1e-14)
    assert round(expected, 4) == 6.3082


def test_advanced_composition_adds_deltas():
    cost = advanced_composition(0.1, 1e-7, 100, 1e-6)
    assert cost.delta == pytest.approx(100 * 1e-7 + 1e-6)
    assert cost.epsilon < 100 * 0.1


def test_advanced_composition_falls_back_to_summation():
    cost = advanced_composition(1.0, 0.0, 3, 1e-6)  # DRV is worse than 3.0 here
    assert cost == PrivacyCost(3.0, 0.0)


def test_sequential_composition_sums():
    total = sequential_composition([PrivacyCost(0.1, 1e-6)] * 10)
    assert total.epsilon == pytest.approx(1.0)
    assert total.delta == pytest.approx(1e-5)


def test_parallel_composition_takes_max():
    assert parallel_composition([PrivacyCost(0.3), PrivacyCost(0.7, 1e-6)]) == PrivacyCost(
        0.7, 1e-6
    )


def test_parallel_composition_of_nothing_is_free():
    assert parallel_composition([]) == PrivacyCost(0.0, 0.0)


def test_composition_rejects_non_costs():
    with pytest.raises(TypeError, match="PrivacyCost"):
        sequential_composition([0.1])

"""Seeded statistical tests of the released labels' exact laws (α = 1e-6, with power)."""

from __future__ import annotations

import math

import numpy as np
import pytest
from scipy import stats

from ppknn.protocols.dp_knn.audit import overlap_scenario
from ppknn.protocols.dp_knn.rn import release_rn

ALPHA = 1e-6
N = 200_000
SCENARIO = overlap_scenario(clique=4, far=2)  # sensitivities 4, 4, 4, 4, 1, 1
Q = len(SCENARIO.x)
# label 0 leads by 5 in the overlapping regions, by 2 in the far ones
COUNTS = np.array([[8, 3]] * 4 + [[4, 2]] * 2)


def p_laplace(lead, scale):
    """P(label 1 wins) for a lead of label 0 when both counts get Laplace(scale) noise."""
    z = lead / scale
    return 0.25 * math.exp(-z) * (2 + z)


def p_exponential(lead, eta):
    return 1.0 / (1.0 + math.exp(eta * lead))


def _draw(algorithm, epsilon, seed):
    many = np.broadcast_to(COUNTS, (N, Q, 2))
    labels = release_rn(many, algorithm=algorithm, epsilon=epsilon,
                        rng=np.random.default_rng(seed), plan=SCENARIO.plan)
    return labels.sum(axis=0)  # how often label 1 won, per instance


def _check(hits, p_true, p_wrong):
    assert stats.binomtest(int(hits), N, p_true).pvalue > ALPHA
    assert stats.binomtest(int(hits), N, p_wrong).pvalue < ALPHA  # power: 30% wrong scale


@pytest.mark.parametrize("epsilon", [0.5, 1.0])
def test_proposed_noise_scale_is_clique_size_over_epsilon(epsilon):
    hits = _draw("proposed", epsilon, seed=11)
    for i in range(Q):
        lead = COUNTS[i, 0] - COUNTS[i, 1]
        scale = SCENARIO.plan.sensitivity[i] / epsilon
        _check(hits[i], p_laplace(lead, scale), p_laplace(lead, 1.3 * scale))


def test_baseline_laplace_noise_scale_is_batch_size_over_epsilon():
    hits = _draw("baseline-laplace", 1.0, seed=12)
    for i in range(Q):
        lead = COUNTS[i, 0] - COUNTS[i, 1]
        _check(hits[i], p_laplace(lead, Q / 1.0), p_laplace(lead, 1.3 * Q / 1.0))


def test_baseline_exponential_uses_half_of_epsilon_over_batch_size():
    hits = _draw("baseline-exponential", 1.0, seed=13)
    eta = (1.0 / Q) / 2  # exp(ε' c / 2), ε' = ε / |X|
    for i in range(Q):
        lead = COUNTS[i, 0] - COUNTS[i, 1]
        _check(hits[i], p_exponential(lead, eta), p_exponential(lead, 1.3 * eta))


def test_seeded_runs_repeat_and_seeds_differ():
    a, b, c = (_draw("proposed", 1.0, seed=s) for s in (5, 5, 6))
    np.testing.assert_array_equal(a, b)
    assert not np.array_equal(a, c)

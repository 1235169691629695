"""The ε-DP r-N radius: the candidate ladder, the counts, the mechanism and its charge."""

from __future__ import annotations

import math
from fractions import Fraction

import numpy as np
import pytest
from scipy import stats

from ppknn.core.data import DomainBounds
from ppknn.core.dp import ExponentialMechanism
from ppknn.core.errors import BudgetExhausted, ConfigError
from ppknn.protocols.dp_knn.index import LabelIndex
from ppknn.protocols.dp_knn.parties.dp_owner import DPOwner
from ppknn.protocols.dp_knn.protocol import Answer, Query
from ppknn.protocols.dp_knn.radius import choose_radius, mean_counts, radius_candidates

BOUNDS = DomainBounds(np.zeros(2), np.ones(2))


def _data(n: int = 300, seed: int = 0) -> tuple[np.ndarray, np.ndarray]:
    rng = np.random.default_rng(seed)
    X = rng.random((n, 2)) ** 2  # denser near the origin
    return X, (X[:, 0] > X[:, 1]).astype(np.int64)


def test_count_profile_equals_the_kd_tree_counts():
    X, y = _data()
    idx = LabelIndex(X, y, n_classes=2)
    probes = np.random.default_rng(1).random((7, 2))
    cand = radius_candidates(BOUNDS)
    want = [int(idx.total_counts(probes, np.full(7, r)).sum()) for r in cand]
    assert idx.count_profile(probes, cand, chunk=50).tolist() == want


def test_the_ladder_depends_on_the_public_bounds_only():
    c = radius_candidates(DomainBounds(np.zeros(3), np.full(3, 2.0)))
    assert c[-1] == pytest.approx(2 * math.sqrt(3))
    assert np.allclose(c[1:] / c[:-1], 2 ** (1 / 6))  # volume × 2^(1/2) per step in 3-D
    with pytest.raises(ConfigError, match="positive diameter"):
        radius_candidates(DomainBounds(np.zeros(2), np.zeros(2)))


def test_the_non_private_rule_takes_the_candidate_nearest_the_target():
    X, y = _data()
    idx = LabelIndex(X, y, n_classes=2)
    probes = np.random.default_rng(2).random((20, 2))
    cand = radius_candidates(BOUNDS)
    means = mean_counts(idx, probes, cand)
    r = choose_radius(idx, probes, target=10, epsilon=math.inf, bounds=BOUNDS, rng=None)
    best = cand[int(np.argmin(np.abs(means - 10)))]
    assert r == best
    assert abs(means[list(cand).index(r)] - 10) == np.min(np.abs(means - 10))


def _frequencies(epsilon: float, draws: int) -> tuple[np.ndarray, np.ndarray]:
    X, y = _data(60)
    idx = LabelIndex(X, y, n_classes=2)
    probes = np.random.default_rng(3).random((4, 2))
    cand = radius_candidates(BOUNDS)
    rng = np.random.default_rng(4)
    picks = [choose_radius(idx, probes, target=5, epsilon=epsilon, bounds=BOUNDS, rng=rng)
             for _ in range(draws)]
    counts = np.array([np.sum(np.asarray(picks) == c) for c in cand])
    utility = -np.abs(mean_counts(idx, probes, cand) - 5)
    return counts, utility


def _chi2_p(counts: np.ndarray, probs: np.ndarray) -> float:
    """χ² goodness of fit, candidates with expected count < 5 pooled."""
    n = counts.sum()
    exp = probs * n
    big = exp >= 5
    obs = np.append(counts[big], counts[~big].sum())
    e = np.append(exp[big], exp[~big].sum())
    return float(stats.chisquare(obs, e).pvalue)


def test_the_release_follows_the_exponential_mechanism_with_sensitivity_one():
    counts, utility = _frequencies(epsilon=0.6, draws=3000)
    right = ExponentialMechanism(epsilon=0.6, sensitivity=1.0).probabilities(utility[None])[0]
    assert _chi2_p(counts, right) > 1e-6
    # power: the same draws reject a mechanism at twice the ε (a sensitivity of 1/2)
    wrong = ExponentialMechanism(epsilon=1.2, sensitivity=1.0).probabilities(utility[None])[0]
    assert _chi2_p(counts, wrong) < 1e-6


def _owner(epsilon: float) -> DPOwner:
    X, y = _data()
    return DPOwner(party_id="owner", X=X, y=y, classes=[0, 1], lower=[0, 0], upper=[1, 1],
                   epsilon=epsilon, run_id="r")


def test_the_owner_charges_the_radius_and_the_classification_exactly():
    owner = _owner(2.0)
    q = Query(task="rn", algorithm="proposed", x=np.random.default_rng(5).random((30, 2)),
              epsilon=0.3, radius_target=10, radius_epsilon=0.7)
    assert q.auto_radius and q.cost == 1.0
    msg = owner.answer(q.to_message(run_id="r", sender="alice", receiver="owner", request=0))
    ans = Answer.from_message(msg)
    assert ans.epsilon == 1.0 and len(set(ans.radius.tolist())) == 1
    assert ans.radius[0] in radius_candidates(BOUNDS)
    assert owner.ledger.spent_exact()[0] == Fraction(1)
    assert owner.ledger.spent("alice").epsilon == 1.0
    # a request whose ε + ε_r does not fit is refused before the data is read
    big = Query(task="rn", algorithm="proposed", x=q.x, epsilon=0.5, radius_target=10,
                radius_epsilon=0.6)
    with pytest.raises(BudgetExhausted):
        owner.answer(big.to_message(run_id="r", sender="alice", receiver="owner", request=1))
    assert owner.ledger.spent_exact()[0] == Fraction(1)


def test_an_auto_radius_request_repeats_for_the_same_seed():
    q = Query(task="rn", algorithm="baseline-laplace",
              x=np.random.default_rng(6).random((25, 2)), epsilon=1.0, radius_target=8,
              radius_epsilon=0.5)
    answers = [Answer.from_message(_owner(5.0).answer(
        q.to_message(run_id="r", sender="a", receiver="owner", request=3))) for _ in range(2)]
    assert answers[0].radius.tolist() == answers[1].radius.tolist()
    assert answers[0].labels.tolist() == answers[1].labels.tolist()


@pytest.mark.parametrize("kwargs, message", [
    ({"radius_target": 10}, "needs radius_target and radius_epsilon"),
    ({"radius_target": -1.0, "radius_epsilon": 1.0}, "radius_target must be"),
    ({"radius_target": 10, "radius_epsilon": 0.0}, "radius_epsilon"),
    ({"radius": 0.1, "radius_target": 10, "radius_epsilon": 1.0}, "not both"),
])
def test_bad_auto_radius_queries(kwargs, message):
    with pytest.raises(ConfigError, match=message):
        Query(task="rn", algorithm="proposed", x=np.zeros((1, 2)), epsilon=1.0, **kwargs)

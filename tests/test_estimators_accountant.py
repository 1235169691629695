"""DP estimators take an accountant choice: basic, advanced or pld, as a scenario's ledger.

Counts are exact: a budget admits a call while the composition with it stays
within the caps, so the number of calls answered follows from the PLD of the
calls' loss laws (pinned against ``core.dp.pld.compose_epsilon`` below).
"""

from __future__ import annotations

import numpy as np
import pytest
from sklearn.base import clone
from sklearn.datasets import load_iris

from ppknn.core.dp.mechanisms import Gaussian
from ppknn.core.dp.pld import LaplaceLoss, RandomisedResponseLoss, compose_epsilon, loss_model
from ppknn.core.errors import ConfigError
from ppknn.estimators import (
    DPKNeighborsClassifier,
    DPRadiusNeighborsClassifier,
    DPTTClassifier,
)
from ppknn.simulations.estimators.spending import BudgetRefused, Spending

X, Y = load_iris(return_X_y=True)
BOUNDS = (X.min(axis=0), X.max(axis=0))


def _answered(spending: Spending, epsilon: float, delta: float, law, cap: int = 500) -> int:
    n = 0
    while n < cap:
        try:
            r = spending.reserve(epsilon, delta, law)
        except BudgetRefused:
            return n
        spending.settle(r, epsilon, delta)
        n += 1
    return n


def _most_calls(laws_of, delta: float, budget: float) -> int:
    """The largest k with compose_epsilon(k calls) <= budget (the reference count)."""
    k = 0
    while compose_epsilon(laws_of(k + 1), delta) <= budget:
        k += 1
    return k


@pytest.mark.parametrize("law,expected", [
    (LaplaceLoss(0.05), None),
    (loss_model(Gaussian(epsilon=0.05, delta=1e-7)), None),
])
def test_small_laplace_and_gaussian_releases_get_more_calls_under_pld(law, expected) -> None:
    cost = law.cost
    basic = Spending("Est", guarantee="ε-DP", budget=1.0, budget_delta=1e-5)
    pld = Spending("Est", guarantee="ε-DP", budget=1.0, budget_delta=1e-5, accountant="pld")
    n_basic = _answered(basic, cost.epsilon, cost.delta, law)
    n_pld = _answered(pld, cost.epsilon, cost.delta, law)
    assert n_basic == min(20, int(1e-5 // cost.delta) if cost.delta else 20)
    reference = _most_calls(lambda k: [law] * k, 1e-5, 1.0)
    if cost.delta:  # each call's δ also counts: the route reads the PLD at the whole budget δ
        assert n_pld >= reference - 1
    else:
        assert n_pld == reference
    assert n_pld > 1.5 * n_basic
    total = pld.total()
    assert total.epsilon <= 1.0 and total.delta == 1e-5
    assert "pld composition" in total.guarantee


def test_pure_epsilon_budget_is_the_basic_count() -> None:
    law = LaplaceLoss(0.05)
    counts = [_answered(Spending("Est", guarantee="ε-DP", budget=1.0, budget_delta=d), 0.05,
                        0.0, law) for d in (None, 0.0)]
    assert counts == [20, 20]


def test_estimator_answers_more_calls_under_pld_and_the_basic_count_for_pure_epsilon() -> None:
    def count(accountant: str, budget_delta) -> tuple[int, float]:
        clf = DPRadiusNeighborsClassifier(1.0, epsilon=0.05, budget=1.0, budget_delta=budget_delta,
                                          accountant=accountant, bounds=BOUNDS, random_state=0,
                                          utility_folds=0).fit(X, Y)
        n = 0
        while n < 100:
            try:
                clf.predict(X[:4])  # one analyst: one request batch of ε = 0.05 per call
            except BudgetRefused:
                break
            n += 1
        return n, clf.privacy_.epsilon

    n_basic, eps_basic = count("basic", 1e-5)
    n_pld, eps_pld = count("pld", 1e-5)
    n_auto, _ = count("auto", 1e-5)
    reference = _most_calls(lambda k: [RandomisedResponseLoss(0.05)] * k, 1e-5, 1.0)
    assert (n_basic, n_pld, n_auto) == (20, reference, reference)
    assert reference >= 28  # 30 at grid 1e-4
    assert eps_basic == pytest.approx(1.0) and eps_pld <= 1.0
    for pure in (None, 0.0):  # a pure ε budget: summation, exactly the basic count
        assert count("auto", pure)[0] == 20


@pytest.mark.parametrize("cls", [DPRadiusNeighborsClassifier, DPKNeighborsClassifier,
                                 DPTTClassifier])
def test_accountant_is_a_parameter_checked_at_fit(cls) -> None:
    est = cls(bounds=BOUNDS, utility_folds=0)
    assert est.get_params()["accountant"] == "auto"
    assert clone(est.set_params(accountant="pld")).get_params()["accountant"] == "pld"
    with pytest.raises(ConfigError, match=r"accountant = 'rdp'; allowed: one of \['auto', "
                                          r"'basic', 'advanced', 'pld'\]"):
        cls(bounds=BOUNDS, accountant="rdp", utility_folds=0).fit(X, Y)
    with pytest.raises(ConfigError, match="accountant = 'pld' needs budget_delta > 0"):
        cls(bounds=BOUNDS, accountant="pld", budget=5.0, utility_folds=0).fit(X, Y)


def test_a_refusal_under_pld_names_the_budget() -> None:
    s = Spending("Est", guarantee="ε-DP", budget=0.2, budget_delta=1e-6, accountant="pld")
    _answered(s, 0.1, 0.0, LaplaceLoss(0.1))
    with pytest.raises(BudgetRefused, match="budget = 0.2 cannot pay"):
        s.check(0.1, 0.0, LaplaceLoss(0.1))
    assert np.isfinite(s.total().epsilon)

"""Estimator privacy accounting: the releases since fit add up; a budget refuses before release."""

from __future__ import annotations

import numpy as np
import pytest
from sklearn.datasets import load_iris, load_wine

import ppknn
from ppknn.core.errors import BudgetExhausted, ConfigError
from ppknn.protocols.pca_perturbation.plugin import estimator as sanitizer
from ppknn.simulations.estimators import base
from ppknn.simulations.estimators.spending import BudgetRefused


@pytest.fixture(scope="module")
def iris():
    X, y = load_iris(return_X_y=True)
    return X[::2], y[::2], X[1::2]


@pytest.fixture(scope="module")
def wine():
    X, _ = load_wine(return_X_y=True)
    return X, (X.min(axis=0), X.max(axis=0))


def _dp_knn(**params):
    return ppknn.DPKNeighborsClassifier(5, bounds=(0.0, 8.0), utility_folds=0, **params)


def test_three_predicts_spend_three_times_epsilon(iris):
    X, y, Q = iris
    clf = _dp_knn(epsilon=4).fit(X, y)
    assert clf.privacy_.epsilon == 0.0 and clf.privacy_last_ is None  # fit releases nothing
    for _ in range(3):
        clf.predict(Q)
    assert clf.privacy_.epsilon == 12.0
    assert clf.privacy_.delta == 0.0
    assert clf.privacy_last_.epsilon == 4.0
    assert clf.privacy_.per_party["dp-owner"] == (12.0, 0.0)
    assert "3 call(s) since fit" in clf.privacy_.guarantee


def test_analysts_and_calls_add_up_exactly(iris):
    X, y, Q = iris
    clf = _dp_knn(epsilon=0.1, n_analysts=3).fit(X, y)
    for _ in range(3):
        clf.predict(Q)
    assert clf.privacy_.epsilon == 0.9  # 3 calls x 3 analysts x 0.1, no float drift
    assert clf.privacy_last_.epsilon == pytest.approx(0.3)
    assert clf.privacy_.per_party["analyst-2"] == (0.3, 0.0)


def test_a_budget_refuses_the_call_that_would_exceed_it_before_any_run(iris, runs):
    X, y, Q = iris
    clf = _dp_knn(epsilon=4, budget=10).fit(X, y)
    clf.predict(Q)
    clf.predict(Q)
    last, started = clf.last_run_, len(runs)
    with pytest.raises(BudgetRefused, match=r"budget = 10\.0 .*8 spent by 2 call\(s\)"):
        clf.predict(Q)
    assert len(runs) == started  # no party started: nothing was released
    assert clf.last_run_ is last and clf.privacy_.epsilon == 8.0
    assert issubclass(BudgetRefused, ConfigError) and issubclass(BudgetRefused, BudgetExhausted)


def test_fit_starts_a_new_account(iris):
    X, y, Q = iris
    clf = _dp_knn(epsilon=4, budget=4).fit(X, y)
    clf.predict(Q)
    with pytest.raises(BudgetRefused):
        clf.predict(Q)
    clf.fit(X, y)
    assert clf.privacy_.epsilon == 0.0 and clf.privacy_last_ is None
    assert clf.last_run_ is None and clf.transcript_ is None
    clf.predict(Q)
    assert clf.privacy_.epsilon == 4.0


@pytest.mark.parametrize("make", [
    lambda: ppknn.DPKNeighborsClassifier(epsilon=2.0, budget=1.0, bounds=(0.0, 8.0)),
    lambda: ppknn.DPRadiusNeighborsClassifier(epsilon=2.0, budget=1.0, bounds=(0.0, 8.0)),
    lambda: ppknn.DPTTClassifier(final_epsilon=2.0, budget=1.0, bounds=(0.0, 8.0)),
])
def test_a_budget_below_one_call_is_refused_at_fit(make, iris):
    X, y, _ = iris
    with pytest.raises(ConfigError, match=r"budget = 1\.0 is below the cost of the cheapest"):
        make().fit(X, y)


def test_a_failed_run_is_still_charged(iris, monkeypatch):
    X, y, Q = iris
    clf = _dp_knn(epsilon=4).fit(X, y)

    def boom(planned):
        raise RuntimeError("party died")

    monkeypatch.setattr(base, "run_planned", boom)
    with pytest.raises(RuntimeError, match="party died"):
        clf.predict(Q)
    assert clf.privacy_.epsilon == 4.0  # the parties may have read the data


def test_dptt_adds_the_per_query_epsilon_of_every_call(iris, runs):
    X, y, Q = iris
    clf = ppknn.DPTTClassifier(variant="E4", final_epsilon=2.0, budget=5.0, bounds=(0.0, 8.0),
                               utility_folds=0).fit(X, y)
    clf.predict(Q)
    clf.predict(Q[:10])
    assert clf.privacy_last_.epsilon == pytest.approx(2.0)
    assert clf.privacy_.epsilon == 2 * clf.privacy_last_.epsilon
    started = len(runs)
    with pytest.raises(BudgetRefused, match=r"budget = 5\.0"):
        clf.predict(Q)
    assert len(runs) == started


def test_sanitizer_adds_up_its_transforms_and_refuses_over_budget(wine, monkeypatch):
    X, bounds = wine
    s = ppknn.PCALaplaceSanitizer(3, b=0.5, budget=13.0, bounds=bounds).fit(X)
    s.transform(X)
    s.transform(X[:5])
    assert s.privacy_.epsilon == 12.0  # 2 calls x s/b = 3/0.5
    assert s.privacy_last_.epsilon == 6.0
    drawn = []
    monkeypatch.setattr(sanitizer, "perturb", lambda *a: drawn.append(a))
    with pytest.raises(BudgetRefused, match=r"budget = 13\.0"):
        s.transform(X)
    assert not drawn and s.privacy_.epsilon == 12.0  # no noise drawn, nothing released
    s.fit(X)
    assert s.privacy_.epsilon == 0.0


def test_sanitizer_without_noise_is_unbounded_and_cannot_have_a_budget(wine):
    X, bounds = wine
    clean = ppknn.PCALaplaceSanitizer(3, b=None, bounds=bounds).fit(X)
    clean.transform(X)
    assert clean.privacy_.epsilon == float("inf")
    with pytest.raises(ConfigError, match=r"budget = 5 with b = None"):
        ppknn.PCALaplaceSanitizer(3, b=None, budget=5, bounds=bounds).fit(X)


def test_the_ring_has_no_epsilon_but_counts_its_runs(iris):
    X, y, Q = iris
    clf = ppknn.PPKNNClassifier(bounds=(0.0, 8.0)).fit(X, y)
    clf.predict(Q)
    clf.predict(Q)
    assert clf.privacy_.epsilon is None and "2 call(s) since fit" in clf.privacy_.guarantee


def test_naive_bayes_predictions_spend_nothing():
    rng = np.random.default_rng(0)
    X = rng.uniform(0, 10, (200, 2))
    y = (X[:, 0] > 5).astype(int)
    clf = ppknn.DPNaiveBayes(epsilon=1.0, bounds=(0.0, 10.0), classes=[0, 1],
                             utility_draws=0).fit(X, y)
    for _ in range(3):
        clf.predict(X)
    assert clf.ledger_.spent().epsilon == 1.0  # the fit is the release
